"""What IK promises besides success rates: joint limits, masks, determinism and batching, multilink
entries, dof subsets and mimic joints, state, return shapes, unreachable targets, the rest pose,
and input validation.

Answers are judged by forward kinematics of the returned qpos (``robot.forward_kinematics``), never
by the solver's own error. f32 on the CPU, on the Panda MJCF (7 arm joints + two mimic fingers).
"""

from __future__ import annotations

import numpy as np
import pytest
from _backend import init_engine
from _robots import axis_angle, rotation_angle

import engine
from engine import morphs
from engine.ik import IKResult
from engine.transforms import quat_from_axis_angle, quat_mul, quat_to_matrix

N_ENVS = 64
POS_TOL = 5e-4
ROT_TOL = 5e-3
LIMIT_SLACK = 1e-6
HAND, LEFT, RIGHT = "hand", "left_finger", "right_finger"
DOWN = np.array([0.0, 1.0, 0.0, 0.0])  # (w, x, y, z): z axis pointing down
FREE = [False, False, False]
Z_ONLY = [False, False, True]


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


@pytest.fixture(scope="module")
def batched_scene(f32):
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build(n_envs=N_ENVS)
    return scene, robot


@pytest.fixture(scope="module")
def single_scene(f32):
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build()
    return scene, robot


@pytest.fixture
def panda(batched_scene):
    """The batched Panda, every env at the default pose."""
    robot = batched_scene[1]
    robot.set_qpos(robot.tree.default_qpos)
    return robot


@pytest.fixture
def panda1(single_scene):
    """The unbatched Panda at the default pose."""
    robot = single_scene[1]
    robot.set_qpos(robot.tree.default_qpos)
    return robot


# -- helpers ------------------------------------------------------------------------------------
def random_q(robot, rng, n, widen=0.0):
    lo, hi = robot.q_limits
    return robot.tree.apply_mimic(rng.uniform(lo - widen, hi + widen, (n, robot.n_qs)))


def poses(robot, q, link, envs_idx=None):
    """FK pose of ``link`` (name) for ``q``: (pos, quat) with the leading axes of ``q``."""
    links_pos, links_quat = robot.forward_kinematics(q, envs_idx=envs_idx)
    i = robot.get_link(link).idx_local
    return links_pos[..., i, :], links_quat[..., i, :]


def within_limits(robot, q):
    lo, hi = robot.q_limits
    return np.all((q >= lo - LIMIT_SLACK) & (q <= hi + LIMIT_SLACK), axis=-1)


def state(robot):
    return (robot.get_qpos(), robot.get_dofs_position(), robot.get_links_pos(), robot.get_links_quat())


def assert_state(robot, before):
    for a, b in zip(before, state(robot)):
        np.testing.assert_array_equal(a, b)


def fk_full_ok(robot, q, link, pos, quat, envs_idx=None):
    p, qq = poses(robot, q, link, envs_idx)
    return (np.linalg.norm(p - pos, axis=-1) <= POS_TOL) & (rotation_angle(qq, quat) <= ROT_TOL)


