"""Hostile and careless input: each case is a typed error that names the argument (or the file and
element), and leaves the scene bit for bit as it was (qpos, link poses, and a reference IK answer).

The cases are those an adversarial pass found getting through: values finite in float64 but not
in the engine's float32, integers beyond int32, flags of the wrong type, a link name under the
wrong argument name, robot files with NaNs, cycles, duplicate names or inverted limits.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import engine
from engine import morphs
from engine.model.errors import ModelLoadError

N_ENVS = 16
P = np.tile([0.4, 0.1, 0.3], (N_ENVS, 1))


@pytest.fixture(scope="module")
def panda():
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build(n_envs=N_ENVS)
    yield robot
    scene.destroy()


def _snapshot(robot) -> tuple:
    ref = robot.inverse_kinematics(link="hand", pos=P, quat=[0, 1, 0, 0], seed=1, return_info=True)
    return robot.get_qpos(), robot.get_links_pos(), robot.get_links_quat(), ref.qpos, ref.error


def _assert_unchanged(robot, before: tuple) -> None:
    for a, b in zip(_snapshot(robot), before):
        np.testing.assert_array_equal(a, b)


BIG = 1e39  # finite in float64, inf in float32
BAD_CALLS = {
    "fk beyond float32": (lambda r: r.forward_kinematics(np.array([BIG]), qs_idx_local=[0]), ValueError, "qpos"),
    "fk beyond float32, SIMD rows": (lambda r: r.forward_kinematics(np.full((N_ENVS, 9), BIG)), ValueError, "qpos"),
    "set_qpos beyond float32": (lambda r: r.set_qpos(np.r_[BIG, np.zeros(8)]), ValueError, "qpos"),
    "set_dofs_position beyond float32": (lambda r: r.set_dofs_position(np.full(9, -BIG)), ValueError, "position"),
    "control beyond float32": (lambda r: r.control_dofs_position(np.full(9, BIG)), ValueError, "position"),
    "ik pos beyond float32": (lambda r: r.inverse_kinematics(link="hand", pos=[BIG, 0, 0]), ValueError, "pos"),
    "ik batched pos beyond float32": (lambda r: r.inverse_kinematics(link="hand", pos=np.full((N_ENVS, 3), BIG)),
                                      ValueError, "pos"),
    "ik quat beyond float32": (lambda r: r.inverse_kinematics(link="hand", pos=P, quat=[BIG, 0, 0, 0]),
                               ValueError, "quat"),
    "multilink quat beyond float32": (lambda r: r.inverse_kinematics_multilink(
        links=["hand"], poss=[P], quats=[np.full((N_ENVS, 4), -BIG)]), ValueError, r"quats\[0\]"),
    "init_qpos beyond float32": (lambda r: r.inverse_kinematics(link="hand", pos=P, init_qpos=np.full(9, BIG)),
                                 ValueError, "init_qpos"),
    "local_point beyond float32": (lambda r: r.get_jacobian("hand", local_point=[0, 0, BIG]), ValueError,
                                   "local_point"),
    "max_samples beyond int32": (lambda r: r.inverse_kinematics(link="hand", pos=P, max_samples=2**31), ValueError,
                                 "max_samples"),
    "max_solver_iters beyond int32": (lambda r: r.inverse_kinematics(link="hand", pos=P, max_solver_iters=2**31),
                                      ValueError, "max_solver_iters"),
    "pos_tol beyond float32": (lambda r: r.inverse_kinematics(link="hand", pos=P, pos_tol=BIG), ValueError,
                               "pos_tol"),
    "damping beyond float32": (lambda r: r.inverse_kinematics(link="hand", pos=P, damping=1e300), ValueError,
                               "damping"),
    "rest_qpos beyond float32": (lambda r: r.inverse_kinematics(link="hand", pos=P, rest_qpos=np.full(9, BIG),
                                                                rest_weight=0.1), ValueError, "rest_qpos"),
    "envs_idx beyond int64": (lambda r: r.inverse_kinematics(link="hand", pos=[0.4, 0, 0.3], envs_idx=[2**70]),
                              TypeError, "envs_idx"),
    "set_qpos a huge angle": (lambda r: r.set_qpos(np.r_[1e20, np.zeros(8)]), ValueError, "qpos"),
    "fk a huge angle": (lambda r: r.forward_kinematics(np.full((N_ENVS, 9), 1e20)), ValueError, "qpos"),
    "set_dofs_position a huge angle": (lambda r: r.set_dofs_position(np.r_[1e12, np.zeros(8)]), ValueError,
                                       "position"),
    "init_qpos huge angles": (lambda r: r.inverse_kinematics(link="hand", pos=P, init_qpos=np.full(9, 1e30),
                                                             respect_joint_limit=False), ValueError, "init_qpos"),
    "max_samples a string": (lambda r: r.inverse_kinematics(link="hand", pos=P, max_samples="5"), TypeError,
                             "max_samples"),
    "damping a string": (lambda r: r.inverse_kinematics(link="hand", pos=P, damping="0.01"), TypeError, "damping"),
    "envs_idx empty": (lambda r: r.inverse_kinematics(link="hand", pos=[0.4, 0, 0.3], envs_idx=[]), ValueError,
                       "envs_idx"),
    "jacobian envs_idx empty": (lambda r: r.get_jacobian("hand", envs_idx=[]), ValueError, "envs_idx"),
    "multilink quats a number": (lambda r: r.inverse_kinematics_multilink(links=["hand"], poss=[P], quats=0),
                                 TypeError, "quats"),
    "max_samples a bool": (lambda r: r.inverse_kinematics(link="hand", pos=P, max_samples=True), TypeError,
                           "max_samples"),
    "respect_joint_limit a string": (lambda r: r.inverse_kinematics(link="hand", pos=P, respect_joint_limit="no"),
                                     TypeError, "respect_joint_limit"),
    "respect_joint_limit an int": (lambda r: r.inverse_kinematics(link="hand", pos=P, respect_joint_limit=0),
                                   TypeError, "respect_joint_limit"),
    "return_info a string": (lambda r: r.inverse_kinematics(link="hand", pos=P, return_info="yes"), TypeError,
                             "return_info"),
    "return_error a string": (lambda r: r.inverse_kinematics_multilink(links=["hand"], poss=[P], return_error="no"),
                              TypeError, "return_error"),
    "jacobian of an unknown link": (lambda r: r.get_jacobian(link="nope"), KeyError, "link"),
    "ik of an unknown link": (lambda r: r.inverse_kinematics(link="nope", pos=P), KeyError, "link"),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_bad_calls_raise_by_name_and_change_nothing(panda, case):
    call, exc, arg = BAD_CALLS[case]
    before = _snapshot(panda)
    with pytest.raises(exc) as info:
        call(panda)
    message = str(info.value.args[0]) if exc is KeyError else str(info.value)
    assert re.match(rf"{arg}(?!\w)", message), f"the message must start with the argument's name: {message}"
    _assert_unchanged(panda, before)


def test_a_cached_plan_does_not_skip_the_checks(panda):
    """A plan built for respect_joint_limit=True must not serve respect_joint_limit=1 (1 == True)."""
    panda.inverse_kinematics(link="hand", pos=P, respect_joint_limit=True, max_samples=1)
    for kwargs, arg in (({"respect_joint_limit": 1}, "respect_joint_limit"), ({"max_samples": True}, "max_samples"),
                        ({"respect_joint_limit": np.float64(1.0)}, "respect_joint_limit")):
        with pytest.raises(TypeError, match=rf"^{arg}"):
            panda.inverse_kinematics(link="hand", pos=P, **{"respect_joint_limit": True, "max_samples": 1, **kwargs})


def test_a_quaternion_whose_square_overflows_float32_is_still_a_rotation(panda):
    """[0, 1e20, 0, 0] is finite in float32, its squared norm is not: it means [0, 1, 0, 0]."""
    huge = panda.inverse_kinematics(link="hand", pos=P, quat=[0, 1e20, 0, 0], seed=0, return_info=True)
    unit = panda.inverse_kinematics(link="hand", pos=P, quat=[0, 1, 0, 0], seed=0, return_info=True)
    np.testing.assert_array_equal(huge.qpos, unit.qpos)
    for mask in ([True] * 3, [False, False, True]):
        res = panda.inverse_kinematics(link="hand", pos=P, quat=[0, 1e20, 0, 0], rot_mask=mask, seed=0,
                                       return_info=True)
        _, quat = panda.forward_kinematics(res.qpos)
        hand = panda.get_link("hand").idx_local
        z = 1 - 2 * (quat[:, hand, 1] ** 2 + quat[:, hand, 2] ** 2)  # world z of the hand's z axis
        assert np.all(z[res.success] < -0.999), "flagged successes must point the hand's z axis down"


# ------------------------------------------------------------------------------------------------
# robot files


URDF_HEAD = '<?xml version="1.0"?>\n<robot name="bad">\n'
ARM = '''  <link name="base"/>
  <link name="x"/>
  <joint name="j" type="revolute"><parent link="base"/><child link="x"/>
    <origin xyz="{origin}"/><axis xyz="{axis}"/><limit lower="{lower}" upper="{upper}" effort="1" velocity="1"/>
  </joint>
'''
GOOD = dict(origin="0 0 0.1", axis="0 0 1", lower="-1", upper="1")


def _urdf(tmp_path, body: str):
    path = tmp_path / "bad.urdf"
    path.write_text(URDF_HEAD + body + "</robot>\n")
    return path


BAD_URDFS = {
    "nan origin": (ARM.format(**{**GOOD, "origin": "nan 0 0.1"}), "link 'x'"),
    "nan axis": (ARM.format(**{**GOOD, "axis": "nan 0 1"}), "joint 'j'"),
    "inf origin": (ARM.format(**{**GOOD, "origin": "0 inf 0"}), "link 'x'"),
    "inverted limits": (ARM.format(**{**GOOD, "lower": "1", "upper": "-1"}), "joint 'j'"),
    "zero axis": (ARM.format(**{**GOOD, "axis": "0 0 0"}), 'joint name="j"'),
    "a separate cycle": (ARM.format(**GOOD) + '''  <link name="a"/><link name="b"/>
  <joint name="ab" type="fixed"><parent link="a"/><child link="b"/></joint>
  <joint name="ba" type="fixed"><parent link="b"/><child link="a"/></joint>
''', "'a', 'b'"),
    "two links of one name": (ARM.format(**GOOD) + '  <link name="x"/>\n', 'link name="x"'),
    "origin beyond float32": (ARM.format(**{**GOOD, "origin": "1e39 0 0"}), "link 'x'"),
    "limits beyond float32": (ARM.format(**{**GOOD, "lower": "1e39", "upper": "2e39"}), "joint 'j'"),
    "two joints of one name": (ARM.format(**GOOD) + '''  <link name="y"/>
  <joint name="j" type="fixed"><parent link="x"/><child link="y"/></joint>
''', 'joint name="j"'),
}


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # yourdfpy multiplies the inf out
@pytest.mark.parametrize("case", list(BAD_URDFS))
def test_bad_urdf_files_are_refused_naming_file_and_element(tmp_path, case):
    body, element = BAD_URDFS[case]
    path = _urdf(tmp_path, body)
    with pytest.raises(ModelLoadError) as info:
        engine.model.load(morphs.URDF(file=str(path), fixed=True))
    assert str(path) in str(info.value) and element in str(info.value), str(info.value)


def test_a_good_urdf_of_the_same_shape_loads(tmp_path):
    tree = engine.model.load(morphs.URDF(file=str(_urdf(tmp_path, ARM.format(**GOOD))), fixed=True))
    assert [link.name for link in tree.links] == ["base", "x"]


MJCF = '''<mujoco model="bad"><worldbody>
  <body name="b" pos="{pos}"><joint name="h" type="hinge" axis="{axis}"/><geom type="sphere" size="0.1"/></body>
</worldbody></mujoco>
'''


@pytest.mark.parametrize(("field", "value", "element"), [("pos", "nan 0 0", "link 'b'"),
                                                          ("axis", "0 nan 1", "joint 'h'")])
def test_mjcf_with_non_finite_numbers_is_refused(tmp_path, field, value, element, monkeypatch):
    monkeypatch.chdir(tmp_path)  # MuJoCo writes its warning about the NaN to ./MUJOCO_LOG.TXT
    path = tmp_path / "bad.xml"
    path.write_text(MJCF.format(**{"pos": "0 0 0", "axis": "0 0 1", field: value}))
    with pytest.raises(ModelLoadError) as info:
        engine.model.load(morphs.MJCF(file=str(path)))
    assert str(path) in str(info.value) and element in str(info.value), str(info.value)


def test_morph_arguments_are_checked_by_name():
    with pytest.raises(TypeError, match=r"^fixed\b"):
        morphs.URDF(file="ur5", fixed="no")
    with pytest.raises(ValueError, match=r"^scale\b"):
        morphs.MJCF(file="panda", scale=1e39)
    with pytest.raises(ValueError, match=r"^pos\b"):
        morphs.MJCF(file="panda", pos=(1e39, 0, 0))


def test_unnamed_mjcf_bodies_never_take_a_name_the_file_uses(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "names.xml"
    path.write_text('''<mujoco><worldbody>
  <body><joint type="hinge"/><geom type="sphere" size="0.1"/>
    <body name="body2"><joint name="joint0" type="hinge"/><geom type="sphere" size="0.1"/></body></body>
</worldbody></mujoco>
''')
    tree = engine.model.load(morphs.MJCF(file=str(path)))
    names = [link.name for link in tree.links]
    assert len(set(names)) == len(names) and "body2" in names, names
    joints = [j.name for j in tree.joints]
    assert len(set(joints)) == len(joints), joints


def test_an_output_too_big_for_memory_says_which_call_and_how_much():
    from engine.configuration import allocate

    with pytest.raises(MemoryError, match=r"^forward_kinematics: its output for 1,000,000,000,000 envs needs"):
        allocate("forward_kinematics", (10**12, 11, 7), np.float32)
