"""MJCF -> KinematicTree, checked against MuJoCo's own compiled ``MjModel``.

Every MJCF robot of the catalog (the project's ``assets/``) and a small MJCF written here that
exercises degrees, defaults with ``childclass``, ``<include>``, several joints on one body and
ball / free joints.
"""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from engine import assets, model, morphs

MJCF_ENTRIES = {e.name: e for e in assets.list_robots() if e.format == "mjcf"}
_TYPES = {0: "free", 1: "ball", 2: "prismatic", 3: "revolute"}  # mjtJoint: FREE, BALL, SLIDE, HINGE


def _compare_with_mujoco(tree, m) -> None:
    """Assert that ``tree`` (loaded with the default pose and scale) is ``m``'s body and joint tree."""
    # bodies: ours skip the world body 0
    assert tree.n_links == m.nbody - 1
    assert tree.link_names() == [m.body(b).name for b in range(1, m.nbody)]
    assert [link.parent for link in tree.links] == [int(p) - 1 for p in m.body_parentid[1:]]
    for b, link in enumerate(tree.links, start=1):
        np.testing.assert_allclose(link.pos, m.body_pos[b], rtol=0, atol=1e-12, err_msg=link.name)
        np.testing.assert_allclose(link.quat, m.body_quat[b], rtol=0, atol=1e-12, err_msg=link.name)

    # joints
    assert tree.n_joints == m.njnt
    assert tree.joint_names() == [m.joint(j).name for j in range(m.njnt)]
    for j, joint in enumerate(tree.joints):
        kind = _TYPES[int(m.jnt_type[j])]
        assert joint.type == kind, joint.name
        assert joint.link == int(m.jnt_bodyid[j]) - 1, joint.name
        assert tree.links[joint.link].name == m.body(int(m.jnt_bodyid[j])).name
        np.testing.assert_allclose(joint.pos, m.jnt_pos[j], rtol=0, atol=1e-12, err_msg=f"{joint.name}: anchor")
        if kind in ("revolute", "prismatic"):
            np.testing.assert_allclose(joint.axis, m.jnt_axis[j], rtol=0, atol=1e-12, err_msg=f"{joint.name}: axis")
            if m.jnt_limited[j]:
                assert (joint.lower, joint.upper) == tuple(float(x) for x in m.jnt_range[j]), joint.name
            else:
                assert (joint.lower, joint.upper) == (-np.inf, np.inf), joint.name
        else:
            assert (joint.lower, joint.upper) == (-np.inf, np.inf), joint.name
        # qpos / dof layout is MuJoCo's
        assert joint.q_start == m.jnt_qposadr[j], joint.name
        assert joint.dof_start == m.jnt_dofadr[j], joint.name
    assert tree.n_qs == m.nq
    assert tree.n_dofs == m.nv

    # default qpos: keyframe "home" if the file has one, else MuJoCo's qpos0
    key = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "home")
    expected = m.key_qpos[key] if key >= 0 else m.qpos0
    np.testing.assert_allclose(tree.default_qpos, expected, rtol=0, atol=1e-12)


def test_catalog_has_mjcf_robots():
    assert {"panda", "dual_arm"} <= set(MJCF_ENTRIES)
    assert all(e.source == "ikstudio" for e in MJCF_ENTRIES.values())


@pytest.mark.parametrize("name", sorted(MJCF_ENTRIES))
def test_matches_mujoco(name):
    entry = MJCF_ENTRIES[name]
    tree = model.load(morphs.MJCF(file=entry.path))
    assert tree.source == entry.path
    m = mujoco.MjModel.from_xml_path(str(entry.path))
    _compare_with_mujoco(tree, m)
    # velocity limits: the <custom> numerics velocity_limit/<joint> where the file gives them
    for joint in tree.joints:
        nid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_NUMERIC, f"velocity_limit/{joint.name}")
        if nid >= 0:
            assert joint.velocity_limit == m.numeric_data[m.numeric_adr[nid]], joint.name
        else:
            assert joint.velocity_limit == np.inf, joint.name


