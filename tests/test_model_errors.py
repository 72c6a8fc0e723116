"""Bad input gets a clear error: broken robot files, bad morph arguments, bad ``engine.init`` calls.

Every bad file is written here in ``tmp_path``. The ``engine.init`` tests reset taichi, so they
live in this file only, and the module re-initialises the CPU backend when it is done.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import engine
from engine import assets, model, morphs
from engine.model import ModelLoadError
from engine.runtime import state as runtime_state

_GOOD_URDF = """<?xml version="1.0"?>
<robot name="two_link">
  <link name="base"/>
  <link name="arm">
    <visual><geometry><box size="0.1 0.1 0.3"/></geometry></visual>
    {extra_visual}
  </link>
  <joint name="shoulder" type="{joint_type}">
    <parent link="base"/><child link="{child}"/>
    <origin xyz="0 0 0.1"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>
"""


def _urdf(tmp_path, name="robot.urdf", joint_type="revolute", child="arm", extra_visual=""):
    path = tmp_path / name
    path.write_text(_GOOD_URDF.format(joint_type=joint_type, child=child, extra_visual=extra_visual))
    return path


def _load_urdf(path, **kwargs):
    return model.load(morphs.URDF(file=path, **{"fixed": True, **kwargs}))


# ------------------------------------------------------------------------------------------------
# robot files


def test_good_urdf_loads(tmp_path):
    tree = _load_urdf(_urdf(tmp_path))
    assert tree.link_names() == ["base", "arm"]
    assert [(j.name, j.type) for j in tree.joints] == [("shoulder", "revolute")]


def test_malformed_urdf_xml(tmp_path):
    path = tmp_path / "broken.urdf"
    path.write_text('<?xml version="1.0"?>\n<robot name="broken">\n  <link name="a">\n  <link name="b"/>\n</robot>\n')
    with pytest.raises(ModelLoadError) as info:
        _load_urdf(path)
    message = str(info.value)
    assert str(path) in message
    assert "malformed XML" in message
    assert "line 5" in message  # where the parser noticed the unclosed <link name="a">


def test_malformed_urdf_is_not_silently_recovered(tmp_path):
    # an unclosed tag in the middle of an otherwise valid file: a recovering parser would load a
    # different robot; the engine must refuse it
    text = _urdf(tmp_path).read_text().replace('<link name="base"/>', '<link name="base">')
    path = tmp_path / "unclosed.urdf"
    path.write_text(text)
    with pytest.raises(ModelLoadError, match=re.escape(str(path))):
        _load_urdf(path)


def test_malformed_mjcf_xml(tmp_path):
    path = tmp_path / "broken.xml"
    path.write_text('<mujoco model="broken">\n  <worldbody>\n    <body name="a">\n  </worldbody>\n</mujoco>\n')
    with pytest.raises(ModelLoadError) as info:
        model.load(morphs.MJCF(file=path))
    message = str(info.value)
    assert str(path) in message
    assert re.search(r"[Ll]ine\D{0,10}3", message), message  # mujoco reports the line of the open <body>


def test_invalid_mjcf_content(tmp_path):
    path = tmp_path / "bad_joint.xml"
    path.write_text('<mujoco><worldbody><body name="a"><joint name="j" type="spiral"/>'
                    '<geom size="0.1"/></body></worldbody></mujoco>\n')
    with pytest.raises(ModelLoadError, match=re.escape(str(path))):
        model.load(morphs.MJCF(file=path))


def test_urdf_joint_names_missing_link(tmp_path):
    path = _urdf(tmp_path, child="forearm")
    with pytest.raises(ModelLoadError) as info:
        _load_urdf(path)
    message = str(info.value)
    assert str(path) in message
    assert '<joint name="shoulder">' in message
    assert "forearm" in message


def test_urdf_unsupported_joint_type(tmp_path):
    path = _urdf(tmp_path, joint_type="planar")
    with pytest.raises(ModelLoadError) as info:
        _load_urdf(path)
    message = str(info.value)
    assert str(path) in message
    assert '<joint name="shoulder">' in message
    assert "planar" in message


def test_urdf_missing_mesh_warns_and_loads(tmp_path):
    import trimesh

    trimesh.creation.box(extents=[0.1, 0.2, 0.3]).export(tmp_path / "cover.stl")
    ok = _load_urdf(_urdf(tmp_path, "ok.urdf",
                          extra_visual='<visual><geometry><mesh filename="cover.stl"/></geometry></visual>'))
    assert [v.kind for v in ok.links[1].visuals] == ["box", "mesh"]
    np.testing.assert_allclose(ok.links[1].visuals[1].mesh.extents, [0.1, 0.2, 0.3], atol=1e-6)

    path = _urdf(tmp_path, "missing.urdf",
                 extra_visual='<visual><geometry><mesh filename="package://nowhere/meshes/lost_cover.stl"/>'
                              "</geometry></visual>")
    with pytest.warns(RuntimeWarning, match="lost_cover.stl") as record:
        tree = _load_urdf(path)
    assert any(str(path) in str(w.message) for w in record)
    assert tree.link_names() == ["base", "arm"]  # the link is still there
    assert [v.kind for v in tree.links[1].visuals] == ["box"]  # ... without the missing visual
    assert tree.n_dofs == 1


# ------------------------------------------------------------------------------------------------
# morphs


def test_morph_missing_file(tmp_path):
    missing = tmp_path / "nowhere" / "robot.urdf"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        morphs.URDF(file=missing, fixed=True)
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "robot.xml"))):
        morphs.MJCF(file=tmp_path / "robot.xml")
    with pytest.raises(FileNotFoundError, match="no_such_robot_anywhere"):
        morphs.URDF(file="no_such_robot_anywhere", fixed=True)


@pytest.mark.parametrize(("arg", "value"), [
    ("pos", (0.0, 1.0)),
    ("pos", [[0.0, 0.0, 0.0]]),
    ("pos", (0.0, np.nan, 0.0)),
    ("pos", (0.0, np.inf, 0.0)),
    ("pos", "abc"),
    ("quat", (1.0, 0.0, 0.0)),
    ("quat", (0.0, 0.0, 0.0, 0.0)),
    ("quat", (1.0, np.nan, 0.0, 0.0)),
])
@pytest.mark.parametrize("kind", ["URDF", "MJCF"])
def test_morph_bad_pose(kind, arg, value):
    file = "ur5" if kind == "URDF" else "panda"
    with pytest.raises(ValueError, match=rf"^{arg}\b"):
        getattr(morphs, kind)(file=file, **{arg: value})


def test_morph_normalises_quat_and_keeps_pos():
    morph = morphs.URDF(file="ur5", pos=[1, 2, 3], quat=[0, 0, 0, 2], fixed=True)
    np.testing.assert_array_equal(morph.pos, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(morph.quat, [0.0, 0.0, 0.0, 1.0])


def test_morph_catalog_names():
    ur5 = morphs.URDF(file="ur5", fixed=True)
    assert ur5.file == assets.resolve("ur5").path and ur5.file.suffix == ".urdf"
    panda = morphs.MJCF(file="panda")
    assert panda.file == assets.resolve("panda").path and panda.file.suffix == ".xml"
    assert model.load(ur5).n_dofs == 6
    assert model.load(panda).n_dofs == 9
    assert isinstance(morphs.from_file("panda_urdf"), morphs.URDF)
    assert isinstance(morphs.from_file("dual_arm"), morphs.MJCF)


def test_load_rejects_non_morph():
    with pytest.raises(TypeError, match="morph"):
        model.load("ur5")


# ------------------------------------------------------------------------------------------------
# engine.init (resets taichi: keep these here)


@pytest.fixture(scope="module", autouse=True)
def _cpu_backend_afterwards():
    yield
    engine.init(backend="cpu")  # leave a clean default CPU backend for whatever runs next


def _panda_fk(n_envs=None):
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build(n_envs=n_envs)
    q = np.linspace(-0.5, 0.5, robot.n_qs)
    q[3] = -1.5
    if n_envs is not None:
        q = np.tile(q, (n_envs, 1))
    return robot.forward_kinematics(q)


def test_init_cpu():
    assert engine.init(backend="cpu") == "cpu"
    st = runtime_state.STATE
    assert st.initialised and st.arch == "cpu" and st.precision == "32"
    assert runtime_state.float_dtype() == np.float32
    assert engine.init(backend="cpu", precision=64) == "cpu"  # an int works too
    assert runtime_state.STATE.precision == "64" and runtime_state.float_dtype() == np.float64


@pytest.mark.parametrize(("kwargs", "arg"), [
    ({"backend": "tpu"}, "backend"),
    ({"backend": "GPU "}, "backend"),
    ({"backend": "cpu", "precision": "16"}, "precision"),
    ({"backend": "cpu", "precision": "double"}, "precision"),
])
def test_init_rejects_bad_arguments(kwargs, arg):
    engine.init(backend="cpu")
    before = (runtime_state.STATE.generation, runtime_state.STATE.arch, runtime_state.STATE.precision)
    with pytest.raises(ValueError, match=rf"^{arg}\b") as info:
        engine.init(**kwargs)
    assert repr(next(iter(kwargs.values())) if arg == "backend" else kwargs["precision"]) in str(info.value)
    # nothing half-applied: taichi was not reset
    assert (runtime_state.STATE.generation, runtime_state.STATE.arch, runtime_state.STATE.precision) == before


def test_init_gpu_falls_back_to_cpu_with_one_warning():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        arch = engine.init(backend="gpu")
    runtime = [w for w in record if issubclass(w.category, RuntimeWarning)]
    assert arch in ("cuda", "vulkan", "cpu")
    if arch == "cpu":  # no GPU on this machine
        assert len(runtime) == 1, [str(w.message) for w in runtime]
        assert "CPU" in str(runtime[0].message)
        assert runtime[0].filename == __file__  # the warning points at the caller's line
    else:  # a GPU machine: no fallback, no warning
        assert runtime == [], [str(w.message) for w in runtime]
    assert runtime_state.STATE.arch == arch
    pos, quat = _panda_fk()  # the backend it picked runs kernels
    assert pos.shape == (11, 3) and np.isfinite(pos).all()


def test_init_twice_reinitialises_cleanly():
    engine.init(backend="cpu")
    generation = runtime_state.STATE.generation
    pos1, quat1 = _panda_fk()
    engine.init(backend="cpu")
    assert runtime_state.STATE.generation == generation + 1
    pos2, quat2 = _panda_fk()  # a scene built after the second init works, same result
    np.testing.assert_allclose(pos2, pos1, atol=1e-6)
    np.testing.assert_allclose(quat2, quat1, atol=1e-6)
    engine.init(backend="cpu", precision="64")  # and switching precision rebuilds cleanly too
    pos3, _ = _panda_fk(n_envs=3)
    assert pos3.shape == (3, 11, 3) and pos3.dtype == np.float64
    np.testing.assert_allclose(pos3[1], pos1, atol=1e-5)
