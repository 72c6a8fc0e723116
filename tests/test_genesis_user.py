"""What a Genesis user's scripts meet (issue 28): URDF's free base by default (callers that want a
fixed one say so), one warning when the first IK call fails everywhere, Genesis' assets found
where Genesis keeps them, Genesis' runtime names, kinematic readers with honest meanings,
``update_debug_objects(objs, poses)``, clear errors for what is not covered, and a
``visualizer.update()`` that renders only for someone looking."""

from __future__ import annotations

import logging
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import engine as gs
from engine import genesis_assets
from engine.errors import MissingFileError, NotCoveredError, StateError

REPO = Path(__file__).resolve().parent.parent
MARKER = REPO / "engine" / "data" / "meshes" / "axis.obj"
ARM_URDF = """<robot name="arm">
  <link name="base"/><link name="upper"/><link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="upper"/><origin xyz="0 0 0.1"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="tip"/><origin xyz="0.3 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>
"""


@pytest.fixture(scope="module", autouse=True)
def cpu():
    gs.init(backend=gs.cpu, seed=0, precision="32", logging_level="warning")


@pytest.fixture
def no_genesis(monkeypatch):
    """No installed genesis package and no $GENESIS_ASSETS, whatever the machine has."""
    monkeypatch.delenv("GENESIS_ASSETS", raising=False)
    monkeypatch.setattr(genesis_assets, "installed_genesis_assets", lambda: None)


# -- URDF's default and the callers that state theirs ----------------------------------------------
def test_urdf_is_free_by_default_as_in_genesis():
    assert gs.morphs.URDF(file="ur5").fixed is False
    scene = gs.Scene()
    free = scene.add_entity(gs.morphs.URDF(file="ur5"))
    fixed = scene.add_entity(gs.morphs.URDF(file="ur5", fixed=True))
    scene.build()
    assert free.is_free and free.n_qs == fixed.n_qs + 7 and free.n_dofs == fixed.n_dofs + 6
    assert not fixed.is_free
    assert gs.morphs.from_file("ur5", fixed=True).fixed is True and gs.morphs.from_file("ur5").fixed is False


def test_scene_files_and_ikstudio_solve_keep_a_catalog_urdf_fixed():
    from engine import scenefile
    from engine.batch import settings

    spec = scenefile.SceneSpec(robot={"file": "ur5"}, targets=[])
    scene, runner = scenefile.build(spec, n_envs=1, debug_frames=False)
    assert not runner.robot.is_free and runner.robot.n_qs == 6
    scene.destroy()
    free = scenefile.SceneSpec(robot={"file": "ur5", "fixed": False}, targets=[])
    scene, runner = scenefile.build(free, n_envs=1, debug_frames=False)
    assert runner.robot.is_free
    scene.destroy()
    assert settings.resolve_robot_source("ur5")[3] == {"fixed": True}
    assert settings.resolve_robot_source(gs.morphs.URDF(file="ur5"))[3] == {"fixed": False}
    assert settings.resolve_robot_source("panda")[3] == {}  # an MJCF says it itself


def test_the_repositorys_scene_files_with_a_urdf_robot_state_fixed():
    import yaml

    from engine import assets

    for path in sorted((REPO / "scenes").glob("*.yaml")):
        robot = yaml.safe_load(path.read_text())["robot"]
        name = robot if isinstance(robot, str) else robot["file"]
        if assets.resolve(name).format == "urdf":
            assert isinstance(robot, dict) and robot.get("fixed") is True, path.name


# -- the first IK call failing everywhere --------------------------------------------------------------
@pytest.fixture
def engine_log(caplog):
    caplog.set_level(logging.WARNING, logger="engine")
    return caplog


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and "first IK call" in r.getMessage()]


