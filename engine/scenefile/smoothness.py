"""Per-frame smoothness of a runner's answers: each env's joint step, and which envs lag.

:class:`~engine.scenefile.runner.Runner` calls :func:`frame_steps` once per frame with the qpos
before and after its IK calls. The step is ``max |q_after - q_before|`` over the robot's hinge and
slide entries (rad or m; ball and free joints' quaternion entries are not angles and do not
count). An env *lags* when the frame was velocity-limited (``solver.track`` after frame 0), it did
not reach its targets, and some dof moved by its whole per-frame bound: it follows as fast as its
velocity limits let it, rather than failing to find an answer.
"""

from __future__ import annotations

import numpy as np

from ..ik.limits import VelocityLimit

AT_LIMIT = 0.999  # a dof that moved by this share of its bound (float32 answers) moved by all of it


def scalar_qs(tree) -> list[int]:
    """The qpos entries of the hinges and slides (one entry each) of ``tree``."""
    return [j.q_start for j in tree.joints if j.n_qs == 1]


def per_frame_bound(tree, max_joint_velocity, dt: float) -> np.ndarray:
    """``(n_qs,)``: how far each qpos entry may move in ``dt`` s under ``max_joint_velocity`` (None
    or "file": the robot file's limits; a number; one per dof), rad or m; inf where unbounded."""
    row = VelocityLimit("file" if max_joint_velocity is None else max_joint_velocity, dt).row(
        tree, "solver: max_joint_velocity", dt)
    return np.asarray(row.upper, float)


def frame_steps(tree, q_before: np.ndarray, q_after: np.ndarray, success: np.ndarray, tracked: bool,
                max_joint_velocity=None, dt: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """``(step (n_envs,), lagging (n_envs,) bool)`` of one frame: ``q_before`` / ``q_after``
    ``(n_envs, n_qs)``; ``success`` ``(n_envs,)``; ``tracked``: the frame was velocity-limited by
    ``max_joint_velocity`` over ``dt`` s."""
    scalar = scalar_qs(tree)
    n = len(q_after)
    if not scalar:
        return np.zeros(n), np.zeros(n, bool)
    moved = np.abs(np.asarray(q_after, float)[:, scalar] - np.asarray(q_before, float)[:, scalar])
    step = moved.max(axis=1)
    if not tracked or dt <= 0:
        return step, np.zeros(n, bool)
    bound = per_frame_bound(tree, max_joint_velocity, dt)[scalar]
    at_limit = (np.isfinite(bound) & (moved >= AT_LIMIT * bound)).any(axis=1)
    return step, at_limit & ~np.asarray(success, bool).reshape(n)
