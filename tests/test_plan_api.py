"""``plan_path``: Genesis' call and return conventions, the status, failures with their reasons,
retries, envs_idx subsets, safety_margin (determinism across processes and backends:
test_plan_backends.py)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as gs
from engine.errors import IKStudioError

CRATE = dict(pos=(0.45, 0.0, 0.45), size=(0.1, 0.5, 0.3))  # between the two poses below
LEFT = np.array([1.1, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.04, 0.04])
RIGHT = np.array([-1.1, 0.3, 0.0, -1.8, 0.0, 2.1, 0.785, 0.04, 0.04])


@pytest.fixture(scope="module")
def scenes():
    gs.init(backend="cpu", precision="32", seed=0)
    batched = gs.Scene()
    panda = batched.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    batched.add_entity(gs.morphs.Box(fixed=True, **CRATE))
    batched.build(n_envs=4)
    single = gs.Scene()
    one = single.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    single.add_entity(gs.morphs.Box(fixed=True, **CRATE))
    single.build()
    assert not panda.in_collision(np.tile(LEFT, (4, 1))).any() and not panda.in_collision(np.tile(RIGHT, (4, 1))).any()
    # the straight line between them runs through the crate
    assert panda.in_collision(np.tile(0.5 * (LEFT + RIGHT), (4, 1))).all()
    return panda, one


def dense(path, k=20):
    """Configurations every 1/k of each segment of ``path (T, n)``."""
    t = np.linspace(0, 1, k, endpoint=False)[:, None, None]
    return (path[:-1][None] + t * (path[1:] - path[:-1])[None]).reshape(-1, path.shape[1])


def test_shapes_and_conventions(scenes):
    panda, one = scenes
    path = panda.plan_path(RIGHT, qpos_start=np.tile(LEFT, (4, 1)), seed=1)
    assert path.shape == (300, 4, 9) and path.dtype == np.float32
    path, valid = panda.plan_path(np.tile(RIGHT, (4, 1)), qpos_start=LEFT, num_waypoints=50, seed=1,
                                  return_valid_mask=True)
    assert path.shape == (50, 4, 9) and valid.shape == (4,) and valid.all()
    np.testing.assert_allclose(path[0], np.tile(LEFT, (4, 1)), atol=1e-6)
    np.testing.assert_allclose(path[-1], np.tile(RIGHT, (4, 1)), atol=1e-6)
    sub, v1 = panda.plan_path(RIGHT, qpos_start=LEFT, num_waypoints=50, seed=1, envs_idx=[2], return_valid_mask=True)
    assert sub.shape == (50, 1, 9) and v1.shape == (1,)
    np.testing.assert_array_equal(sub[:, 0], path[:, 2])  # an env's draws do not depend on the others
    p1, ok = one.plan_path(RIGHT, qpos_start=LEFT, num_waypoints=50, seed=1, return_valid_mask=True)
    assert p1.shape == (50, 9) and ok is True
    one.set_qpos(LEFT)
    p2 = one.plan_path(RIGHT, num_waypoints=50, seed=1)  # qpos_start=None: the current qpos
    np.testing.assert_array_equal(p1, p2)
    np.testing.assert_allclose(one.get_qpos(), LEFT, atol=1e-6)  # the state is never touched
    with pytest.raises(ValueError, match="envs_idx"):
        one.plan_path(RIGHT, envs_idx=[0])


def test_status_and_certified_paths(scenes):
    panda, _ = scenes
    res = panda.plan_path(RIGHT, qpos_start=LEFT, num_waypoints=40, seed=2, return_info=True)
    assert res.valid.all() and res.certified.all() and res.reason == ["ok"] * 4
    assert res.planning_time > 0 and (res.nodes >= 2).all() and (res.attempts == 1).all()
    straight = np.linalg.norm(RIGHT - LEFT)
    for e in range(4):
        p = res.path[:, e].astype(float)
        assert res.length[e] == pytest.approx(np.linalg.norm(np.diff(p, axis=0), axis=1).sum(), rel=1e-6)
        assert res.length[e] > straight  # around the crate, not through it
    # every segment free at the sphere level, at 20 points per segment
    for e in range(4):
        q = dense(res.path[:, e].astype(float))
        q = q[:len(q) // 4 * 4]
        assert not any(panda.in_collision(q[k:k + 4]).any() for k in range(0, len(q), 4))


def test_rrt_planner_and_unsmoothed_paths(scenes):
    panda, _ = scenes
    res = panda.plan_path(RIGHT, qpos_start=LEFT, planner="RRT", num_waypoints=40, seed=3, max_nodes=3000,
                          return_info=True)
    assert res.valid.all(), res.reason
    raw = panda.plan_path(RIGHT, qpos_start=LEFT, num_waypoints=40, seed=3, smooth_path=False, return_info=True)
    smooth = panda.plan_path(RIGHT, qpos_start=LEFT, num_waypoints=40, seed=3, return_info=True)
    assert raw.valid.all() and smooth.valid.all()
    assert (smooth.length <= raw.length + 1e-6).all() and (smooth.length < raw.length).any()
    # fewer waypoints than the raw RRT path's vertices: shortcut until every vertex is a waypoint
    few = panda.plan_path(RIGHT, qpos_start=LEFT, planner="RRT", num_waypoints=6, seed=3, max_nodes=3000,
                          smooth_path=False, return_info=True)
    assert few.valid.all() and few.certified.all(), few.reason
    for e in range(4):
        q = dense(few.path[:, e].astype(float), 40)
        q = q[:len(q) // 4 * 4]
        assert not any(panda.in_collision(q[k:k + 4]).any() for k in range(0, len(q), 4))


def test_infeasible_problems_come_back_invalid_with_their_reason(scenes):
    panda, _ = scenes
    inside = 0.5 * (LEFT + RIGHT)  # the arm in the crate
    assert panda.in_collision(np.tile(inside, (4, 1))).all()
    goals = np.stack([RIGHT, inside, RIGHT, RIGHT])
    starts = np.stack([LEFT, LEFT, inside, LEFT])
    hi = panda.q_limits[1]
    goals[3, 0] = hi[0] + 0.1  # beyond the first joint's limit
    res = panda.plan_path(goals, qpos_start=starts, num_waypoints=20, seed=4, return_info=True)
    assert res.reason == ["ok", "goal_in_collision", "start_in_collision", "goal_out_of_limits"]
    assert res.valid.tolist() == [True, False, False, False]
    for e in (1, 2, 3):  # a failed env keeps its start: playing it does not move the robot
        np.testing.assert_allclose(res.path[:, e], np.tile(starts[e], (20, 1)), atol=1e-6)
        assert res.length[e] == 0


def test_budget_timeout_and_retries(scenes):
    panda, _ = scenes
    res = panda.plan_path(RIGHT, qpos_start=LEFT, max_nodes=3, num_waypoints=10, seed=5, return_info=True)
    assert res.reason == ["node_budget"] * 4 and not res.valid.any() and (res.nodes <= 3).all()
    res = panda.plan_path(RIGHT, qpos_start=LEFT, timeout=1e-9, num_waypoints=10, seed=5, return_info=True)
    assert res.reason == ["timeout"] * 4
    goals = np.stack([RIGHT, LEFT, RIGHT, LEFT])  # envs 1 and 3: goal == start, solved at once
    res = panda.plan_path(goals, qpos_start=LEFT, max_nodes=40, max_retry=3, num_waypoints=10, seed=5,
                          return_info=True)
    assert res.valid[[1, 3]].all() and (res.attempts[[1, 3]] == 1).all()
    assert (res.attempts[[0, 2]][~res.valid[[0, 2]]] == 3).all()  # only failed envs were retried
    assert (res.attempts[[0, 2]] >= 1).all()


def test_safety_margin(scenes):
    panda, _ = scenes
    res = panda.plan_path(RIGHT, qpos_start=LEFT, num_waypoints=40, seed=6, safety_margin=0.04, return_info=True)
    assert res.valid.all(), res.reason
    for e in range(4):
        q = dense(res.path[:, e].astype(float))
        q = q[:len(q) // 4 * 4]
        d = np.concatenate([panda.collision_distance(q[k:k + 4]) for k in range(0, len(q), 4)])
        assert d.min() >= 0.04 - 1e-5
    near = panda.plan_path(RIGHT, qpos_start=LEFT, num_waypoints=10, seed=6, safety_margin=2.0, return_info=True)
    assert near.reason == ["start_in_collision"] * 4  # nothing is 2 m from the crate


def test_bad_arguments_name_themselves(scenes):
    panda, _ = scenes
    cases = [(dict(planner="PRM"), "planner"), (dict(num_waypoints=0), "num_waypoints"),
             (dict(resolution=-1), "resolution"), (dict(max_nodes=1.5), "max_nodes"),
             (dict(max_retry=0), "max_retry"), (dict(safety_margin=-0.1), "safety_margin"),
             (dict(timeout=0), "timeout"), (dict(with_entity=object()), "with_entity"),
             (dict(ee_link_name="nope"), "ee_link_name"), (dict(seed=1.5), "seed"),
             (dict(smooth_path="yes"), "smooth_path")]
    for kwargs, name in cases:
        with pytest.raises(IKStudioError, match=name):
            panda.plan_path(RIGHT, **kwargs)
    with pytest.raises(IKStudioError, match="qpos_goal"):
        panda.plan_path(np.zeros(3))


def test_free_base_robots_are_refused(scenes):
    scene = gs.Scene()
    floating = scene.add_entity(gs.morphs.URDF(file="erd:panda"))
    scene.build()
    with pytest.raises(IKStudioError, match="free joint"):
        floating.plan_path(floating.get_qpos())
