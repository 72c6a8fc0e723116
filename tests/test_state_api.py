"""The entity state API: batching, index subsets, input validation, mimic joints, dofs, control,
and that scenes free their memory.

All in f64 on the CPU, on the Panda MJCF (mimic fingers, velocity limits) and the test MJCF of
``test_fk_mujoco`` (free base, ball joint).
"""

from __future__ import annotations

import gc
import re
import weakref

import numpy as np
import pytest
from _backend import init_engine
from _robots import TEST_MJCF
from _robots import random_qpos as _random_qpos
from _support import rss_mb

import engine
from engine import morphs
from engine.transforms import quat_from_axis_angle, quat_normalize

N_ENVS = 4
EXACT = 1e-12  # same kernels, same arithmetic: batched rows equal unbatched results


@pytest.fixture(scope="module", autouse=True)
def f64(backend):
    init_engine(precision="64")


@pytest.fixture(scope="module")
def test_mjcf(tmp_path_factory):
    path = tmp_path_factory.mktemp("mjcf") / "kinematics_test.xml"
    path.write_text(TEST_MJCF)
    return path


def random_qpos(robot, rng: np.random.Generator, n: int) -> np.ndarray:
    """``(n, n_qs)`` random configurations (see test_fk_mujoco), mimic followers set from leaders."""
    return robot.tree.apply_mimic(_random_qpos(robot, rng, n))


def build(file, n_envs=None, dt=0.01):
    scene = engine.Scene(dt=dt)
    robot = scene.add_entity(morphs.MJCF(file=file))
    scene.build(n_envs=n_envs)
    return scene, robot


@pytest.fixture
def panda():
    scene, robot = build("panda", N_ENVS)
    yield scene, robot
    scene.destroy()


@pytest.fixture
def panda_single():
    scene, robot = build("panda")
    yield scene, robot
    scene.destroy()


def state(robot) -> tuple[np.ndarray, ...]:
    return robot.get_qpos(), robot.get_dofs_position(), robot.get_links_pos(), robot.get_links_quat()


def assert_state(robot, expected) -> None:
    for got, want in zip(state(robot), expected):
        np.testing.assert_array_equal(got, want)


# -- batched vs unbatched -----------------------------------------------------------------------


@pytest.mark.parametrize("model", ["panda", "test_model"])
def test_batched_rows_equal_unbatched_results(model, test_mjcf):
    file = test_mjcf if model == "test_model" else "panda"
    scene_b, batched = build(file, N_ENVS)
    scene_u, single = build(file)
    rng = np.random.default_rng(1)
    qpos = random_qpos(batched, rng, N_ENVS)
    batched.set_qpos(qpos)
    points = rng.uniform(-0.2, 0.2, (batched.n_links, 3))
    jac_b = [batched.get_jacobian(link, local_point=p) for link, p in zip(batched.links, points)]
    fk_b = batched.forward_kinematics(qpos[::-1])
    assert batched.get_qpos().shape == (N_ENVS, batched.n_qs)
    assert jac_b[0].shape == (N_ENVS, 6, batched.n_dofs)
    assert fk_b[0].shape == (N_ENVS, batched.n_links, 3) and fk_b[1].shape == (N_ENVS, batched.n_links, 4)
    for e in range(N_ENVS):
        single.set_qpos(qpos[e])
        assert single.get_qpos().shape == (single.n_qs,)  # unbatched: no env axis anywhere
        for got, want in zip(state(batched), state(single)):
            np.testing.assert_allclose(got[e], want, atol=EXACT, rtol=0)
        for l, link in enumerate(single.links):
            J = single.get_jacobian(link, local_point=points[l])
            assert J.shape == (6, single.n_dofs)
            np.testing.assert_allclose(jac_b[l][e], J, atol=EXACT, rtol=0)
        fk_u = single.forward_kinematics(qpos[::-1][e])
        np.testing.assert_allclose(fk_b[0][e], fk_u[0], atol=EXACT, rtol=0)
        np.testing.assert_allclose(fk_b[1][e], fk_u[1], atol=EXACT, rtol=0)
    scene_b.destroy()
    scene_u.destroy()