def test_dual_arm_home_keyframe():
    tree = model.load(morphs.MJCF(file="dual_arm"))
    m = mujoco.MjModel.from_xml_path(str(tree.source))
    key = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "home")
    assert key >= 0, "dual_arm.xml is expected to carry a 'home' keyframe"
    np.testing.assert_array_equal(tree.default_qpos, m.key_qpos[key])
    assert not np.allclose(tree.default_qpos, m.qpos0)  # the keyframe, not qpos0


def test_panda_finger_mimic():
    tree = model.load(morphs.MJCF(file="panda"))
    names = tree.joint_names()
    f1, f2 = tree.joints[names.index("finger_joint1")], tree.joints[names.index("finger_joint2")]
    assert (f1.type, f2.type) == ("prismatic", "prismatic")
    assert f1.mimic is None
    assert f2.mimic is not None
    assert f2.mimic.leader == f1.idx
    assert f2.mimic.multiplier == pytest.approx(1.0)
    assert f2.mimic.offset == pytest.approx(0.0)
    # the follower keeps its qpos slot and is set from the leader
    q = tree.default_qpos.copy()
    q[f1.q_start], q[f2.q_start] = 0.03, 0.0
    assert tree.apply_mimic(q)[f2.q_start] == pytest.approx(0.03)
    # the 7 arm joints and the leader move on their own
    assert [j.name for j in tree.joints if j.mimic is None] == [f"joint{i}" for i in range(1, 8)] + ["finger_joint1"]


# ------------------------------------------------------------------------------------------------
# a small MJCF written here: degrees, defaults + childclass, include, several joints per body

_DEFAULTS_XML = """<mujoco>
  <default>
    <default class="arm">
      <joint type="hinge" range="-30 30" damping="1"/>
      <geom contype="0" conaffinity="0" rgba="0.2 0.4 0.8 1"/>
    </default>
  </default>
</mujoco>
"""

