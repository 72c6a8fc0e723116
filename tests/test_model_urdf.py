"""URDF -> KinematicTree, checked against Pinocchio for every URDF robot of the catalog.

Pinocchio (``pin.buildModelFromUrdf``) is the independent reference: names are mapped, never
indices. Differences in representation that are by design:

* continuous joints: one angle here, (cos, sin) in Pinocchio (``JointModelRUB*``: nq=2, nv=1);
* fixed joints: kept here as ``"fixed"`` joints (0 qpos); Pinocchio folds them into frames
  of type ``FIXED_JOINT``;
* a revolute/prismatic ``<limit>`` without ``lower``/``upper``: the URDF spec (and Pinocchio)
  read the missing bounds as 0, i.e. a joint locked at 0; the engine reads them as unbounded.
  Those joints are listed in the output and asserted to behave exactly that way.
"""

from __future__ import annotations

import functools
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from engine import assets, model, morphs
from engine.model import ModelLoadError

MIN_COMPARED = 65

# Pinocchio joint model short names -> our joint type.
_PIN_TYPES = {
    **{f"JointModelR{a}": "revolute" for a in "XYZ"},
    "JointModelRevoluteUnaligned": "revolute",
    **{f"JointModelRUB{a}": "continuous" for a in "XYZ"},
    "JointModelRevoluteUnboundedUnaligned": "continuous",
    **{f"JointModelP{a}": "prismatic" for a in "XYZ"},
    "JointModelPrismaticUnaligned": "prismatic",
    "JointModelFreeFlyer": "free",
}
_UNIT = {"X": np.array([1.0, 0.0, 0.0]), "Y": np.array([0.0, 1.0, 0.0]), "Z": np.array([0.0, 0.0, 1.0])}


def _pin_axis(pj) -> np.ndarray:
    """The joint axis of a Pinocchio 1-dof joint model, in the joint frame."""
    short = pj.shortname()
    if short.endswith("Unaligned"):
        return np.asarray(pj.extract().axis, float)
    return _UNIT[short[-1]]


def _build_pin(path: Path):
    """(model, None) or (None, error) for one URDF."""
    try:
        return pin.buildModelFromUrdf(str(path)), None
    except Exception as err:  # Pinocchio raises ValueError / RuntimeError for files it rejects
        return None, err


@functools.cache
def _partition() -> tuple[dict[str, object], dict[str, str]]:
    """({name: entry} Pinocchio accepts, {name: Pinocchio's error} it rejects), catalog URDFs only."""
    accepted, rejected = {}, {}
    for entry in assets.list_robots():
        if entry.format != "urdf":
            continue
        pin_model, err = _build_pin(entry.path)
        if pin_model is None:
            why = str(err).replace(str(entry.path), entry.path.name).strip()
            rejected[entry.name] = f"{type(err).__name__}: {why.splitlines()[0] if why else ''}"
        else:
            accepted[entry.name] = entry
    return accepted, rejected


ACCEPTED, REJECTED = _partition()


