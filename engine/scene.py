"""``Scene``: entities, per-env state allocation, stepping, and the seam to an optional visualizer.

The visualizer seam (see docs/design.md): the core knows a visualizer only as an object made by the
factory registered with :func:`set_visualizer_factory`, ``factory(scene) -> visualizer``, called the
first time ``scene.visualizer`` is read (``draw_debug_*`` read it). The object must have
``scene`` (the scene it draws), ``close()``, ``take_over(previous)`` (adopt the debug objects of
the visualizer it replaces, and close that one) and the ``draw_debug_*`` / ``update_debug_objects``
/ ``clear_debug_object(s)`` methods the scene passes calls to. It may have ``open_viewer()``,
called by ``build()`` when the scene was made with ``show_viewer=True``, and ``on_step()``,
called after every ``step()`` and ``reset()`` (the viewer window redraws there).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import numpy as np

from . import inputs
from . import model as model_mod
from . import options as opts
from . import surfaces as surfaces_mod
from .entity import RigidEntity
from .errors import InvalidTypeError, InvalidValueError, StateError
from .materials import Material, Rigid
from .morphs import Shape
from .runtime import backend, garbage
from .runtime.locking import new_lock, serialised

LOG = logging.getLogger("engine")


def _check_state(scene, state) -> None:
    """Refuse a ``state`` that is not this scene's shape (entities, envs, qpos sizes, body poses),
    naming what differs, before the scene is touched."""
    if not isinstance(state, SceneState):
        raise InvalidTypeError(f"state: expected a SceneState from this scene's get_state(), got "
                               f"{type(state).__name__}")
    n = len(scene.entities)
    if len(state.qpos) != n or len(state.poses) not in (0, n):
        raise InvalidValueError(f"state: holds {len(state.qpos)} entities; this scene has {n}: expected a state "
                                "from this scene's get_state()")
    envs = f"{scene.n_envs} envs" if scene.is_batched else "no envs (unbatched)"
    for i, entity in enumerate(scene.entities):
        want = entity.configuration.qpos.shape
        got = np.shape(state.qpos[i])
        if tuple(got) != tuple(want):
            raise InvalidValueError(f"state: entity {i} ({entity.tree.name}): qpos of shape {tuple(got)}; this scene "
                                    f"({envs}) needs {tuple(want)} (envs x n_qs): expected a state from this "
                                    "scene's get_state()")
        if not np.isfinite(np.asarray(state.qpos[i], float)).all():
            raise InvalidValueError(f"state: entity {i} ({entity.tree.name}): qpos holds NaN or infinite values")
        if state.poses and tuple(np.shape(state.poses[i])) != tuple(entity.configuration.body_pose.shape):
            raise InvalidValueError(f"state: entity {i} ({entity.tree.name}): body pose of shape "
                                    f"{tuple(np.shape(state.poses[i]))}; this scene needs "
                                    f"{tuple(entity.configuration.body_pose.shape)}")
    if isinstance(state.t, bool) or not isinstance(state.t, int | np.integer):
        raise InvalidTypeError(f"state: t (the step count) is {state.t!r}; expected an int")


@dataclass(frozen=True)
class SceneState:
    """What :meth:`Scene.get_state` saves and :meth:`Scene.reset` restores: each entity's qpos
    ``(B, n_qs)`` (copies), the step count, and each entity's fixed-body pose ``(B, 7)`` (pos,
    quat wxyz; ``(B, 0)`` for an entity that is no fixed single body)."""

    qpos: tuple
    t: int
    poses: tuple = ()


class Scene:
    """Entities (robots and single bodies) posed kinematically over ``n_envs`` parallel environments.

    Genesis' arguments: ``sim_options`` / ``rigid_options`` / ``viewer_options`` / ``vis_options``
    (:mod:`engine.options`; what takes effect is listed there), ``show_viewer`` (open the
    interactive viewer window at ``build()``; without a display: one warning, then headless) and
    ``show_FPS`` (log the steps per second at the "info" logging level). ``dt`` (s) is a shortcut
    for ``SimOptions(dt=...)``: :attr:`dt` is the step of :meth:`step`, which moves controlled dofs
    toward their targets.
    """

    def __init__(self, sim_options=None, rigid_options=None, viewer_options=None, vis_options=None,
                 show_viewer: bool | None = False, show_FPS: bool | None = True, *, dt: float | None = None):
        backend.ensure_init()
        self._lock = new_lock()  # build, step, destroy and add_entity run one at a time (engine.runtime.locking)
        self.sim_options = opts.check("sim_options", sim_options, opts.SimOptions)
        if dt is not None:
            if sim_options is not None:
                raise InvalidValueError("dt: give dt or sim_options, not both (dt is SimOptions.dt)")
            self.sim_options.dt = inputs.as_positive("dt", dt)
        self.rigid_options = opts.check("rigid_options", rigid_options, opts.RigidOptions)
        self.viewer_options = opts.check("viewer_options", viewer_options, opts.ViewerOptions)
        self.vis_options = opts.check("vis_options", vis_options, opts.VisOptions)
        self.show_viewer = False if show_viewer is None else inputs.as_flag("show_viewer", show_viewer)
        self.show_FPS = True if show_FPS is None else inputs.as_flag("show_FPS", show_FPS)
        self._fps = _FPSLog() if self.show_FPS else None
        self._init_t = 0
        self.entities: list[RigidEntity] = []
        self.n_envs: int | None = None
        self.env_spacing = np.array([1.0, 1.0])
        self.is_built = False
        self.t = 0
        self._visualizer = None  # made on first use through the visualizer seam (debug objects live there)

    @property
    def dt(self) -> float:
        """The step of :meth:`step`, s: ``rigid_options.dt`` when given, else ``sim_options.dt``."""
        return self.rigid_options.dt if self.rigid_options.dt is not None else self.sim_options.dt

    # -- building --------------------------------------------------------------------------------
    @serialised
    def add_entity(self, morph, material=None, surface=None, visualize_contact: bool = False,
                   vis_mode: str | None = None) -> RigidEntity:
        """Load ``morph`` and add it; returns the entity.

        ``morph``: an ``engine.morphs`` URDF or MJCF robot, or a single body (Plane, Box, Sphere,
        Cylinder, Mesh). ``material``: an ``engine.materials`` material (None: ``Rigid()``);
        ``surface``: an ``engine.surfaces`` surface (None: ``Default()``) whose colour and opacity
        replace the entity's; ``vis_mode`` sets ``surface.vis_mode``; ``visualize_contact`` is
        accepted (no contacts here).
        """
        if self.is_built:
            raise StateError("add_entity: the scene is already built; add entities before build()")
        material = Rigid() if material is None else material
        if not isinstance(material, Material):
            raise InvalidTypeError(f"material: expected an engine.materials material (Rigid, Kinematic), got "
                                   f"{type(material).__name__}")
        surface = surfaces_mod.Default() if surface is None else surface
        if not isinstance(surface, surfaces_mod.Surface):
            raise InvalidTypeError(f"surface: expected an engine.surfaces surface, got {type(surface).__name__}")
        surface = surface.copy()
        surfaces_mod.check_vis_mode(surface, vis_mode)
        inputs.as_flag("visualize_contact", visualize_contact)
        rho = getattr(material, "rho", None)
        tree = model_mod.load(morph, rho) if isinstance(morph, Shape) else model_mod.load(morph)
        surfaces_mod.apply(surface, tree)
        link_start = sum(e.n_links for e in self.entities)
        joint_start = sum(e.n_joints for e in self.entities)
        entity = RigidEntity(self, tree, morph, len(self.entities), link_start, joint_start, surface, material)
        self.entities.append(entity)
        return entity

    @serialised
    def build(self, n_envs: int | None = None, env_spacing=(1.0, 1.0)) -> None:
        """Allocate state for ``n_envs`` envs (None or 0, as in Genesis: one env, no env axis anywhere).

        ``env_spacing`` (x, y) in m only lays envs out on screen; poses stay env-local. With
        ``show_viewer=True`` the viewer window opens here.
        """
        if self.is_built:
            raise StateError("build: the scene is already built")
        if n_envs is not None and not isinstance(n_envs, bool) and isinstance(n_envs, int | np.integer) \
                and n_envs == 0:
            n_envs = None  # Genesis' way of saying "not batched"
        if n_envs is not None:
            n_envs = inputs.as_positive("n_envs", n_envs, integer=True, maximum=2**62)
            self._check_size(n_envs)  # memory and 32-bit indices bound it far below
        spacing = inputs.as_float_array("env_spacing", env_spacing)
        if spacing.shape != (2,):
            raise InvalidValueError(f"env_spacing: expected 2 numbers (x, y), got shape {spacing.shape}")
        self.n_envs = n_envs
        self.env_spacing = spacing
        for entity in self.entities:
            entity.on_build(self.n_batch, self.is_batched)
        self.is_built = True
        if self.show_viewer:
            opener = getattr(self.visualizer, "open_viewer", None)
            if opener is not None:
                opener()

    def _check_size(self, n_envs: int) -> None:
        """Refuse, before allocating anything, a batch whose per-env state alone would not fit in
        this machine's available memory, or whose arrays the kernels' 32-bit indices cannot
        address."""
        per_env = sum(e.state_bytes_per_env() for e in self.entities)
        need = n_envs * per_env
        available = memory_available()
        if available is not None and need > available:
            raise InvalidValueError(f"n_envs: {n_envs:,} envs need {_bytes(need)} for their state alone "
                                    f"({_bytes(per_env)} per env); this machine has {_bytes(available)} available")
        widest = max((e.widest_row() for e in self.entities), default=1)
        if n_envs * widest > inputs.INT32_MAX:
            raise InvalidValueError(f"n_envs: expected at most {inputs.INT32_MAX // widest:,} for this scene (the "
                                    f"kernels index arrays with 32-bit integers), got {n_envs:,}")

    @property
    def lock(self):
        """The scene's re-entrant lock: build, step, reset, destroy and add_entity hold it
        (:mod:`engine.runtime.locking`)."""
        return self._lock

    @property
    def is_batched(self) -> bool:
        """True when built with ``n_envs``: inputs and outputs carry a leading env axis."""
        return self.n_envs is not None

    @property
    def n_batch(self) -> int:
        """Number of env rows in state arrays (1 for an unbatched scene)."""
        return 1 if self.n_envs is None else self.n_envs

    def envs_offset(self) -> np.ndarray:
        """On-screen offset of each env ``(n_batch, 3)``, m: a near-square grid by ``env_spacing``."""
        n = self.n_batch
        cols = int(np.ceil(np.sqrt(n)))
        idx = np.arange(n)
        offset = np.zeros((n, 3))
        offset[:, 0] = (idx // cols - (int(np.ceil(n / cols)) - 1) / 2) * self.env_spacing[0]
        offset[:, 1] = (idx % cols - (cols - 1) / 2) * self.env_spacing[1]
        return offset

    # -- running ---------------------------------------------------------------------------------
    @serialised
    def step(self, update_visualizer: bool = True, refresh_visualizer: bool = True) -> None:
        """Advance one ``dt``: controlled dofs move toward their targets (kinematic, no physics),
        within their limits when ``rigid_options.enable_joint_limit``. With ``update_visualizer``
        an open viewer window redraws (``refresh_visualizer`` is accepted)."""
        self.require_built()
        update_visualizer = inputs.as_flag("update_visualizer", update_visualizer)
        inputs.as_flag("refresh_visualizer", refresh_visualizer)
        limits = self.rigid_options.enable_joint_limit
        for entity in self.entities:
            entity.on_step(self.dt, limits)
        self.t += 1
        if update_visualizer:
            self._visualizer_hook()
        if self._fps is not None:
            self._fps.step(self.n_batch)

    @serialised
    def reset(self, state: SceneState | None = None, envs_idx=None) -> None:
        """Back to the initial state: every entity's qpos and every fixed body's pose at build (or
        the ones ``state``, from :meth:`get_state`, registers as initial, as in Genesis), no dof
        targets, step count 0.
        ``envs_idx``: only these envs (the step count is kept then)."""
        self.require_built()
        if state is not None:
            _check_state(self, state)  # the whole state fits before anything changes
        envs = inputs.as_index_list("envs_idx", envs_idx, self.n_batch, "env")
        if state is not None:
            self._init_t = state.t
        envs = np.arange(self.n_batch) if envs is None else envs
        for i, entity in enumerate(self.entities):
            entity.on_reset(envs, None if state is None else state.qpos[i],
                          state.poses[i] if state is not None and state.poses else None)
        if envs_idx is None:
            self.t = self._init_t
        self._visualizer_hook()

    @serialised
    def get_state(self) -> SceneState:
        """The current state (each entity's qpos, fixed bodies' poses, the step count), for :meth:`reset`."""
        self.require_built()
        return SceneState(tuple(e.configuration.qpos.copy() for e in self.entities), self.t,
                          tuple(e.configuration.body_pose.copy() for e in self.entities))

    def _visualizer_hook(self) -> None:
        hook = getattr(self._visualizer, "on_step", None) if self._visualizer is not None else None
        if hook is not None:
            hook()

    @serialised
    def destroy(self) -> None:
        """Free the scene's state; the scene cannot be used afterwards."""
        drawn = self._visualizer is not None
        if drawn:
            self._visualizer.close()  # counts itself as a close (engine.runtime.garbage)
        held = sum(garbage.loaded_visual_bytes(entity.tree) for entity in self.entities)
        for entity in self.entities:
            entity.on_destroy()
        self.entities = []
        self.is_built = False
        if held:  # trimesh's meshes hold cycles: freed by a full collection (see garbage)
            garbage.let_go(held, close=not drawn)

    # -- the visualizer seam ----------------------------------------------------------------------
    # The kinematics core never imports engine.vis. A scene holds at most one visualizer object,
    # made on first use by the factory registered with set_visualizer_factory (the package root,
    # engine/__init__.py, registers engine.vis's), or handed in with ``scene.visualizer = vis``.
    # Genesis' names below only pass calls through; debug objects live in the visualizer and never
    # in the simulation state. A scene that nothing draws has no visualizer, and engine.vis stays
    # unimported.
    @property
    def visualizer(self):
        """The scene's visualizer (an :class:`engine.vis.Visualizer` by default), created on first use."""
        if self._visualizer is None:
            with self._lock:  # two threads asking at once get one visualizer
                if self._visualizer is None:
                    if _visualizer_factory is None:
                        raise StateError("visualizer: no visualizer factory is registered "
                                           "(engine.scene.set_visualizer_factory)")
                    vis = _visualizer_factory(self)
                    _check_visualizer(self, vis)
                    self._visualizer = vis
        return self._visualizer

    @visualizer.setter
    def visualizer(self, vis) -> None:
        """Replace the scene's visualizer; the one it had hands its debug objects over, then closes."""
        _check_visualizer(self, vis)
        old = self._visualizer
        if old is not None and old is not vis:
            vis.take_over(old)
        self._visualizer = vis

    @property
    def has_visualizer(self) -> bool:
        """True once the scene has a visualizer; unlike :attr:`visualizer`, asking creates none."""
        return self._visualizer is not None

    def draw_debug_frame(self, *args, **kwargs):
        """Genesis' name for ``scene.visualizer.draw_debug_frame(T, axis_length, origin_size, axis_radius,
        env_idx)``: axes at ``T`` (4, 4) or (n_envs, 4, 4); returns a handle."""
        return self.visualizer.draw_debug_frame(*args, **kwargs)

    def draw_debug_sphere(self, *args, **kwargs):
        """``scene.visualizer.draw_debug_sphere(pos, radius, color, env_idx)``."""
        return self.visualizer.draw_debug_sphere(*args, **kwargs)

    def draw_debug_spheres(self, *args, **kwargs):
        """``scene.visualizer.draw_debug_spheres(poss, radius, color, env_idx)``."""
        return self.visualizer.draw_debug_spheres(*args, **kwargs)

    def draw_debug_line(self, *args, **kwargs):
        """``scene.visualizer.draw_debug_line(start, end, radius, color, env_idx)``."""
        return self.visualizer.draw_debug_line(*args, **kwargs)

    def draw_debug_arrow(self, *args, **kwargs):
        """``scene.visualizer.draw_debug_arrow(pos, vec, radius, color, env_idx)``."""
        return self.visualizer.draw_debug_arrow(*args, **kwargs)

    def draw_debug_path(self, *args, **kwargs):
        """``scene.visualizer.draw_debug_path(qposs, entity, link_idx=-1, density=0.3, frame_scaling=1.0,
        env_idx=0)``: the link's path over the waypoints ``qposs`` ((T, n_qs) in env ``env_idx``'s
        cell, or (T, n_envs, n_qs)), with frames at
        a ``density`` share of them; returns one handle (:mod:`engine.vis.debug_path`)."""
        return self.visualizer.draw_debug_path(*args, **kwargs)

    def update_debug_objects(self, objs=None, poses=None) -> None:
        """Genesis 1.4.5's form: set each handle of ``objs`` (from ``draw_debug_*``) to the matching
        transform of ``poses`` ((4, 4), or (n_envs, 4, 4) for a batched handle), then redraw. With
        no arguments (the older form): re-pose the handles moved with ``handle.set_pose``. Nothing
        to do without a visualizer when no objects are given."""
        if objs is None and poses is None:
            if self._visualizer is not None:
                self._visualizer.update_debug_objects()
            return
        if objs is None or poses is None:
            raise InvalidValueError("objs, poses: give both (one pose per debug object), or neither")
        objs, poses = list(objs), list(poses)
        if len(objs) != len(poses):
            raise InvalidValueError(f"poses: expected one pose per debug object ({len(objs)}), got {len(poses)}")
        self.visualizer.update_debug_objects(objs, poses)

    def clear_debug_object(self, handle) -> None:
        """Remove one debug object drawn in this scene."""
        if self._visualizer is None:
            raise InvalidValueError(f"handle: {handle!r} is not drawn in this scene (nothing is drawn in it)")
        self._visualizer.clear_debug_object(handle)

    def clear_debug_objects(self) -> None:
        """Remove every debug object; nothing to do without a visualizer."""
        if self._visualizer is not None:
            self._visualizer.clear_debug_objects()

    def require_built(self) -> None:
        if not self.is_built:
            raise StateError("the scene is not built: call scene.build() first")

    def __getattr__(self, name: str):
        """Genesis' scene features that are not part of this engine: a clear error naming them."""
        if name.startswith("_"):
            raise AttributeError(f"'Scene' object has no attribute {name!r}")
        from .genesis_names import SCENE_FEATURES, missing

        raise missing("Scene", name, SCENE_FEATURES)


