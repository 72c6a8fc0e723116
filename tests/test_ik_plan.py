"""Repeated IK calls reuse a validated request (engine.ik.request) and its plan (engine.ik.plan)
without changing what a call returns.

* a sequence of calls on one entity answers exactly as each call does on a fresh entity;
* results are the caller's own arrays: a later call never changes them;
* plans are keyed by the parameters' values: equal parameters in new objects find the plan,
  a changed parameter gets its own;
* bad targets on a cached plan still raise errors naming the argument, and the next good call is
  unaffected; a bad parameter never enters the cache.
"""

import numpy as np
import pytest
from _backend import init_engine

import engine
from engine.kernels.tables import SOLVE_I

N = 8


@pytest.fixture(scope="module")
def panda(backend):
    init_engine(precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=N)
    yield robot
    scene.destroy()


def _targets(robot, seed):
    lo, hi = robot.q_limits
    q = np.random.default_rng(seed).uniform(lo, hi, (N, robot.n_qs))
    pos, quat = (np.asarray(a, np.float64) for a in robot.forward_kinematics(q))
    hand = robot.get_link("hand").idx_local
    return pos[:, hand], quat[:, hand]


def _solve(robot, pos, quat, **kw):
    return robot.inverse_kinematics("hand", pos, quat, seed=5, return_info=True, kernel="generic", **kw)


def test_repeated_calls_answer_as_fresh_ones(panda):
    answers = []
    for seed in range(3):
        pos, quat = _targets(panda, seed)
        answers.append(_solve(panda, pos, quat))
    kept = [a.qpos.copy() for a in answers]
    for seed, answer, q in zip(range(3), answers, kept):
        np.testing.assert_array_equal(answer.qpos, q)  # later calls did not write into earlier results
        panda.ik_state.plans.clear()  # a fresh plan
        fresh = _solve(panda, *_targets(panda, seed))
        np.testing.assert_array_equal(fresh.qpos, answer.qpos)
        np.testing.assert_array_equal(fresh.error, answer.error)
        assert answer.success.mean() > 0.8
        pos, quat = _targets(panda, seed)
        got = panda.forward_kinematics(answer.qpos)[0][:, panda.get_link("hand").idx_local]
        assert np.all(np.linalg.norm(got - pos, axis=-1)[answer.success] <= 5e-4)


def test_plans_are_keyed_by_value(panda):
    panda.ik_state.plans.clear()
    pos, quat = _targets(panda, 0)
    _solve(panda, pos, quat, rot_mask=[False, False, True])
    _solve(panda, pos.copy(), quat.copy(), rot_mask=(False, False, True))  # equal values, new objects
    assert len(panda.ik_state.plans) == 1
    _solve(panda, pos, quat, rot_mask=[False, True, False])
    _solve(panda, pos, quat, pos_mask=[True, True, False], rot_mask=[False, False, True])
    assert len(panda.ik_state.plans) == 3


def test_bad_targets_on_a_cached_plan(panda):
    pos, quat = _targets(panda, 1)
    good = _solve(panda, pos, quat)
    bad = pos.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="pos: expected finite numbers"):
        _solve(panda, bad, quat)
    with pytest.raises(ValueError, match=r"pos: expected shape \(3,\) or \(8, 3\), got \(7, 3\)"):
        _solve(panda, pos[:7], quat)
    with pytest.raises(ValueError, match="quat: expected non-zero"):
        _solve(panda, pos, np.zeros((N, 4)))
    with pytest.raises(TypeError, match="quat: expected real numbers"):
        _solve(panda, pos, [["a"] * 4] * N)
    again = _solve(panda, pos, quat)
    np.testing.assert_array_equal(again.qpos, good.qpos)


def test_a_bad_parameter_is_never_cached(panda):
    pos, quat = _targets(panda, 2)
    for _ in range(2):  # the second call fails the same way: nothing was kept from the first
        with pytest.raises(ValueError, match="rot_mask"):
            _solve(panda, pos, quat, rot_mask=[True, True, False])
        with pytest.raises(ValueError, match="max_samples"):
            _solve(panda, pos, quat, max_samples=0)


def test_unseeded_calls_draw_new_seeds(panda):
    panda.ik_state.plans.clear()
    pos, quat = _targets(panda, 3)
    seeds = []
    for _ in range(3):
        panda.inverse_kinematics("hand", pos, quat, kernel="generic")
        (plan,) = panda.ik_state.plans.values()  # one plan serves every call
        seeds.append(int(plan.task_i[0, SOLVE_I.seed]))
    assert len(set(seeds)) == 3
    panda.inverse_kinematics("hand", pos, quat, kernel="generic", seed=7)
    assert int(panda.ik_state.plans.values()[-1].task_i[0, SOLVE_I.seed]) == 7
