"""Success flags and errors tell the truth, on every backend, for both solvers, from 1 to 4096 envs.

The FK of each answer (the engine's FK, itself checked against Pinocchio and MuJoCo in
``test_fk_pinocchio.py`` / ``test_fk_mujoco.py`` on the same backend) judges the solver:

* reachable targets (the hand's pose at random configurations): an env flagged as a success is
  within ``pos_tol`` / ``rot_tol`` of its target, and nearly every env succeeds;
* unreachable targets (the same, moved 3 m away): no env is flagged as a success, and the error
  each env reports is the distance its answer really leaves.

On Mesa's lavapipe (Vulkan), an atomic inside the solver's loops once made every env report
success with garbage answers; these tests would have failed on it.
"""

from __future__ import annotations

import numpy as np
import pytest
from _backend import init_engine

import engine
from engine.runtime import state as runtime_state
from engine.transforms import quat_conj, quat_mul

POS_TOL, ROT_TOL = 5e-4, 5e-3
FK_SLACK = 2e-5  # float32: the kernel's FK and the FK that checks it round differently
SIZES = (1, 7, 64, 4096)
MIN_RATE = 0.99  # reachable targets solved (the CPU solves 100 % of these)


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


@pytest.fixture(scope="module")
def scenes(f32):
    """{n_envs: (robot, target pos (n, 3), target quat (n, 4))} for each size in SIZES."""
    out = {}
    for n in SIZES:
        scene = engine.Scene()
        robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
        scene.build(n_envs=n)
        rng = np.random.default_rng(n)
        lo, hi = robot.q_limits
        pos, quat = robot.forward_kinematics(rng.uniform(lo, hi, (n, robot.n_qs)))
        hand = robot.get_link("hand").idx_local
        out[n] = (robot, pos[:, hand].copy(), quat[:, hand].copy())
    return out


def _actual_error(robot, qpos, pos, quat):
    """FK-measured (position m, rotation rad) error of the hand at ``qpos`` against the targets."""
    fk_pos, fk_quat = robot.forward_kinematics(qpos)
    hand = robot.get_link("hand").idx_local
    d = quat_mul(quat.astype(float), quat_conj(fk_quat[:, hand].astype(float)))
    angle = 2.0 * np.arctan2(np.linalg.norm(d[:, 1:], axis=-1), np.abs(d[:, 0]))
    return np.linalg.norm(fk_pos[:, hand] - pos, axis=-1), angle


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kernel", ["generic", "auto"])
def test_reachable_targets_are_solved_and_flags_are_honest(scenes, kernel, n):
    robot, pos, quat = scenes[n]
    res = robot.inverse_kinematics(link="hand", pos=pos, quat=quat, seed=0, kernel=kernel, return_info=True)
    pos_err, rot_err = _actual_error(robot, res.qpos, pos, quat)
    met = (pos_err <= POS_TOL + FK_SLACK) & (rot_err <= ROT_TOL + FK_SLACK)
    false = np.flatnonzero(res.success & ~met)
    assert false.size == 0, (f"{kernel}, {n} envs: {false.size} envs flagged as successes miss their targets "
                             f"(worst {pos_err[false].max():.4g} m, {rot_err[false].max():.4g} rad)")
    rate = met.mean()
    assert rate >= (MIN_RATE if n >= 64 else 1.0), f"{kernel}, {n} envs: {rate:.1%} of reachable targets solved"
    np.testing.assert_allclose(res.pos_error[:, 0], pos_err, atol=FK_SLACK, err_msg="reported position errors")


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("kernel", ["generic", "auto"])
def test_unreachable_targets_are_never_flagged_as_solved(scenes, kernel, n):
    robot, pos, quat = scenes[n]
    far = pos + np.array([3.0, 0.0, 0.0], np.float32)
    res = robot.inverse_kinematics(link="hand", pos=far, quat=quat, seed=0, kernel=kernel, return_info=True,
                                   max_samples=3)
    assert not res.success.any(), f"{kernel}, {n} envs: {res.success.sum()} unreachable targets flagged as solved"
    pos_err, _ = _actual_error(robot, res.qpos, far, quat)
    assert np.all(pos_err > 0.5), "no answer can come within 0.5 m of a target moved 3 m out"
    np.testing.assert_allclose(res.pos_error[:, 0], pos_err, atol=1e-4, err_msg="reported position errors")
    assert np.all(np.isfinite(res.qpos))


