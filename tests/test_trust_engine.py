"""Runs that can be reproduced and numbers that are true (issue 26): ``init(seed=S)`` makes a
script's IK answers byte-identical from process to process on CPU and Vulkan; errors of far
targets are the real residuals (checked by float64 FK of the answer); avoidance with nothing to
check says so; ``scene.reset(state=...)`` refuses another scene's state and stays usable; obstacle
meshes that stand for nothing are refused; the scene-file node limit and a huge quaternion say
what they are about.

A two-hinge arm and the generic solver (compiled once for every robot) keep each case short.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from _support import in_ci

import engine
from engine import morphs
from engine.errors import InvalidTypeError, InvalidValueError

REPO = Path(__file__).resolve().parent.parent

ARM = """<robot name="{name}">
  <link name="base"/>
  <link name="upper">{geometry}</link>
  <link name="tip"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="upper"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="upper"/><child link="tip"/><origin xyz="0.5 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
</robot>
"""
NEAR = [0.5 * np.cos(0.4), 0.5 * np.sin(0.4), 0.0]  # on the circle the tip can reach (radius 0.5 m)
BOX = '<collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>'

SCRIPT = """
import hashlib, sys
import numpy as np
import engine
engine.init(sys.argv[1], seed=int(sys.argv[2]))
scene = engine.Scene()
robot = scene.add_entity(engine.morphs.URDF(file=sys.argv[3], fixed=True))
scene.build(n_envs=16)
targets = np.random.default_rng(1).uniform(-0.8, 0.8, (16, 3)) * [1, 1, 0]
digest = hashlib.sha256()
for _ in range(2):  # seed=None: each call draws from the generator init seeded
    r = robot.inverse_kinematics("tip", pos=targets, rot_mask=[0, 0, 0], kernel="generic", max_samples=8,
                                 return_info=True)
    digest.update(np.ascontiguousarray(r.qpos).tobytes() + np.ascontiguousarray(r.error).tobytes())
