"""engine.assets: the robot catalog, name resolution and package:// URIs."""

from pathlib import Path

import pytest
from lxml import etree

from engine import assets
from engine.assets import RobotEntry, UnknownRobotError, list_robots, resolve, resolve_package_uri

FAMILIES = {"arm", "dual_arm", "humanoid", "quadruped", "hand", "mobile_manipulator", "other"}


def test_catalog_lists_every_robot_once_with_existing_files():
    robots = list_robots()
    names = [r.name for r in robots]
    assert len(robots) >= 70
    assert names == sorted(names)
    assert len(set(names)) == len(names)
    assert {"panda", "ur5", "talos", "tiago_dual"} <= set(names)
    for r in robots:
        assert isinstance(r, RobotEntry)
        assert r.path.is_file(), r
        assert r.format == ("urdf" if r.path.suffix == ".urdf" else "mjcf")
        assert r.source in ("ikstudio", "example-robot-data")
        assert r.family in FAMILIES
        assert r.description
    assert list_robots() is not list_robots()  # callers may mutate their copy


def test_every_example_robot_data_urdf_is_listed():
    robots_dir = assets.erd_robots_dir()
    assert robots_dir is not None
    shipped = {p.resolve() for p in robots_dir.rglob("*.urdf")}
    listed = {r.path for r in list_robots() if r.source == "example-robot-data"}
    assert shipped == listed


def test_entries_are_frozen():
    with pytest.raises(AttributeError):
        resolve("ur5").name = "x"


def test_loader_names_pick_their_files():
    assert resolve("ur5").path.name == "ur5_robot.urdf"
    assert resolve("ur3").path.name == "ur3_robot.urdf"  # upstream maps "ur3" to the UR5 loader
    assert resolve("ur10_limited").path.name == "ur10_joint_limited_robot.urdf"
    assert resolve("talos").path.name == "talos_reduced.urdf"
    assert resolve("tiago_dual").path.name == "tiago_dual.urdf"
    assert resolve("g1").path.name == "g1_29dof_rev_1_0.urdf"
    assert resolve("anymal").path != resolve("anymal_c").path
    assert resolve("talos_legs") == resolve("talos")  # an alias, not listed
    assert "talos_legs" not in assets.robot_names()


def test_erd_prefix_and_name_clash_scheme():
    erd_panda = resolve("erd:panda")
    assert erd_panda.source == "example-robot-data"
    assert erd_panda.path.name == "panda.urdf"
    assert resolve("erd:ur5") == resolve("ur5")
    ours = resolve("panda")
    if ours.source == "ikstudio":  # assets/panda/panda.xml is there
        assert ours.format == "mjcf" and ours.family == "arm"
        assert erd_panda.name == "panda" + assets.CLASH_SUFFIX
        assert resolve(erd_panda.name) == erd_panda
        assert resolve("erd:" + erd_panda.name) == erd_panda
    else:
        assert ours == erd_panda
    with pytest.raises(UnknownRobotError, match="did you mean 'erd:panda'"):
        resolve("erd:pnda")


