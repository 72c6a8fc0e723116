"""Time parametrisation of planned paths: :class:`Trajectory`, sampled every ``dt`` seconds.

Each edge of a path (between consecutive vertices of the smoothed path, each a certified segment)
is run with a trapezoidal speed profile that starts and ends at rest: the path speed is capped so
that every dof stays within its velocity limit, and the path acceleration so that every dof stays
within its acceleration limit (a triangle where the edge is too short to reach full speed). Each
edge's duration is then stretched to a whole number of ``dt`` (slower: velocities scale by
``1/k`` and accelerations by ``1/k^2``, ``k >= 1``), so every vertex falls on a sample and every
pair of consecutive samples lies on one certified edge. Velocities and accelerations are the
profile's exact values at the samples; the motion between two samples is within the limits too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

ACCEL_TIME = 0.5  # s: the default acceleration limit takes each dof to its velocity limit in this time


@dataclass
class Trajectory:
    """A timed path per env: ``qpos``, ``dofs_vel``, ``dofs_acc`` ``(T, [n_envs,] n_qs)`` (rad, rad/s,
    rad/s^2; m for slides), sampled every ``dt`` s (the last sample held where an env finishes
    sooner); ``valid`` ``([n_envs])``; ``duration`` ``([n_envs])`` s; ``waypoint_times``: per env,
    the time (s) at which the motion passes each vertex of its path; ``reason``: as
    :class:`~engine.plan.result.PlanResult`'s. An env that failed holds its start, at rest."""

    qpos: np.ndarray
    dofs_vel: np.ndarray
    dofs_acc: np.ndarray
    dt: float
    valid: np.ndarray
    duration: np.ndarray
    waypoint_times: list
    reason: list | str

    @property
    def times(self) -> np.ndarray:
        """Sample times ``(T,)`` s."""
        return np.arange(len(self.qpos)) * self.dt


def edge_profile(length: float, v: float, a: float, dt: float):
    """``(n_steps, k, t_acc, v_top)`` of a rest-to-rest trapezoid over ``length`` with speed ``v`` and
    acceleration ``a`` caps, stretched by ``k >= 1`` to ``n_steps * dt``."""
    if length <= 0:
        return 0, 1.0, 0.0, 0.0
    if length >= v * v / a:
        t_acc, v_top = v / a, v
        total = length / v + v / a
    else:
        t_acc = float(np.sqrt(length / a))
        v_top, total = a * t_acc, 2 * t_acc
    n = max(1, int(np.ceil(total / dt - 1e-9)))
    return n, n * dt / total, t_acc, v_top


def _sample(t, length, t_acc, v_top):
    """Path position, speed and acceleration at times ``t`` of an unstretched trapezoid."""
    a = v_top / t_acc
    total = length / v_top + t_acc
    t = np.clip(t, 0.0, total)
    s = np.where(t < t_acc, 0.5 * a * t * t,
                 np.where(t <= total - t_acc, 0.5 * a * t_acc ** 2 + v_top * (t - t_acc),
                          length - 0.5 * a * (total - t) ** 2))
    v = np.where(t < t_acc, a * t, np.where(t <= total - t_acc, v_top, a * (total - t)))
    acc = np.where(t < t_acc, a, np.where(t <= total - t_acc, 0.0, -a))
    return s, v, acc


def time_path(vertices: np.ndarray, vmax: np.ndarray, amax: np.ndarray, dt: float):
    """``(qpos, vel, acc (T, n), vertex_times (k,))`` for the path through ``vertices (k, n)``."""
    vertices = np.asarray(vertices, float)
    q, vel, acc, times = [vertices[:1]], [np.zeros((1, vertices.shape[1]))], [], [0.0]
    for a_, b_ in zip(vertices[:-1], vertices[1:]):
        d = b_ - a_
        length = float(np.linalg.norm(d))
        if length == 0:
            continue
        u = d / length
        moving = np.abs(u) > 0
        v_cap = float(np.min(vmax[moving] / np.abs(u[moving])))
        a_cap = float(np.min(amax[moving] / np.abs(u[moving])))
        n, k, t_acc, v_top = edge_profile(length, v_cap, a_cap, dt)
        t = np.arange(0, n + 1) * dt / k  # unstretched times of the samples
        s, sv, sa = _sample(t, length, t_acc, v_top)
        s[-1] = length  # the vertex exactly
        acc.append(np.outer(sa[:1] / k ** 2, u))  # the edge's first acceleration, at the previous vertex
        q.append(a_ + np.outer(s[1:], u))
        vel.append(np.outer(sv[1:] / k, u))
        acc.append(np.outer(sa[1:-1] / k ** 2, u))
        times.append(times[-1] + n * dt)
    acc.append(np.zeros((1, vertices.shape[1])))  # at rest at the goal
    q[-1] = q[-1].copy()
    if len(q) > 1:
        q[-1][-1] = vertices[-1]
    return np.concatenate(q), np.concatenate(vel), np.concatenate(acc), np.array(times)


__all__ = ["ACCEL_TIME", "Trajectory", "edge_profile", "time_path"]
