"""The kernels compiled per robot (engine.kernels.per_robot_fk / static_ik) against independent
references and against the generic kernels.

* ``sincos_half`` (the FK's inlined sine / cosine) against numpy over many turns, and
  ``atan2_upper`` (the IK's rotation-error angle) over the upper half plane;
* per-robot FK (the CPU's SIMD-lane kernel, with a partial last block of lanes, and the one-row
  kernel a GPU runs) against MuJoCo's ``mj_kinematics`` for a model with every joint kind the
  per-robot kernels take (off-axis hinges, two hinges on one body, a slide, a hinge with ``ref``, a
  mimic equality), in f64 and f32;
* per-robot IK: answers checked by FK (tolerances, limits), with masks, ``dofs_idx_local``, a
  posture preference and limits off, and the same samples winning as in the generic solver;
* which robots qualify.
"""

import mujoco
import numpy as np
import pytest
import taichi as ti
from _backend import init_engine
from _robots import TEST_MJCF, random_qpos

import engine
from engine import morphs
from engine.kernels import per_robot_fk as static_fk
from engine.kernels.quat import atan2_upper
from engine.kernels.spec import robot_spec
from engine.kernels.traced import sincos_half
from engine.runtime import dispatch
from engine.transforms import quat_to_matrix

# TEST_MJCF without its free and ball joints, plus a mimic (joint equality): the per-robot kernels
# take hinges and slides only
HINGE_MJCF = (TEST_MJCF.replace('<freejoint name="root"/>', "")
              .replace('<joint name="ball" type="ball" pos="0.01 -0.03 0.02"/>',
                       '<joint name="tilt" type="hinge" axis="0.2 1 0.1" pos="0.01 -0.03 0.02" range="-2.5 2.5"/>')
              .replace("</worldbody>", '</worldbody>\n  <equality><joint joint1="side_hinge" joint2="hinge_a" '
                                       'polycoef="0.1 0.5 0 0 0"/></equality>'))
TOL = {"64": 1e-10, "32": 2e-5}
pytestmark = pytest.mark.usefixtures("backend")  # every test runs on each test backend (conftest.py)


@pytest.fixture
def hinge_model(tmp_path):
    path = tmp_path / "hinges.xml"
    path.write_text(HINGE_MJCF)
    return path


def _scene(file, n_envs, precision):
    init_engine(precision=precision)
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file=file))
    scene.build(n_envs=n_envs)
    return scene, robot


@pytest.mark.parametrize("precision", ["64", "32"])
def test_atan2_upper_matches_numpy(precision):
    """The IK's rotation errors use atan2_upper (an inline polynomial in float32)."""
    init_engine(precision=precision)
    dtype = np.float64 if precision == "64" else np.float32
    rng = np.random.default_rng(4)
    y = np.concatenate([rng.uniform(0, 2, 20000), [0.0, 0.0, 1.0, 1e-7, 3.0]]).astype(dtype)
    x = np.concatenate([rng.uniform(-2, 2, 20000), [0.0, -1.0, 0.0, 1.0, -1e-7]]).astype(dtype)
    out = np.zeros_like(y)

    @ti.kernel
    def run(a: ti.types.ndarray(), b: ti.types.ndarray(), o: ti.types.ndarray()):
        for i in range(a.shape[0]):
            o[i] = atan2_upper(a[i], b[i])

    run(y, x, out)
    tol = 1e-14 if precision == "64" else 5e-7  # float32: ~2 ulp of pi
    np.testing.assert_allclose(out, np.arctan2(y.astype(np.float64), x.astype(np.float64)), atol=tol, rtol=0)