_visualizer_factory = None


def set_visualizer_factory(factory) -> None:
    """Register ``factory(scene) -> visualizer``, which makes a scene's visualizer the first time
    ``scene.visualizer`` is read (the scene keeps it). None unregisters it."""
    global _visualizer_factory
    if factory is not None and not callable(factory):
        raise InvalidTypeError(f"factory: expected a callable factory(scene) or None, got {type(factory).__name__}")
    _visualizer_factory = factory


def _check_visualizer(scene: Scene, vis) -> None:
    if getattr(vis, "scene", None) is not scene or not callable(getattr(vis, "close", None)):
        raise InvalidTypeError(f"visualizer: expected a visualizer made for this scene (engine.vis.Visualizer(scene)), "
                               f"got {type(vis).__name__}")


class _FPSLog:
    """Steps per second, logged at the "info" level at most once a second (``show_FPS``)."""

    def __init__(self):
        self._t0 = time.perf_counter()
        self._steps = 0

    def step(self, n_envs: int) -> None:
        self._steps += 1
        now = time.perf_counter()
        if now - self._t0 >= 1.0:
            fps = self._steps / (now - self._t0)
            if LOG.isEnabledFor(logging.INFO):
                LOG.info(f"Running at {fps:,.2f} FPS" + (f" ({fps * n_envs:,.2f} FPS in all {n_envs} envs)"
                                                        if n_envs > 1 else ""))
            self._t0, self._steps = now, 0


def memory_available() -> int | None:
    """Bytes of memory available to new allocations (Linux's MemAvailable), None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} TiB"
