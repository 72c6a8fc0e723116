"""Link masses and centres of mass (``Link.mass`` / ``Link.com``, ``KinematicTree.link_masses``,
``link_coms``, ``total_mass``) agree with Pinocchio (URDF) and MuJoCo (MJCF).

Pinocchio merges the links a fixed joint attaches into the body of the joint that moves them (a
fixed base's root link into the universe, joint 0); here the engine's links are summed per
Pinocchio body (by each link frame's parent joint) before masses and centres are compared. The
whole-body centre of mass at random configurations is the mass-weighted mean of every link's
``pos + R @ com`` from the engine's own FK; Pinocchio's ``centerOfMass`` leaves the universe's
inertia out, so it is added back. MuJoCo gives ``body_mass``, ``body_ipos``, ``xipos`` and
``subtree_com``; bodies are matched by name. Hostile URDF inertials are refused by name.
"""

from __future__ import annotations

import warnings

import mujoco
import numpy as np
import pinocchio as pin
import pytest
from _backend import init_engine
from pinref import PinReference

import engine
from engine import assets, model, morphs
from engine.model import ModelLoadError
from engine.transforms import quat_to_matrix

TOL = 1e-9
N_ENVS = 3
URDF_ROBOTS = ("talos", "panda_urdf")
MJCF_ROBOTS = ("panda", "dual_arm")


@pytest.fixture(scope="module")
def f64(backend):
    """The engine in float64 on the module's backend (for the tests that run FK)."""
    init_engine(precision="64")


def _load(morph):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.load(morph)


def _morph(name: str, **kwargs):
    entry = assets.resolve(name)
    if entry.format == "urdf":
        return morphs.URDF(file=entry.path, **{"fixed": True, **kwargs})  # Pinocchio's fixed base
    return morphs.MJCF(file=entry.path, **kwargs)


def _random_qpos(tree, rng: np.random.Generator) -> np.ndarray:
    """``(N_ENVS, n_qs)`` configurations within the limits (unlimited joints in [-pi, pi])."""
    lo, hi = tree.q_limits()
    lo, hi = np.where(np.isfinite(lo), lo, -np.pi), np.where(np.isfinite(hi), hi, np.pi)
    return rng.uniform(lo, hi, (N_ENVS, tree.n_qs))


