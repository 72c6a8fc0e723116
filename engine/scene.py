"""``Scene``: entities, per-env state allocation, stepping, and the visualizer handle."""

from __future__ import annotations

import numpy as np

from . import backend, inputs
from . import model as model_mod
from .entity import RigidEntity
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
        self._visualizer = None  # engine.vis.Visualizer, made on first use (debug objects live there)

    # -- building --------------------------------------------------------------------------------
    @serialised
    def add_entity(self, morph) -> RigidEntity:
        """Load ``morph`` (an ``engine.morphs`` URDF or MJCF) and add it; returns the entity."""
        if self.is_built:
            raise RuntimeError("add_entity: the scene is already built; add entities before build()")
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
            raise RuntimeError("build: the scene is already built")
        if n_envs is not None:
            n_envs = inputs.as_positive("n_envs", n_envs, integer=True, maximum=2**62)
            self._check_size(n_envs)  # memory and 32-bit indices bound it far below
        spacing = inputs.as_float_array("env_spacing", env_spacing)
        if spacing.shape != (2,):
            raise ValueError(f"env_spacing: expected 2 numbers (x, y), got shape {spacing.shape}")
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
            raise ValueError(f"n_envs: {n_envs:,} envs need {_bytes(need)} for their state alone "
                             f"({_bytes(per_env)} per env); this machine has {_bytes(available)} available")
        widest = max((e.widest_row() for e in self.entities), default=1)
        if n_envs * widest > inputs.INT32_MAX:
            raise ValueError(f"n_envs: expected at most {inputs.INT32_MAX // widest:,} for this scene (the kernels "
                             f"index arrays with 32-bit integers), got {n_envs:,}")

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

    # -- visualizer: debug objects never enter the simulation state (see engine.vis) ---------------
    @property
    def visualizer(self):
        """The scene's :class:`engine.vis.Visualizer` (created on first use)."""
        if self._visualizer is None:
            from .vis import Visualizer

            self._visualizer = Visualizer(self)
        return self._visualizer

    @visualizer.setter
    def visualizer(self, vis) -> None:
        from .vis import Visualizer

        if not isinstance(vis, Visualizer) or vis.scene is not self:
            raise TypeError("visualizer: expected an engine.vis.Visualizer made for this scene")
        if self._visualizer is not None and self._visualizer is not vis:
            vis.debug = self._visualizer.debug  # debug objects drawn so far move over
            self._visualizer.close()
        self._visualizer = vis

    def draw_debug_frame(self, T, axis_length=0.1, origin_size=0.015, axis_radius=0.005, env_idx=0):
        """Draw axes (x red, y green, z blue) at ``T`` (4, 4) or (n_envs, 4, 4); returns a handle."""
        return self.visualizer.draw_debug_frame(T, axis_length, origin_size, axis_radius, env_idx)

    def draw_debug_sphere(self, pos, radius=0.01, color=(1.0, 0.0, 0.0, 0.5), env_idx=0):
        return self.visualizer.draw_debug_sphere(pos, radius, color, env_idx)

    def draw_debug_spheres(self, poss, radius=0.01, color=(1.0, 0.0, 0.0, 0.5), env_idx=0):
        return self.visualizer.draw_debug_spheres(poss, radius, color, env_idx)

    def draw_debug_line(self, start, end, radius=0.002, color=(1.0, 0.0, 0.0, 0.5), env_idx=0):
        return self.visualizer.draw_debug_line(start, end, radius, color, env_idx)

    def draw_debug_arrow(self, pos, vec, radius=0.006, color=(1.0, 0.0, 0.0, 0.5), env_idx=0):
        return self.visualizer.draw_debug_arrow(pos, vec, radius, color, env_idx)

    def update_debug_objects(self) -> None:
        """Re-pose debug objects whose handles moved (``handle.set_pose``); meshes are not rebuilt."""
        self.visualizer.update_debug_objects()

    def clear_debug_object(self, handle) -> None:
        self.visualizer.clear_debug_object(handle)

    def clear_debug_objects(self) -> None:
        self.visualizer.clear_debug_objects()

    def _require_built(self) -> None:
        if not self.is_built:
            raise RuntimeError("the scene is not built: call scene.build() first")


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
