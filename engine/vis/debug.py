"""Debug objects: frames, spheres, lines and arrows that live in the visualizer only.

They never enter the simulation state (entities, link counts, state arrays, IK/FK inputs). Each is
drawn from instanced unit shapes ("sphere", "cylinder", "cone") grouped by (shape, colour), so a
thousand objects cost a handful of draw calls.

Every drawing returns a :class:`DebugObject` handle whose pose ``T`` starts at the object's anchor
(a frame: its ``T``; a sphere or arrow: its ``pos``; a line: its ``start``; a sphere set: the
identity) and moves the whole drawing rigidly. Move it with ``handle.set_pose(T)`` or
``handle.T = T``, then call ``scene.update_debug_objects()``: the instance poses are recomputed,
no mesh is rebuilt. Positions are env-local like link poses: each drawing sits in one env's cell
(``env_idx``, default 0), or one copy per env when the input carries a leading ``n_envs`` axis.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import inputs
from ..errors import InvalidTypeError, InvalidValueError

SHAPES = ("sphere", "cylinder", "cone")  # unit sphere r=1; cylinder and cone r=1 from z=0 to z=1
FRAME_COLORS = ((1.0, 0.0, 0.0, 1.0), (0.0, 1.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0))
ORIGIN_COLOR = (0.9, 0.9, 0.9, 1.0)

_ids = itertools.count(1)


# -- validation -----------------------------------------------------------------------------------
def as_color(name: str, value) -> tuple[float, ...]:
    """An (r, g, b, a) tuple in [0, 1] from 3 or 4 numbers."""
    arr = inputs.as_float_array(name, value)
    if arr.shape not in ((3,), (4,)):
        raise InvalidValueError(f"{name}: expected 3 or 4 numbers (r, g, b[, a]) in [0, 1], got shape {arr.shape}")
    if np.any(arr < 0) or np.any(arr > 1):
        raise InvalidValueError(f"{name}: expected values in [0, 1], got {arr.tolist()}")
    if arr.shape == (3,):
        arr = np.append(arr, 1.0)
    return tuple(float(round(x, 4)) for x in arr)


def _points(name: str, value, shape: tuple[int, ...], n_envs: int | None) -> tuple[np.ndarray, bool]:
    """``value`` as ``(k, *shape)`` and whether it had a leading env axis (k = n_envs) or not (k = 1)."""
    arr = inputs.as_float_array(name, value)
    if len(shape) and shape[0] < 0:  # a variable-length list of points
        if arr.ndim == 2 and arr.shape[1:] == shape[1:]:
            return arr[None], False
        if n_envs is not None and arr.ndim == 3 and arr.shape[0] == n_envs and arr.shape[2:] == shape[1:]:
            return arr, True
        want = "(N, 3)" + (f" or ({n_envs}, N, 3)" if n_envs is not None else "")
        raise InvalidValueError(f"{name}: expected shape {want}, got {arr.shape}")
    if arr.shape == shape:
        return arr[None], False
    if n_envs is not None and arr.shape == (n_envs, *shape):
        return arr, True
    want = f"{shape}" + (f" or {(n_envs, *shape)}" if n_envs is not None else "")
    raise InvalidValueError(f"{name}: expected shape {want}, got {arr.shape}")


def as_transforms(name: str, value, n_envs: int | None) -> tuple[np.ndarray, bool]:
    """Rigid transforms ``(k, 4, 4)`` (rotation orthonormal, last row 0 0 0 1)."""
    T, batched = _points(name, value, (4, 4), n_envs)
    if not np.allclose(T[:, 3], [0, 0, 0, 1], atol=1e-6):
        raise InvalidValueError(f"{name}: expected a homogeneous transform with last row [0, 0, 0, 1], got "
                                f"{T[:, 3][0].tolist()}")
    R = T[:, :3, :3]
    err = np.abs(R @ np.swapaxes(R, 1, 2) - np.eye(3)).max()
    if err > 1e-3 or np.any(np.linalg.det(R) < 0):
        raise InvalidValueError(f"{name}: expected a rigid transform (orthonormal rotation, det +1); the rotation part "
                                f"is off by {err:.2g}")
    return T, batched


def _radius(name: str, value) -> float:
    return float(inputs.as_positive(name, value))


def translation(p: np.ndarray) -> np.ndarray:
    """Transforms ``(..., 4, 4)`` translating by ``p`` ``(..., 3)``."""
    T = np.zeros(p.shape[:-1] + (4, 4))
    T[..., :3, :3] = np.eye(3)
    T[..., :3, 3] = p
    T[..., 3, 3] = 1.0
    return T


def segment(start: np.ndarray, end: np.ndarray, radius: float) -> np.ndarray:
    """Local transforms ``(..., 4, 4)`` taking the unit z-cylinder (or cone) onto ``start -> end``."""
    d = end - start
    length = np.linalg.norm(d, axis=-1)
    z = np.where(length[..., None] > 1e-12, d / np.maximum(length, 1e-12)[..., None], [0.0, 0.0, 1.0])
    helper = np.where(np.abs(z[..., :1]) < 0.9, [1.0, 0.0, 0.0], [0.0, 1.0, 0.0])
    x = np.cross(helper, z)
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    y = np.cross(z, x)
    T = translation(start)
    T[..., :3, 0], T[..., :3, 1], T[..., :3, 2] = x * radius, y * radius, z * length[..., None]
    return T


def _scale(s: float) -> np.ndarray:
    return np.diag([s, s, s, 1.0])


scale_matrix = _scale  # the uniform scaling transform (4, 4), for the other drawing modules


# -- handles --------------------------------------------------------------------------------------
class DebugObject:
    """A handle to one debug drawing. ``T``: its pose, ``(4, 4)`` or ``(n_envs, 4, 4)`` as drawn."""

    def __init__(self, kind: str, T: np.ndarray, batched: bool, env_idx: np.ndarray, parts: list):
        self.id = next(_ids)
        self.kind = kind
        self._T = T
        self._batched = batched
        self.env_idx = env_idx  # (k,) the env cell of each copy
        self._parts = parts  # [(group key (shape, rgba), local transforms (k | 1, P, 4, 4))]
        self._registry = None

    @property
    def T(self) -> np.ndarray:
        return self._T.copy() if self._batched else self._T[0].copy()

    @T.setter
    def T(self, value) -> None:
        self.set_pose(value)

    def set_pose(self, T) -> None:
        """Move the drawing rigidly to ``T`` (same shape as drawn); shown after ``update_debug_objects()``."""
        new, batched = as_transforms("T", T, len(self._T) if self._batched else None)
        self._T = new if batched or not self._batched else np.broadcast_to(new, self._T.shape).copy()

    def checked_pose(self, T, name: str = "poses"):
        """``T`` after checking it is a pose :meth:`set_pose` takes (errors name ``name``)."""
        as_transforms(name, T, len(self._T) if self._batched else None)
        return T

    @property
    def is_drawn(self) -> bool:
        """False once cleared."""
        return self._registry is not None

    @property
    def n_instances(self) -> int:
        return sum(len(self._T) * local.shape[1] for _, local in self._parts)

    def _instances(self, offsets: np.ndarray):
        W = self._T.copy()
        W[:, :3, 3] += offsets[self.env_idx]
        for key, local in self._parts:
            yield key, (W[:, None] @ local).reshape(-1, 4, 4)

    def __repr__(self) -> str:
        state = "drawn" if self.is_drawn else "cleared"
        return f"<DebugObject {self.kind} #{self.id} x{len(self._T)} ({state})>"


class DebugObjects:
    """The visualizer's set of debug drawings and their cached instance poses per (shape, colour)."""

    def __init__(self, scene):
        self._scene = scene
        self._handles: dict[int, DebugObject] = {}
        self._cache: dict | None = None
        self.version = 0  # bumped whenever the instance poses change

    def __len__(self) -> int:
        return len(self._handles)

    def __iter__(self):
        return iter(list(self._handles.values()))

    # -- drawing --------------------------------------------------------------------------------
    def _n_envs(self):
        return self._scene.n_envs if self._scene.is_batched else None

    def _envs(self, batched: bool, k: int, env_idx) -> np.ndarray:
        if batched:
            return np.arange(k)
        idx = inputs.as_index_list("env_idx", env_idx, self._scene.n_batch, "env")
        if idx is None or len(idx) != 1:
            raise InvalidValueError(f"env_idx: expected one env index, got {env_idx!r}")
        return idx

    def env_cells(self, env_idx) -> np.ndarray:
        """``(1,)``: the env cell ``env_idx`` names, checked (an unbatched drawing's ``env_idx``)."""
        return self._envs(False, 1, env_idx)

    def add(self, handle: DebugObject) -> DebugObject:
        """Register a handle made elsewhere (e.g. :mod:`engine.vis.debug_path`) and return it."""
        return self._add(handle)

    def _add(self, handle: DebugObject) -> DebugObject:
        handle._registry = self
        self._handles[handle.id] = handle
        self.update()
        return handle

    def frame(self, T, axis_length=0.1, origin_size=0.015, axis_radius=0.005, env_idx=0) -> DebugObject:
        T, batched = as_transforms("T", T, self._n_envs())
        length = _radius("axis_length", axis_length)
        origin = _radius("origin_size", origin_size)
        radius = _radius("axis_radius", axis_radius)
        parts = [(("sphere", ORIGIN_COLOR), _scale(origin)[None, None])]
        for axis, color in enumerate(FRAME_COLORS):
            tip = np.zeros(3)
            tip[axis] = length
            parts.append((("cylinder", color), segment(np.zeros(3), tip, radius)[None, None]))
        return self._add(DebugObject("frame", T, batched, self._envs(batched, len(T), env_idx), parts))

    def sphere(self, pos, radius=0.01, color=(1.0, 0.0, 0.0, 0.5), env_idx=0) -> DebugObject:
        p, batched = _points("pos", pos, (3,), self._n_envs())
        parts = [(("sphere", as_color("color", color)), _scale(_radius("radius", radius))[None, None])]
        return self._add(DebugObject("sphere", translation(p), batched, self._envs(batched, len(p), env_idx), parts))

    def spheres(self, poss, radius=0.01, color=(1.0, 0.0, 0.0, 0.5), env_idx=0) -> DebugObject:
        p, batched = _points("poss", poss, (-1, 3), self._n_envs())
        local = translation(p) @ _scale(_radius("radius", radius))
        parts = [(("sphere", as_color("color", color)), local)]
        T = np.broadcast_to(np.eye(4), (len(p), 4, 4)).copy()
        return self._add(DebugObject("spheres", T, batched, self._envs(batched, len(p), env_idx), parts))

    def line(self, start, end, radius=0.002, color=(1.0, 0.0, 0.0, 0.5), env_idx=0) -> DebugObject:
        a, batched = _points("start", start, (3,), self._n_envs())
        b, batched_b = _points("end", end, (3,), self._n_envs())
        batched = batched or batched_b
        a, b = np.broadcast_arrays(a, b)
        local = segment(np.zeros_like(a), b - a, _radius("radius", radius))[:, None]
        parts = [(("cylinder", as_color("color", color)), local)]
        return self._add(DebugObject("line", translation(a), batched, self._envs(batched, len(a), env_idx), parts))

    def arrow(self, pos, vec, radius=0.006, color=(1.0, 0.0, 0.0, 0.5), env_idx=0) -> DebugObject:
        p, batched = _points("pos", pos, (3,), self._n_envs())
        v, batched_v = _points("vec", vec, (3,), self._n_envs())
        batched = batched or batched_v
        p, v = np.broadcast_arrays(p, v)
        r = _radius("radius", radius)
        length = np.linalg.norm(v, axis=-1)
        if np.any(length < 1e-9):
            raise InvalidValueError("vec: expected a non-zero vector")
        head = np.minimum(5.0 * r, 0.4 * length)[:, None]
        direction = v / length[:, None]
        neck = v - direction * head
        rgba = as_color("color", color)
        parts = [(("cylinder", rgba), segment(np.zeros_like(v), neck, r)[:, None]),
                 (("cone", rgba), segment(neck, v, 2.2 * r)[:, None])]
        return self._add(DebugObject("arrow", translation(p), batched, self._envs(batched, len(p), env_idx), parts))

    # -- bookkeeping --------------------------------------------------------------------------------
    def remove(self, handle) -> None:
        if not isinstance(handle, DebugObject):
            raise InvalidTypeError(f"handle: expected a DebugObject returned by a draw_debug_* call, got "
                                   f"{type(handle).__name__}")
        if handle._registry is not self or handle.id not in self._handles:
            raise InvalidValueError(f"handle: {handle!r} is not drawn in this scene (already cleared?)")
        del self._handles[handle.id]
        handle._registry = None
        self.update()

    def holds(self, handle) -> bool:
        """True when ``handle`` is drawn here (not cleared)."""
        return isinstance(handle, DebugObject) and handle._registry is self and handle.id in self._handles

    def clear(self) -> None:
        for handle in self._handles.values():
            handle._registry = None
        self._handles.clear()
        self.update()

    def update(self) -> None:
        """Recompute instance poses from the handles' current ``T`` (on the next :meth:`instance_poses`)."""
        self._cache = None
        self.version += 1

    def instance_poses(self, offsets: np.ndarray) -> dict[tuple, np.ndarray]:
        """``{(shape, rgba): poses (N, 4, 4)}`` in the rendered world (env offsets applied)."""
        if self._cache is None or self._cache[0] is not offsets and not np.array_equal(self._cache[0], offsets):
            groups: dict[tuple, list] = {}
            for handle in self._handles.values():
                for key, poses in handle._instances(offsets):
                    groups.setdefault(key, []).append(poses)
            self._cache = (offsets, {key: np.concatenate(p).astype(np.float32) for key, p in groups.items()})
        return self._cache[1]


def frame_instances(T: np.ndarray, axis_length: float, axis_radius: float, origin_size: float) -> dict:
    """``{(shape, rgba): poses (N, 4, 4)}`` of coordinate frames at the rendered-world transforms
    ``T`` (N, 4, 4): the same drawing as :meth:`DebugObjects.frame`, for the world and link frames
    the visualizer draws itself (VisOptions), which are not debug objects."""
    T = np.asarray(T, dtype=float).reshape(-1, 4, 4)
    out = {("sphere", ORIGIN_COLOR): (T @ _scale(origin_size)).astype(np.float32)}
    for axis, color in enumerate(FRAME_COLORS):
        tip = np.zeros(3)
        tip[axis] = axis_length
        out[("cylinder", color)] = (T @ segment(np.zeros(3), tip, axis_radius)).astype(np.float32)
    return out