# -- joint limits -------------------------------------------------------------------------------
def test_joint_limits_hold_in_every_answer(panda):
    """respect_joint_limit=True: reachable, unreachable and out-of-limit-solution targets, starts
    outside the limits (init_qpos and scene state), single link, z axis, multilink, dof subsets."""
    rng = np.random.default_rng(1)
    lo, hi = panda.q_limits
    q_out = random_q(panda, rng, N_ENVS, widen=0.5)  # most rows leave the limits somewhere
    assert not within_limits(panda, q_out).all()
    q_in = random_q(panda, rng, N_ENVS)
    pos = poses(panda, q_in, HAND)[0]
    pos[: N_ENVS // 4] *= 4.0  # unreachable
    pos_out, quat_out = poses(panda, q_out, HAND)  # the start itself is a solution, but outside the limits
    pos[N_ENVS // 2:], quat = pos_out[N_ENVS // 2:], poses(panda, q_in, HAND)[1]
    quat[N_ENVS // 2:] = quat_out[N_ENVS // 2:]
    answers = [
        panda.inverse_kinematics(HAND, pos=pos, quat=quat, init_qpos=q_out, seed=0),
        panda.inverse_kinematics(HAND, pos=pos, quat=quat, init_qpos=q_out, rot_mask=Z_ONLY, seed=1),
        panda.inverse_kinematics(HAND, pos=pos_out, quat=quat_out, init_qpos=q_out, seed=2),
        panda.inverse_kinematics(HAND, pos=pos, init_qpos=q_out, rot_mask=FREE, dofs_idx_local=[0, 3, 5], seed=3),
        panda.inverse_kinematics_multilink([LEFT, RIGHT], poss=[pos, pos + [0.0, 0.03, 0.0]], quats=[quat, None],
                                           init_qpos=q_out, rot_mask=Z_ONLY, seed=4),
    ]
    panda.set_qpos(q_out)  # the scene's own state outside the limits (set_qpos does not clamp)
    answers.append(panda.inverse_kinematics(HAND, pos=pos_out, quat=quat_out, seed=5))
    answers.append(panda.inverse_kinematics(HAND, pos=pos, quat=quat, rest_weight=0.2, max_samples=4, seed=6))
    for k, q in enumerate(answers):
        inside = within_limits(panda, q)
        assert inside.all(), f"call {k}: envs {np.flatnonzero(~inside)[:5]} answered outside the joint limits"
    # the flag is honoured the other way too: without it the out-of-limit start is an answer
    q_free = panda.inverse_kinematics(HAND, pos=pos_out, quat=quat_out, init_qpos=q_out, respect_joint_limit=False,
                                      seed=0)
    assert not within_limits(panda, q_free).all()


# -- masks --------------------------------------------------------------------------------------
def test_pos_mask_ignores_masked_out_axis(panda):
    """pos_mask [T, T, F] with z = 10 m (unreachable): x and y are still met."""
    rng = np.random.default_rng(2)
    target = poses(panda, random_q(panda, rng, N_ENVS), HAND)[0]
    target[:, 2] = 10.0
    info = panda.inverse_kinematics(HAND, pos=target, pos_mask=[True, True, False], rot_mask=FREE, seed=0,
                                    return_info=True)
    p = poses(panda, info.qpos, HAND)[0]
    ok = np.linalg.norm(p[:, :2] - target[:, :2], axis=-1) <= POS_TOL
    assert ok.mean() >= 0.95, f"x, y met in {ok.mean():.1%} of envs"
    np.testing.assert_array_equal(info.success, ok)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_pos_mask_single_axis_is_enforced(panda, axis):
    """pos_mask with one True: that world coordinate is met, the others (3 m off) are ignored."""
    rng = np.random.default_rng(3 + axis)
    reachable = poses(panda, random_q(panda, rng, N_ENVS), HAND)[0]
    target = reachable + 3.0
    target[:, axis] = reachable[:, axis]
    mask = [k == axis for k in range(3)]
    q = panda.inverse_kinematics(HAND, pos=target, pos_mask=mask, rot_mask=FREE, seed=0)
    p = poses(panda, q, HAND)[0]
    ok = np.abs(p[:, axis] - target[:, axis]) <= POS_TOL
    assert ok.mean() >= 0.95, f"axis {axis} met in {ok.mean():.1%} of envs"


def test_rot_mask_all_false_ignores_orientation(panda):
    """rot_mask all False: any quat (here random ones) gives the same answer as no quat, and the
    position is met."""
    rng = np.random.default_rng(4)
    target = poses(panda, random_q(panda, rng, N_ENVS), HAND)[0]
    quat = rng.normal(size=(N_ENVS, 4))
    q_with = panda.inverse_kinematics(HAND, pos=target, quat=quat, rot_mask=FREE, seed=0)
    q_other = panda.inverse_kinematics(HAND, pos=target, quat=DOWN, rot_mask=FREE, seed=0)
    q_without = panda.inverse_kinematics(HAND, pos=target, rot_mask=FREE, seed=0)
    np.testing.assert_array_equal(q_with, q_without)
    np.testing.assert_array_equal(q_other, q_without)
    ok = np.linalg.norm(poses(panda, q_with, HAND)[0] - target, axis=-1) <= POS_TOL
    assert ok.mean() >= 0.95


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_rot_mask_one_axis_aligns_that_local_axis(panda, axis):
    """rot_mask with one True: the link's LOCAL axis k meets the target's axis k for arbitrary
    (random, non-vertical) target orientations, and rotation about it is left free.

    Targets: the pose of random configurations, rotated about their own axis k by a random angle,
    so axis k stays reachable while the full orientation often is not."""
    rng = np.random.default_rng(10 + axis)
    src_pos, src_quat = poses(panda, random_q(panda, rng, N_ENVS), HAND)
    local_axis = np.zeros((N_ENVS, 3))
    local_axis[:, axis] = 1.0
    target_quat = quat_mul(src_quat, quat_from_axis_angle(local_axis, rng.uniform(-np.pi, np.pi, N_ENVS)))
    vertical = np.abs(quat_to_matrix(target_quat)[:, 2, axis]) > 0.99  # world z component of the target axis
    assert vertical.mean() < 0.1, "the targets should be (mostly) non-vertical orientations"
    mask = [k == axis for k in range(3)]
    info = panda.inverse_kinematics(HAND, pos=src_pos, quat=target_quat, rot_mask=mask, seed=0, return_info=True)
    p, qq = poses(panda, info.qpos, HAND)
    pos_ok = np.linalg.norm(p - src_pos, axis=-1) <= POS_TOL
    axis_ok = axis_angle(qq, target_quat, axis) <= ROT_TOL
    ok = pos_ok & axis_ok
    assert ok.mean() >= 0.97, f"axis {axis}: {ok.mean():.1%} of envs aligned"
    np.testing.assert_array_equal(info.success, ok)
    # free about the axis: most answers keep a heading different from the target's (a solver that
    # enforced the full orientation would leave this near 0)
    full = rotation_angle(qq[ok], target_quat[ok])
    assert np.mean(full > 0.1) >= 0.5, f"median full rotation error {np.median(full):.3f} rad"
    # and the axis is not just any axis: the other local axes are generally not aligned
    other = (axis + 1) % 3
    assert np.mean(axis_angle(qq[ok], target_quat[ok], other) > 0.1) >= 0.5


@pytest.mark.parametrize("mask", [[True, True, False], [True, False, True], [False, True, True]])
def test_rot_mask_two_true_raises(panda, mask):
    before = state(panda)
    with pytest.raises(ValueError, match="rot_mask"):
        panda.inverse_kinematics(HAND, pos=[0.4, 0.0, 0.4], quat=DOWN, rot_mask=mask)
    with pytest.raises(ValueError, match="rot_mask"):
        panda.inverse_kinematics_multilink([LEFT, RIGHT], poss=[[0.4, 0.0, 0.4], None], quats=[DOWN, DOWN],
                                           rot_mask=mask)
    assert_state(panda, before)


# -- determinism and batching -------------------------------------------------------------------
def test_same_seed_same_output_bitwise(panda):
    rng = np.random.default_rng(5)
    pos, quat = poses(panda, random_q(panda, rng, N_ENVS), HAND)
    pos[:4] += 2.0  # a few unreachable envs run every restart
    runs = [panda.inverse_kinematics(HAND, pos=pos, quat=quat, seed=123, return_info=True) for _ in range(3)]
    assert (runs[0].sample > 0).any(), "no env needed a restart: the test would not exercise the random starts"
    for other in runs[1:]:
        for field in ("qpos", "error", "success", "iterations", "sample"):
            np.testing.assert_array_equal(getattr(runs[0], field), getattr(other, field), err_msg=field)
    multi = [panda.inverse_kinematics_multilink([LEFT, RIGHT], poss=[pos, pos + [0.0, 0.03, 0.0]],
                                                quats=[quat, quat], rot_mask=Z_ONLY, seed=7) for _ in range(2)]
    np.testing.assert_array_equal(multi[0], multi[1])


def test_different_seeds_only_change_restarts(panda):
    """The seed drives the random restarts only: envs solved from their start (sample 0) under both
    seeds agree exactly, and some env solved by a restart differs."""
    rng = np.random.default_rng(6)
    pos, quat = poses(panda, random_q(panda, rng, N_ENVS), HAND)
    a = panda.inverse_kinematics(HAND, pos=pos, quat=quat, seed=1, return_info=True)
    b = panda.inverse_kinematics(HAND, pos=pos, quat=quat, seed=2, return_info=True)
    from_start = (a.sample == 0) & (b.sample == 0)
    np.testing.assert_array_equal(a.qpos[from_start], b.qpos[from_start])
    restarted = (a.sample > 0) | (b.sample > 0)
    assert restarted.any()
    assert np.any(a.qpos[restarted] != b.qpos[restarted])


def test_shared_targets_equal_per_env_targets(panda):
    pos, quat = np.array([0.45, -0.1, 0.3]), np.array([0.0, 0.8, 0.6, 0.0])
    shared = panda.inverse_kinematics(HAND, pos=pos, quat=quat, seed=9, return_info=True)
    tiled = panda.inverse_kinematics(HAND, pos=np.tile(pos, (N_ENVS, 1)), quat=np.tile(quat, (N_ENVS, 1)), seed=9,
                                     return_info=True)
    np.testing.assert_array_equal(shared.qpos, tiled.qpos)
    np.testing.assert_array_equal(shared.success, tiled.success)
    assert shared.success.all()
    poss = [pos, pos + [0.0, 0.03, 0.0]]
    m_shared = panda.inverse_kinematics_multilink([LEFT, RIGHT], poss=poss, quats=[DOWN, DOWN], rot_mask=Z_ONLY,
                                                  seed=9)
    m_tiled = panda.inverse_kinematics_multilink([LEFT, RIGHT], poss=[np.tile(p, (N_ENVS, 1)) for p in poss],
                                                 quats=[DOWN, np.tile(DOWN, (N_ENVS, 1))], rot_mask=Z_ONLY, seed=9)
    np.testing.assert_array_equal(m_shared, m_tiled)


def test_envs_idx_selects_envs_and_their_start(panda):
    rng = np.random.default_rng(7)
    q_state = random_q(panda, rng, N_ENVS)
    panda.set_qpos(q_state)
    sel = np.array([5, 2, 40])
    before = state(panda)
    # each selected env's own pose as target: solved at once from that env's state
    pos, quat = poses(panda, q_state[sel], HAND, envs_idx=sel)
    q = panda.inverse_kinematics(HAND, pos=pos, quat=quat, envs_idx=sel, seed=0)
    assert q.shape == (len(sel), panda.n_qs)
    np.testing.assert_array_equal(q, panda.get_qpos(envs_idx=sel))
    # new reachable targets for the selected envs, (len(envs_idx), 3) and (len(envs_idx), 4)
    pos, quat = poses(panda, random_q(panda, rng, len(sel)), HAND, envs_idx=sel)
    q, err = panda.inverse_kinematics(HAND, pos=pos, quat=quat, envs_idx=sel, seed=0, return_error=True)
    assert q.shape == (len(sel), panda.n_qs) and err.shape == (len(sel), 6)
    assert fk_full_ok(panda, q, HAND, pos, quat, envs_idx=sel).all()
    assert_state(panda, before)
    with pytest.raises(ValueError, match="pos"):
        panda.inverse_kinematics(HAND, pos=np.zeros((N_ENVS, 3)), envs_idx=sel)


# -- multilink entries ----------------------------------------------------------------------------
def test_multilink_none_entries(panda):
    rng = np.random.default_rng(8)
    q_src = random_q(panda, rng, N_ENVS)
    hand_pos = poses(panda, q_src, HAND)[0]
    left_quat = poses(panda, q_src, LEFT)[1]
    q = panda.inverse_kinematics_multilink([HAND, LEFT], poss=[hand_pos, None], quats=[None, left_quat], seed=0)
    p = poses(panda, q, HAND)[0]
    qq = poses(panda, q, LEFT)[1]
    ok = (np.linalg.norm(p - hand_pos, axis=-1) <= POS_TOL) & (rotation_angle(qq, left_quat) <= ROT_TOL)
    assert ok.mean() >= 0.95, f"{ok.mean():.1%}"
    # orientation only for every link (poss omitted)
    hand_quat = poses(panda, q_src, HAND)[1]
    q = panda.inverse_kinematics_multilink([HAND, LEFT], quats=[hand_quat, left_quat], seed=0)
    ok = (rotation_angle(poses(panda, q, HAND)[1], hand_quat) <= ROT_TOL) & \
         (rotation_angle(poses(panda, q, LEFT)[1], left_quat) <= ROT_TOL)
    assert ok.mean() >= 0.95, f"{ok.mean():.1%}"
    before = state(panda)
    with pytest.raises(ValueError, match=r"poss\[1\], quats\[1\]"):
        panda.inverse_kinematics_multilink([HAND, LEFT], poss=[hand_pos, None], quats=[None, None])
    with pytest.raises(ValueError, match="pos, quat"):
        panda.inverse_kinematics(HAND)
    assert_state(panda, before)


# -- dof subsets and mimic joints -----------------------------------------------------------------
def test_dofs_idx_local_moves_only_those_dofs(panda):
    rng = np.random.default_rng(9)
    active = [0, 1, 3]
    inactive = [d for d in range(panda.n_dofs) if d not in active]
    lo, hi = panda.q_limits
    q_src = np.tile(panda.tree.default_qpos, (N_ENVS, 1))
    q_src[:, active] = rng.uniform(lo[active], hi[active], (N_ENVS, len(active)))
    target = poses(panda, q_src, HAND)[0]
    start = panda.get_qpos()
    q = panda.inverse_kinematics(HAND, pos=target, rot_mask=FREE, dofs_idx_local=active, seed=0)
    np.testing.assert_allclose(q[:, inactive], start[:, inactive], atol=1e-6)
    ok = np.linalg.norm(poses(panda, q, HAND)[0] - target, axis=-1) <= POS_TOL
    assert ok.mean() >= 0.95, f"{ok.mean():.1%}"


def test_mimic_fingers_follow_their_leader(panda):
    """finger_joint2 mimics finger_joint1: answers keep it equal, and moving only the leader (dof 7)
    reaches a target for the follower's link."""
    fj1, fj2 = 7, 8
    q_src = np.tile(panda.tree.default_qpos, (N_ENVS, 1))
    q_src[:, fj1] = q_src[:, fj2] = np.linspace(0.0, 0.04, N_ENVS)
    target = poses(panda, q_src, RIGHT)[0]  # right_finger hangs on the follower joint
    start = panda.get_qpos()
    q = panda.inverse_kinematics(RIGHT, pos=target, rot_mask=FREE, dofs_idx_local=[fj1], seed=0)
    np.testing.assert_array_equal(q[:, fj2], q[:, fj1])
    np.testing.assert_allclose(q[:, :fj1], start[:, :fj1], atol=1e-6)
    assert np.all(np.linalg.norm(poses(panda, q, RIGHT)[0] - target, axis=-1) <= POS_TOL)
    np.testing.assert_allclose(q[:, fj1], q_src[:, fj1], atol=1e-3)
    # whole-robot multilink over both fingers
    rng = np.random.default_rng(10)
    q_rand = random_q(panda, rng, N_ENVS)
    poss = [poses(panda, q_rand, f)[0] for f in (LEFT, RIGHT)]
    q = panda.inverse_kinematics_multilink([LEFT, RIGHT], poss=poss, quats=[DOWN, DOWN], rot_mask=Z_ONLY, seed=0)
    np.testing.assert_array_equal(q[:, fj2], q[:, fj1])


# -- state, return values ---------------------------------------------------------------------------
def test_calls_leave_scene_state_untouched(panda, panda1):
    rng = np.random.default_rng(11)
    panda.set_qpos(random_q(panda, rng, N_ENVS))
    panda1.set_qpos(random_q(panda1, rng, 1)[0])
    before, before1 = state(panda), state(panda1)
    pos = poses(panda, random_q(panda, rng, N_ENVS), HAND)[0]
    panda.inverse_kinematics(HAND, pos=pos, quat=DOWN, rot_mask=Z_ONLY)
    panda.inverse_kinematics(HAND, pos=pos[:3], envs_idx=[0, 1, 2], return_info=True)
    panda.inverse_kinematics_multilink([LEFT, RIGHT], poss=[pos, pos + [0.0, 0.03, 0.0]], quats=[DOWN, DOWN],
                                       rot_mask=Z_ONLY, return_error=True)
    panda.inverse_kinematics(HAND, pos=pos, rot_mask=FREE, rest_weight=0.5, max_samples=4)
    panda.inverse_kinematics(HAND, pos=[10.0, 0.0, 0.0])
    panda1.inverse_kinematics(HAND, pos=pos[0], quat=DOWN)
    panda1.inverse_kinematics_multilink([LEFT, RIGHT], poss=[pos[0], None], quats=[None, DOWN])
    assert_state(panda, before)
    assert_state(panda1, before1)


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_return_shapes(panda, panda1, batched):
    robot = panda if batched else panda1
    lead = (N_ENVS,) if batched else ()
    pos, links = np.array([0.45, 0.1, 0.35]), [HAND, LEFT, RIGHT]
    q = robot.inverse_kinematics(HAND, pos=pos, quat=DOWN, seed=0)
    assert q.shape == lead + (robot.n_qs,)
    q, err = robot.inverse_kinematics(HAND, pos=pos, quat=DOWN, seed=0, return_error=True)
    assert q.shape == lead + (robot.n_qs,) and err.shape == lead + (6,)
    q, err = robot.inverse_kinematics_multilink(links, poss=[pos, None, None], quats=[DOWN, DOWN, DOWN], seed=0,
                                                return_error=True, rot_mask=Z_ONLY)
    assert q.shape == lead + (robot.n_qs,) and err.shape == lead + (3, 6)
    info = robot.inverse_kinematics(HAND, pos=pos, quat=DOWN, seed=0, return_info=True)
    assert isinstance(info, IKResult)
    assert info.qpos.shape == lead + (robot.n_qs,) and info.error.shape == lead + (1, 6)
    for field in ("success", "iterations", "sample"):
        assert np.shape(getattr(info, field)) == lead, field
    assert np.asarray(info.success).dtype == bool
    info = robot.inverse_kinematics_multilink(links[:2], poss=[pos, None], quats=[None, DOWN], seed=0,
                                              return_info=True)
    assert info.error.shape == lead + (2, 6) and info.pos_error.shape == lead + (2,)


def test_info_success_and_error_agree_with_fk(panda):
    """return_info: success is the FK check; the returned error is the FK-measured error."""
    rng = np.random.default_rng(12)
    pos, quat = poses(panda, random_q(panda, rng, N_ENVS), HAND)
    pos[: N_ENVS // 8] += 1.5  # some failures too
    info = panda.inverse_kinematics(HAND, pos=pos, quat=quat, seed=0, return_info=True)
    p, qq = poses(panda, info.qpos, HAND)
    pos_err, rot_err = np.linalg.norm(p - pos, axis=-1), rotation_angle(qq, quat)
    ok = (pos_err <= POS_TOL) & (rot_err <= ROT_TOL)
    assert ok.sum() >= N_ENVS // 2 and (~ok).sum() >= N_ENVS // 8
    # agree, except where FK sits within 1% of a tolerance (f32 rounding on either side)
    borderline = (np.abs(pos_err / POS_TOL - 1) < 0.01) | (np.abs(rot_err / ROT_TOL - 1) < 0.01)
    mismatch = (info.success != ok) & ~borderline
    assert not mismatch.any(), f"envs {np.flatnonzero(mismatch)}: success flag disagrees with FK"
    np.testing.assert_allclose(info.error[:, 0, :3], pos - p, atol=2e-5)
    np.testing.assert_allclose(np.linalg.norm(info.error[:, 0, 3:], axis=-1), rot_err, atol=1e-3)


def test_unreachable_targets_give_best_effort_without_nan(panda, panda1):
    far = np.array([10.0, 0.0, 0.5])
    start_dist = np.linalg.norm(panda.get_links_pos()[:, panda.get_link(HAND).idx_local] - far, axis=-1)
    for kwargs in (dict(quat=DOWN), dict(rot_mask=FREE), dict(quat=DOWN, rot_mask=Z_ONLY)):
        info = panda.inverse_kinematics(HAND, pos=far, seed=0, return_info=True, **kwargs)
        assert np.all(np.isfinite(info.qpos)) and np.all(np.isfinite(info.error))
        assert not info.success.any()
        assert within_limits(panda, info.qpos).all()
        dist = np.linalg.norm(poses(panda, info.qpos, HAND)[0] - far, axis=-1)
        assert np.all(dist < start_dist - 0.3), "the answer should reach toward the target"
    q, err = panda1.inverse_kinematics(HAND, pos=far, quat=DOWN, seed=0, return_error=True)
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(err))
    info = panda.inverse_kinematics_multilink([LEFT, RIGHT], poss=[far, -far], quats=[DOWN, DOWN], seed=0,
                                              return_info=True)
    assert np.all(np.isfinite(info.qpos)) and not info.success.any()


@pytest.mark.parametrize("weight", [0.1, 0.5])
def test_rest_qpos_pulls_answers_toward_rest(panda, weight):
    """Position-only targets (4 spare dofs), all solved without a rest pull: with rest_weight > 0
    each answer still meets its target and is nearer rest_qpos than the answer without it."""
    rng = np.random.default_rng(13)
    rest = random_q(panda, rng, 1)[0]
    target = poses(panda, random_q(panda, rng, N_ENVS), HAND)[0]
    q0 = panda.inverse_kinematics(HAND, pos=target, rot_mask=FREE, seed=0, rest_qpos=rest)
    q1 = panda.inverse_kinematics(HAND, pos=target, rot_mask=FREE, seed=0, rest_qpos=rest, rest_weight=weight)
    reached0 = np.linalg.norm(poses(panda, q0, HAND)[0] - target, axis=-1) <= POS_TOL
    reached1 = np.linalg.norm(poses(panda, q1, HAND)[0] - target, axis=-1) <= POS_TOL
    assert reached0.all()
    assert reached1.all(), f"rest_weight={weight}: envs {np.flatnonzero(~reached1)} lost their solution"
    d0, d1 = np.linalg.norm(q0 - rest, axis=-1), np.linalg.norm(q1 - rest, axis=-1)
    farther = np.flatnonzero(d1 > d0 + 1e-6)
    assert farther.size == 0, (f"rest_weight={weight}: envs {farther} ended farther from rest "
                               f"({d0[farther].round(3)} -> {d1[farther].round(3)})")
    assert d1.mean() < 0.8 * d0.mean(), (d0.mean(), d1.mean())


def test_rest_qpos_defaults_to_default_pose(panda):
    rng = np.random.default_rng(15)
    panda.set_qpos(random_q(panda, rng, N_ENVS))
    target = poses(panda, random_q(panda, rng, N_ENVS), HAND)[0]
    default = panda.tree.default_qpos
    q0 = panda.inverse_kinematics(HAND, pos=target, rot_mask=FREE, seed=0)
    q1 = panda.inverse_kinematics(HAND, pos=target, rot_mask=FREE, seed=0, rest_weight=0.1)
    q2 = panda.inverse_kinematics(HAND, pos=target, rot_mask=FREE, seed=0, rest_weight=0.1, rest_qpos=default)
    np.testing.assert_array_equal(q1, q2)
    assert np.linalg.norm(q1 - default, axis=-1).mean() < np.linalg.norm(q0 - default, axis=-1).mean()


# -- bad input --------------------------------------------------------------------------------------
P, N1 = [0.4, 0.0, 0.4], N_ENVS + 1
BAD_SINGLE = [
    ("pos (2,)", dict(pos=[0.4, 0.0]), ValueError, r"pos: expected shape"),
    ("pos (n+1,3)", dict(pos=np.zeros((N1, 3))), ValueError, r"pos: expected shape"),
    ("pos (n,3,1)", dict(pos=np.zeros((N_ENVS, 3, 1))), ValueError, r"pos: expected shape"),
    ("pos NaN", dict(pos=[np.nan, 0.0, 0.4]), ValueError, r"pos: .*finite"),
    ("pos inf in one env", dict(pos=np.r_[np.zeros((N_ENVS - 1, 3)), [[np.inf, 0, 0]]]), ValueError, "pos"),
    ("quat (3,)", dict(pos=P, quat=[1.0, 0.0, 0.0]), ValueError, r"quat: expected shape"),
    ("quat zero", dict(pos=P, quat=[0.0, 0.0, 0.0, 0.0]), ValueError, r"quat: .*non-zero"),
    ("quat zero in one env", dict(pos=P, quat=np.r_[np.tile(DOWN, (N_ENVS - 1, 1)), [[0, 0, 0, 0]]]), ValueError,
     "quat"),
    ("quat NaN", dict(pos=P, quat=[np.nan, 1.0, 0.0, 0.0]), ValueError, "quat"),
    ("pos_mask short", dict(pos=P, pos_mask=[True, False]), ValueError, "pos_mask"),
    ("pos_mask values", dict(pos=P, pos_mask=[2, 0, 1]), ValueError, "pos_mask"),
    ("rot_mask long", dict(pos=P, rot_mask=[True] * 4), ValueError, "rot_mask"),
    ("rot_mask two", dict(pos=P, quat=DOWN, rot_mask=[True, True, False]), ValueError, "rot_mask"),
    ("pos_tol negative", dict(pos=P, pos_tol=-1e-3), ValueError, "pos_tol"),
    ("rot_tol negative", dict(pos=P, rot_tol=-1e-3), ValueError, "rot_tol"),
    ("envs_idx out of range", dict(pos=P, envs_idx=[0, N_ENVS]), IndexError, "envs_idx"),
    ("envs_idx negative", dict(pos=P, envs_idx=[-1]), IndexError, "envs_idx"),
    ("init_qpos shape", dict(pos=P, init_qpos=np.zeros(3)), ValueError, "init_qpos"),
    ("rest_qpos shape", dict(pos=P, rest_qpos=np.zeros(3), rest_weight=0.1), ValueError, "rest_qpos"),
    ("rest_weight negative", dict(pos=P, rest_weight=-0.1), ValueError, "rest_weight"),
    ("dofs_idx_local out of range", dict(pos=P, dofs_idx_local=[0, 12]), IndexError, "dofs_idx_local"),
    ("max_samples zero", dict(pos=P, max_samples=0), ValueError, "max_samples"),
    ("local_point shape", dict(pos=P, local_point=[0.0, 0.1]), ValueError, "local_point"),
    ("no target", dict(), ValueError, "pos, quat"),
]


@pytest.mark.parametrize("kwargs,exc,match", [c[1:] for c in BAD_SINGLE], ids=[c[0] for c in BAD_SINGLE])
def test_bad_input_raises_and_changes_nothing(panda, kwargs, exc, match):
    panda.set_qpos(random_q(panda, np.random.default_rng(14), N_ENVS))
    before = state(panda)
    with pytest.raises(exc, match=match):
        panda.inverse_kinematics(HAND, **kwargs)
    assert_state(panda, before)


BAD_MULTI = [
    ("unknown link", dict(links=[HAND, "nope"], poss=[P, P]), KeyError, r"links\[1\]: no link 'nope'"),
    ("short poss", dict(links=[LEFT, RIGHT], poss=[P]), ValueError, r"poss: expected 2 entries"),
    ("long quats", dict(links=[LEFT, RIGHT], poss=[P, P], quats=[DOWN] * 3), ValueError, r"quats: expected 2"),
    ("short local_points", dict(links=[LEFT, RIGHT], poss=[P, P], local_points=[None]), ValueError, "local_points"),
    ("bad entry shape", dict(links=[LEFT, RIGHT], poss=[P, [0.0, 1.0]]), ValueError, r"poss\[1\]: expected shape"),
    ("zero quat entry", dict(links=[LEFT, RIGHT], quats=[DOWN, [0, 0, 0, 0]]), ValueError, r"quats\[1\]"),
    ("no links", dict(links=[]), ValueError, "links"),
]


@pytest.mark.parametrize("kwargs,exc,match", [c[1:] for c in BAD_MULTI], ids=[c[0] for c in BAD_MULTI])
def test_bad_multilink_input_raises_and_changes_nothing(panda, kwargs, exc, match):
    before = state(panda)
    with pytest.raises(exc, match=match):
        panda.inverse_kinematics_multilink(**kwargs)
    assert_state(panda, before)


def test_bad_input_unbatched_and_link_names(panda, panda1):
    before = state(panda1)
    with pytest.raises(ValueError, match="envs_idx"):
        panda1.inverse_kinematics(HAND, pos=P, envs_idx=[0])
    with pytest.raises(ValueError, match=r"pos: expected shape \(3,\), got \(1, 3\)"):
        panda1.inverse_kinematics(HAND, pos=[P])
    with pytest.raises(KeyError, match="link: no link 'nope'.*hand"):
        panda1.inverse_kinematics("nope", pos=P)
    with pytest.raises(TypeError, match="link"):
        panda1.inverse_kinematics(3, pos=P)
    assert_state(panda1, before)
    # a link of another robot
    with pytest.raises(ValueError, match="another entity"):
        _other_robot_link_call(panda)


def _other_robot_link_call(panda):
    scene = engine.Scene()
    a = scene.add_entity(morphs.MJCF(file="panda"))
    b = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build()
    a.inverse_kinematics(b.get_link(HAND), pos=P)
