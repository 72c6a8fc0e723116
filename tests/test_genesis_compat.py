"""A Genesis user's IK script runs with only its import line changed: the seed page's snippets,
Genesis' asset path for the Panda, ``gs.gpu`` style backends and Genesis' logging level names."""

import numpy as np
import pytest

import engine as gs


@pytest.fixture(scope="module", autouse=True)
def cpu():
    gs.init(backend=gs.cpu, seed=0, precision="32", logging_level="warning")


def test_seed_snippets_run_unchanged():
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.MJCF(file="xml/franka_emika_panda/panda.xml", requires_jac_and_IK=True))
    n_envs = 16
    scene.build(n_envs=n_envs, env_spacing=(1.0, 1.0))

    # multilink (the page's first snippet), batched
    left_finger = robot.get_link("left_finger")
    right_finger = robot.get_link("right_finger")
    target_quat = np.array([0, 1, 0, 0])
    target_pos_left = np.array([0.5, 0.0, 0.5])
    target_pos_right = target_pos_left + np.array([0.0, 0.03, 0])
    q = robot.inverse_kinematics_multilink(
        links=[left_finger, right_finger],
        poss=[target_pos_left, target_pos_right],
        quats=[target_quat, target_quat],
        rot_mask=[False, False, True],  # only restrict direction of z-axis
    )
    assert q.shape == (n_envs, robot.n_qs)
    robot.set_dofs_position(q)

    # batched IK (the page's second snippet)
    target_quat = np.tile(np.array([0, 1, 0, 0]), [n_envs, 1])
    center = np.tile(np.array([0.4, -0.2, 0.25]), [n_envs, 1])
    angular_speed = np.random.uniform(-10, 10, n_envs)
    r = 0.1
    ee_link = robot.get_link("hand")
    i = 7
    target_pos = np.zeros([n_envs, 3])
    target_pos[:, 0] = center[:, 0] + np.cos(i / 360 * np.pi * angular_speed) * r
    target_pos[:, 1] = center[:, 1] + np.sin(i / 360 * np.pi * angular_speed) * r
    target_pos[:, 2] = center[:, 2]
    q = robot.inverse_kinematics(link=ee_link, pos=target_pos, quat=target_quat, rot_mask=[False, False, True])
    robot.set_qpos(q)
    scene.step()
    assert np.allclose(robot.get_links_pos()[:, ee_link.idx_local], target_pos, atol=1e-3)

    # FK and the Jacobian (the page's third snippet)
    jacobian = robot.get_jacobian(link=ee_link)
    assert jacobian.shape == (n_envs, 6, robot.n_dofs)
    qpos = robot.get_qpos()
    links_pos, links_quat = robot.forward_kinematics(qpos)
    assert links_pos.shape == (n_envs, robot.n_links, 3) and links_quat.shape == (n_envs, robot.n_links, 4)


def test_genesis_names_resolve_and_bad_values_are_refused():
    assert gs.morphs.URDF(file="urdf/panda_bullet/panda.urdf").file.name == "panda.urdf"
    with pytest.raises(ValueError, match="requires_jac_and_IK"):
        gs.morphs.MJCF(file="panda", requires_jac_and_IK=False)
    with pytest.raises(ValueError, match="logging_level"):
        gs.init(backend=gs.cpu, logging_level="loud")
    assert (gs.gpu, gs.cuda, gs.vulkan, gs.cpu) == ("gpu", "cuda", "vulkan", "cpu")