_MAIN_XML = """<mujoco model="tiny">
  <compiler angle="degree" autolimits="true"/>
  <include file="defaults.xml"/>
  <worldbody>
    <body name="floater" pos="1 0 0.5">
      <freejoint name="float"/>
      <geom type="sphere" size="0.05"/>
    </body>
    <body name="base" childclass="arm" pos="0 0 0.1" euler="0 0 90">
      <geom type="box" size="0.1 0.1 0.1"/>
      <body name="upper" pos="0 0 0.2">
        <joint name="shoulder_pitch" axis="0 1 0" range="-90 45"/>
        <joint name="shoulder_roll" axis="1 0 0" pos="0 0 0.05"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.03"/>
        <body name="lower" pos="0 0 0.3">
          <joint name="wrist" type="ball" range="0 60"/>
          <geom type="cylinder" size="0.02 0.1"/>
          <body name="tip" pos="0 0 0.2">
            <joint name="extend" type="slide" axis="0 0 1" range="-0.1 0.2"/>
            <inertial pos="0 0 0" mass="0.1" diaginertia="1e-4 1e-4 1e-4"/>
          </body>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture
def tiny_mjcf(tmp_path):
    (tmp_path / "defaults.xml").write_text(_DEFAULTS_XML)
    path = tmp_path / "tiny.xml"
    path.write_text(_MAIN_XML)
    return path


def test_small_mjcf(tiny_mjcf):
    tree = model.load(morphs.MJCF(file=tiny_mjcf))
    _compare_with_mujoco(tree, mujoco.MjModel.from_xml_path(str(tiny_mjcf)))

    assert tree.link_names() == ["floater", "base", "upper", "lower", "tip"]
    assert [link.parent for link in tree.links] == [-1, -1, 1, 2, 3]
    assert tree.joint_names() == ["float", "shoulder_pitch", "shoulder_roll", "wrist", "extend"]
    assert [j.type for j in tree.joints] == ["free", "revolute", "revolute", "ball", "prismatic"]
    assert [j.link for j in tree.joints] == [0, 2, 2, 3, 4]
    assert tree.links[2].joints == [1, 2]  # two hinges on one body, in file order

    by_name = {j.name: j for j in tree.joints}
    # degrees -> radians for hinge ranges; the class default applies through childclass; slides stay metres
    assert by_name["shoulder_pitch"].lower == pytest.approx(-np.pi / 2, abs=1e-12)
    assert by_name["shoulder_pitch"].upper == pytest.approx(np.pi / 4, abs=1e-12)
    assert by_name["shoulder_roll"].lower == pytest.approx(-np.pi / 6, abs=1e-12)
    assert by_name["shoulder_roll"].upper == pytest.approx(np.pi / 6, abs=1e-12)
    assert (by_name["extend"].lower, by_name["extend"].upper) == pytest.approx((-0.1, 0.2), abs=1e-12)
    for name in ("float", "wrist"):
        assert (by_name[name].lower, by_name[name].upper) == (-np.inf, np.inf)
    np.testing.assert_allclose(by_name["shoulder_roll"].pos, [0, 0, 0.05], atol=1e-12)
    np.testing.assert_allclose(by_name["shoulder_pitch"].axis, [0, 1, 0], atol=1e-12)
    # euler="0 0 90" is in degrees too
    np.testing.assert_allclose(tree.links[1].quat, [np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)], atol=1e-12)

    # layout: free 7/6, hinge 1/1, hinge 1/1, ball 4/3, slide 1/1
    assert [(j.q_start, j.n_qs, j.dof_start, j.n_dofs) for j in tree.joints] == [
        (0, 7, 0, 6), (7, 1, 6, 1), (8, 1, 7, 1), (9, 4, 8, 3), (13, 1, 11, 1)]
    assert (tree.n_qs, tree.n_dofs) == (14, 12)
    # default qpos: qpos0 (free body at its pos with identity rotation, identity ball)
    np.testing.assert_allclose(tree.default_qpos, [1, 0, 0.5, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0], atol=1e-12)
    # visuals: the class makes the geoms visual-only; the sphere of the floater has no class
    assert [len(link.visuals) for link in tree.links] == [0, 1, 1, 1, 0]
    assert [v.kind for v in tree.links[2].visuals] == ["capsule"]


def test_small_mjcf_home_keyframe(tmp_path):
    (tmp_path / "defaults.xml").write_text(_DEFAULTS_XML)
    home = "0 0 1  1 0 0 0  0.3 -0.2  1 0 0 0  0.05"
    path = tmp_path / "tiny_home.xml"
    path.write_text(_MAIN_XML.replace("</mujoco>\n", f'  <keyframe><key name="home" qpos="{home}"/></keyframe>\n'
                                      "</mujoco>\n"))
    tree = model.load(morphs.MJCF(file=path))
    np.testing.assert_allclose(tree.default_qpos, [float(x) for x in home.split()], atol=1e-12)


def test_mjcf_free_joint_carries_morph_pose(tiny_mjcf):
    pos, quat = np.array([0.5, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 1.0])  # half turn about z
    tree = model.load(morphs.MJCF(file=tiny_mjcf, pos=pos, quat=quat))
    # the free body (at (1, 0, 0.5) in the file) is moved by the morph's world frame
    np.testing.assert_allclose(tree.default_qpos[:3], [-0.5, 0.0, 0.5], atol=1e-12)
    np.testing.assert_allclose(np.abs(tree.default_qpos[3:7]), [0, 0, 0, 1], atol=1e-12)
    # a root body without a free joint carries it in its offset
    np.testing.assert_allclose(tree.links[1].pos, [0.5, 0.0, 0.1], atol=1e-12)
