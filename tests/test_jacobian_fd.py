"""Jacobians equal central finite differences of ``forward_kinematics`` (f64, eps 1e-6, tol 1e-6).

For every link of the test MJCF (free base, ball, two-hinge body, offset hinge, slide, hinge with
ref) and of the Panda, at a point fixed to the link, at random configurations:

- linear rows: d(point)/dq_k = (point(q + eps e_k) - point(q - eps e_k)) / (2 eps);
- angular rows: rotation vector of R(q + eps e_k) R(q - eps e_k)^T, divided by 2 eps.

A dof perturbation moves qpos the way the dof is defined: 1-dof joints add to their qpos entry;
a free joint's linear dofs add to its (world) position and its angular dofs rotate its quaternion
in the body frame, q * exp(eps e_k); a ball joint's dofs likewise, q * exp(eps e_k). A mimic
follower's column is zero: FD perturbs its leader only (the follower follows it in FK).
"""

from __future__ import annotations

import numpy as np
import pytest
from _backend import init_engine
from _robots import TEST_MJCF, random_qpos
from scipy.spatial.transform import Rotation

import engine
from engine import morphs
from engine.transforms import quat_from_axis_angle, quat_mul, quat_to_matrix

EPS = 1e-6
TOL = 1e-6
N_CONFIGS = 3


@pytest.fixture(scope="module", autouse=True)
def f64(backend):
    init_engine(precision="64")


def perturbed(tree, qpos: np.ndarray, dof: int, step: float) -> np.ndarray:
    """qpos (n_qs,) moved by ``step`` along dof ``dof``."""
    q = qpos.copy()
    joint = next(j for j in tree.joints if j.dof_start <= dof < j.dof_start + j.n_dofs)
    k = dof - joint.dof_start
    s = joint.q_start
    if joint.type == "free" and k < 3:
        q[s + k] += step
    elif joint.type in ("free", "ball"):
        a = s + 3 if joint.type == "free" else s
        axis = np.eye(3)[k % 3]
        q[a:a + 4] = quat_mul(q[a:a + 4], quat_from_axis_angle(axis, step))  # body frame: q * exp
    else:
        q[s] += step
    return q


def fd_jacobians(robot, qpos: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``(n_links, 6, n_dofs)`` central-difference Jacobians of ``points`` (n_links, 3), link frames."""
    tree = robot.tree
    followers = {j.dof_start for j in tree.joints if j.mimic is not None}
    J = np.zeros((robot.n_links, 6, robot.n_dofs))
    for dof in range(robot.n_dofs):
        if dof in followers:
            continue
        ends = []
        for step in (EPS, -EPS):
            pos, quat = robot.forward_kinematics(perturbed(tree, qpos, dof, step))
            R = quat_to_matrix(quat)
            ends.append((pos + np.einsum("lij,lj->li", R, points), R))
        (p_plus, R_plus), (p_minus, R_minus) = ends
        J[:, :3, dof] = (p_plus - p_minus) / (2 * EPS)
        dR = np.einsum("lij,lkj->lik", R_plus, R_minus)  # R+ R-^T
        J[:, 3:, dof] = Rotation.from_matrix(dR).as_rotvec() / (2 * EPS)
    return J


@pytest.mark.parametrize("name", ["test_model", "panda"])
def test_jacobian_matches_finite_differences(name, tmp_path):
    if name == "test_model":
        file = tmp_path / "kinematics_test.xml"
        file.write_text(TEST_MJCF)
    else:
        file = "panda"
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file=file))
    scene.build()
    rng = np.random.default_rng(7)
    if name == "test_model":
        assert {j.type for j in robot.tree.joints} >= {"free", "ball", "revolute", "prismatic"}
    else:
        assert any(j.mimic is not None for j in robot.tree.joints)
    for _ in range(N_CONFIGS):
        robot.set_qpos(random_qpos(robot, rng, 1)[0])
        qpos = robot.get_qpos()
        points = rng.uniform(-0.2, 0.2, (robot.n_links, 3))
        fd = fd_jacobians(robot, qpos, points)
        for l, link in enumerate(robot.links):
            J = robot.get_jacobian(link, local_point=points[l])
            np.testing.assert_allclose(J, fd[l], atol=TOL, rtol=0, err_msg=f"{name}: link '{link.name}'")
        assert np.abs(fd).max() > 0.1  # the comparison is not vacuous
    scene.destroy()
