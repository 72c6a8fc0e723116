"""Conversions between qpos (``n_qs``) and dof positions (``n_dofs``) of a kinematic tree.

Dof positions equal qpos for 1-dof joints; a ball joint's 3 dof positions are its rotation vector
(axis * angle, rad) and a free joint's 6 are xyz followed by its rotation vector.
All functions take and return batches ``(B, n)``.
"""

from __future__ import annotations

import numpy as np

from .errors import InvalidValueError
from .model.tree import KinematicTree
from .transforms import quat_from_axis_angle, quat_mul, quat_normalize, quat_to_rotvec


def _rotvec_to_quat(w: np.ndarray) -> np.ndarray:
    angle = np.linalg.norm(w, axis=-1)
    axis = np.where(angle[..., None] > 1e-12, w / np.maximum(angle, 1e-300)[..., None], [1.0, 0.0, 0.0])
    return quat_from_axis_angle(axis, angle)


def qpos_to_dofs(tree: KinematicTree, qpos: np.ndarray) -> np.ndarray:
    """Dof positions ``(B, n_dofs)`` of qpos ``(B, n_qs)``."""
    out = np.zeros((qpos.shape[0], tree.n_dofs))
    for j in tree.joints:
        q, d = j.q_start, j.dof_start
        if j.type == "free":
            out[:, d:d + 3] = qpos[:, q:q + 3]
            out[:, d + 3:d + 6] = quat_to_rotvec(qpos[:, q + 3:q + 7])
        elif j.type == "ball":
            out[:, d:d + 3] = quat_to_rotvec(qpos[:, q:q + 4])
        elif j.n_dofs == 1:
            out[:, d] = qpos[:, q]
    return out


def dofs_to_qpos(tree: KinematicTree, dofs: np.ndarray) -> np.ndarray:
    """qpos ``(B, n_qs)`` of dof positions ``(B, n_dofs)`` (mimic joints derived from leaders)."""
    out = np.zeros((dofs.shape[0], tree.n_qs))
    for j in tree.joints:
        q, d = j.q_start, j.dof_start
        if j.type == "free":
            out[:, q:q + 3] = dofs[:, d:d + 3]
            out[:, q + 3:q + 7] = _rotvec_to_quat(dofs[:, d + 3:d + 6])
        elif j.type == "ball":
            out[:, q:q + 4] = _rotvec_to_quat(dofs[:, d:d + 3])
        elif j.n_dofs == 1:
            out[:, q] = dofs[:, d]
    return tree.apply_mimic(out)


def normalize_quaternions(tree: KinematicTree, qpos: np.ndarray) -> np.ndarray:
    """Copy of qpos ``(B, n_qs)`` with every ball/free quaternion made unit; raises on a zero one."""
    qpos = qpos.copy()
    for j in tree.joints:
        if j.type in ("free", "ball"):
            s = j.q_start + (3 if j.type == "free" else 0)
            norms = np.linalg.norm(qpos[:, s:s + 4], axis=-1)
            if np.any(norms < 1e-9):
                raise InvalidValueError(f"qpos: joint '{j.name}' has a zero quaternion at qpos[{s}:{s + 4}]")
            qpos[:, s:s + 4] = quat_normalize(qpos[:, s:s + 4])
    return qpos


def step_towards(tree: KinematicTree, qpos: np.ndarray, target_dofs: np.ndarray, controlled: np.ndarray,
                 max_delta: np.ndarray) -> np.ndarray:
    """qpos ``(B, n_qs)`` moved toward dof targets ``(B, n_dofs)`` where ``controlled`` (B, n_dofs),
    each dof by at most ``max_delta`` ``(n_dofs,)`` (velocity limit x dt)."""
    cur = qpos_to_dofs(tree, qpos)
    step = np.clip(target_dofs - cur, -max_delta, max_delta)
    step = np.where(controlled, step, 0.0)
    out = qpos.copy()
    for j in tree.joints:
        q, d = j.q_start, j.dof_start
        if j.mimic is not None:
            continue
        if j.n_dofs == 1:
            out[:, q] = qpos[:, q] + step[:, d]
        elif j.n_dofs in (3, 6):  # rotate about the error axis, limited per dof
            r = d + (3 if j.type == "free" else 0)
            s = q + (3 if j.type == "free" else 0)
            if j.type == "free":
                out[:, q:q + 3] = qpos[:, q:q + 3] + step[:, d:d + 3]
            target_q = _rotvec_to_quat(target_dofs[:, r:r + 3])
            err = quat_to_rotvec(quat_mul(target_q, qpos[:, s:s + 4] * [1, -1, -1, -1]))
            err = np.where(controlled[:, r:r + 3], np.clip(err, -max_delta[r:r + 3], max_delta[r:r + 3]), 0.0)
            out[:, s:s + 4] = quat_normalize(quat_mul(_rotvec_to_quat(err), qpos[:, s:s + 4]))
    return tree.apply_mimic(out)
