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
    ``min_distance`` ``([n_envs,])`` m, the smallest sphere distance of the answer over the
    counted pairs and the obstacles (as ``collision_distance``; inf with nothing to check), and
    ``min_pair`` ``([n_envs,])`` what sets it, ``(link, link)`` or ``(link, obstacle)``. Success
    then also requires ``min_distance >= margin``. ``error`` has no rows for the avoidance task.
    """

    qpos: np.ndarray
    error: np.ndarray
    success: np.ndarray
    iterations: np.ndarray
    sample: np.ndarray
    min_distance: np.ndarray | None = None
    min_pair: list | None = None

    @property
    def pos_error(self) -> np.ndarray:
        """Norm of each task's masked position error ([n_envs,] n_tasks), m."""
        return np.linalg.norm(self.error[..., :3], axis=-1)

    @property
    def rot_error(self) -> np.ndarray:
        """Angle of each task's masked rotation error ([n_envs,] n_tasks), rad."""
        return np.linalg.norm(self.error[..., 3:], axis=-1)
