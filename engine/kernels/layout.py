"""Pack a :class:`~engine.model.KinematicTree` into the two constant arrays the kernels read.

Few, large arguments keep a kernel launch cheap (taichi's per-argument cost dominates small
batches), so a robot is two arrays:

``robot_i`` int32 (1 + L + J, 5)
    row 0: header (n_links L, n_joints J, n_qs, n_dofs, 0);
    row 1 + l: link l: parent index (-1 = world), first joint, end joint, 0, 0;
    row 1 + L + j: joint j: type code, q start, dof start, leader q start, leader dof start
    (the last two -1 unless the joint mimics a leader).
``robot_f`` float (L + J + n_qs, 9)
    row l: link l body offset in its parent frame: pos xyz, quat wxyz, 0, 0;
    row L + j: joint j: anchor xyz, axis xyz (link frame), ref, mimic multiplier, mimic offset;
    row L + J + i: qpos entry i: lower, upper limit (+-1e30 where unbounded), 0 ...

Per-row pose buffers ``pose`` (B, L + J, 7) hold each link's world pose (rows 0..L-1) and each
joint's frame right after its own motion (rows L..L+J-1): pos xyz + quat wxyz.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.tree import JOINT_CODE, KinematicTree

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
    robot_i = np.zeros((1 + L + J, 5), dtype=np.int32)
    robot_i[0] = (L, J, tree.n_qs, tree.n_dofs, 0)
    robot_f = np.zeros((L + J + tree.n_qs, 9), dtype=dtype)
    for l, link in enumerate(tree.links):
        start = link.joints[0] if link.joints else 0
        robot_i[1 + l] = (link.parent, start, start + len(link.joints), 0, 0)
        robot_f[l, :3], robot_f[l, 3:7] = link.pos, link.quat / np.linalg.norm(link.quat)
    for j, joint in enumerate(tree.joints):
        lead_q = lead_dof = -1
        mult = offset = 0.0
        if joint.mimic is not None:
            leader = tree.joints[joint.mimic.leader]
            lead_q, lead_dof = leader.q_start, leader.dof_start
            mult, offset = joint.mimic.multiplier, joint.mimic.offset
        robot_i[1 + L + j] = (JOINT_CODE[joint.type], joint.q_start, joint.dof_start, lead_q, lead_dof)
        robot_f[L + j, :3], robot_f[L + j, 3:6] = joint.pos, joint.axis
        robot_f[L + j, 6:] = (joint.ref, mult, offset)
    lo, hi = tree.q_limits()
    robot_f[L + J:, 0] = np.clip(lo, -UNBOUNDED, UNBOUNDED)
    robot_f[L + J:, 1] = np.clip(hi, -UNBOUNDED, UNBOUNDED)
    return PackedTree(robot_i, robot_f, L, J)
