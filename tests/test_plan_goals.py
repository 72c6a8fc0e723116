"""``plan_path`` to Cartesian goals (``goal_link`` / ``goal_pos`` / ``goal_quat``): the path ends
where FK puts the link on its target, clear of the obstacles by the safety margin; a target inside
an obstacle is ``goal_unreachable``; bad goal arguments name themselves."""

from __future__ import annotations

import numpy as np
import pytest

import engine as gs
from engine.errors import IKStudioError

CRATE = dict(pos=(0.45, 0.0, 0.45), size=(0.1, 0.5, 0.3))
LEFT = np.array([1.1, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.04, 0.04])
DOWN = np.array([0.0, 1.0, 0.0, 0.0])


@pytest.fixture(scope="module")
def panda():
    gs.init(backend="cpu", precision="32", seed=0)
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.add_entity(gs.morphs.Box(fixed=True, **CRATE))
    scene.build(n_envs=4)
    return robot


def hand_pose(robot, q):
    pose = robot.configuration.fk_poses(np.ascontiguousarray(q, np.float32))
    return pose[:, robot.get_link("panda_hand").idx_local].astype(float)


def test_cartesian_goals_are_reached_around_the_crate(panda):
    pos = np.array([[0.3, -0.45, 0.4], [0.35, -0.4, 0.3], [0.45, 0.0, 0.45], [0.25, -0.5, 0.5]])
    res = panda.plan_path(qpos_start=LEFT, goal_link="panda_hand", goal_pos=pos, goal_quat=np.tile(DOWN, (4, 1)),
                          num_waypoints=30, seed=1, safety_margin=0.01, return_info=True)
    assert res.reason == ["ok", "ok", "goal_unreachable", "ok"]  # env 2's target is inside the crate
    for e in (0, 1, 3):
        end = hand_pose(panda, res.path[-1, e:e + 1])[0]
        assert np.linalg.norm(end[:3] - pos[e]) < 1e-3
        assert abs(abs(np.dot(end[3:], DOWN)) - 1) < 1e-4
        np.testing.assert_allclose(res.path[-1, e], res.goal[e], atol=1e-6)
        np.testing.assert_allclose(res.path[0, e], LEFT, atol=1e-6)
        assert panda.collision_distance(res.goal[e:e + 1].repeat(4, 0)).min() >= 0.01 - 1e-5
    np.testing.assert_allclose(res.path[:, 2], np.tile(LEFT, (30, 1)), atol=1e-6)  # unmoved


def test_position_only_goals_with_masks_and_a_trajectory(panda):
    pos = np.array([0.3, -0.45, 0.4])
    traj = panda.plan_path(qpos_start=LEFT, goal_link=panda.get_link("panda_hand"), goal_pos=pos, seed=2,
                           goal_pos_mask=(True, True, False), return_trajectory=True, dt=0.02)
    assert traj.valid.all(), traj.reason
    end = hand_pose(panda, traj.qpos[-1])
    assert np.abs(end[:, :2] - pos[:2]).max() < 1e-3  # x and y only


def test_goal_arguments_name_themselves(panda):
    with pytest.raises(IKStudioError, match="qpos_goal, goal_link"):
        panda.plan_path(LEFT, goal_link="panda_hand", goal_pos=(0.3, 0.0, 0.4))
    with pytest.raises(IKStudioError, match="qpos_goal, goal_link"):
        panda.plan_path()
    with pytest.raises(IKStudioError, match="goal_link"):
        panda.plan_path(goal_link="nope", goal_pos=(0.3, 0.0, 0.4))
    with pytest.raises(IKStudioError, match="goal_pos"):
        panda.plan_path(goal_link="panda_hand", goal_pos=(0.3, 0.0))
    with pytest.raises(IKStudioError, match="goal_solutions"):
        panda.plan_path(goal_link="panda_hand", goal_pos=(0.3, 0.0, 0.4), goal_solutions=0)
    with pytest.raises(IKStudioError, match="goal_rot_mask"):
        panda.plan_path(goal_link="panda_hand", goal_pos=(0.3, 0.0, 0.4), goal_rot_mask=(1, 2, 3))
