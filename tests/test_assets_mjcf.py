"""The project's own MJCF robots (assets/**/*.xml) compile and have the kinematics they claim.

The Panda is checked against an independent numpy implementation of Franka's published
modified (Craig) DH table, so the body offsets and joint axes in the XML are validated by
something that does not read the XML.
"""

from pathlib import Path

import mujoco
import numpy as np
import pytest

ASSETS = Path(__file__).resolve().parents[1] / "assets"
ALL_XML = sorted(ASSETS.glob("**/*.xml"))
PANDA_XML = ASSETS / "panda" / "panda.xml"
DUAL_XML = ASSETS / "dual_arm" / "dual_arm.xml"

# Franka Emika Panda, modified DH (Craig): (a_{i-1}, d_i, alpha_{i-1}) per joint.
PANDA_DH = [
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -np.pi / 2),
    (0.0, 0.316, np.pi / 2),
    (0.0825, 0.0, np.pi / 2),
    (-0.0825, 0.384, -np.pi / 2),
    (0.0, 0.0, np.pi / 2),
    (0.088, 0.0, np.pi / 2),
]
FLANGE_D = 0.107
HAND_YAW = -np.pi / 4
FINGER_Z = 0.0584

ARM_RANGES = [
    (-2.8973, 2.8973),
    (-1.7628, 1.7628),
    (-2.8973, 2.8973),
    (-3.0718, -0.0698),
    (-2.8973, 2.8973),
    (-0.0175, 3.7525),
    (-2.8973, 2.8973),
]
ARM_VEL = [2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61]

PANDA_BODIES = [f"link{i}" for i in range(8)] + ["hand", "left_finger", "right_finger"]
PANDA_JOINTS = [f"joint{i}" for i in range(1, 8)] + ["finger_joint1", "finger_joint2"]


# ---------------------------------------------------------------- numpy reference


def rot_x(t):
    c, s = np.cos(t), np.sin(t)
    T = np.eye(4)
    T[1:3, 1:3] = [[c, -s], [s, c]]
    return T


def rot_z(t):
    c, s = np.cos(t), np.sin(t)
    T = np.eye(4)
    T[0:2, 0:2] = [[c, -s], [s, c]]
    return T


def trans(x, y, z):
    T = np.eye(4)
    T[:3, 3] = (x, y, z)
    return T


def craig(a, d, alpha, theta):
    """Modified DH: RotX(alpha_{i-1}) TransX(a_{i-1}) RotZ(theta_i) TransZ(d_i)."""
    return rot_x(alpha) @ trans(a, 0, 0) @ rot_z(theta) @ trans(0, 0, d)


def dh_hand_pose(q, dh=PANDA_DH, base=None):
    """World pose (4x4) of the hand frame: base * chain * flange offset * hand yaw."""
    T = np.eye(4) if base is None else base.copy()
    for (a, d, alpha), qi in zip(dh, q):
        T = T @ craig(a, d, alpha, qi)
    return T @ trans(0, 0, FLANGE_D) @ rot_z(HAND_YAW)


# ---------------------------------------------------------------- helpers


def load(path):
    return mujoco.MjModel.from_xml_path(str(path))


def body_pose(m, d, name):
    b = m.body(name).id
    T = np.eye(4)
    T[:3, :3] = d.xmat[b].reshape(3, 3)
    T[:3, 3] = d.xpos[b]
    return T


def fk(m, qpos):
    d = mujoco.MjData(m)
    d.qpos[:] = qpos
    mujoco.mj_kinematics(m, d)
    return d


def names(m, objtype, n):
    return [mujoco.mj_id2name(m, objtype, i) for i in range(n)]


def qpos_of(m, values):
    """Full qpos vector from {joint name: value}; other joints stay at 0."""
    q = np.zeros(m.nq)
    for name, v in values.items():
        q[m.joint(name).qposadr[0]] = v
    return q


def random_arm_q(rng, n=7):
    lo, hi = np.array(ARM_RANGES).T
    return rng.uniform(lo, hi)[:n]


# ---------------------------------------------------------------- every asset


def test_assets_exist():
    assert PANDA_XML in ALL_XML and DUAL_XML in ALL_XML


