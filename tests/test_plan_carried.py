"""``plan_path(..., ee_link_name=, with_entity=)``: a rod held by the hand is planned with, and
judged by coal (the rod's box against the obstacles' boxes along every segment); a goal where the
rod, not the robot, would sit in an obstacle is refused for the rod only."""

from __future__ import annotations

import coal
import numpy as np
import pytest

import engine as gs
from engine.errors import IKStudioError
from engine.transforms import quat_rotate, quat_to_matrix

LEFT = np.array([1.1, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.04, 0.04])
RIGHT = np.array([-1.1, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.04, 0.04])
CRATE = dict(pos=(0.45, 0.0, 0.45), size=(0.1, 0.5, 0.3))
ROD = (0.03, 0.03, 0.5)  # m, along the hand's z axis
REL = np.array([0.0, 0.0, 0.1])  # the rod's centre in the hand frame


def hand_pose(robot, q):
    pose = robot.configuration.fk_poses(np.ascontiguousarray(np.atleast_2d(q), np.float32))
    return pose[:, robot.get_link("panda_hand").idx_local].astype(float)


@pytest.fixture(scope="module")
def scene():
    gs.init(backend="cpu", precision="32", seed=0)
    probe = gs.Scene()
    arm = probe.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    probe.build()
    end = hand_pose(arm, RIGHT)[0]
    post_pos = end[:3] + quat_rotate(end[3:], [0.0, 0.0, 0.3])  # where the rod's lower end will be at RIGHT
    s = gs.Scene()
    robot = s.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    s.add_entity(gs.morphs.Box(fixed=True, **CRATE))
    s.add_entity(gs.morphs.Box(fixed=True, pos=tuple(post_pos), size=(0.06, 0.06, 0.06)))
    rod = s.add_entity(gs.morphs.Box(size=ROD, pos=(0.0, 0.0, 2.0)))
    s.build(n_envs=2)
    robot.set_qpos(np.tile(LEFT, (2, 1)))
    h = hand_pose(robot, LEFT)[0]
    rod.set_qpos(np.tile(np.concatenate([h[:3] + quat_rotate(h[3:], REL), h[3:]]), (2, 1)))
    obstacles = [(coal.Box(*CRATE["size"]), coal.Transform3s(np.eye(3), np.array(CRATE["pos"], float))),
                 (coal.Box(0.06, 0.06, 0.06), coal.Transform3s(np.eye(3), post_pos))]
    return robot, rod, obstacles


def rod_clearance(robot, path, obstacles, per_segment=20):
    """Smallest coal distance (m) of the rod's box to the obstacles along ``path (T, n)``."""
    t = np.linspace(0, 1, per_segment, endpoint=False)[:, None, None]
    q = (path[:-1][None] + t * (path[1:] - path[:-1])[None]).reshape(-1, path.shape[1])
    q = np.concatenate([q, path[-1:]])
    box, best = coal.Box(*ROD), np.inf
    for pose in hand_pose(robot, q):
        tf = coal.Transform3s(quat_to_matrix(pose[3:]), pose[:3] + quat_rotate(pose[3:], REL))
        for shape, stf in obstacles:
            best = min(best, coal.distance(box, tf, shape, stf, coal.DistanceRequest(), coal.DistanceResult()))
    return best


def test_a_carried_rod_is_planned_with_and_clear_of_the_obstacles(scene):
    robot, rod, obstacles = scene
    goal = np.array([-1.1, -0.2, 0.0, -2.2, 0.0, 2.0, 0.785, 0.04, 0.04])  # beyond the crate, above the post
    assert rod_clearance(robot, np.stack([goal, goal]), obstacles) > 0.01
    res = robot.plan_path(np.tile(goal, (2, 1)), num_waypoints=40, seed=3, ee_link_name="panda_hand",
                          with_entity=rod, safety_margin=0.005, return_info=True)
    assert res.valid.all(), res.reason
    for e in range(2):
        assert rod_clearance(robot, res.path[:, e].astype(float), obstacles) > 0.004


def test_a_goal_only_the_rod_collides_at_is_refused_with_the_rod(scene):
    robot, rod, obstacles = scene
    assert rod_clearance(robot, np.stack([RIGHT, RIGHT]), obstacles) < 0  # the rod's lower end in the post
    plain = robot.plan_path(RIGHT, num_waypoints=20, seed=4, return_info=True)
    assert plain.valid.all(), plain.reason  # the robot alone reaches it
    held = robot.plan_path(RIGHT, num_waypoints=20, seed=4, ee_link_name="panda_hand", with_entity=rod,
                           return_info=True)
    assert held.reason == ["goal_in_collision"] * 2


def test_carried_bodies_are_checked(scene):
    robot, rod, _ = scene
    with pytest.raises(IKStudioError, match="ee_link_name"):
        robot.plan_path(RIGHT, with_entity=rod)
    with pytest.raises(IKStudioError, match="with_entity"):
        robot.plan_path(RIGHT, ee_link_name="panda_hand", with_entity=robot)
    q = rod.get_qpos()
    q[1, 0] += 0.05  # env 1 holds the rod elsewhere
    rod.set_qpos(q)
    try:
        with pytest.raises(IKStudioError, match="differently"):
            robot.plan_path(RIGHT, ee_link_name="panda_hand", with_entity=rod)
    finally:
        q[1, 0] -= 0.05
        rod.set_qpos(q)
