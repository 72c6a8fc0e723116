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