def _load(path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # e.g. "mimic ignored", missing optional meshes
        return model.load(morphs.URDF(file=path, **{"fixed": True, **kwargs}))


def _limit_attrs(path: Path) -> dict[str, set[str]]:
    """{joint name: attribute names of its <limit>} read straight from the XML."""
    out = {}
    for joint in ET.parse(path).getroot().findall("joint"):  # not <transmission><joint>
        limit = joint.find("limit")
        out[joint.get("name")] = set() if limit is None else set(limit.attrib)
    return out


# ------------------------------------------------------------------------------------------------
# coverage: the comparison below really runs on (almost) the whole catalog


def test_catalog_coverage():
    n_urdf = sum(e.format == "urdf" for e in assets.list_robots())
    print(f"\nURDF robots in the catalog: {n_urdf}; compared with Pinocchio: {len(ACCEPTED)}; "
          f"rejected by Pinocchio: {len(REJECTED)}")
    for name, why in sorted(REJECTED.items()):
        print(f"  Pinocchio rejects {name}: {why}")
    assert len(ACCEPTED) >= MIN_COMPARED, (
        f"only {len(ACCEPTED)} URDF robots compared with Pinocchio (expected >= {MIN_COMPARED}); "
        f"rejected: {sorted(REJECTED)}")
    assert len(ACCEPTED) + len(REJECTED) == n_urdf


def _limits_without_bounds() -> dict[str, list[str]]:
    """{robot: [revolute/prismatic joints whose <limit> lacks lower or upper]}, compared robots only."""
    out = {}
    for name, entry in sorted(ACCEPTED.items()):
        root = ET.parse(entry.path).getroot()
        joints = [j.get("name") for j in root.findall("joint") if j.get("type") in ("revolute", "prismatic")
                  and j.find("limit") is not None and not {"lower", "upper"} <= set(j.find("limit").attrib)]
        if joints:
            out[name] = joints
    return out


def test_rejected_robots_are_listed(capsys):
    with capsys.disabled():
        print(f"\n[test_model_urdf] Pinocchio rejects {len(REJECTED)} catalog URDF(s): "
              + (", ".join(f"{n} ({why})" for n, why in sorted(REJECTED.items())) or "none"))
        print("[test_model_urdf] <limit> without lower/upper (unbounded here, (0, 0) in Pinocchio): "
              + ("; ".join(f"{n}: {', '.join(js)}" for n, js in _limits_without_bounds().items()) or "none"))
    assert len(REJECTED) <= 10, f"Pinocchio rejects suspiciously many robots: {sorted(REJECTED)}"


# ------------------------------------------------------------------------------------------------
# every robot Pinocchio accepts


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_matches_pinocchio(name):
    entry = ACCEPTED[name]
    pm = pin.buildModelFromUrdf(str(entry.path))
    tree = _load(entry.path)
    assert tree.source == entry.path

    # links: every URDF link is ours, and Pinocchio's BODY frames carry exactly those names
    ours_links = tree.link_names()
    assert len(set(ours_links)) == len(ours_links), "duplicate link names"
    pin_bodies = [f.name for f in pm.frames if f.type == pin.BODY]
    assert sorted(ours_links) == sorted(pin_bodies)
    root = [link.name for link in tree.links if link.parent < 0]
    assert len(root) == 1

    # joints: ours = Pinocchio's joints (moving) + Pinocchio's FIXED_JOINT frames (fixed)
    ours = {j.name: j for j in tree.joints}
    assert len(ours) == tree.n_joints, "duplicate joint names"
    pin_joints = {pm.names[i]: pm.joints[i] for i in range(1, pm.njoints)}
    moving = {n for n, j in ours.items() if j.type != "fixed"}
    assert moving == set(pin_joints)
    fixed_frames = {f.name for f in pm.frames if f.type == pin.FIXED_JOINT}
    fixed = {n for n, j in ours.items() if j.type == "fixed"}
    assert fixed <= fixed_frames, f"fixed joints missing from Pinocchio's frames: {fixed - fixed_frames}"

    # each joint belongs to the link that is its URDF child (Pinocchio: the BODY frame's parent joint)
    for jname in pin_joints:
        joint = ours[jname]
        assert tree.links[joint.link].joints == [joint.idx]
        body = pm.frames[pm.getFrameId(tree.links[joint.link].name, pin.BODY)]
        assert pm.names[body.parentJoint] == jname

    # tree structure: link -> its joint's frame -> the parent link, in Pinocchio's frame tree too
    frame_types = (pin.JOINT, pin.FIXED_JOINT)
    for joint in tree.joints:
        link = tree.links[joint.link]
        body = pm.frames[pm.getFrameId(link.name, pin.BODY)]
        joint_frame = pm.frames[body.parentFrame]
        assert joint_frame.name == joint.name and joint_frame.type in frame_types, link.name
        parent = pm.frames[joint_frame.parentFrame]
        assert parent.type == pin.BODY and parent.name == tree.links[link.parent].name, joint.name

    # sizes: continuous joints take 1 qpos here, 2 in Pinocchio
    n_rub = sum(pj.nq == 2 and pj.nv == 1 for pj in pin_joints.values())
    assert tree.n_dofs == pm.nv
    assert tree.n_qs == pm.nq - n_rub
    assert len(tree.default_qpos) == tree.n_qs

    limit_attrs = _limit_attrs(entry.path)
    unbounded_by_default = []
    for jname, pj in pin_joints.items():
        joint = ours[jname]
        kind = _PIN_TYPES.get(pj.shortname())
        assert kind is not None, f"{jname}: unexpected Pinocchio joint model {pj.shortname()}"
        assert joint.type == kind, f"{jname}: type {joint.type}, Pinocchio {pj.shortname()}"
        assert joint.n_dofs == pj.nv
        assert joint.n_qs == (1 if kind == "continuous" else pj.nq)
        assert joint.dofs_idx == list(range(joint.dof_start, joint.dof_start + pj.nv))
        if kind == "free":
            continue

        # axis in the child link frame == URDF axis == Pinocchio's joint axis
        np.testing.assert_allclose(joint.axis, _pin_axis(pj), rtol=0, atol=1e-9, err_msg=f"{jname}: axis")
        np.testing.assert_allclose(np.linalg.norm(joint.axis), 1.0, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(joint.pos, np.zeros(3))  # a URDF joint sits at its link origin

        # limits
        assert joint.velocity_limit == pytest.approx(pm.velocityLimit[pj.idx_v], rel=1e-12), f"{jname}: velocity"
        lo, hi = pm.lowerPositionLimit[pj.idx_q], pm.upperPositionLimit[pj.idx_q]
        if kind == "continuous":  # Pinocchio bounds (cos, sin), not an angle
            assert (joint.lower, joint.upper) == (-np.inf, np.inf), f"{jname}: continuous joint is bounded"
        elif {"lower", "upper"} <= limit_attrs.get(jname, set()):
            assert joint.lower == pytest.approx(lo, rel=1e-12, abs=1e-15), f"{jname}: lower"
            assert joint.upper == pytest.approx(hi, rel=1e-12, abs=1e-15), f"{jname}: upper"
        else:  # the spec's default bounds are (0, 0); the engine reads "no bounds" (see module doc)
            assert (lo, hi) == (0.0, 0.0)
            assert (joint.lower, joint.upper) == (-np.inf, np.inf)
            unbounded_by_default.append(jname)
    if unbounded_by_default:
        print(f"{name}: <limit> without lower/upper -> unbounded here, (0, 0) in Pinocchio: {unbounded_by_default}")

    # qpos layout: joints in link order, contiguous
    q = dof = 0
    for joint in tree.joints:
        assert (joint.q_start, joint.dof_start) == (q, dof)
        q, dof = q + joint.n_qs, dof + joint.n_dofs

    # default qpos: URDF zeros clamped into the limits, mimic joints following their leader
    expected = np.zeros(tree.n_qs)
    for joint in tree.joints:
        if joint.n_qs == 1:
            expected[joint.q_start] = np.clip(0.0, joint.lower, joint.upper)
    for joint in tree.joints:
        if joint.mimic is not None:
            leader = tree.joints[joint.mimic.leader]
            expected[joint.q_start] = joint.mimic.multiplier * expected[leader.q_start] + joint.mimic.offset
    np.testing.assert_allclose(tree.default_qpos, expected, rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# robots Pinocchio rejects: ours raises a ModelLoadError naming the file, or loads


@pytest.mark.parametrize("name", sorted(REJECTED) or ["<none>"])
def test_pinocchio_rejected(name):
    if name == "<none>":
        assert not REJECTED
        return
    entry = assets.resolve(name)
    try:
        tree = _load(entry.path)
    except ModelLoadError as err:
        assert str(entry.path) in str(err), f"error does not name the file: {err}"
        print(f"{name}: Pinocchio: {REJECTED[name]}; engine: ModelLoadError: {err}")
        return
    assert tree.n_links >= 1
    assert tree.default_qpos.shape == (tree.n_qs,)
    print(f"{name}: Pinocchio: {REJECTED[name]}; engine loads it ({tree.n_links} links, {tree.n_dofs} dofs)")


def test_known_rejections():
    # Pinocchio's urdfdom is stricter than yourdfpy on these two: a joint naming a missing link
    # (falcon) and a <robot> without a name (ur_ur3). Both must still be handled, not skipped.
    for name in ("falcon", "ur_ur3"):
        if name in REJECTED:
            entry = assets.resolve(name)
            with pytest.raises(ModelLoadError, match=str(entry.path).replace(".", r"\.")):
                _load(entry.path)


# ------------------------------------------------------------------------------------------------
# default qpos and the free base on small hand-written files

_LIMITS_URDF = """<?xml version="1.0"?>
<robot name="limits">
  <link name="base"/>
  <link name="a"/><link name="b"/><link name="c"/><link name="d"/><link name="e"/><link name="f"/>
  <joint name="j_pos" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="0.5" upper="1.0" effort="1" velocity="2"/></joint>
  <joint name="j_neg" type="prismatic"><parent link="a"/><child link="b"/><axis xyz="1 0 0"/>
    <limit lower="-0.3" upper="-0.1" effort="1" velocity="0.5"/></joint>
  <joint name="j_mid" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="j_cont" type="continuous"><parent link="c"/><child link="d"/><axis xyz="0 0 2"/></joint>
  <joint name="j_fix" type="fixed"><parent link="d"/><child link="e"/></joint>
  <joint name="j_mimic" type="revolute"><parent link="e"/><child link="f"/><axis xyz="0 0 1"/>
    <limit lower="-5" upper="5" effort="1" velocity="1"/><mimic joint="j_pos" multiplier="2" offset="0.1"/></joint>
</robot>
"""


def test_default_qpos_is_zero_clamped_into_limits(tmp_path):
    path = tmp_path / "limits.urdf"
    path.write_text(_LIMITS_URDF)
    tree = _load(path)
    assert tree.joint_names() == ["j_pos", "j_neg", "j_mid", "j_cont", "j_fix", "j_mimic"]
    assert [j.type for j in tree.joints] == ["revolute", "prismatic", "revolute", "continuous", "fixed", "revolute"]
    assert tree.n_qs == tree.n_dofs == 5
    np.testing.assert_allclose(tree.joints[3].axis, [0, 0, 1])  # normalised
    # zeros clamped: 0 -> 0.5 (lower), 0 -> -0.1 (upper), 0 stays, continuous 0, mimic 2 * 0.5 + 0.1
    np.testing.assert_allclose(tree.default_qpos, [0.5, -0.1, 0.0, 0.0, 1.1], atol=1e-12)
    lo, hi = tree.q_limits()
    np.testing.assert_allclose(lo, [0.5, -0.3, -1.0, -np.inf, -5.0])
    np.testing.assert_allclose(hi, [1.0, -0.1, 1.0, np.inf, 5.0])
    np.testing.assert_allclose(tree.velocity_limits()[:3], [2.0, 0.5, 1.0])
    # Pinocchio agrees on the same file
    pm = pin.buildModelFromUrdf(str(path))
    for jname in ("j_pos", "j_neg", "j_mid"):
        pj = pm.joints[pm.getJointId(jname)]
        joint = tree.joints[tree.joint_names().index(jname)]
        assert (joint.lower, joint.upper) == (pm.lowerPositionLimit[pj.idx_q], pm.upperPositionLimit[pj.idx_q])


@pytest.mark.parametrize("name", ["ur5", "panda_urdf"])
def test_floating_base_adds_root_joint(name):
    entry = assets.resolve(name)
    fixed = _load(entry.path)
    pos, quat = np.array([0.3, -0.2, 0.5]), np.array([0.0, 0.0, 0.0, 2.0])  # normalised to (0, 0, 0, 1)
    free = _load(entry.path, fixed=False, pos=pos, quat=quat)

    root_joint = free.joints[0]
    assert root_joint.name == "root_joint" and root_joint.type == "free"
    assert root_joint.link == 0 and free.links[0].parent == -1
    assert (root_joint.n_qs, root_joint.n_dofs, root_joint.q_start, root_joint.dof_start) == (7, 6, 0, 0)
    assert free.n_qs == fixed.n_qs + 7 and free.n_dofs == fixed.n_dofs + 6
    assert free.joint_names()[1:] == fixed.joint_names()
    assert free.link_names() == fixed.link_names()
    np.testing.assert_allclose(free.default_qpos[:3], pos)
    np.testing.assert_allclose(free.default_qpos[3:7], [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(free.default_qpos[7:], fixed.default_qpos)
    # the base pose lives in the qpos, not in the root link's offset
    np.testing.assert_allclose(free.links[0].pos, np.zeros(3))
    np.testing.assert_allclose(free.links[0].quat, [1.0, 0.0, 0.0, 0.0])
    # Pinocchio with a free-flyer root has the same number of dofs
    pm = pin.buildModelFromUrdf(str(entry.path), pin.JointModelFreeFlyer())
    assert free.n_dofs == pm.nv
    # the fixed base carries the morph pose in the root link instead
    placed = _load(entry.path, pos=pos, quat=quat)
    np.testing.assert_allclose(placed.links[0].pos, pos)
    np.testing.assert_allclose(np.abs(placed.links[0].quat), [0.0, 0.0, 0.0, 1.0], atol=1e-12)
    np.testing.assert_allclose(placed.default_qpos, fixed.default_qpos)