print(engine.runtime.backend.STATE.arch, digest.hexdigest())
"""


@pytest.fixture(scope="module")
def arm_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("arm")
    (folder / "arm.urdf").write_text(ARM.format(name="arm", geometry=BOX))
    (folder / "bare.urdf").write_text(ARM.format(name="bare", geometry=""))
    return folder


@pytest.fixture(scope="module")
def arm(arm_file):
    engine.init(backend="cpu", seed=0)
    scene = engine.Scene()
    robot = scene.add_entity(morphs.URDF(file=arm_file / "arm.urdf", fixed=True))
    scene.build(n_envs=4)
    return scene, robot


# -- 14. reproducible runs --------------------------------------------------------------------------------------------


def _script_digest(tmp_path, backend: str, seed: int, robot: Path) -> tuple[str, str]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, str(script), backend, str(seed), str(robot)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    arch, digest = done.stdout.split()[-2:]
    return arch, digest


@pytest.mark.parametrize("backend", ["cpu", "vulkan"])
def test_init_seed_makes_a_script_byte_identical_across_processes(tmp_path, arm_file, backend):
    first = _script_digest(tmp_path, backend, 5, arm_file / "arm.urdf")
    if first[0] != backend:
        if in_ci():
            pytest.fail(f"{backend} did not start here (ran on {first[0]})")
        pytest.skip(f"{backend} is not available here")
    assert _script_digest(tmp_path, backend, 5, arm_file / "arm.urdf") == first
    assert _script_digest(tmp_path, backend, 6, arm_file / "arm.urdf")[1] != first[1]  # the seed matters


def test_seed_none_calls_still_differ_from_call_to_call(arm):
    _, robot = arm
    engine.runtime.randomness.reseed(3)
    targets = np.random.default_rng(1).uniform(-0.8, 0.8, (4, 3)) * [1, 1, 0]
    from engine.ik.request import as_seed

    seeds = [as_seed(None) for _ in range(5)]
    assert len(set(seeds)) == 5
    engine.runtime.randomness.reseed(3)
    assert [as_seed(None) for _ in range(5)] == seeds  # the same generator state: the same draws
    a = robot.inverse_kinematics("tip", pos=targets, rot_mask=[0, 0, 0], kernel="generic", max_samples=8)
    b = robot.inverse_kinematics("tip", pos=targets, rot_mask=[0, 0, 0], kernel="generic", max_samples=8)
    assert a.shape == b.shape == (4, 2)


# -- 12. true numbers for far targets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("x", [1e20, 1e30, 3.3e38])
def test_far_targets_report_their_real_residual(arm, x):
    _, robot = arm
    targets = np.array([NEAR, [x, 0.0, 0.3], [0.3, x, 0.0], NEAR])
    info = robot.inverse_kinematics("tip", pos=targets, rot_mask=[0, 0, 0], kernel="generic", max_samples=8,
                                    return_info=True, seed=1)
    pos, _ = robot.forward_kinematics(info.qpos)
    tip = robot.get_link("tip").idx_local
    truth = np.linalg.norm(targets - pos[:, tip].astype(np.float64), axis=1)
    assert np.all(np.isfinite(info.pos_error[:, 0]))
    np.testing.assert_allclose(info.pos_error[:, 0].astype(float), truth, rtol=1e-6, atol=2e-6)
    assert not info.success[1] and not info.success[2]
    assert info.success[0] and info.success[3]  # the near envs of the same call are solved as ever
    _, err = robot.inverse_kinematics("tip", pos=targets, rot_mask=[0, 0, 0], kernel="generic", max_samples=8,
                                      return_error=True, seed=1)
    np.testing.assert_allclose(np.linalg.norm(err[:, :3].astype(float), axis=1), truth, rtol=1e-6, atol=2e-6)


# -- 13. honest avoidance ----------------------------------------------------------------------------------------------


def test_avoidance_with_nothing_to_check_warns_once_and_reports_nan(arm_file, arm):
    scene = engine.Scene()
    bare = scene.add_entity(morphs.URDF(file=arm_file / "bare.urdf", fixed=True))
    scene.build(n_envs=2)
    target = np.array([NEAR, [5.0, 0.0, 0.0]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        info = bare.inverse_kinematics("tip", pos=target, rot_mask=[0, 0, 0], kernel="generic", max_samples=8,
                                       avoid_collisions=True, return_info=True, seed=2)
        bare.inverse_kinematics("tip", pos=target, rot_mask=[0, 0, 0], kernel="generic", max_samples=8,
                                avoid_collisions=True, seed=2)
    said = [w for w in caught if "has no collision geometry to check" in str(w.message)]
    assert len(said) == 1 and said[0].category is RuntimeWarning and "'bare'" in str(said[0].message)
    assert np.all(np.isnan(info.min_distance))
    assert info.success.tolist() == [True, False]  # the pose tasks decide; an unreachable target still fails
    scene.destroy()


# -- 8. reset with another scene's state ------------------------------------------------------------------------------


def test_reset_refuses_another_scenes_state_and_stays_usable(arm_file, arm):
    def scene_of(n_envs, file="arm.urdf"):
        scene = engine.Scene()
        robot = scene.add_entity(morphs.URDF(file=arm_file / file, fixed=True))
        scene.build(n_envs=n_envs)
        return scene, robot

    two, robot2 = scene_of(2)
    five, _ = scene_of(5)
    single, _ = scene_of(None)
    robot2.set_qpos(np.array([[0.1, 0.2], [0.3, 0.4]]))
    own = two.get_state()
    for target, state, what in [(five, own, r"qpos of shape \(2, 2\); this scene \(5 envs\) needs \(5, 2\)"),
                                (two, five.get_state(), r"qpos of shape \(5, 2\); this scene \(2 envs\) needs"),
                                (single, five.get_state(), r"this scene \(no envs \(unbatched\)\) needs \(1, 2\)")]:
        before = target.get_state()
        with pytest.raises(InvalidValueError, match=what):
            target.reset(state=state)
        target.reset()  # still usable
        after = target.get_state()
        assert after.t == before.t
    panda_scene = engine.Scene()
    panda_scene.add_entity(morphs.MJCF(file="panda"))
    panda_scene.build(n_envs=2)
    with pytest.raises(InvalidValueError, match=r"entity 0 \(arm\): qpos of shape \(2, 9\)"):
        two.reset(state=panda_scene.get_state())
    with pytest.raises(InvalidTypeError, match="expected a SceneState"):
        two.reset(state={"qpos": 1})
    two.reset(state=own)  # its own state is still taken
    np.testing.assert_allclose(robot2.get_qpos(), [[0.1, 0.2], [0.3, 0.4]], atol=1e-6)
    for scene in (two, five, single, panda_scene):
        scene.destroy()


# -- 17. obstacle meshes that stand for nothing -----------------------------------------------------------------------


def _write_meshes(folder: Path) -> dict[str, Path]:
    files = {"empty": folder / "empty.obj", "garbage": folder / "garbage.stl", "points": folder / "points.obj",
             "bad_index": folder / "bad_index.obj", "nan": folder / "nan.obj", "huge": folder / "huge.obj"}
    files["empty"].write_text("")
    files["garbage"].write_bytes(b"solid nonsense \x00\x01\x02 not a mesh at all" * 10)
    files["points"].write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    files["bad_index"].write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n")
    files["nan"].write_text("v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n")
    files["huge"].write_text("v 0 0 0\nv 1e39 0 0\nv 0 1 0\nf 1 2 3\n")
    return files


def test_obstacle_meshes_that_stand_for_nothing_are_refused_by_name(tmp_path, arm_file, arm):
    files = _write_meshes(tmp_path)
    for kind, path in files.items():
        scene = engine.Scene()
        robot = scene.add_entity(morphs.URDF(file=arm_file / "arm.urdf", fixed=True))
        scene.add_entity(morphs.Mesh(file=path, fixed=True))
        scene.build()
        with pytest.raises(InvalidValueError, match=rf"obstacle entity #1 \(morphs.Mesh\): .*{path.name}") as err:
            robot.inverse_kinematics("tip", pos=NEAR, rot_mask=[0, 0, 0], kernel="generic",
                                     max_samples=4, avoid_collisions=True)
        assert any(word in str(err.value) for word in ("no triangles", "cannot read", "vertex", "face")), \
            (kind, str(err.value))
        scene.destroy()


def test_scene_files_refuse_the_same_meshes(tmp_path):
    from engine.scenefile import SceneFileError, load

    files = _write_meshes(tmp_path)
    for kind, path in files.items():
        scene = tmp_path / f"{kind}.yaml"
        scene.write_text(f"robot: panda\nobstacles:\n  - {{kind: mesh, file: {path.name}, pos: [1, 0, 0]}}\n")
        with pytest.raises(SceneFileError, match=rf"obstacles\[0\]\.file.*{path.name}") as err:
            load(scene)
        if kind in ("nan", "huge", "bad_index"):
            assert ("vertex 1" if kind != "bad_index" else "index") in str(err.value), str(err.value)


# -- 18, 19. messages that say what they are about --------------------------------------------------------------------


def test_a_large_scene_file_without_aliases_is_refused_for_its_size_not_for_aliases(tmp_path):
    from engine.scenefile import SceneFileError, load

    lines = ["robot: panda", "obstacles:"] + [f"  - {{kind: sphere, size: 0.01, pos: [{i}, 0, 0]}}"
                                              for i in range(10_000)]
    big = tmp_path / "big.yaml"
    big.write_text("\n".join(lines) + "\n")
    with pytest.raises(SceneFileError) as err:
        load(big)
    assert "more than 100,000 YAML nodes" in str(err.value) and "alias" not in str(err.value)
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                    "e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n")
    with pytest.raises(SceneFileError, match=r"aliases \(\*name\) expand this file"):
        load(bomb)


def test_a_huge_quaternion_is_normalised_without_overflow():
    box = morphs.Box(size=(0.1, 0.1, 0.1), quat=[1e300, 1e300, 0, 0])
    np.testing.assert_allclose(box.quat, [2 ** -0.5, 2 ** -0.5, 0, 0])
    with pytest.raises(InvalidValueError, match="non-zero"):
        morphs.Box(size=(0.1, 0.1, 0.1), quat=[0, 0, 0, 0])
