"""Pinocchio as the independent reference for URDF kinematics (used by the tests only).

Maps between our qpos / dof layout and Pinocchio's by joint name, so FK and Jacobians can be
compared for any URDF. Continuous joints are (cos, sin) in Pinocchio and one angle here; mimic
joints are independent joints in Pinocchio's default parse, so their columns are folded into the
leader here the way the engine does.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin


class PinReference:
    def __init__(self, tree):
        self.tree = tree
        self.model = pin.buildModelFromUrdf(str(tree.source))
        self.data = self.model.createData()

    def pin_q(self, qpos: np.ndarray) -> np.ndarray:
        """Pinocchio configuration of our qpos ``(n_qs,)``."""
        q = pin.neutral(self.model)
        for joint in self.tree.joints:
            if joint.n_qs != 1:
                continue
            jid = self.model.getJointId(joint.name)
            pj = self.model.joints[jid]
            value = qpos[joint.q_start]
            if pj.nq == 2:
                q[pj.idx_q:pj.idx_q + 2] = np.cos(value), np.sin(value)
            else:
                q[pj.idx_q] = value
        return q

    def dof_map(self) -> np.ndarray:
        """Pinocchio velocity index of each of our dofs ``(n_dofs,)``."""
        out = np.zeros(self.tree.n_dofs, dtype=int)
        for joint in self.tree.joints:
            if joint.n_dofs == 1:
                out[joint.dof_start] = self.model.joints[self.model.getJointId(joint.name)].idx_v
        return out

    def link_poses(self, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World rotation matrices ``(n_links, 3, 3)`` and positions ``(n_links, 3)`` of every link."""
        q = self.pin_q(qpos)
        pin.framesForwardKinematics(self.model, self.data, q)
        rots, poss = [], []
        for link in self.tree.links:
            frame = self.data.oMf[self.model.getFrameId(link.name, pin.BODY)]
            rots.append(frame.rotation.copy())
            poss.append(frame.translation.copy())
        return np.array(rots), np.array(poss)

    def jacobian(self, qpos: np.ndarray, link_name: str) -> np.ndarray:
        """``(6, n_dofs)`` Jacobian of the link origin, world axes, mimic columns folded."""
        if self.model.nv == 0:  # Pinocchio segfaults on a Jacobian with no column
            return np.zeros((6, 0))
        q = self.pin_q(qpos)
        pin.computeJointJacobians(self.model, self.data, q)
        pin.updateFramePlacements(self.model, self.data)
        fid = self.model.getFrameId(link_name, pin.BODY)
        J_pin = pin.getFrameJacobian(self.model, self.data, fid, pin.LOCAL_WORLD_ALIGNED)
        J = J_pin[:, self.dof_map()]
        for joint in self.tree.joints:
            if joint.mimic is not None:
                leader = self.tree.joints[joint.mimic.leader]
                J[:, leader.dof_start] += joint.mimic.multiplier * J[:, joint.dof_start]
                J[:, joint.dof_start] = 0.0
        return J
