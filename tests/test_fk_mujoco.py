"""Batched FK and Jacobians agree with MuJoCo on every catalog MJCF and on a test model.

MuJoCo is the reference: ``mj_kinematics`` (body ``xpos``/``xquat``) and ``mj_jac`` (``jacp``,
``jacr`` of a point fixed to a body). Our qpos layout is MuJoCo's for MJCF; our link i is MuJoCo
body i+1; dof columns are MuJoCo's (free: world linear, body-frame angular; ball: body frame).

Mimic joints (a joint ``<equality>``, the Panda's finger_joint2 following finger_joint1): our FK
derives the follower from the leader, so MuJoCo gets our qpos with the follower already set, and
our Jacobian folds the follower's column into the leader's:
``J[:, lead] = J_mj[:, lead] + mult * J_mj[:, follower]``, ``J[:, follower] = 0``.
"""

from __future__ import annotations

import zlib

import mujoco
import numpy as np
import pytest
from _backend import init_engine
from _robots import TEST_MJCF, random_qpos

import engine
from engine import assets, morphs

TOL = 1e-9
N_ENVS = 4
N_BATCHES = 2
EQ_JOINT = int(mujoco.mjtEq.mjEQ_JOINT)

# A free-floating base, a ball joint, a body with two hinges, a hinge anchored away from its body's
# origin, a slide joint and a hinge with a nonzero ref; rotated bodies and a branch.
MODELS = [e.name for e in assets.list_robots() if e.format == "mjcf"] + ["test_model"]


@pytest.fixture(scope="module", autouse=True)
def f64(backend):
    init_engine(precision="64")


def model_path(name: str, tmp_path):
    if name == "test_model":
        path = tmp_path / "kinematics_test.xml"
        path.write_text(TEST_MJCF)
        return path
    return assets.resolve(name).path


def joint_equalities(m) -> list[tuple[int, int, np.ndarray]]:
    """(follower dof, leader dof, polycoef) of each active joint-joint equality of MuJoCo model m."""
    out = []
    for e in range(m.neq):
        if m.eq_type[e] == EQ_JOINT and m.eq_obj2id[e] >= 0:
            j1, j2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            out.append((j1, j2, m.eq_data[e][:5].copy()))
    return out


def mujoco_reference(m, d, body: int, local_point):
    """MuJoCo's pose of ``body`` and the (mimic-folded) Jacobian of ``local_point`` on it."""
    point = d.xpos[body] + d.xmat[body].reshape(3, 3) @ local_point
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    mujoco.mj_jac(m, d, jacp, jacr, point, body)
    J = np.vstack([jacp, jacr])
    for j1, j2, coef in joint_equalities(m):
        fol, lead = m.jnt_dofadr[j1], m.jnt_dofadr[j2]
        J[:, lead] += coef[1] * J[:, fol]
        J[:, fol] = 0.0
    return J


def test_test_model_has_every_joint_kind(tmp_path):
    m = mujoco.MjModel.from_xml_path(str(model_path("test_model", tmp_path)))
    kinds = [mujoco.mjtJoint(t).name for t in m.jnt_type]
    assert kinds.count("mjJNT_FREE") == 1 and kinds.count("mjJNT_BALL") == 1
    assert kinds.count("mjJNT_SLIDE") == 1 and kinds.count("mjJNT_HINGE") >= 4
    two = m.body("two_hinge").id
    assert m.body_jntnum[two] == 2
    assert np.linalg.norm(m.jnt_pos[m.joint("hinge_offset").id]) > 0.05
    assert m.qpos0[m.jnt_qposadr[m.joint("hinge_ref").id]] == pytest.approx(0.4)


@pytest.mark.parametrize("name", MODELS)
def test_fk_and_jacobian_match_mujoco(name, tmp_path):
    path = model_path(name, tmp_path)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file=path))
    scene.build(n_envs=N_ENVS)
    assert (robot.n_links, robot.n_qs, robot.n_dofs) == (m.nbody - 1, m.nq, m.nv)
    assert [link.name for link in robot.links] == [m.body(b).name for b in range(1, m.nbody)]
    if name == "panda":
        assert len(joint_equalities(m)) == 1, "the Panda's finger_joint2 mimics finger_joint1"
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    points = rng.uniform(-0.2, 0.2, (robot.n_links, 3))

    for _ in range(N_BATCHES):
        robot.set_qpos(random_qpos(robot, rng, N_ENVS))
        qpos = robot.get_qpos()
        pos, quat = robot.get_links_pos(), robot.get_links_quat()
        fk_pos, fk_quat = robot.forward_kinematics(qpos)
        jac_origin = [robot.get_jacobian(link) for link in robot.links]
        jac_point = [robot.get_jacobian(link, local_point=p) for link, p in zip(robot.links, points)]
        for e in range(N_ENVS):
            d.qpos[:] = qpos[e]
            for j1, j2, coef in joint_equalities(m):  # our follower obeys MuJoCo's equality
                a1, a2 = m.jnt_qposadr[j1], m.jnt_qposadr[j2]
                x = qpos[e, a2] - m.qpos0[a2]
                assert qpos[e, a1] - m.qpos0[a1] == pytest.approx(np.polyval(coef[::-1], x), abs=TOL)
            mujoco.mj_kinematics(m, d)
            mujoco.mj_comPos(m, d)
            for p, q in ((pos[e], quat[e]), (fk_pos[e], fk_quat[e])):
                np.testing.assert_allclose(p, d.xpos[1:], atol=TOL, rtol=0, err_msg=f"{name}: link positions")
                sign = np.where(np.sum(q * d.xquat[1:], axis=1, keepdims=True) < 0, -1.0, 1.0)
                np.testing.assert_allclose(q * sign, d.xquat[1:], atol=TOL, rtol=0,
                                           err_msg=f"{name}: link quaternions (up to sign)")
            for l, link in enumerate(robot.links):
                np.testing.assert_allclose(jac_origin[l][e], mujoco_reference(m, d, l + 1, np.zeros(3)),
                                           atol=TOL, rtol=0, err_msg=f"{name}: Jacobian of '{link.name}' origin")
                np.testing.assert_allclose(jac_point[l][e], mujoco_reference(m, d, l + 1, points[l]),
                                           atol=TOL, rtol=0, err_msg=f"{name}: Jacobian of '{link.name}' at "
                                                                     f"{points[l]}")
    scene.destroy()