# -- subsets ------------------------------------------------------------------------------------


def test_index_subsets_return_exactly_the_selected_rows(panda):
    _, robot = panda
    rng = np.random.default_rng(2)
    robot.set_qpos(random_qpos(robot, rng, N_ENVS))
    envs, qs, links, dofs = [3, 1], [8, 0, 4], [10, 2, 5], [6, 0]
    q, d, p, w = state(robot)
    np.testing.assert_array_equal(robot.get_qpos(qs_idx_local=qs, envs_idx=envs), q[np.ix_(envs, qs)])
    np.testing.assert_array_equal(robot.get_qpos(envs_idx=envs), q[envs])
    np.testing.assert_array_equal(robot.get_qpos(qs_idx_local=qs), q[:, qs])
    np.testing.assert_array_equal(robot.get_qpos(envs_idx=2), q[[2]])  # a scalar index keeps the axis
    np.testing.assert_array_equal(robot.get_dofs_position(dofs_idx_local=dofs, envs_idx=envs), d[np.ix_(envs, dofs)])
    np.testing.assert_array_equal(robot.get_links_pos(links_idx_local=links, envs_idx=envs), p[envs][:, links])
    np.testing.assert_array_equal(robot.get_links_quat(links_idx_local=links, envs_idx=envs), w[envs][:, links])
    J = robot.get_jacobian("hand", local_point=[0.0, 0.0, 0.1])
    np.testing.assert_array_equal(robot.get_jacobian("hand", local_point=[0.0, 0.0, 0.1], envs_idx=envs), J[envs])

    # forward_kinematics: qs_idx_local entries from the input, the rest from the state
    new = random_qpos(robot, rng, len(envs))
    full = q[envs].copy()
    full[:, qs] = new[:, qs]
    ref_pos, ref_quat = robot.forward_kinematics(full, envs_idx=envs)
    all_pos, all_quat = robot.forward_kinematics(np.vstack([full, full]))  # all 4 envs, two copies
    np.testing.assert_array_equal(all_pos[:2], ref_pos)
    np.testing.assert_array_equal(all_quat[:2], ref_quat)
    pos, quat = robot.forward_kinematics(new[:, qs], qs_idx_local=qs, links_idx_local=links, envs_idx=envs)
    assert pos.shape == (len(envs), len(links), 3) and quat.shape == (len(envs), len(links), 4)
    np.testing.assert_array_equal(pos, ref_pos[:, links])
    np.testing.assert_array_equal(quat, ref_quat[:, links])
    assert_state(robot, (q, d, p, w))


def test_set_with_envs_idx_changes_only_those_envs(panda):
    _, robot = panda
    rng = np.random.default_rng(3)
    robot.set_qpos(random_qpos(robot, rng, N_ENVS))
    before = state(robot)
    new = random_qpos(robot, rng, 2)
    robot.set_qpos(new, envs_idx=[2, 0])
    after = state(robot)
    np.testing.assert_array_equal(after[0][[2, 0]], new)
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a[[1, 3]], b[[1, 3]])
        assert not np.array_equal(a[[0, 2]], b[[0, 2]])

    robot.set_qpos([0.1, -0.2], qs_idx_local=[0, 3], envs_idx=[1])  # one env, two entries
    q = robot.get_qpos()
    np.testing.assert_array_equal(q[1, [0, 3]], [0.1, -0.2])
    np.testing.assert_array_equal(np.delete(q[1], [0, 3]), np.delete(after[0][1], [0, 3]))
    np.testing.assert_array_equal(q[[0, 2, 3]], after[0][[0, 2, 3]])

    robot.set_dofs_position([0.3], dofs_idx_local=[5], envs_idx=[3])
    assert robot.get_dofs_position(dofs_idx_local=[5], envs_idx=[3])[0, 0] == 0.3
    np.testing.assert_array_equal(robot.get_qpos(envs_idx=[0, 1, 2]), q[[0, 1, 2]])