@pytest.mark.parametrize("path", ALL_XML, ids=lambda p: str(p.relative_to(ASSETS)))
def test_compiles_with_home_key_and_velocity_limits(path):
    m = load(path)
    key = m.key("home")  # raises KeyError if missing
    q = m.key_qpos[key.id]
    assert q.shape == (m.nq,)
    # home lies inside every limited joint's range
    for j in range(m.njnt):
        if m.jnt_limited[j]:
            lo, hi = m.jnt_range[j]
            v = q[m.jnt_qposadr[j]]
            assert lo - 1e-9 <= v <= hi + 1e-9, (m.joint(j).name, v, (lo, hi))
    # one positive velocity_limit/<joint> numeric per hinge/slide joint, none for unknown joints
    joints = set(names(m, mujoco.mjtObj.mjOBJ_JOINT, m.njnt))
    numerics = {}
    for i in range(m.nnumeric):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_NUMERIC, i)
        if name.startswith("velocity_limit/"):
            adr, size = m.numeric_adr[i], m.numeric_size[i]
            assert size == 1, name
            numerics[name.split("/", 1)[1]] = float(m.numeric_data[adr])
    assert set(numerics) <= joints, set(numerics) - joints
    for j in range(m.njnt):
        if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            assert numerics.get(m.joint(j).name, 0) > 0, m.joint(j).name
    # names are unique (mujoco enforces it per type; bodies and joints must not be empty)
    for objtype, n in ((mujoco.mjtObj.mjOBJ_BODY, m.nbody), (mujoco.mjtObj.mjOBJ_JOINT, m.njnt)):
        got = names(m, objtype, n)
        assert len(set(got)) == len(got)
        assert all(got[1 if objtype == mujoco.mjtObj.mjOBJ_BODY else 0 :])


@pytest.mark.parametrize("path", ALL_XML, ids=lambda p: str(p.relative_to(ASSETS)))
def test_visuals_are_primitives(path):
    m = load(path)
    prims = {
        mujoco.mjtGeom.mjGEOM_CAPSULE,
        mujoco.mjtGeom.mjGEOM_CYLINDER,
        mujoco.mjtGeom.mjGEOM_BOX,
        mujoco.mjtGeom.mjGEOM_SPHERE,
    }
    assert m.ngeom > 0
    assert all(int(t) in prims for t in m.geom_type)
    # every moving body has at least one geom (so it shows up in a render)
    for b in range(1, m.nbody):
        if m.body_jntnum[b] > 0:
            assert m.body_geomnum[b] > 0, m.body(b).name


# ---------------------------------------------------------------- Panda


@pytest.fixture(scope="module")
def panda():
    return load(PANDA_XML)


def test_panda_names(panda):
    m = panda
    assert names(m, mujoco.mjtObj.mjOBJ_BODY, m.nbody)[1:] == PANDA_BODIES
    assert names(m, mujoco.mjtObj.mjOBJ_JOINT, m.njnt) == PANDA_JOINTS
    assert m.nq == m.nv == 9
    assert m.body("link0").parentid[0] == 0 and m.body_jntnum[m.body("link0").id] == 0
    assert m.body("hand").parentid[0] == m.body("link7").id
    assert m.body_jntnum[m.body("hand").id] == 0
    for f in ("left_finger", "right_finger"):
        assert m.body(f).parentid[0] == m.body("hand").id


def test_panda_joint_ranges_and_velocities(panda):
    m = panda
    for i, (lo, hi) in enumerate(ARM_RANGES, start=1):
        j = m.joint(f"joint{i}")
        assert j.type[0] == mujoco.mjtJoint.mjJNT_HINGE
        assert m.jnt_limited[j.id]
        np.testing.assert_allclose(j.range, (lo, hi), atol=1e-12)
        assert m.numeric(f"velocity_limit/joint{i}").data[0] == pytest.approx(ARM_VEL[i - 1])
    for f in ("finger_joint1", "finger_joint2"):
        j = m.joint(f)
        assert j.type[0] == mujoco.mjtJoint.mjJNT_SLIDE
        np.testing.assert_allclose(j.range, (0.0, 0.04), atol=1e-12)
        assert m.numeric(f"velocity_limit/{f}").data[0] == pytest.approx(0.2)