def test_a_first_ik_call_failing_everywhere_warns_once_naming_the_fixed_base(engine_log, tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(ARM_URDF)
    scene = gs.Scene()
    arm = scene.add_entity(gs.morphs.URDF(file=path, fixed=True))
    scene.build(n_envs=3)
    tip = arm.get_link("tip")
    far = np.tile([1.5, 0.0, 0.1], (3, 1))
    result = arm.inverse_kinematics(link=tip, pos=far, return_info=True)
    assert not result.success.any()
    arm.inverse_kinematics(link=tip, pos=far)  # not the first call: no second line
    lines = _warnings(engine_log)
    assert len(lines) == 1, lines
    assert "'arm'" in lines[0] and "failed in every env" in lines[0]
    assert "'tip'" in lines[0] and "1.50 m from the fixed base 'base'" in lines[0] and "0.40 m" in lines[0]
    assert "fixed=False" in lines[0]


def test_no_warning_when_the_first_call_succeeds_or_when_the_base_is_free(engine_log, tmp_path):
    path = tmp_path / "arm.urdf"
    path.write_text(ARM_URDF)
    scene = gs.Scene()
    arm = scene.add_entity(gs.morphs.URDF(file=path))  # free, as in Genesis: the far target is reachable
    scene.build()
    target = np.array([1.5, 0.0, 0.1])
    q = arm.inverse_kinematics(link=arm.get_link("tip"), pos=target)
    pos, _ = arm.forward_kinematics(q)
    assert np.linalg.norm(pos[arm.get_link("tip").idx_local] - target) < 1e-3
    assert _warnings(engine_log) == []


def test_an_unreachable_reason_is_not_guessed_when_the_check_finds_none(engine_log):
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build()
    # reachable in distance, but both a position and an impossible local point: fails, no cause named
    panda.inverse_kinematics(link=panda.get_link("hand"), pos=np.array([0.3, 0.0, 0.5]), max_samples=1,
                             max_solver_iters=1, pos_tol=1e-9)
    lines = _warnings(engine_log)
    assert len(lines) == 1 and "farther than" not in lines[0] and "return_error=True" in lines[0]


# -- Genesis' assets ---------------------------------------------------------------------------------
def test_a_missing_asset_error_lists_every_place_looked(no_genesis, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(MissingFileError) as info:
        gs.morphs.Mesh(file="meshes/duck.obj")
    text = str(info.value)
    for place in (str(tmp_path), str(REPO / "engine" / "data"), "installed genesis package's assets (genesis is "
                  "not installed)", "$GENESIS_ASSETS (not set)"):
        assert place in text, (place, text)
    with pytest.raises(MissingFileError) as info:
        gs.morphs.URDF(file="urdf/shadow_hand/shadow_hand.urdf")
    assert "installed genesis package's assets" in str(info.value) and "$GENESIS_ASSETS (not set)" in str(info.value)
    monkeypatch.setenv("GENESIS_ASSETS", str(tmp_path / "nowhere"))
    with pytest.raises(MissingFileError, match="no such folder"):
        gs.morphs.Mesh(file="meshes/duck.obj")


def test_genesis_assets_env_folder_serves_meshes_and_robots(no_genesis, tmp_path, monkeypatch):
    stand_in = tmp_path / "assets"
    (stand_in / "meshes").mkdir(parents=True)
    (stand_in / "urdf" / "arm").mkdir(parents=True)
    shutil.copy(MARKER, stand_in / "meshes" / "duck.obj")
    (stand_in / "urdf" / "arm" / "arm.urdf").write_text(ARM_URDF)
    monkeypatch.setenv("GENESIS_ASSETS", str(stand_in))
    assert gs.morphs.Mesh(file="meshes/duck.obj").file == (stand_in / "meshes" / "duck.obj").resolve()
    assert gs.morphs.URDF(file="urdf/arm/arm.urdf").file == (stand_in / "urdf" / "arm" / "arm.urdf").resolve()
    assert gs.utils.get_assets_dir() == str(stand_in)
    # the project's own file comes first: meshes/axis.obj is engine/data's even with the stand-in set
    shutil.copy(MARKER, stand_in / "meshes" / "axis.obj")
    assert gs.morphs.Mesh(file="meshes/axis.obj").file == MARKER.resolve()


def test_an_installed_genesis_package_comes_before_genesis_assets(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "genesis" / "assets" / "meshes").mkdir(parents=True)
    (site / "genesis" / "__init__.py").write_text("raise RuntimeError('located, never imported')\n")
    shutil.copy(MARKER, site / "genesis" / "assets" / "meshes" / "duck.obj")
    other = tmp_path / "env_assets"
    (other / "meshes").mkdir(parents=True)
    shutil.copy(MARKER, other / "meshes" / "duck.obj")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("GENESIS_ASSETS", str(other))
    monkeypatch.delitem(sys.modules, "genesis", raising=False)
    assert genesis_assets.installed_genesis_assets() == (site / "genesis" / "assets").resolve()
    assert gs.morphs.Mesh(file="meshes/duck.obj").file == (site / "genesis" / "assets" / "meshes" / "duck.obj")
    assert gs.utils.get_assets_dir() == str((site / "genesis" / "assets").resolve())
    assert "genesis" not in sys.modules


def test_get_assets_dir_falls_back_to_the_projects_files(no_genesis):
    assert gs.utils.get_assets_dir() == str(REPO / "engine" / "data")
    assert (Path(gs.utils.get_assets_dir()) / "meshes" / "axis.obj").is_file()


# -- runtime names and what is not covered ---------------------------------------------------------------
def test_runtime_names_follow_init():
    assert gs.device == "cpu" and gs.tc_int is np.int32 and gs.np_int is np.int32
    assert gs.tc_float is np.float32 and gs.np_float is np.float32
    gs.init(backend=gs.cpu, precision="64", logging_level="warning")
    try:
        assert gs.tc_float is np.float64
    finally:
        gs.init(backend=gs.cpu, seed=0, precision="32", logging_level="warning")
    assert gs.tc_float is np.float32
    assert isinstance(gs.tools.Rate(1000.0), gs.tools.Rate)
    import engine.utils.geom as gu

    assert gs.utils.geom is gu


def test_destroy_releases_the_runtime_and_init_starts_again():
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build()
    gs.destroy()
    assert gs.device is None
    with pytest.raises(StateError):
        robot.get_qpos()
    gs.destroy()  # twice is fine
    gs.init(backend=gs.cpu, seed=0, precision="32", logging_level="warning")
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build()
    assert robot.get_qpos().shape == (robot.n_qs,) and gs.device == "cpu"


def test_genesis_features_not_covered_say_so():
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build()
    for call, feature in ((lambda: robot.control_dofs_velocity(np.zeros(9)), "dynamics"),
                          (lambda: robot.set_dofs_stiffness(np.ones(9)), "dynamics"),
                          (lambda: scene.add_camera(res=(64, 64)), "cameras"),
                          (lambda: scene.sim, "simulator"),
                          (lambda: gs.renderers.Rasterizer(), "renderers"),
                          (lambda: gs.tools.animate([]), "animate"),
                          (lambda: gs.morphs.Terrain(), "Terrain"),
                          (lambda: gs.options.MPMOptions(), "MPMOptions"),
                          (lambda: gs.integrator, "integrator")):
        with pytest.raises(NotCoveredError) as info:
            call()
        assert isinstance(info.value, AttributeError)
        assert feature in str(info.value) and "not part of this engine" in str(info.value)
    with pytest.raises(AttributeError) as info:
        _ = robot.no_such_thing
    assert not isinstance(info.value, NotCoveredError) and "no_such_thing" in str(info.value)


# -- kinematic readers ---------------------------------------------------------------------------------
def test_dof_velocities_are_the_last_steps_finite_difference():
    scene = gs.Scene(dt=0.01)
    robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build(n_envs=2)
    assert np.all(robot.get_dofs_velocity() == 0) and robot.get_dofs_velocity().shape == (2, 9)
    before = robot.get_dofs_position().astype(float)
    robot.control_dofs_position(before + np.array([[0.3] * 9, [-0.2] * 9]) * 1e-3)
    scene.step()
    after = robot.get_dofs_position().astype(float)
    np.testing.assert_allclose(robot.get_dofs_velocity(), (after - before) / 0.01, rtol=1e-4, atol=1e-3)
    assert np.abs(robot.get_dofs_velocity()).max() > 0.01
    np.testing.assert_allclose(robot.get_dofs_velocity(dofs_idx_local=[1], envs_idx=[1]), (after - before)[[1]][:, [1]]
                               / 0.01, rtol=1e-4, atol=1e-3)
    kept = robot.get_dofs_velocity()
    robot.set_qpos(robot.get_qpos(), zero_velocity=False)
    np.testing.assert_array_equal(robot.get_dofs_velocity(), kept)
    robot.set_qpos(robot.get_qpos())  # a teleport: zero, as Genesis' zero_velocity default
    assert np.all(robot.get_dofs_velocity() == 0)
    scene.step()  # the targets were reached: nothing moved in this step
    assert np.all(robot.get_dofs_velocity() == 0)


def test_link_velocities_match_finite_differences_of_link_poses():
    from scipy.spatial.transform import Rotation

    scene = gs.Scene(dt=0.01)
    robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build()
    rate = np.array([0.4, -0.3, 0.2, 0.5, -0.6, 0.3, 0.7, 0.0, 0.0])
    q0 = np.array([0.1, -0.5, 0.2, -2.0, 0.1, 1.6, 0.4, 0.02, 0.02])
    robot.set_dofs_position(q0)
    robot.set_dofs_velocity(rate)
    np.testing.assert_allclose(robot.get_dofs_velocity(), rate, rtol=1e-6)
    vel, ang = robot.get_links_vel(), robot.get_links_ang()
    assert vel.shape == ang.shape == (robot.n_links, 3)
    h = 1e-3
    robot_pos = []
    for sign in (-1, 1):
        pos, quat = robot.forward_kinematics(q0 + sign * h * rate)
        robot_pos.append((pos.astype(float), quat.astype(float)))
    fd_vel = (robot_pos[1][0] - robot_pos[0][0]) / (2 * h)
    np.testing.assert_allclose(vel, fd_vel, atol=2e-3)
    r0 = Rotation.from_quat(robot_pos[0][1][:, [1, 2, 3, 0]])
    r1 = Rotation.from_quat(robot_pos[1][1][:, [1, 2, 3, 0]])
    np.testing.assert_allclose(ang, (r1 * r0.inv()).as_rotvec() / (2 * h), atol=2e-3)
    assert np.abs(fd_vel).max() > 0.1  # the check is not vacuous


def test_forces_and_contacts_are_empty_not_errors():
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build(n_envs=3)
    assert np.all(robot.get_dofs_force() == 0) and robot.get_dofs_force().shape == (3, 9)
    assert robot.get_dofs_control_force(dofs_idx_local=[0, 1]).shape == (3, 2)
    contacts = robot.get_contacts()
    assert contacts["position"].shape == (3, 0, 3) and contacts["link_a"].shape == (3, 0)
    with pytest.raises(TypeError, match="is_padded"):
        robot.get_contacts(is_padded="yes")


# -- debug objects and the visualizer ----------------------------------------------------------------------
def test_update_debug_objects_takes_genesis_145s_objects_and_poses():
    scene = gs.Scene()
    scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build()
    a = scene.draw_debug_frame(np.eye(4))
    b = scene.draw_debug_sphere((0.0, 0.0, 0.5))
    Ta, Tb = np.eye(4), np.eye(4)
    Ta[:3, 3], Tb[:3, 3] = (0.1, 0.2, 0.3), (0.0, -0.1, 0.4)
    scene.update_debug_objects([a, b], [Ta, Tb])
    np.testing.assert_array_equal(a.T, Ta)
    np.testing.assert_array_equal(b.T, Tb)
    a.set_pose(np.eye(4))
    scene.update_debug_objects()  # the older form still works
    np.testing.assert_array_equal(a.T, np.eye(4))
    with pytest.raises(ValueError, match="poses: expected one pose per debug object"):
        scene.update_debug_objects([a, b], [Ta])
    bad = np.eye(4)
    bad[3, 0] = 1.0
    with pytest.raises(ValueError, match="poses"):
        scene.update_debug_objects([a, b], [Ta, bad])
    np.testing.assert_array_equal(a.T, np.eye(4))  # nothing set when one pose is bad
    with pytest.raises(ValueError, match="objs"):
        scene.update_debug_objects(["frame"], [Ta])


def test_visualizer_update_renders_only_when_someone_looks():
    from _support import skip_or_fail

    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
    scene.build()
    vis = scene.visualizer
    vis.camera.res = (64, 36)
    for _ in range(5):
        assert vis.update() is None  # no window, no recording: nothing drawn
    assert vis.skipped_updates == 5 and vis.render_thread_id is None
    try:
        first = vis.render()
    except RuntimeError as err:
        skip_or_fail(f"no offscreen GL here: {err}")
    q = robot.get_qpos().copy()
    q[0] += 1.2
    robot.set_qpos(q)
    assert vis.update() is None
    second = vis.render()  # asked for: the state as it is now
    assert first.shape == second.shape == (36, 64, 3) and np.abs(first.astype(int) - second).max() > 0
    vis.close()
    with pytest.raises(RuntimeError, match="closed"):
        vis.update()