def test_unbatched_input_applies_to_every_env(panda):
    _, robot = panda
    rng = np.random.default_rng(4)
    robot.set_qpos(random_qpos(robot, rng, N_ENVS))
    one = random_qpos(robot, rng, 1)[0]
    robot.set_qpos(one)
    np.testing.assert_array_equal(robot.get_qpos(), np.tile(one, (N_ENVS, 1)))
    pos = robot.get_links_pos()
    assert np.all(pos == pos[0])
    robot.set_qpos([0.5], qs_idx_local=[2], envs_idx=[1, 3])
    np.testing.assert_array_equal(robot.get_qpos(qs_idx_local=[2])[:, 0], [one[2], 0.5, one[2], 0.5])
    robot.set_dofs_position(one[:7], dofs_idx_local=range(7))
    np.testing.assert_array_equal(robot.get_dofs_position(dofs_idx_local=range(7)), np.tile(one[:7], (N_ENVS, 1)))
    fk_one = robot.forward_kinematics(one)
    fk_all = robot.forward_kinematics(np.tile(one, (N_ENVS, 1)))
    np.testing.assert_array_equal(fk_one[0], fk_all[0])
    np.testing.assert_array_equal(fk_one[1], fk_all[1])


# -- FK before IK -------------------------------------------------------------------------------


def test_forward_kinematics_needs_no_ik_and_leaves_state_alone(test_mjcf):
    scene, robot = build(test_mjcf, N_ENVS)
    other_scene, other = build(test_mjcf, N_ENVS)
    before = state(robot)
    qpos = random_qpos(robot, np.random.default_rng(5), N_ENVS)
    pos, quat = robot.forward_kinematics(qpos)  # first call on a fresh entity, no IK ever run
    assert_state(robot, before)
    other.set_qpos(qpos)
    np.testing.assert_array_equal(pos, other.get_links_pos())
    np.testing.assert_array_equal(quat, other.get_links_quat())
    robot.get_jacobian(robot.links[-1])
    assert_state(robot, before)
    scene.destroy()
    other_scene.destroy()


# -- names --------------------------------------------------------------------------------------


def test_unknown_names_raise_key_error_listing_valid_names(panda):
    _, robot = panda
    assert robot.get_link("hand").name == "hand"
    assert robot.get_joint("finger_joint1").dofs_idx_local == (7,)
    with pytest.raises(KeyError) as err:
        robot.get_link("hnd")
    msg = str(err.value)
    assert "hnd" in msg and all(name in msg for name in ("link0", "hand", "left_finger", "right_finger"))
    with pytest.raises(KeyError) as err:
        robot.get_joint("joint8")
    msg = str(err.value)
    assert "joint8" in msg and all(f"joint{i}" in msg for i in range(1, 8)) and "finger_joint2" in msg
    with pytest.raises(KeyError, match="links are"):
        robot.get_jacobian("nope")


# -- bad input ----------------------------------------------------------------------------------

NQ = 9  # the Panda's qpos / dof count