@pytest.mark.filterwarnings("ignore:.*non-taichi function")  # sincos_half builds IR at trace time, on purpose
@pytest.mark.parametrize("precision", ["64", "32"])
def test_sincos_half_matches_numpy(precision):
    init_engine(precision=precision)
    span = 40.0 if precision == "64" else 4 * np.pi  # float32: the reduction rounds at ~k ulp(angle)
    angles = np.linspace(-span, span, 20001)
    out = np.zeros((len(angles), 2), np.float64 if precision == "64" else np.float32)

    @ti.kernel
    def run(a: ti.types.ndarray(), o: ti.types.ndarray()):
        for i in range(a.shape[0]):
            s, c = sincos_half(a[i])
            o[i, 0] = s
            o[i, 1] = c

    given = angles.astype(out.dtype)
    run(given, out)
    exact = given.astype(np.float64) / 2  # the reference takes the same (rounded) angles
    tol = 4e-14 if precision == "64" else 1e-6
    np.testing.assert_allclose(out[:, 0], np.sin(exact), atol=tol, rtol=0)
    np.testing.assert_allclose(out[:, 1], np.cos(exact), atol=tol, rtol=0)


@pytest.mark.parametrize("precision", ["64", "32"])
def test_per_robot_fk_matches_mujoco(hinge_model, precision, monkeypatch):
    monkeypatch.setattr(dispatch, "STATIC_FK_MIN_ROWS", 1)
    n = 13  # one full block of SIMD lanes and a partial one
    scene, robot = _scene(hinge_model, n, precision)
    assert robot.configuration.spec is not None
    assert any(j.mimic is not None for j in robot.tree.joints)
    m = mujoco.MjModel.from_xml_path(str(hinge_model))
    d = mujoco.MjData(m)
    qpos = robot.tree.apply_mimic(random_qpos(robot, np.random.default_rng(5), n))
    pos, quat = robot.forward_kinematics(qpos)
    assert pos.dtype == robot.configuration.dtype
    assert pos.shape == (n, robot.n_links, 3) and quat.shape == (n, robot.n_links, 4)
    for e in range(n):
        d.qpos[:] = qpos[e]
        mujoco.mj_kinematics(m, d)
        np.testing.assert_allclose(pos[e], d.xpos[1:], atol=TOL[precision], rtol=0)
        sign = np.where(np.sum(quat[e] * d.xquat[1:], axis=1, keepdims=True) < 0, -1.0, 1.0)
        np.testing.assert_allclose(quat[e] * sign, d.xquat[1:], atol=TOL[precision], rtol=0)
    # link and env selections return the selected rows of the same answer
    sel_pos, sel_quat = robot.forward_kinematics(qpos[[3, 1]], links_idx_local=[4, 0], envs_idx=[3, 1])
    np.testing.assert_array_equal(sel_pos, pos[[3, 1]][:, [4, 0]])
    np.testing.assert_array_equal(sel_quat, quat[[3, 1]][:, [4, 0]])
    # the one-row kernel (what a GPU runs) gives the same poses
    one_pos, one_quat = np.empty_like(pos), np.empty_like(quat)
    cfg = robot.configuration
    static_fk.fk_kernel(cfg.spec)(qpos.astype(cfg.dtype).reshape(-1), one_pos.reshape(-1), one_quat.reshape(-1),
                                  len(qpos), True)
    np.testing.assert_allclose(one_pos, pos, atol=TOL[precision], rtol=0)
    np.testing.assert_allclose(one_quat, quat, atol=TOL[precision], rtol=0)
    scene.destroy()