def test_the_projects_own_names_resolve_as_in_the_whole_catalog_without_scanning_the_rest():
    """``resolve`` takes a name of the project's own robots without building the example-robot-data
    part (its loaders import pinocchio: ~0.1 s of every app start), and gives the very entry the
    whole catalog lists under that name."""
    import subprocess
    import sys

    code = ("import sys; from engine import assets; e = assets.resolve('panda'); "
            "print(e.source, 'example_robot_data' in sys.modules, 'pinocchio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent).stdout.split()
    assert out == ["ikstudio", "False", "False"], out
    own = [r for r in list_robots() if r.source == "ikstudio"]
    assert len(own) >= 2
    for entry in own:
        assert resolve(entry.name) == entry
        assert resolve(entry.name.upper()) == entry


def test_typo_suggests_close_names():
    with pytest.raises(UnknownRobotError) as err:
        resolve("pnda")
    msg = str(err.value)
    assert msg.startswith("unknown robot 'pnda'; did you mean 'panda'")
    assert "list_robots()" in msg
    assert isinstance(err.value, KeyError)
    with pytest.raises(KeyError, match="unknown robot 'zzzz-not-a-robot' "):
        resolve("zzzz-not-a-robot")


def test_resolve_file_paths(tmp_path):
    ur5 = resolve("ur5")
    assert resolve(ur5.path) == ur5
    assert resolve(str(ur5.path)) == ur5
    own = tmp_path / "my_arm.urdf"
    own.write_text('<robot name="my_arm"><link name="base"/></robot>')
    entry = resolve(own)
    assert (entry.name, entry.format, entry.path, entry.family) == ("my_arm", "urdf", own.resolve(), "other")
    mjcf = tmp_path / "thing.xml"
    mjcf.write_text("<mujoco/>")
    assert resolve(str(mjcf)).format == "mjcf"
    with pytest.raises(FileNotFoundError):
        resolve(tmp_path / "missing.urdf")
    (tmp_path / "mesh.stl").write_text("solid x")
    with pytest.raises(ValueError, match="suffix"):
        resolve(tmp_path / "mesh.stl")


def _mesh_uris(urdf: Path) -> list[str]:
    tree = etree.parse(str(urdf))
    return [m.get("filename") for m in tree.iter("mesh")]


@pytest.mark.parametrize("name", ["ur5", "talos", "talos_full", "b1", "tiago_dual", "panda_collision"])
def test_package_uris_of_shipped_urdfs_resolve(name):
    urdf = resolve(name).path
    uris = [u for u in _mesh_uris(urdf) if u.startswith("package://")]
    assert uris, f"{urdf} has no package:// meshes"
    for uri in uris:
        found = resolve_package_uri(uri, urdf)
        assert found is not None and found.is_file(), uri


def test_package_dirs_for_lists_ancestors_and_erd_dir(tmp_path):
    urdf = tmp_path / "pkg_description" / "urdf" / "r.urdf"
    dirs = assets.package_dirs_for(urdf)
    assert dirs[0] == urdf.parent.resolve()
    assert tmp_path.resolve() in dirs
    assert assets.erd_robots_dir() in dirs
    assert len(dirs) == len(set(dirs))


def test_resolve_package_uri_forms(tmp_path):
    pkg = tmp_path / "my_description"
    (pkg / "meshes").mkdir(parents=True)
    (pkg / "urdf").mkdir()
    mesh = pkg / "meshes" / "a b.stl"
    mesh.write_text("solid x")
    urdf = pkg / "urdf" / "r.urdf"
    urdf.write_text("<robot name='r'/>")
    found = mesh.resolve()
    assert resolve_package_uri("package://my_description/meshes/a b.stl", urdf) == found
    assert resolve_package_uri("../meshes/a b.stl", urdf) == found
    assert resolve_package_uri(str(mesh), urdf) == found
    assert resolve_package_uri(mesh.as_uri(), urdf) == found  # file:///.../a%20b.stl
    assert resolve_package_uri("package://ur_description/meshes/ur5/visual/base.dae", urdf).is_file()
    assert resolve_package_uri("package://my_description/meshes/nope.stl", urdf) is None
    assert resolve_package_uri("package://nope_description/x.stl", urdf) is None
    assert resolve_package_uri("file:///no/such/file.stl", urdf) is None


def test_families():
    assert resolve("ur5").family == "arm"
    assert resolve("talos").family == "humanoid"
    assert resolve("solo12").family == "quadruped"
    assert resolve("anymal").family == "quadruped"
    assert resolve("baxter").family == "dual_arm"
    assert resolve("allegro_right_hand").family == "hand"
    assert resolve("tiago_dual").family == "mobile_manipulator"
    assert resolve("double_pendulum").family == "other"
    assert resolve("erd:panda").family == "arm"