BAD_BATCHED = [
    ("set_qpos", dict(qpos=np.zeros((N_ENVS - 1, NQ))), "qpos", ValueError),
    ("set_qpos", dict(qpos=np.zeros(NQ - 1)), "qpos", ValueError),
    ("set_qpos", dict(qpos=np.zeros((N_ENVS, NQ, 1))), "qpos", ValueError),
    ("set_qpos", dict(qpos=np.zeros(2), qs_idx_local=[0, 1, 2]), "qpos", ValueError),
    ("set_qpos", dict(qpos=["0.1"] * NQ), "qpos", TypeError),
    ("set_qpos", dict(qpos=np.ones(NQ, dtype=bool)), "qpos", TypeError),
    ("set_qpos", dict(qpos=None), "qpos", TypeError),
    ("set_qpos", dict(qpos=[[0.0, 1.0], [2.0]]), "qpos", ValueError),
    ("set_qpos", dict(qpos=np.r_[np.nan, np.zeros(NQ - 1)]), "qpos", ValueError),
    ("set_qpos", dict(qpos=np.r_[np.zeros(NQ - 1), np.inf]), "qpos", ValueError),
    ("set_qpos", dict(qpos=np.zeros(NQ), envs_idx=[N_ENVS]), "envs_idx", IndexError),
    ("set_qpos", dict(qpos=np.zeros(NQ), envs_idx=[-1]), "envs_idx", IndexError),
    ("set_qpos", dict(qpos=np.zeros(NQ), envs_idx=[0, 0]), "envs_idx", ValueError),
    ("set_qpos", dict(qpos=np.zeros(NQ), envs_idx=[0.5]), "envs_idx", TypeError),
    ("set_qpos", dict(qpos=np.zeros(NQ), envs_idx=["0"]), "envs_idx", TypeError),
    ("set_qpos", dict(qpos=np.zeros(1), qs_idx_local=[NQ]), "qs_idx_local", IndexError),
    ("set_qpos", dict(qpos=np.zeros(1), qs_idx_local=[[1]]), "qs_idx_local", ValueError),
    ("set_dofs_position", dict(position=np.zeros(NQ + 1)), "position", ValueError),
    ("set_dofs_position", dict(position=np.full(NQ, np.nan)), "position", ValueError),
    ("set_dofs_position", dict(position=np.zeros(1), dofs_idx_local=[NQ]), "dofs_idx_local", IndexError),
    ("control_dofs_position", dict(position=np.zeros((2, NQ))), "position", ValueError),
    ("control_dofs_position", dict(position=np.ones(NQ, dtype=bool)), "position", TypeError),
    ("control_dofs_position", dict(position=np.zeros(NQ), envs_idx=[7]), "envs_idx", IndexError),
    ("forward_kinematics", dict(qpos=np.zeros((2, NQ))), "qpos", ValueError),
    ("forward_kinematics", dict(qpos="abc"), "qpos", TypeError),
    ("forward_kinematics", dict(qpos=np.full(NQ, -np.inf)), "qpos", ValueError),
    ("forward_kinematics", dict(qpos=np.zeros(NQ), links_idx_local=[11]), "links_idx_local", IndexError),
    ("forward_kinematics", dict(qpos=np.zeros(1), qs_idx_local=[-1]), "qs_idx_local", IndexError),
    ("get_jacobian", dict(link="hand", local_point=[0.0, 0.0]), "local_point", ValueError),
    ("get_jacobian", dict(link="hand", local_point=[0.0, 0.0, np.nan]), "local_point", ValueError),
    ("get_jacobian", dict(link="hand", local_point=["a", "b", "c"]), "local_point", TypeError),
    ("get_jacobian", dict(link=3), "link", TypeError),
    ("get_jacobian", dict(link="hand", envs_idx=[N_ENVS]), "envs_idx", IndexError),
    ("get_qpos", dict(envs_idx=[N_ENVS + 3]), "envs_idx", IndexError),
    ("get_qpos", dict(qs_idx_local=[NQ]), "qs_idx_local", IndexError),
    ("get_links_pos", dict(links_idx_local=[99]), "links_idx_local", IndexError),
    ("get_dofs_position", dict(dofs_idx_local=[True]), "dofs_idx_local", TypeError),
]

BAD_UNBATCHED = [
    ("set_qpos", dict(qpos=np.zeros(NQ), envs_idx=[0]), "envs_idx", ValueError),
    ("set_qpos", dict(qpos=np.zeros((1, NQ))), "qpos", ValueError),
    ("set_dofs_position", dict(position=np.zeros(NQ), envs_idx=0), "envs_idx", ValueError),
    ("control_dofs_position", dict(position=np.zeros(NQ), envs_idx=[0]), "envs_idx", ValueError),
    ("forward_kinematics", dict(qpos=np.zeros(NQ), envs_idx=[0]), "envs_idx", ValueError),
    ("get_jacobian", dict(link="hand", envs_idx=[0]), "envs_idx", ValueError),
    ("get_qpos", dict(envs_idx=[0]), "envs_idx", ValueError),
    ("get_links_pos", dict(envs_idx=[0]), "envs_idx", ValueError),
]