def test_large_fk_results_are_never_overwritten(hinge_model, monkeypatch):
    """Large FK calls reuse their output arrays only once the caller has let go of them."""
    monkeypatch.setattr(dispatch, "STATIC_FK_MIN_ROWS", 1)
    scene, robot = _scene(hinge_model, 9, "32")
    rng = np.random.default_rng(2)
    qa, qb = (robot.tree.apply_mimic(random_qpos(robot, rng, 9)) for _ in range(2))
    pos_a, quat_a = robot.forward_kinematics(qa)
    kept_a = pos_a.copy(), quat_a.copy()
    pos_b, quat_b = robot.forward_kinematics(qb)
    assert not np.shares_memory(pos_a, pos_b) and not np.shares_memory(quat_a, quat_b)
    np.testing.assert_array_equal(pos_a, kept_a[0])
    np.testing.assert_array_equal(quat_a, kept_a[1])
    expected_b = pos_b.copy()
    address = pos_b.ctypes.data
    del pos_b, quat_b
    pos_c, quat_c = robot.forward_kinematics(qb)  # nothing holds the last results: reused, and right
    assert pos_c.ctypes.data == address
    np.testing.assert_array_equal(pos_c, expected_b)
    view = pos_c[:, 2]  # a view keeps the buffer in use
    expected_view = view.copy()
    del pos_c, quat_c
    robot.forward_kinematics(qa)
    np.testing.assert_array_equal(view, expected_view)
    scene.destroy()


def test_which_robots_qualify(hinge_model, tmp_path):
    init_engine(precision="64")
    free_model = tmp_path / "free.xml"
    free_model.write_text(TEST_MJCF)
    for file, expected in ((hinge_model, True), ("panda", True), ("ur5", True), (free_model, False)):
        scene = engine.Scene()
        robot = scene.add_entity(morphs.URDF(file="ur5", fixed=True) if file == "ur5" else morphs.MJCF(file=file))
        scene.build()
        assert (robot.configuration.spec is not None) == expected, file
        scene.destroy()
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build()
    spec = robot_spec(robot.configuration.packed)
    hand = robot.get_link("hand").idx_local
    arm = {robot.get_joint(f"joint{i}").idx_local for i in range(1, 8)}
    assert {j for j in range(robot.n_joints) if spec.ancestor_mask(hand) >> j & 1} == arm


def _check(robot, result, links, targets, rot_mask, pos_tol=5e-4, rot_tol=5e-3, limits=True):
    """FK of every returned qpos: successes meet the targets (masked as asked), limits hold."""
    pos, quat = (np.asarray(a, np.float64) for a in robot.forward_kinematics(result.qpos))
    ok = result.success
    for link, (tpos, tquat) in zip(links, targets):
        perr = np.linalg.norm(pos[:, link] - tpos, axis=-1)
        assert np.all(perr[ok] <= pos_tol * 1.01)
        if all(rot_mask):
            cosang = np.abs(np.sum(quat[:, link] * tquat, axis=-1))
            assert np.all(2 * np.arccos(np.clip(cosang, 0, 1))[ok] <= rot_tol * 1.5)
        elif any(rot_mask):
            k = int(np.argmax(rot_mask))
            a, b = quat_to_matrix(quat[:, link])[..., k], quat_to_matrix(tquat)[..., k]
            assert np.all(np.arccos(np.clip(np.sum(a * b, -1), -1, 1))[ok] <= rot_tol * 1.5)
    if limits:
        lo, hi = robot.q_limits
        assert np.all(result.qpos >= lo - 1e-5) and np.all(result.qpos <= hi + 1e-5)


