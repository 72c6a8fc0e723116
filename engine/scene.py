"""``Scene``: entities, per-env state allocation, stepping, and the seam to an optional visualizer.

The visualizer seam (see docs/design.md): the core knows a visualizer only as an object made by the
factory registered with :func:`set_visualizer_factory`, ``factory(scene) -> visualizer``, called the
first time ``scene.visualizer`` is read (``draw_debug_*`` read it). The object must have
``scene`` (the scene it draws), ``close()``, ``take_over(previous)`` (adopt the debug objects of
the visualizer it replaces, and close that one) and the ``draw_debug_*`` / ``update_debug_objects``
/ ``clear_debug_object(s)`` methods the scene passes calls to.
"""

from __future__ import annotations

import numpy as np

from . import backend, inputs
from . import model as model_mod
from .entity import RigidEntity
from .errors import InvalidTypeError, InvalidValueError, StateError
from .locking import new_lock, serialised


class Scene:
    """A set of robots simulated kinematically over ``n_envs`` parallel environments.

    ``dt`` (s) is the step of :meth:`step`, which moves controlled dofs toward their targets.
    """

    def __init__(self, dt: float = 0.01):
        backend.ensure_init()
        self._lock = new_lock()  # build, step, destroy and add_entity run one at a time (engine.locking)
        self.dt = inputs.as_positive("dt", dt)
        self.entities: list[RigidEntity] = []
        self.n_envs: int | None = None
        self.env_spacing = np.array([1.0, 1.0])
        self.is_built = False
        self.t = 0
        self._visualizer = None  # made on first use through the visualizer seam (debug objects live there)

    # -- building --------------------------------------------------------------------------------
    @serialised
    def add_entity(self, morph) -> RigidEntity:
        """Load ``morph`` (an ``engine.morphs`` URDF or MJCF) and add it; returns the entity."""
        if self.is_built:
            raise StateError("add_entity: the scene is already built; add entities before build()")
        tree = model_mod.load(morph)
        link_start = sum(e.n_links for e in self.entities)
        joint_start = sum(e.n_joints for e in self.entities)
        entity = RigidEntity(self, tree, morph, len(self.entities), link_start, joint_start)
        self.entities.append(entity)
        return entity

    @serialised
    def build(self, n_envs: int | None = None, env_spacing=(1.0, 1.0)) -> None:
        """Allocate state for ``n_envs`` envs (None: one env, no env axis anywhere).

        ``env_spacing`` (x, y) in m only lays envs out on screen; poses stay env-local.
        """
        if self.is_built:
            raise StateError("build: the scene is already built")
        if n_envs is not None:
            n_envs = inputs.as_positive("n_envs", n_envs, integer=True, maximum=2**62)
            self._check_size(n_envs)  # memory and 32-bit indices bound it far below
        spacing = inputs.as_float_array("env_spacing", env_spacing)
        if spacing.shape != (2,):
            raise InvalidValueError(f"env_spacing: expected 2 numbers (x, y), got shape {spacing.shape}")
        self.n_envs = n_envs
        self.env_spacing = spacing
        for entity in self.entities:
            entity._build(self.n_batch)
        self.is_built = True

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
    def step(self) -> None:
        """Advance one ``dt``: controlled dofs move toward their targets (kinematic, no physics)."""
        self._require_built()
        for entity in self.entities:
            entity._step(self.dt)
        self.t += 1

    @serialised
    def destroy(self) -> None:
        """Free the scene's state; the scene cannot be used afterwards."""
        if self._visualizer is not None:
            self._visualizer.close()
        for entity in self.entities:
            entity._destroy()
        self.entities = []
        self.is_built = False

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

    def update_debug_objects(self) -> None:
        """Re-pose debug objects whose handles moved (``handle.set_pose``); nothing to do without a visualizer."""
        if self._visualizer is not None:
            self._visualizer.update_debug_objects()

    def clear_debug_object(self, handle) -> None:
        """Remove one debug object drawn in this scene."""
        if self._visualizer is None:
            raise InvalidValueError(f"handle: {handle!r} is not drawn in this scene (nothing is drawn in it)")
        self._visualizer.clear_debug_object(handle)

    def clear_debug_objects(self) -> None:
        """Remove every debug object; nothing to do without a visualizer."""
        if self._visualizer is not None:
            self._visualizer.clear_debug_objects()

    def _require_built(self) -> None:
        if not self.is_built:
            raise StateError("the scene is not built: call scene.build() first")


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