def _check_rejected(scene, robot, method, kwargs, arg, exc):
    rng = np.random.default_rng(6)
    n = N_ENVS if scene.is_batched else 1
    q = random_qpos(robot, rng, n)
    robot.set_qpos(q if scene.is_batched else q[0])
    before = state(robot)
    with pytest.raises(exc, match=rf"^['\"]?{re.escape(arg)}: "):
        getattr(robot, method)(**kwargs)
    assert_state(robot, before)
    scene.step()  # a rejected control_dofs_position set no target: nothing moves
    assert_state(robot, before)


@pytest.mark.parametrize("method, kwargs, arg, exc", BAD_BATCHED,
                         ids=[f"{m}-{a}-{i}" for i, (m, _, a, _) in enumerate(BAD_BATCHED)])
def test_bad_input_is_rejected_by_name_and_changes_nothing(panda, method, kwargs, arg, exc):
    _check_rejected(*panda, method, kwargs, arg, exc)


@pytest.mark.parametrize("method, kwargs, arg, exc", BAD_UNBATCHED,
                         ids=[f"{m}-{a}-{i}" for i, (m, _, a, _) in enumerate(BAD_UNBATCHED)])
def test_bad_input_on_unbatched_scene(panda_single, method, kwargs, arg, exc):
    _check_rejected(*panda_single, method, kwargs, arg, exc)


def test_error_messages_state_what_was_got_and_expected(panda):
    _, robot = panda
    with pytest.raises(ValueError) as err:
        robot.set_qpos(np.zeros((3, NQ)))
    assert "(3, 9)" in str(err.value) and "(9,)" in str(err.value) and "(4, 9)" in str(err.value)
    with pytest.raises(IndexError) as err:
        robot.get_qpos(envs_idx=[9])
    assert "9" in str(err.value) and "< 4" in str(err.value)
    with pytest.raises(TypeError) as err:
        robot.set_qpos(np.ones(NQ, dtype=bool))
    assert "bool" in str(err.value)


def test_zero_quaternion_is_rejected_without_half_applying(test_mjcf):
    scene, robot = build(test_mjcf, N_ENVS)
    robot.set_qpos(random_qpos(robot, np.random.default_rng(8), N_ENVS))
    before = state(robot)
    bad = random_qpos(robot, np.random.default_rng(9), N_ENVS)
    ball = robot.get_joint("ball").qs_idx_local
    bad[2, list(ball)] = 0.0
    with pytest.raises(ValueError, match="^qpos: .*ball"):
        robot.set_qpos(bad)
    assert_state(robot, before)
    scene.destroy()


def test_link_of_another_entity_is_rejected():
    scene = engine.Scene()
    a = scene.add_entity(morphs.MJCF(file="panda"))
    b = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build()
    with pytest.raises(ValueError, match="^link: "):
        a.get_jacobian(b.get_link("hand"))
    scene.destroy()


# -- mimic --------------------------------------------------------------------------------------