def test_panda_finger_mimic_equality(panda):
    m = panda
    assert m.neq == 1
    assert m.eq_type[0] == mujoco.mjtEq.mjEQ_JOINT
    assert m.eq_obj1id[0] == m.joint("finger_joint2").id
    assert m.eq_obj2id[0] == m.joint("finger_joint1").id
    np.testing.assert_allclose(m.eq_data[0, :5], [0, 1, 0, 0, 0])


def test_panda_home_key(panda):
    q = panda.key_qpos[panda.key("home").id]
    np.testing.assert_allclose(q, [0, -0.785, 0, -2.356, 0, 1.571, 0.785, 0.04, 0.04])


def test_panda_zero_config_flange(panda):
    m = panda
    d = fk(m, np.zeros(m.nq))
    T = body_pose(m, d, "hand")
    # Flange at x = a7, z = d1 + d3 + d5 - d_flange; hand z axis points down.
    np.testing.assert_allclose(T[:3, 3], [0.088, 0.0, 0.333 + 0.316 + 0.384 - 0.107], atol=1e-6)
    np.testing.assert_allclose(T[:3, 3], [0.088, 0.0, 0.926], atol=1e-6)
    np.testing.assert_allclose(T[:3, 2], [0, 0, -1], atol=1e-6)
    # link7 x axis = world x, hand turned -45 deg about its z: x_hand = (1, 1, 0)/sqrt 2
    np.testing.assert_allclose(T[:3, 0], np.array([1, 1, 0]) / np.sqrt(2), atol=1e-6)
    np.testing.assert_allclose(T, dh_hand_pose(np.zeros(7)), atol=1e-6)
    # the flange site sits at the hand origin
    np.testing.assert_allclose(d.site("flange").xpos, T[:3, 3], atol=1e-9)