@pytest.mark.parametrize("case", ["full", "z_axis", "fingers", "position_xy", "arm_only", "posture", "no_limits"])
def test_per_robot_ik_by_fk_and_against_generic(case):
    n = 64
    scene, robot = _scene("panda", n, "32")
    lo, hi = robot.q_limits
    q = robot.tree.apply_mimic(np.random.default_rng(11).uniform(lo, hi, (n, robot.n_qs)))
    pos, quat = (np.asarray(a, np.float64) for a in robot.forward_kinematics(q))
    names = ["left_finger", "right_finger"] if case == "fingers" else ["hand"]
    links = [robot.get_link(x).idx_local for x in names]
    rot_mask = [False, False, True] if case in ("z_axis", "fingers") else [True] * 3
    kw = dict(rot_mask=rot_mask, seed=3, return_info=True)
    quats = [quat[:, i] for i in links]
    if case == "position_xy":
        kw.update(pos_mask=[True, True, False])
        quats = [None]
    if case == "arm_only":
        kw.update(dofs_idx_local=list(range(7)))
    if case == "posture":
        kw.update(rest_weight=0.5, max_samples=4)
    if case == "no_limits":
        kw.update(respect_joint_limit=False)
    static, generic = (robot.inverse_kinematics_multilink(names, [pos[:, i] for i in links], quats, kernel=kernel,
                                                          **kw) for kernel in ("per_robot", "generic"))
    assert static.success.mean() >= (0.9 if case == "posture" else 0.95), case  # posture: 4 samples only
    assert abs(static.success.mean() - generic.success.mean()) <= 0.05, case
    targets = [(pos[:, i], quat[:, i]) for i in links]
    if case == "position_xy":
        p_now, _ = robot.forward_kinematics(static.qpos)
        assert np.all(np.linalg.norm((p_now[:, links[0]] - pos[:, links[0]])[:, :2], axis=-1)[static.success]
                      <= 5e-4)
    else:
        _check(robot, static, links, targets, rot_mask, limits=case != "no_limits")
    if case == "arm_only":
        np.testing.assert_array_equal(static.qpos[:, 7:], robot.get_qpos()[:, 7:])
    # the same algorithm: the same samples win, with nearly the same answers
    same = static.sample == generic.sample
    assert same.mean() > 0.9, case
    if case != "posture":
        np.testing.assert_allclose(static.qpos[same], generic.qpos[same], atol=0.05)
    else:  # the fingers move no task: the posture pull alone moves them, as in the generic solver
        np.testing.assert_allclose(static.qpos[same][:, 7:], generic.qpos[same][:, 7:], atol=0.02)
    scene.destroy()


def test_kernel_argument(tmp_path):
    init_engine(precision="32")
    free_model = tmp_path / "free.xml"
    free_model.write_text(TEST_MJCF)
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file=free_model))
    scene.build(n_envs=2)
    tip = robot.get_link("tip")
    with pytest.raises(ValueError, match="kernel: expected one of 'auto', 'per_robot', 'generic', got 'fast'"):
        robot.inverse_kinematics(tip, pos=(0.3, 0.0, 0.5), kernel="fast")
    with pytest.raises(ValueError, match="kernel: 'free' has no per-robot solver"):
        robot.inverse_kinematics(tip, pos=(0.3, 0.0, 0.5), kernel="per_robot")
    # a link no joint moves has no per-robot solver: auto falls back, per_robot says why
    scene_p, panda = _scene("panda", 2, "32")
    base = panda.links[0].name
    with pytest.raises(ValueError, match=f"kernel: no joint moves '{base}'"):
        panda.inverse_kinematics(base, pos=(0.0, 0.0, 0.1), kernel="per_robot")
    fixed = panda.inverse_kinematics(base, pos=(0.0, 0.0, 0.1), return_info=True, seed=0)
    np.testing.assert_array_equal(fixed.qpos, panda.get_qpos())  # nothing to move: the start comes back
    assert not fixed.success.any() and np.allclose(fixed.pos_error, 0.1, atol=1e-6)
    scene_p.destroy()
    init_engine(precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file=free_model))
    scene.build(n_envs=2)
    tip = robot.get_link("tip")
    # auto falls back to the generic solver for a robot with free and ball joints
    result = robot.inverse_kinematics(tip, pos=(0.3, 0.0, 0.5), rot_mask=[False] * 3, return_info=True, seed=0)
    pos, _ = robot.forward_kinematics(result.qpos, links_idx_local=[tip.idx_local])
    assert np.all(np.linalg.norm(pos[:, 0] - (0.3, 0.0, 0.5), axis=-1) <= 5e-4)
    np.testing.assert_allclose(robot.get_qpos(), np.tile(robot.tree.default_qpos, (2, 1)), atol=1e-6)
    scene.destroy()