def test_mimic_fingers_follow_their_leader(panda):
    scene, robot = panda
    lead = robot.get_joint("finger_joint1").q_idx_local
    fol = robot.get_joint("finger_joint2").q_idx_local
    q = random_qpos(robot, np.random.default_rng(10), N_ENVS)
    q[:, lead] = [0.0, 0.01, 0.025, 0.04]
    q[:, fol] = 0.033  # ignored: the follower is derived from the leader
    robot.set_qpos(q)
    got = robot.get_qpos()
    np.testing.assert_array_equal(got[:, fol], got[:, lead])
    np.testing.assert_array_equal(got[:, lead], q[:, lead])

    def finger_gap():  # distance between the fingers, in the hand frame's y
        pos = robot.get_links_pos()
        return np.linalg.norm(pos[:, robot.get_link("left_finger").idx_local]
                              - pos[:, robot.get_link("right_finger").idx_local], axis=-1)

    np.testing.assert_allclose(finger_gap(), 2 * q[:, lead], atol=1e-12)
    robot.set_qpos([0.02], qs_idx_local=[lead])  # leader alone
    np.testing.assert_array_equal(robot.get_qpos(qs_idx_local=[fol])[:, 0], 0.02)
    robot.set_qpos([0.005], qs_idx_local=[fol])  # follower alone: overridden by its leader
    np.testing.assert_array_equal(robot.get_qpos(qs_idx_local=[fol])[:, 0], 0.02)
    robot.set_dofs_position([0.03], dofs_idx_local=[lead], envs_idx=[1])
    np.testing.assert_array_equal(robot.get_dofs_position(dofs_idx_local=[fol])[:, 0], [0.02, 0.03, 0.02, 0.02])
    np.testing.assert_allclose(finger_gap(), [0.04, 0.06, 0.04, 0.04], atol=1e-12)
    robot.control_dofs_position([0.04], dofs_idx_local=[lead])
    for _ in range(20):
        scene.step()
        np.testing.assert_array_equal(robot.get_qpos(qs_idx_local=[fol]), robot.get_qpos(qs_idx_local=[lead]))
    np.testing.assert_allclose(robot.get_qpos(qs_idx_local=[fol])[:, 0], 0.04, atol=1e-12)


# -- dofs ---------------------------------------------------------------------------------------


def test_dofs_position_round_trip_with_free_and_ball_joints(test_mjcf):
    scene, robot = build(test_mjcf, N_ENVS)
    rng = np.random.default_rng(11)
    assert (robot.n_qs, robot.n_dofs) == (7 + 4 + 6, 6 + 3 + 6)
    dofs = np.zeros((N_ENVS, robot.n_dofs))
    lo, hi = robot.q_limits
    for joint in robot.tree.joints:
        d = joint.dof_start
        if joint.type in ("free", "ball"):
            r = d + 3 if joint.type == "free" else d
            if joint.type == "free":
                dofs[:, d:d + 3] = rng.uniform(-1, 1, (N_ENVS, 3))
            axis = rng.normal(size=(N_ENVS, 3))
            axis /= np.linalg.norm(axis, axis=1, keepdims=True)
            dofs[:, r:r + 3] = axis * rng.uniform(0.1, np.pi - 0.1, (N_ENVS, 1))  # angle < pi: unique
        else:
            q = joint.q_start
            dofs[:, d] = rng.uniform(max(lo[q], -np.pi), min(hi[q], np.pi), N_ENVS)
    robot.set_dofs_position(dofs)
    np.testing.assert_allclose(robot.get_dofs_position(), dofs, atol=1e-12, rtol=0)
    qpos = robot.get_qpos()
    for joint in robot.tree.joints:  # a rotation vector's quaternion: (cos(a/2), sin(a/2) * axis)
        if joint.type in ("free", "ball"):
            s = joint.q_start + (3 if joint.type == "free" else 0)
            r = joint.dof_start + (3 if joint.type == "free" else 0)
            w = dofs[:, r:r + 3]
            angle = np.linalg.norm(w, axis=1)
            expected = quat_normalize(quat_from_axis_angle(w / angle[:, None], angle))
            np.testing.assert_allclose(qpos[:, s:s + 4], expected, atol=1e-12)
    np.testing.assert_allclose(qpos[:, :3], dofs[:, :3], atol=0)  # free position dofs are qpos
    # qpos -> dofs -> qpos round-trips too (quaternions come back unit, with w >= 0)
    q = random_qpos(robot, rng, N_ENVS)
    robot.set_qpos(q)
    robot.set_dofs_position(robot.get_dofs_position())
    q_unit = q.copy()
    for joint in robot.tree.joints:
        if joint.type in ("free", "ball"):
            s = joint.q_start + (3 if joint.type == "free" else 0)
            q_unit[:, s:s + 4] = quat_normalize(q[:, s:s + 4])
    np.testing.assert_allclose(robot.get_qpos(), q_unit, atol=1e-12)
    scene.destroy()