def test_panda_joint_axes_at_zero(panda):
    """Every arm joint turns about its body's z axis, through the body origin."""
    m = panda
    for i in range(1, 8):
        j = m.joint(f"joint{i}")
        np.testing.assert_allclose(m.jnt_axis[j.id], [0, 0, 1], atol=1e-12)
        np.testing.assert_allclose(m.jnt_pos[j.id], [0, 0, 0], atol=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_panda_fk_matches_craig_dh(panda, seed):
    m = panda
    rng = np.random.default_rng(seed)
    for _ in range(10):
        q = random_arm_q(rng)
        fingers = rng.uniform(0, 0.04, size=2)
        d = fk(m, np.r_[q, fingers])
        T_ref = dh_hand_pose(q)
        np.testing.assert_allclose(body_pose(m, d, "hand"), T_ref, atol=1e-6)
        # link i frame == DH frame i
        T = np.eye(4)
        for i, ((a, dd, alpha), qi) in enumerate(zip(PANDA_DH, q), start=1):
            T = T @ craig(a, dd, alpha, qi)
            np.testing.assert_allclose(body_pose(m, d, f"link{i}"), T, atol=1e-6)


def test_panda_home_hand_pose(panda):
    m = panda
    q = m.key_qpos[m.key("home").id]
    d = fk(m, q)
    T = body_pose(m, d, "hand")
    np.testing.assert_allclose(T, dh_hand_pose(q[:7]), atol=1e-6)
    # the usual Panda ready pose: hand ~0.31 m in front, pointing down
    assert T[0, 3] == pytest.approx(0.307, abs=2e-3)
    assert T[2, 3] == pytest.approx(0.590, abs=2e-3)
    assert T[2, 2] == pytest.approx(-1.0, abs=1e-3)


def test_panda_fingers(panda):
    m = panda
    rng = np.random.default_rng(7)
    q = random_arm_q(rng)
    for w in (0.0, 0.013, 0.04):
        d = fk(m, np.r_[q, w, w])
        H = body_pose(m, d, "hand")
        Hinv = np.linalg.inv(H)
        left = Hinv @ body_pose(m, d, "left_finger")
        right = Hinv @ body_pose(m, d, "right_finger")
        np.testing.assert_allclose(left[:3, 3], [0, w, FINGER_Z], atol=1e-9)
        np.testing.assert_allclose(right[:3, 3], [0, -w, FINGER_Z], atol=1e-9)
        np.testing.assert_allclose(left[:3, :3], np.eye(3), atol=1e-9)


# ---------------------------------------------------------------- dual arm


@pytest.fixture(scope="module")
def dual():
    return load(DUAL_XML)


DUAL_ARM_BODIES = [f"link{i}" for i in range(8)] + ["hand"]


def test_dual_arm_names(dual):
    m = dual
    bodies = names(m, mujoco.mjtObj.mjOBJ_BODY, m.nbody)
    joints = names(m, mujoco.mjtObj.mjOBJ_JOINT, m.njnt)
    for side in ("left", "right"):
        for b in DUAL_ARM_BODIES:
            assert f"{side}_{b}" in bodies
        for i in range(1, 8):
            assert f"{side}_joint{i}" in joints
    assert "torso" in bodies
    # everything but the trunk is prefixed left_/right_
    trunk = {"world", "base", "torso"}
    assert all(b.startswith(("left_", "right_")) for b in bodies if b not in trunk)
    assert all(j.startswith(("left_", "right_")) for j in joints if j != "torso_yaw")
    assert m.nq == m.nv == 15
    # the hands end each chain
    for side in ("left", "right"):
        assert m.body(f"{side}_hand").parentid[0] == m.body(f"{side}_link7").id
        assert m.body(f"{side}_link0").parentid[0] == m.body("torso").id


def test_dual_arm_ranges(dual):
    m = dual
    for side in ("left", "right"):
        for i, (lo, hi) in enumerate(ARM_RANGES, start=1):
            name = f"{side}_joint{i}"
            assert m.jnt_limited[m.joint(name).id]
            np.testing.assert_allclose(m.joint(name).range, (lo, hi), atol=1e-12)
            assert m.numeric(f"velocity_limit/{name}").data[0] == pytest.approx(ARM_VEL[i - 1])
    np.testing.assert_allclose(m.joint("torso_yaw").axis, [0, 0, 1])
    assert m.jnt_limited[m.joint("torso_yaw").id]


def test_dual_arm_shoulders(dual):
    m = dual
    d = fk(m, np.zeros(m.nq))
    pl = d.xpos[m.body("left_link0").id]
    pr = d.xpos[m.body("right_link0").id]
    assert abs(pl[1] - pr[1]) == pytest.approx(0.25, abs=0.05)
    assert 0.5 <= pl[2] <= 0.8 and 0.5 <= pr[2] <= 0.8
    assert pl[1] > 0 > pr[1]


def test_dual_arm_home_hands_in_front(dual):
    m = dual
    d = fk(m, m.key_qpos[m.key("home").id])
    pl = d.xpos[m.body("left_hand").id]
    pr = d.xpos[m.body("right_hand").id]
    assert pl[0] > 0.2 and pr[0] > 0.2
    assert pl[1] > 0 > pr[1]
    # a shared workspace: the tool points are in front at x ~0.4-0.6, less than 0.6 m apart
    tl, tr = d.site("left_tcp").xpos, d.site("right_tcp").xpos
    assert 0.4 <= tl[0] <= 0.6 and 0.4 <= tr[0] <= 0.6
    assert np.linalg.norm(tl - tr) < 0.6


@pytest.mark.parametrize("seed", range(3))
def test_dual_arm_chains_are_panda_like_dh(dual, seed):
    """Relative to its link0, each arm is the Panda DH chain with a 0.1 m shoulder."""
    m = dual
    dh = [(0.0, 0.1, 0.0)] + PANDA_DH[1:]
    rng = np.random.default_rng(100 + seed)
    for _ in range(5):
        ql, qr = random_arm_q(rng), random_arm_q(rng)
        yaw = rng.uniform(*m.joint("torso_yaw").range)
        values = {"torso_yaw": yaw}
        values.update({f"left_joint{i}": v for i, v in enumerate(ql, start=1)})
        values.update({f"right_joint{i}": v for i, v in enumerate(qr, start=1)})
        d = fk(m, qpos_of(m, values))
        for side, q in (("left", ql), ("right", qr)):
            base = body_pose(m, d, f"{side}_link0")
            np.testing.assert_allclose(
                body_pose(m, d, f"{side}_hand"), dh_hand_pose(q, dh=dh, base=base), atol=1e-6
            )
