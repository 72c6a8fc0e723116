"""Hostile files and absurd sizes, through the Python API and the command line, under a memory cap
and a timeout: a YAML alias bomb, robot files with NaNs or a joint cycle, a huge file, a million
envs. Each is refused with a message naming the file (and key or element) or the argument, fast,
in bounded memory, and without a traceback on the command line.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engine
from engine import scenefile
from engine.scenefile import SceneFileError
from engine.scenefile.models import MAX_ENVS

REPO = Path(__file__).resolve().parent.parent
MEMORY_CAP = 3 << 30  # bytes of address space for a CLI run (taichi and LLVM need ~1.5 GB of it)
TIMEOUT_S = 120


def _bomb(levels: int = 9, width: int = 9) -> str:
    """A "billion laughs" scene: ``width ** levels`` leaves from ~0.5 KB of YAML."""
    lines = ["robot: panda", "a0: &a0 [" + ", ".join(["1"] * width) + "]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def _cli(*args, cwd=REPO) -> subprocess.CompletedProcess:
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))

    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=TIMEOUT_S, preexec_fn=cap)


def test_a_yaml_alias_bomb_is_refused_by_the_api(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(_bomb())
    assert path.stat().st_size < 1024
    for load in (lambda: scenefile.load(path), lambda: scenefile.loads(path.read_text(), file=str(path))):
        with pytest.raises(SceneFileError) as info:
            load()
        assert str(path) in str(info.value) and "aliases" in str(info.value)


def test_a_few_aliases_are_still_fine(tmp_path):
    text = ("robot: panda\ntargets:\n  - &t {link: hand, pos: [0.4, 0.0, 0.3]}\n"
            "  - {link: left_finger, pos: [0.4, 0.0, 0.3]}\n")
    assert len(scenefile.loads(text).targets) == 2


BAD_URDF = ('<?xml version="1.0"?>\n<robot name="bad"><link name="base"/><link name="x"/>'
            '<joint name="j" type="revolute"><parent link="base"/><child link="x"/><origin xyz="nan 0 0.1"/>'
            '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>\n')
CYCLE_URDF = ('<?xml version="1.0"?>\n<robot name="cycle"><link name="base"/><link name="x"/><link name="a"/>'
              '<link name="b"/><joint name="j" type="fixed"><parent link="base"/><child link="x"/></joint>'
              '<joint name="ab" type="fixed"><parent link="a"/><child link="b"/></joint>'
              '<joint name="ba" type="fixed"><parent link="b"/><child link="a"/></joint></robot>\n')


@pytest.mark.parametrize(("name", "body", "needle"), [("bomb.yaml", None, "aliases"),
                                                      ("nan.urdf", BAD_URDF, "not finite"),
                                                      ("cycle.urdf", CYCLE_URDF, "cycle")])
def test_hostile_files_through_the_cli_under_a_memory_cap(tmp_path, name, body, needle):
    if body is None:
        scene = tmp_path / name
        scene.write_text(_bomb())
    else:
        (tmp_path / name).write_text(body)
        scene = tmp_path / "scene.yaml"
        scene.write_text(f"robot: {name}\n")
    result = _cli("check", scene)
    assert result.returncode == 1, result.stderr
    assert needle in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert str(tmp_path) in result.stderr  # names the file


def test_hostile_robot_files_through_the_api(tmp_path):
    for name, body in (("nan.urdf", BAD_URDF), ("cycle.urdf", CYCLE_URDF)):
        (tmp_path / name).write_text(body)
        with pytest.raises(ValueError, match=str(tmp_path / name)):
            engine.Scene().add_entity(engine.morphs.URDF(file=str(tmp_path / name), fixed=True))


def test_a_huge_scene_file_is_refused_unread(tmp_path):
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as f:
        f.truncate(64 << 20)  # sparse: 64 MiB of nothing
    with pytest.raises(SceneFileError, match="bytes; a scene file is a few KB"):
        scenefile.load(path)


def test_absurd_n_envs_names_the_cost_and_the_machine():
    engine.init(backend="cpu")
    scene = engine.Scene()
    scene.add_entity(engine.morphs.MJCF(file="panda"))
    with pytest.raises(ValueError, match=r"^n_envs: 1,000,000,000,000 envs need .* TiB .* available"):
        scene.build(n_envs=10**12)
    assert not scene.is_built
    scene.build(n_envs=4)  # and the scene is still usable
    assert scene.entities[0].get_qpos().shape == (4, 9)


def test_scene_files_and_the_app_share_one_env_limit(tmp_path):
    with pytest.raises(SceneFileError, match=rf"n_envs.*\[1, {MAX_ENVS}\].*1000000"):
        scenefile.loads("robot: panda\nenvs: {n_envs: 1000000}\n")
    from app.control import controller

    assert controller.MAX_ENVS == MAX_ENVS
    ctl = controller.AppController()
    try:
        assert not ctl.set_n_envs(MAX_ENVS + 1)
        assert f"1 to {MAX_ENVS}" in ctl.messages[-1][1]
    finally:
        ctl.close()


def test_a_point_given_two_targets_in_one_multilink_call_is_refused():
    engine.init(backend="cpu")
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=2)
    before = robot.get_qpos()
    with pytest.raises(ValueError, match=r"^links\[2\]: link 'hand'.*also links\[0\]"):
        robot.inverse_kinematics_multilink(links=["hand", "left_finger", "hand"], poss=[[0.4, 0, 0.3]] * 3)
    np.testing.assert_array_equal(robot.get_qpos(), before)
    # the same link at two local points is two targets, not one given twice
    res = robot.inverse_kinematics_multilink(links=["hand", "hand"], poss=[[0.4, 0, 0.3], [0.4, 0, 0.4]],
                                             local_points=[None, [0, 0, -0.1]], return_info=True, seed=0)
    assert res.success.all()


def test_pipes_devices_and_nul_bytes_are_refused_naming_the_file(tmp_path):
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    nul = tmp_path / "nul.yaml"
    nul.write_bytes(b"robot: pa\x00nda\n")
    for path, needle in ((fifo, "not a regular file"), (zero, "not a regular file"), (nul, "unacceptable character")):
        with pytest.raises(SceneFileError) as info:
            scenefile.load(path)
        assert str(path) in str(info.value) and needle in str(info.value)


@pytest.mark.parametrize(("text", "key"), [("solver: {pos_tol: 1.0e+39}", "solver.pos_tol"),
                                           ("targets: [{link: hand, pos: [1.0e+39, 0, 0]}]", "targets[0].pos"),
                                           ("record: {fps: 1.0e-300}", "record.fps"),
                                           ("solver: {max_samples: 2147483647}", "solver.max_samples")])
def test_numbers_a_scene_cannot_run_are_caught_by_check(text, key):
    with pytest.raises(SceneFileError, match=rf"{re.escape(key)}: expected"):
        scenefile.loads(f"robot: panda\n{text}\n")


def test_record_refuses_more_envs_than_a_scene_file_may_have(tmp_path):
    result = _cli("record", REPO / "scenes" / "batched_panda.yaml", "-o", tmp_path / "x.mp4", "--n-envs", "5000")
    assert result.returncode == 2 and "--n-envs: expected 1 to 1024" in result.stderr, result.stderr