@pytest.mark.parametrize("kernel", ["generic", "auto"])
def test_multilink_flags_are_honest(scenes, kernel):
    """The two fingertips at once, z axes only (the seed's multilink example), 64 envs."""
    robot, _, _ = scenes[64]
    rng = np.random.default_rng(11)
    lo, hi = robot.q_limits
    q_src = robot.tree.apply_mimic(rng.uniform(lo, hi, (64, robot.n_qs)))
    fk_pos, fk_quat = robot.forward_kinematics(q_src)
    links = [robot.get_link("left_finger"), robot.get_link("right_finger")]
    idx = [link.idx_local for link in links]
    res = robot.inverse_kinematics_multilink(links=links, poss=[fk_pos[:, i] for i in idx],
                                             quats=[fk_quat[:, i] for i in idx], rot_mask=[False, False, True],
                                             seed=0, kernel=kernel, return_info=True)
    got_pos, got_quat = robot.forward_kinematics(res.qpos)
    for i in idx:
        err = np.linalg.norm(got_pos[:, i] - fk_pos[:, i], axis=-1)
        z_got = _z_axis(got_quat[:, i])
        z_want = _z_axis(fk_quat[:, i])
        angle = np.arccos(np.clip(np.sum(z_got * z_want, axis=-1), -1.0, 1.0))
        met = (err <= POS_TOL + FK_SLACK) & (angle <= ROT_TOL + 1e-3)
        assert not (res.success & ~met).any(), f"{kernel}: a flagged success misses link {i}"
    assert res.success.mean() >= 0.95


def _z_axis(q):
    """World z axis of unit quaternions ``(n, 4)`` (wxyz): ``(n, 3)``."""
    w, x, y, z = (q[:, k].astype(float) for k in range(4))
    return np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=-1)


@pytest.mark.parametrize("kernel", ["generic", "auto"])
def test_answers_do_not_depend_on_how_many_restart_slots_run_side_by_side(scenes, kernel, monkeypatch):
    """One thread running samples 0..5 in turn, or six threads each running one, or three running two:
    every env gets the same answer bit for bit (sample 0 when it succeeds, else the successful
    restart nearest the start within the continuity window, else the lowest successful sample),
    however the threads share the progress hint. Targets far from the start make several envs need
    restarts."""
    from engine.runtime import dispatch

    robot, pos, quat = scenes[64]
    answers = []
    for slots in (1, 6, 3):
        monkeypatch.setattr(dispatch, "restart_slots", lambda n_envs, max_samples, k=slots: min(k, max_samples))
        robot.ik_state.plans.clear()  # plans keep their slot count
        res = robot.inverse_kinematics(link="hand", pos=pos, quat=quat, seed=3, kernel=kernel, return_info=True,
                                       max_samples=6, max_solver_iters=8)
        answers.append(res)
    robot.ik_state.plans.clear()
    assert (answers[0].sample > 0).sum() >= 5, "too few envs needed a restart for this test to mean anything"
    for res in answers[1:]:
        for name in ("qpos", "error", "success", "iterations", "sample"):
            np.testing.assert_array_equal(getattr(res, name), getattr(answers[0], name), err_msg=name)


def test_the_choice_among_restart_slots():
    """engine.kernels.answers on hand-made slots (3 envs x 3 slots; thread t = env + 3 * slot)."""
    from engine.kernels.answers import choose

    B, K, n_qs = 3, 3, 2
    dt = runtime_state.float_dtype()
    best_q = np.zeros((K * B, n_qs + 2), dt)
    best_i = np.full((K * B, 3), -1, np.int32)
    for t in range(K * B):
        best_q[t, :n_qs] = t  # qpos tells which thread won
        best_i[t, 1] = 10 + t  # iterations
    best_err = np.arange(K * B * 6, dtype=dt).reshape(K * B, 1, 6)
    # env 0: slots succeed at samples 4 (slot 1) and 2 (slot 2) -> slot 2
    best_i[0 + 3 * 1, 0], best_i[0 + 3 * 2, 0] = 4, 2
    # env 1: none succeeds; scores 5, 2, 2 -> the first lowest, slot 1
    best_q[[1, 4, 7], n_qs] = (5.0, 2.0, 2.0)
    # env 2: slot 0 succeeds at sample 0, slot 2 at sample 5 but nearer the rest posture
    best_i[2, 0], best_i[2 + 3 * 2, 0] = 0, 5
    best_q[[2, 8], n_qs + 1] = (3.0, 1.0)
    # exhaustive (a rest posture): the successful slot nearest the rest wins; env 0's two tie at 0 -> slot 1
    for exhaustive, winners, samples in ((0, [6, 4, 2], [2, -1, 0]), (1, [3, 4, 8], [4, -1, 5])):
        q, err, info = np.zeros((B, n_qs), dt), np.zeros((B, 1, 6), dt), np.zeros((B, 3), np.int32)
        choose(best_q, best_err, best_i, exhaustive, 0, q, err, info, True)
        np.testing.assert_array_equal(q[:, 0], winners)
        np.testing.assert_array_equal(err[:, 0], best_err[winners, 0])
        np.testing.assert_array_equal(info[:, 0], samples)
        np.testing.assert_array_equal(info[:, 1], [10 + w for w in winners])