# -- control ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dt", [0.01, 0.004])
def test_control_respects_velocity_limits_and_reaches_target(dt):
    """Each step moves a controlled dof by at most velocity limit x dt toward its target; the
    target is reached (within twice the fewest steps the limit allows) and held."""
    scene, robot = build("panda", N_ENVS, dt=dt)
    vmax = robot.tree.velocity_limits()
    start = robot.get_dofs_position()
    target = start.copy()
    target[:, 0] += [0.5, -0.3, 0.0, 0.05]
    target[:, 5] += [0.0, 0.2, -0.4, 0.0]
    target[:, 7] = [0.0, 0.04, 0.01, 0.03]  # fingers: 0.2 m/s
    moved = [0, 5, 7]
    robot.control_dofs_position(target[:, moved], dofs_idx_local=moved)
    target[:, 8] = target[:, 7]  # finger_joint2 mimics finger_joint1
    need = np.ceil(np.abs(target - start) / (vmax * dt) - 1e-9)  # fewest steps the limit allows
    untouched = np.ones(robot.n_dofs, bool)
    untouched[moved + [8]] = False  # dof 8 is the mimic follower of dof 7
    prev = start
    for k in range(1, int(2 * need.max()) + 10):
        scene.step()
        cur = robot.get_dofs_position()
        step = np.abs(cur - prev)
        assert np.all(step <= vmax * dt + 1e-12), f"step {k}: faster than the velocity limit x dt"
        assert np.all(np.abs(cur - target) <= np.abs(prev - target) + 1e-12), f"step {k}: moved away"
        assert np.all(np.abs(cur - target)[need > k] > 1e-9), f"step {k}: reached sooner than the limit allows"
        np.testing.assert_array_equal(cur[:, untouched], start[:, untouched])
        prev = cur
    np.testing.assert_allclose(robot.get_dofs_position(), target, atol=1e-12)
    scene.destroy()


def test_control_with_envs_idx_moves_only_those_envs():
    scene, robot = build("panda", N_ENVS)
    start = robot.get_dofs_position()
    robot.control_dofs_position([0.3], dofs_idx_local=[2], envs_idx=[1, 2])
    for _ in range(50):
        scene.step()
    cur = robot.get_dofs_position()
    np.testing.assert_array_equal(cur[[0, 3]], start[[0, 3]])
    np.testing.assert_allclose(cur[[1, 2], 2], 0.3, atol=1e-12)
    scene.destroy()


# -- memory -------------------------------------------------------------------------------------


def _cycle(n_envs: int = 64) -> None:
    scene, robot = build("panda", n_envs)
    robot.set_qpos(random_qpos(robot, np.random.default_rng(0), n_envs))
    robot.forward_kinematics(robot.get_qpos())
    robot.get_jacobian("hand")
    robot.control_dofs_position(np.zeros(NQ))
    scene.step()
    scene.destroy()


def test_build_destroy_cycles_do_not_grow_memory():
    for _ in range(10):  # warm-up: kernels compiled, allocator pools filled
        _cycle()
    gc.collect()
    base = rss_mb()
    samples = []
    for i in range(100):
        _cycle()
        if i % 25 == 24:
            gc.collect()
            samples.append(rss_mb() - base)
    assert samples[-1] < 20, f"RSS grew by {samples} MB over 100 build/destroy cycles"


@pytest.mark.parametrize("destroy", [True, False], ids=["destroyed", "dropped"])
def test_scenes_are_garbage_collected(destroy):
    scene, robot = build("panda", 64)
    robot.forward_kinematics(robot.get_qpos())
    robot.get_jacobian("hand")
    refs = [weakref.ref(scene), weakref.ref(robot)]
    if destroy:
        scene.destroy()
    del scene, robot
    gc.collect()
    assert [r() for r in refs] == [None, None]
