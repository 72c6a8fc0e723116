"""``IKResult``: what one IK call found, per env."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class IKResult:
    """What one IK call found, per env (leading axis dropped for an unbatched scene).

    ``qpos`` ([n_envs,] n_qs); ``error`` ([n_envs,] n_tasks, 6): each task's masked position (m)
    and rotation (rad, rotation vector) error at ``qpos``, world axes (a relative task's: its
    reference link's axes); ``success`` ([n_envs,]) bool: every task within its tolerances;
    ``iterations`` ([n_envs,]): solver iterations of the returned sample; ``sample``
    ([n_envs,]): which restart it came from (0 = init_qpos, -1 = none succeeded).

    With collision avoidance (``avoid_collisions=True`` or a CollisionTask; else both None):
    ``min_distance`` ``([n_envs,])`` m, the smallest distance of the answer's collision model over
    the counted pairs and the obstacles (as ``collision_distance``), and ``min_pair`` ``([n_envs,])``
    what sets it, ``(link, link)`` or ``(link, obstacle)``. Success then also requires
    ``min_distance >= margin``. With nothing to check (a robot without collision geometry, or no
    counted pairs and no obstacles) ``min_distance`` is NaN, success counts the other tasks only,
    and a RuntimeWarning says so once per robot. ``error`` has no rows for the avoidance task;
    ``pos_error`` / ``rot_error`` are its norms summed in float64.

    ``step`` ([n_envs,]): the largest move of a hinge or slide from the start configuration
    (``init_qpos`` or the state), rad or m. ``warm_start_success`` ([n_envs,]) bool: sample 0,
    solved from the start, met the tolerances; when it did not, the answer is the successful
    restart nearest the start (continuity; :mod:`engine.kernels.solver`), unless a posture pull
    (``rest_weight``) asks for the one nearest the rest posture. In a velocity-limited solve
    (``track``) the tolerances may be out of reach within one step: ``success`` False, and
    ``pos_error`` / ``rot_error`` say how far the target still is.
    """

    qpos: np.ndarray
    error: np.ndarray
    success: np.ndarray
    iterations: np.ndarray
    sample: np.ndarray
    min_distance: np.ndarray | None = None
    min_pair: list | None = None
    step: np.ndarray | None = None
    warm_start_success: np.ndarray | None = None

    @property
    def pos_error(self) -> np.ndarray:
        """Norm of each task's masked position error ([n_envs,] n_tasks), m: summed in float64 (the
        squares of a 1e20 m error overflow float32), in ``error``'s precision where it holds it."""
        return _norm(self.error[..., :3])

    @property
    def rot_error(self) -> np.ndarray:
        """Angle of each task's masked rotation error ([n_envs,] n_tasks), rad."""
        return _norm(self.error[..., 3:])


def _norm(v: np.ndarray) -> np.ndarray:
    """Norms over the last axis, computed in float64; returned in ``v``'s dtype unless that
    overflows (a norm beyond float32's range stays float64)."""
    out = np.linalg.norm(v.astype(np.float64), axis=-1)
    if v.dtype != np.float64 and np.all(np.abs(out) <= np.finfo(v.dtype).max):
        return out.astype(v.dtype)
    return out
