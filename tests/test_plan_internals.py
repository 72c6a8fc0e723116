"""The planner's parts on their own: the motion bound holds against FK (dense samples of random
segments), the nearest-node search gives the same answer split over launches (as on a software
Vulkan device) as in one, the draws depend only on their coordinates, resampling keeps vertices."""

from __future__ import annotations

import numpy as np
import pytest

import engine as gs
from engine.collision.robot import sample_qpos
from engine.plan import trees
from engine.plan.bounds import lever_arms, motion_bound
from engine.plan.draws import uniform
from engine.plan.smoothing import resample
from engine.runtime.state import STATE
from engine.transforms import quat_rotate


@pytest.fixture(scope="module")
def robots():
    gs.init(backend="cpu", precision="64", seed=0)
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    mj = scene.add_entity(gs.morphs.MJCF(file="panda"))  # MJCF bodies: joints with anchors, slides
    scene.build()
    return panda, mj


@pytest.mark.parametrize("which", [0, 1])
def test_no_sphere_moves_farther_than_the_bound(robots, which):
    robot = robots[which]
    model = robot.collision_model()
    sp = model.spheres
    R = lever_arms(robot.tree, sp.link, sp.centers)
    qa, qb = sample_qpos(robot.tree, 40, seed=1), sample_qpos(robot.tree, 40, seed=2)
    qb = qa + 0.3 * (qb - qa)  # segments of a few tenths of a radian, and longer ones below
    for a, b in zip(np.concatenate([qa, qa[:10]]), np.concatenate([qb, sample_qpos(robot.tree, 10, seed=3)])):
        t = np.linspace(0, 1, 64)[:, None]
        q = robot.tree.apply_mimic(a + t * (b - a))
        pose = robot.configuration.fk_poses(q)[:, sp.link]
        centres = pose[..., :3] + quat_rotate(pose[..., 3:], sp.centers)
        moved = np.linalg.norm(centres - centres[:1], axis=-1).max()
        bound = motion_bound(R, (q[-1] - q[0])[None])[0]
        assert moved <= bound + 1e-9, (moved, bound)
        assert bound < 20 * moved + 0.05  # not absurdly loose either


def test_nearest_nodes_split_over_launches_answer_as_one(robots, monkeypatch):
    rng = np.random.default_rng(0)
    forest = trees.Forest(3, 500, 7, np.float64)
    for _ in range(400):
        envs = np.arange(3)
        forest.add(envs, rng.integers(0, 2, 3), rng.random((3, 7)), np.zeros(3, np.int32), np.ones(3))
    env, tree, target = np.array([0, 1, 2, 2]), np.array([0, 1, 0, 1]), rng.random((4, 7))
    whole = forest.nearest(env, tree, target)
    d = ((forest.host[env, tree] - target[:, None]) ** 2).sum(-1)
    d[np.arange(500)[None] >= forest.count[env, tree][:, None]] = np.inf
    np.testing.assert_array_equal(whole, d.argmin(axis=1))
    monkeypatch.setattr(STATE, "software", True)
    monkeypatch.setattr(trees, "CHUNK_LOOPS", 9 * 37)  # 37 nodes per launch
    np.testing.assert_array_equal(forest.nearest(env, tree, target), whole)


def test_draws_depend_only_on_their_coordinates():
    a = uniform(7, 0, np.array([0, 1, 2, 3]), 5, 9)
    b = uniform(7, 0, np.array([3, 1]), 5, 9)
    np.testing.assert_array_equal(a[[3, 1]], b)
    assert (a >= 0).all() and (a < 1).all() and len(np.unique(a)) == a.size
    assert not np.array_equal(uniform(8, 0, np.array([0]), 5, 9), a[:1])
    assert abs(uniform(1, 2, np.arange(20000), 3, 1).mean() - 0.5) < 0.01


def test_resampling_keeps_vertices_and_spacing():
    path = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 3.0]])
    out, on_edges = resample(path, 9)
    assert on_edges and len(out) == 9
    assert any(np.allclose(p, [1.0, 0.0]) for p in out)  # the corner is a waypoint
    steps = np.linalg.norm(np.diff(out, axis=0), axis=1)
    assert steps.max() / steps.min() < 1.5  # near-even spacing along the path
    dense, on = resample(np.cumsum(np.ones((50, 2)), axis=0), 10)  # more vertices than waypoints
    assert not on and len(dense) == 10
