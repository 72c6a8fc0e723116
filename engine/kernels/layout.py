"""Pack a :class:`~engine.model.KinematicTree` into the two constant arrays the kernels read.

Few, large arguments keep a kernel launch cheap (taichi's per-argument cost dominates small
batches), so a robot is two arrays, ``robot_i`` (int32) and ``robot_f`` (float), whose rows and
columns are named in :mod:`engine.kernels.tables` (``ROBOT_HEAD``, ``LINK_I``, ``JOINT_I``,
``LINK_F``, ``JOINT_F``, ``QPOS_F``).

Per-row pose buffers ``pose`` (B, L + J, 7) hold each link's world pose (rows 0..L-1) and each
joint's frame right after its own motion (rows L..L+J-1): pos xyz + quat wxyz.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.tree import JOINT_CODE, KinematicTree
from .tables import (
    JOINT_F,
    JOINT_I,
    LINK_F,
    LINK_I,
    QPOS_F,
    ROBOT_F_WIDTH,
    ROBOT_HEAD,
    ROBOT_I_WIDTH,
    joint_row_f,
    joint_row_i,
    link_row_i,
    qpos_row_f,
)

UNBOUNDED = 1e30


@dataclass(frozen=True)
class PackedTree:
    """Kernel-ready constants of one robot."""

    robot_i: np.ndarray
    robot_f: np.ndarray
    n_links: int
    n_joints: int

    def args(self) -> tuple[np.ndarray, np.ndarray]:
        return self.robot_i, self.robot_f

    @property
    def pose_rows(self) -> int:
        """Rows of a pose buffer: links then joint frames."""
        return self.n_links + self.n_joints


def pack_tree(tree: KinematicTree, dtype) -> PackedTree:
    """Constant arrays of ``tree`` in float ``dtype``."""
    L, J = tree.n_links, tree.n_joints
    robot_i = np.zeros((1 + L + J, ROBOT_I_WIDTH), dtype=np.int32)
    head = robot_i[0]
    head[ROBOT_HEAD.n_links], head[ROBOT_HEAD.n_joints] = L, J
    head[ROBOT_HEAD.n_qs], head[ROBOT_HEAD.n_dofs] = tree.n_qs, tree.n_dofs
    robot_f = np.zeros((L + J + tree.n_qs, ROBOT_F_WIDTH), dtype=dtype)
    for l, link in enumerate(tree.links):
        start = link.joints[0] if link.joints else 0
        row = robot_i[link_row_i(l)]
        row[LINK_I.parent] = link.parent
        row[LINK_I.joint_start], row[LINK_I.joint_end] = start, start + len(link.joints)
        frow = robot_f[l]
        frow[LINK_F.pos:LINK_F.pos + 3] = link.pos
        frow[LINK_F.quat:LINK_F.quat + 4] = link.quat / np.linalg.norm(link.quat)
        frow[LINK_F.mass] = link.mass
        frow[LINK_F.com:LINK_F.com + 3] = link.com
    for j, joint in enumerate(tree.joints):
        lead_q = lead_dof = -1
        mult = offset = 0.0
        if joint.mimic is not None:
            leader = tree.joints[joint.mimic.leader]
            lead_q, lead_dof = leader.q_start, leader.dof_start
            mult, offset = joint.mimic.multiplier, joint.mimic.offset
        row = robot_i[joint_row_i(L, j)]
        row[JOINT_I.kind], row[JOINT_I.q], row[JOINT_I.dof] = JOINT_CODE[joint.type], joint.q_start, joint.dof_start
        row[JOINT_I.lead_q], row[JOINT_I.lead_dof] = lead_q, lead_dof
        frow = robot_f[joint_row_f(L, j)]
        frow[JOINT_F.anchor:JOINT_F.anchor + 3], frow[JOINT_F.axis:JOINT_F.axis + 3] = joint.pos, joint.axis
        frow[JOINT_F.ref], frow[JOINT_F.mult], frow[JOINT_F.offset] = joint.ref, mult, offset
    lo, hi = tree.q_limits()
    limits = robot_f[qpos_row_f(L, J, 0):]
    limits[:, QPOS_F.lower] = np.clip(lo, -UNBOUNDED, UNBOUNDED)
    limits[:, QPOS_F.upper] = np.clip(hi, -UNBOUNDED, UNBOUNDED)
    return PackedTree(robot_i, robot_f, L, J)
