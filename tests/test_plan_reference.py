"""``plan_path`` judged at mesh level by Pinocchio + coal (tests/_plan_judge.py).

Random start / goal pairs in clutter (the sphere model calls both free), one per env: every path
reported valid starts at its start, ends at its goal, stays within the joint limits, and is free
at mesh level along each segment (checked at 1 mm / 0.005 rad steps where the mesh clearance
proves nothing more). A wall with a window that only the goal's arm passes through is solved.
"""

from __future__ import annotations

import numpy as np
from _plan_judge import SegmentJudge
from _support import skip_or_fail  # noqa: F401  (CI rules: skips are failures there)

import engine as gs
from engine.collision.robot import sample_qpos

N_ENVS = 32  # 64 envs pass too (64/64 valid) but take ~80 s on this 2-core CPU, over the file budget

CLUTTER = (  # the IK collision tests' clutter: a table, a pillar, a ball, an overhead bar and a crate
    ("box", dict(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3))),
    ("cylinder", dict(pos=(0.45, 0.25, 0.45), radius=0.04, height=0.3)),
    ("sphere", dict(pos=(0.5, -0.25, 0.38), radius=0.07)),
    ("box", dict(pos=(0.45, 0.0, 0.85), size=(0.06, 0.9, 0.06))),
    ("box", dict(pos=(0.7, 0.0, 0.4), size=(0.14, 0.2, 0.2))),
)
WINDOW = (  # a wall at x = 0.5 m with a 0.4 x 0.4 m window around (y, z) = (0, 0.5)
    ("box", dict(pos=(0.5, 0.0, 0.15), size=(0.04, 1.2, 0.3))),
    ("box", dict(pos=(0.5, 0.0, 1.0), size=(0.04, 1.2, 0.6))),
    ("box", dict(pos=(0.5, 0.4, 0.5), size=(0.04, 0.4, 0.4))),
    ("box", dict(pos=(0.5, -0.4, 0.5), size=(0.04, 0.4, 0.4))),
)
MORPHS = {"box": gs.morphs.Box, "cylinder": gs.morphs.Cylinder, "sphere": gs.morphs.Sphere}


def build(obstacles, n_envs):
    gs.init(backend="cpu", precision="32", seed=0)
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    morphs = [MORPHS[kind](fixed=True, **kw) for kind, kw in obstacles]
    for m in morphs:
        scene.add_entity(m)
    scene.build(n_envs=n_envs)
    return scene, panda, morphs


def free_configurations(panda, n, seed):
    kept, B = [], panda.configuration.n_envs
    for k in range(50):
        q = sample_qpos(panda.tree, B, seed=seed + k)
        kept.extend(q[~panda.in_collision(q)])
        if len(kept) >= n:
            return np.array(kept[:n])
    raise AssertionError("too few free configurations")


def check_paths(panda, judge, path, valid, start, goal):
    lo, hi = panda.q_limits
    for e in np.flatnonzero(valid):
        p = path[:, e].astype(float)
        np.testing.assert_allclose(p[0], start[e], atol=1e-6)
        np.testing.assert_allclose(p[-1], goal[e], atol=1e-6)
        assert (p >= lo - 1e-6).all() and (p <= hi + 1e-6).all(), f"env {e} leaves the joint limits"
        assert judge.path_free(p), f"env {e}: a segment of its valid path collides at mesh level"


def test_clutter_paths_are_collision_free_at_mesh_level():
    _, panda, morphs = build(CLUTTER, N_ENVS)
    q = free_configurations(panda, 2 * N_ENVS, seed=5)
    start, goal = q[:N_ENVS], q[N_ENVS:]
    res = panda.plan_path(goal, qpos_start=start, num_waypoints=30, max_retry=2, seed=3, return_info=True)
    assert res.path.shape == (30, N_ENVS, panda.n_qs)
    # feasible problems: at least 90 % solved within the default budget and two attempts
    assert res.valid.mean() >= 0.9, list(zip(res.valid, res.reason))
    assert set(res.reason) <= {"ok", "node_budget"}
    judge = SegmentJudge(panda, morphs)
    check_paths(panda, judge, res.path, res.valid, start, goal)
    assert (res.length[res.valid] >= np.linalg.norm(goal - start, axis=1)[res.valid] - 1e-4).all()
    print(f"{res.valid.sum()}/{N_ENVS} valid, {judge.evaluations} mesh-level checks, "
          f"{res.planning_time:.2f} s planning")


READY = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.04, 0.04])  # hand in front of the wall


def test_a_wall_with_a_window_is_passed():
    _, panda, morphs = build(WINDOW, 4)
    hand = panda.get_link("panda_hand").idx_local
    q = sample_qpos(panda.tree, 4000, seed=1)
    beyond = q[panda.configuration.fk_poses(q.astype(np.float32))[:, hand, 0] > 0.62]  # hand behind the wall
    chunks = np.split(beyond[:len(beyond) // 4 * 4], len(beyond) // 4)
    goal = np.concatenate([k[~panda.in_collision(k)] for k in chunks])
    assert len(goal) >= 4, "too few free configurations reaching through the window"
    goal = goal[:4]
    start = np.tile(READY, (4, 1))
    assert (panda.configuration.fk_poses(start.astype(np.float32))[:, hand, 0] < 0.45).all()
    assert not panda.in_collision(start).any()
    res = panda.plan_path(goal, qpos_start=start, num_waypoints=80, seed=7, max_nodes=4000, resolution=0.1,
                          return_info=True)
    assert res.valid.all(), res.reason
    judge = SegmentJudge(panda, morphs)
    check_paths(panda, judge, res.path, res.valid, start, goal)


def test_the_judge_sees_a_path_that_ignores_collisions():
    """``ignore_collision=True`` gives the straight line from start to goal, here through an
    obstacle (the sphere model says so at its middle); the judge must call it colliding (so the
    judge can fail), and the planned path between the same two must pass."""
    _, panda, morphs = build(CLUTTER, 2)
    q = free_configurations(panda, 40, seed=9)
    mid = 0.5 * (q[:20] + q[20:])
    hit = np.concatenate([panda.in_collision(mid[k:k + 2]) for k in range(0, 20, 2)])
    k = int(np.flatnonzero(hit)[0])
    start, goal = np.tile(q[k], (2, 1)), np.tile(q[20 + k], (2, 1))
    path, valid = panda.plan_path(goal, qpos_start=start, num_waypoints=21, ignore_collision=True,
                                  return_valid_mask=True)
    assert valid.all()
    line = start[0] + np.linspace(0, 1, 21)[:, None] * (goal[0] - start[0])
    np.testing.assert_allclose(path[:, 0], line, atol=1e-5)
    judge = SegmentJudge(panda, morphs)
    assert not judge.path_free(path[:, 0].astype(float))
    res = panda.plan_path(goal, qpos_start=start, num_waypoints=30, seed=1, return_info=True)
    assert res.valid.all(), res.reason
    assert judge.path_free(res.path[:, 0].astype(float))
