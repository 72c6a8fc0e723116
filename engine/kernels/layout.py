"""Pack a :class:`~engine.model.KinematicTree` into the constant arrays the kernels read."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.tree import JOINT_CODE, KinematicTree


@dataclass(frozen=True)
class PackedTree:
    """Kernel-ready constants of one robot (see :mod:`engine.kernels.fk` for the columns)."""

    link_i: np.ndarray   # int32 (n_links, 3)
    link_f: np.ndarray   # float (n_links, 7)
    joint_i: np.ndarray  # int32 (max(n_joints, 1), 5)
    joint_f: np.ndarray  # float (max(n_joints, 1), 9)

    def args(self) -> tuple[np.ndarray, ...]:
        return self.link_i, self.link_f, self.joint_i, self.joint_f


def pack_tree(tree: KinematicTree, dtype) -> PackedTree:
    """Constant arrays of ``tree`` in float ``dtype``. A robot with no joint gets one inert row so
    that no array is empty."""
    link_i = np.zeros((tree.n_links, 3), dtype=np.int32)
    link_f = np.zeros((tree.n_links, 7), dtype=dtype)
    for l, link in enumerate(tree.links):
        start = link.joints[0] if link.joints else 0
        link_i[l] = (link.parent, start, start + len(link.joints))
        link_f[l, :3], link_f[l, 3:] = link.pos, link.quat / np.linalg.norm(link.quat)
    n = max(tree.n_joints, 1)
    joint_i = np.full((n, 5), -1, dtype=np.int32)
    joint_i[:, 0] = 0
    joint_f = np.zeros((n, 9), dtype=dtype)
    for j, joint in enumerate(tree.joints):
        lead_q = lead_dof = -1
        mult = offset = 0.0
        if joint.mimic is not None:
            leader = tree.joints[joint.mimic.leader]
            lead_q, lead_dof = leader.q_start, leader.dof_start
            mult, offset = joint.mimic.multiplier, joint.mimic.offset
        joint_i[j] = (JOINT_CODE[joint.type], joint.q_start, joint.dof_start, lead_q, lead_dof)
        joint_f[j, :3], joint_f[j, 3:6] = joint.pos, joint.axis
        joint_f[j, 6:] = (joint.ref, mult, offset)
    return PackedTree(link_i, link_f, joint_i, joint_f)