def _link_world_coms(tree, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """World centre of mass of every link ``(..., n_links, 3)``, m, from link poses ``(..., n_links, 3)``
    and wxyz quaternions ``(..., n_links, 4)``."""
    return pos + np.einsum("...ij,...j->...i", quat_to_matrix(quat), tree.link_coms)


def _mean(masses: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Mass-weighted mean ``(..., 3)`` of ``points`` ``(..., n, 3)`` with ``masses`` ``(n,)``."""
    return np.einsum("n,...ni->...i", masses, points) / masses.sum()


def _engine_poses(morph, qpos: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(qpos as the engine holds it, mimic followers set; link positions; link quaternions), one row
    per row of ``qpos``."""
    scene = engine.Scene()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        robot = scene.add_entity(morph)
    scene.build(n_envs=len(qpos))
    robot.set_qpos(qpos)
    out = robot.get_qpos(), robot.get_links_pos(), robot.get_links_quat()
    scene.destroy()
    return out


# ------------------------------------------------------------------------------------------------
# URDF against Pinocchio


def _pin_body_of_links(ref: PinReference) -> np.ndarray:
    """Pinocchio joint (body) index of each of the engine's links ``(n_links,)``."""
    return np.array([ref.model.frames[ref.model.getFrameId(link.name, pin.BODY)].parentJoint
                     for link in ref.tree.links])


@pytest.mark.parametrize("name", URDF_ROBOTS)
def test_urdf_masses_match_pinocchio_bodies(name):
    ref = PinReference(_load(_morph(name)))
    tree, pin_model = ref.tree, ref.model
    assert tree.link_masses.shape == (tree.n_links,) and tree.link_coms.shape == (tree.n_links, 3)
    body_mass = np.bincount(_pin_body_of_links(ref), weights=tree.link_masses, minlength=pin_model.njoints)
    np.testing.assert_allclose(body_mass, [inertia.mass for inertia in pin_model.inertias], atol=TOL, rtol=0)
    np.testing.assert_allclose(tree.total_mass, sum(inertia.mass for inertia in pin_model.inertias), atol=TOL)
    assert tree.total_mass > 10.0  # both robots are heavy: the masses were read, not left at 0


@pytest.mark.parametrize("name", URDF_ROBOTS)
def test_urdf_centres_of_mass_match_pinocchio(name, f64):
    ref = PinReference(_load(_morph(name)))
    tree, pin_model, data = ref.tree, ref.model, ref.data
    body_of_link = _pin_body_of_links(ref)
    qpos, pos, quat = _engine_poses(_morph(name), _random_qpos(tree, np.random.default_rng(3)))
    link_coms = _link_world_coms(tree, pos, quat)
    masses = tree.link_masses
    universe = pin_model.inertias[0]
    for e in range(N_ENVS):
        q = ref.pin_q(qpos[e])
        moving_com = pin.centerOfMass(pin_model, data, q)  # forward kinematics too; joint 0 left out
        whole = (data.mass[0] * moving_com + universe.mass * universe.lever) / (data.mass[0] + universe.mass)
        np.testing.assert_allclose(_mean(masses, link_coms[e]), whole, atol=TOL, rtol=0,
                                   err_msg=f"{name}: whole-body centre of mass, env {e}")
        for j, inertia in enumerate(pin_model.inertias):
            mine = body_of_link == j
            if inertia.mass > 0:
                np.testing.assert_allclose(_mean(masses[mine], link_coms[e, mine]), data.oMi[j].act(inertia.lever),
                                           atol=TOL, rtol=0, err_msg=f"{name}: centre of body {pin_model.names[j]}")


def test_urdf_scale_scales_centres_not_masses():
    plain, scaled = _load(_morph("talos")), _load(_morph("talos", scale=2.0))
    np.testing.assert_allclose(scaled.link_coms, 2.0 * plain.link_coms, atol=1e-12, rtol=0)
    np.testing.assert_array_equal(scaled.link_masses, plain.link_masses)


def test_cached_arrays_are_read_only():
    tree = _load(_morph("panda_urdf"))
    for arr in (tree.link_masses, tree.link_coms):
        with pytest.raises(ValueError):
            arr[0] = 1.0


# ------------------------------------------------------------------------------------------------
# MJCF against MuJoCo


def _mj_bodies(tree, mj_model) -> np.ndarray:
    """MuJoCo body id of each of the engine's links ``(n_links,)``, by name."""
    ids = np.array([mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_BODY, link.name) for link in tree.links])
    assert (ids > 0).all()
    return ids


@pytest.mark.parametrize("name", MJCF_ROBOTS)
@pytest.mark.parametrize("scale", [1.0, 1.5])
def test_mjcf_masses_and_centres_match_mujoco(name, scale):
    tree = _load(_morph(name, scale=scale))
    mj_model = mujoco.MjModel.from_xml_path(str(tree.source))
    bodies = _mj_bodies(tree, mj_model)
    np.testing.assert_allclose(tree.link_masses, mj_model.body_mass[bodies], atol=TOL, rtol=0)
    np.testing.assert_allclose(tree.link_coms, scale * mj_model.body_ipos[bodies], atol=TOL, rtol=0)
    np.testing.assert_allclose(tree.total_mass, mj_model.body_mass.sum(), atol=TOL, rtol=0)
    assert (tree.link_masses > 0).all()  # the own assets state no <inertial>: masses come from the geoms


@pytest.mark.parametrize("name", MJCF_ROBOTS)
def test_mjcf_world_centres_match_mujoco(name, f64):
    tree = _load(_morph(name))
    mj_model = mujoco.MjModel.from_xml_path(str(tree.source))
    mj_data = mujoco.MjData(mj_model)
    bodies = _mj_bodies(tree, mj_model)
    qpos, pos, quat = _engine_poses(_morph(name), _random_qpos(tree, np.random.default_rng(5)))
    link_coms = _link_world_coms(tree, pos, quat)
    for e in range(N_ENVS):
        mj_data.qpos[:] = qpos[e]  # our qpos layout is MuJoCo's for MJCF
        mujoco.mj_kinematics(mj_model, mj_data)
        mujoco.mj_comPos(mj_model, mj_data)
        np.testing.assert_allclose(link_coms[e], mj_data.xipos[bodies], atol=TOL, rtol=0,
                                   err_msg=f"{name}: link centres, env {e}")
        np.testing.assert_allclose(_mean(tree.link_masses, link_coms[e]), mj_data.subtree_com[0], atol=TOL,
                                   rtol=0, err_msg=f"{name}: whole-body centre of mass, env {e}")


_INERTIA_MJCF = """
<mujoco model="inertia_test">
  <worldbody>
    <body name="declared" pos="0 0 1">
      <inertial pos="0.1 0.2 0.3" mass="2.5" diaginertia="0.01 0.01 0.01"/>
      <geom type="sphere" size="0.5"/>
      <body name="inferred" pos="0 0 0.5">
        <joint type="hinge" axis="0 0 1"/>
        <geom type="sphere" size="0.1" pos="0.2 0 0"/>
        <geom type="box" size="0.1 0.05 0.02" pos="0 0.1 0" mass="3"/>
        <geom type="cylinder" size="0.05 0.1" pos="0 0 0.3" density="500"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_mjcf_inertial_wins_and_geoms_give_the_rest(tmp_path):
    path = tmp_path / "inertia.xml"
    path.write_text(_INERTIA_MJCF)
    tree = _load(morphs.MJCF(file=path, scale=2.0))
    declared, inferred = tree.links
    assert declared.mass == pytest.approx(2.5)
    np.testing.assert_allclose(declared.com, [0.2, 0.4, 0.6], atol=1e-12)  # scaled by 2
    geom_mass = np.array([4 / 3 * np.pi * 0.1**3 * 1000, 3.0, np.pi * 0.05**2 * 0.2 * 500])  # kg
    geom_pos = np.array([[0.2, 0, 0], [0, 0.1, 0], [0, 0, 0.3]])  # m, unscaled
    assert inferred.mass == pytest.approx(geom_mass.sum(), rel=1e-9)
    np.testing.assert_allclose(inferred.com, 2.0 * _mean(geom_mass, geom_pos), atol=1e-9)
    assert tree.total_mass == pytest.approx(2.5 + geom_mass.sum(), rel=1e-9)


# ------------------------------------------------------------------------------------------------
# URDF inertials, good and hostile

_INERTIAL_URDF = """<?xml version="1.0"?>
<robot name="inertial_test">
  <link name="base"/>
  <link name="empty"><inertial><origin xyz="0.1 0 0"/></inertial></link>
  <link name="arm">
    <inertial>
      <origin xyz="{xyz}" rpy="0.3 0.2 0.1"/><mass value="{mass}"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>
    </inertial>
  </link>
  <joint name="fix" type="fixed"><parent link="base"/><child link="empty"/></joint>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/>
    <origin xyz="0 0 0.1" rpy="0 0.5 0"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>
"""


def _inertial_urdf(tmp_path, mass="1.5", xyz="0.01 0.02 0.03"):
    path = tmp_path / "inertial.urdf"
    path.write_text(_INERTIAL_URDF.format(mass=mass, xyz=xyz))
    return path


def test_urdf_inertial_is_read_in_the_link_frame(tmp_path):
    tree = _load(morphs.URDF(file=_inertial_urdf(tmp_path), scale=3.0, fixed=True))
    assert tree.link_names() == ["base", "empty", "arm"]
    np.testing.assert_array_equal(tree.link_masses, [0.0, 0.0, 1.5])  # no <inertial>; no <mass>
    np.testing.assert_allclose(tree.link_coms, [[0, 0, 0], [0.3, 0, 0], [0.03, 0.06, 0.09]], atol=1e-12)
    assert tree.total_mass == 1.5


@pytest.mark.parametrize("mass, xyz, needle", [
    ("-1", "0 0 0", "negative mass"),
    ("nan", "0 0 0", "not finite"),
    ("inf", "0 0 0", "not finite"),
    ("1e31", "0 0 0", "not finite"),
    ("1", "nan 0 0", "not finite"),
    ("1", "0 1e40 0", "not finite"),
])
def test_hostile_urdf_inertials_are_refused_by_name(tmp_path, mass, xyz, needle):
    path = _inertial_urdf(tmp_path, mass=mass, xyz=xyz)
    with pytest.raises(ModelLoadError) as info:
        _load(morphs.URDF(file=path, fixed=True))
    message = str(info.value)
    assert str(path) in message and "link 'arm'" in message and needle in message, message
