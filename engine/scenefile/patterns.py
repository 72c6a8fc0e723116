"""Motion patterns of scene-file targets, as plain numpy functions of time.

Every function returns per-env arrays: positions ``(n_envs, 3)`` in metres (env-local world frame)
and quaternions ``(n_envs, 4)`` as (w, x, y, z). Nothing here knows about YAML or the engine.

* :func:`circle` - the seed's batched demo: ``center + r (cos(w t + phase) e1 + sin(w t + phase) e2)``
  with one angular speed ``w`` (rad/s) per env, drawn by :func:`uniform_speeds`.
* :func:`offsets_grid` / :func:`offsets_random` - fixed per-env offsets (added to the target).
* :func:`figure8` - a lemniscate of Gerono: ``r (sin a e1 + sin a cos a e2)``, ``a = 2 pi t / period + phase``.
* :func:`keyframes` - piecewise-linear positions and slerped orientations, optionally looping.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValueError

PLANES = ("xy", "yz", "xz")


def plane_axes(plane: str) -> tuple[np.ndarray, np.ndarray]:
    """The two unit axes spanning ``plane`` ("xy", "yz" or "xz"), in that order."""
    if len(plane) != 2 or any(c not in "xyz" for c in plane) or plane[0] == plane[1]:
        raise InvalidValueError(f"plane: expected one of {', '.join(PLANES)}, got {plane!r}")
    eye = np.eye(3)
    return eye["xyz".index(plane[0])], eye["xyz".index(plane[1])]


def uniform_speeds(low: float, high: float, n_envs: int, seed: int | None) -> np.ndarray:
    """``n_envs`` angular speeds (rad/s) drawn uniformly from ``[low, high]`` with a seeded generator."""
    if low > high:
        raise InvalidValueError(f"speed: expected low <= high, got [{low}, {high}]")
    if low == high:
        return np.full(n_envs, float(low))
    return np.random.default_rng(seed).uniform(low, high, n_envs)


def circle(t: float, center: np.ndarray, radius: float, omega: np.ndarray, phase: float = 0.0,
           plane: str = "xy") -> np.ndarray:
    """Points on a circle at time ``t`` (s): ``center`` (3,) or (n, 3), ``omega`` (n,) rad/s -> (n, 3)."""
    e1, e2 = plane_axes(plane)
    angle = np.asarray(omega, float) * t + phase
    return np.asarray(center, float) + radius * (np.cos(angle)[:, None] * e1 + np.sin(angle)[:, None] * e2)


def figure8(t: float, center: np.ndarray, radius: float, period: float, phases: np.ndarray,
            plane: str = "xy") -> np.ndarray:
    """Points on a figure eight (width 2 r, height r) centred on ``center``; one phase per env -> (n, 3)."""
    e1, e2 = plane_axes(plane)
    a = 2.0 * np.pi * t / period + np.asarray(phases, float)
    return np.asarray(center, float) + radius * (np.sin(a)[:, None] * e1 + (np.sin(a) * np.cos(a))[:, None] * e2)


def offsets_grid(n_envs: int, extent: np.ndarray) -> np.ndarray:
    """``n_envs`` offsets on a regular grid filling the box ``[-extent, extent]`` (3,) -> (n, 3).

    Axes with zero extent stay zero; the others get ``ceil(n ** (1/k))`` points each (k such axes),
    row by row, and the first ``n_envs`` grid points are used.
    """
    extent = np.asarray(extent, float)
    axes = [i for i in range(3) if extent[i] != 0.0]
    out = np.zeros((n_envs, 3))
    if not axes or n_envs == 1:
        return out
    per_axis = int(np.ceil(n_envs ** (1.0 / len(axes)) - 1e-9))
    while per_axis ** len(axes) < n_envs:
        per_axis += 1
    ticks = np.linspace(-1.0, 1.0, per_axis)
    grid = np.stack(np.meshgrid(*[ticks] * len(axes), indexing="ij"), axis=-1).reshape(-1, len(axes))
    out[:, axes] = grid[:n_envs] * extent[axes]
    return out


def offsets_random(n_envs: int, extent: np.ndarray, seed: int | None) -> np.ndarray:
    """``n_envs`` offsets drawn uniformly in ``[-extent, extent]`` with a seeded generator -> (n, 3)."""
    extent = np.asarray(extent, float)
    return np.random.default_rng(seed).uniform(-1.0, 1.0, (n_envs, 3)) * extent


def rpy_to_quat(rpy_deg) -> np.ndarray:
    """Roll, pitch, yaw in degrees (URDF convention: about fixed x, then y, then z) -> (w, x, y, z)."""
    r, p, y = np.radians(np.asarray(rpy_deg, float)) / 2.0
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array([cr * cp * cy + sr * sp * sy,
                     sr * cp * cy - cr * sp * sy,
                     cr * sp * cy + sr * cp * sy,
                     cr * cp * sy - sr * sp * cy])


def normalize(q) -> np.ndarray:
    q = np.asarray(q, float)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def slerp(q0: np.ndarray, q1: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Spherical interpolation between unit quaternions (n, 4) at fractions ``u`` (n,), shortest arc."""
    q0, q1 = normalize(q0), normalize(q1)
    u = np.asarray(u, float)[:, None]
    dot = np.sum(q0 * q1, axis=-1, keepdims=True)
    q1 = np.where(dot < 0.0, -q1, q1)
    dot = np.abs(dot)
    theta = np.arccos(np.clip(dot, -1.0, 1.0))
    sin = np.sin(theta)
    near = sin < 1e-6
    safe = np.where(near, 1.0, sin)
    w0 = np.where(near, 1.0 - u, np.sin((1.0 - u) * theta) / safe)
    w1 = np.where(near, u, np.sin(u * theta) / safe)
    return normalize(w0 * q0 + w1 * q1)


def keyframe_time(t: np.ndarray, times: np.ndarray, loop: bool) -> np.ndarray:
    """Map times onto ``[times[0], times[-1]]``: wrapped when ``loop``, else clamped."""
    t = np.asarray(t, float)
    t0, t1 = float(times[0]), float(times[-1])
    if loop and t1 > t0:
        return t0 + np.mod(t - t0, t1 - t0)
    return np.clip(t, t0, t1)


def keyframes(t: np.ndarray, times: np.ndarray, poss: np.ndarray | None, quats: np.ndarray | None,
              loop: bool = False) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Pose at per-env times ``t`` (n,) from keyframes ``times`` (k,), ``poss`` (k, 3), ``quats`` (k, 4).

    Positions are interpolated linearly, orientations by slerp; either may be None (not animated).
    Returns ``(pos (n, 3) | None, quat (n, 4) | None)``.
    """
    times = np.asarray(times, float)
    tt = keyframe_time(np.atleast_1d(t), times, loop)
    if len(times) == 1:
        i = np.zeros(len(tt), int)
        u = np.zeros(len(tt))
        j = i
    else:
        i = np.clip(np.searchsorted(times, tt, side="right") - 1, 0, len(times) - 2)
        j = i + 1
        u = np.clip((tt - times[i]) / (times[j] - times[i]), 0.0, 1.0)
    pos = None if poss is None else poss[i] + (poss[j] - poss[i]) * u[:, None]
    quat = None if quats is None else slerp(quats[i], quats[j], u)
    return pos, quat
