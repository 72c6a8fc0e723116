"""The ``ikstudio`` command line: help, check, robots, record, bench, the GUI hand-off and exit codes.

Commands that must never print a traceback run in a subprocess (``python -m app``); the rest run
in-process through ``app.cli.commands.main`` for speed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from app.cli import commands as cli

REPO = Path(__file__).resolve().parent.parent
GOOD = REPO / "scenes" / "batched_panda.yaml"
BAD_TEXT = "robot: pnda\ntargets:\n  - link: hand\n    pos: [0.4, 0.0, 0.3]\n    rot_mask: [true, false]\n"


def run_cli(*args, timeout=300):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("IKSTUDIO_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "app", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=timeout)


@pytest.fixture
def bad_scene(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD_TEXT)
    return path


def test_help_lists_the_commands(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("record", "check", "robots", "bench"):
        assert command in out
    assert cli.main(["record", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--frames" in out and "--seconds" in out and "--size" in out and "--fps" in out and "-o" in out


def test_check_good_files(capsys):
    scenes = sorted((REPO / "scenes").glob("*.yaml"))
    assert cli.main(["check", *map(str, scenes)]) == 0
    out = capsys.readouterr().out
    assert out.count("ok: ") == len(scenes)
    assert f"{len(scenes)} of {len(scenes)} scene files ok" in out


def test_check_bad_file_prints_every_problem_and_exits_1(capsys, bad_scene):
    assert cli.main(["check", str(GOOD), str(bad_scene)]) == 1
    captured = capsys.readouterr()
    assert f"ok: {GOOD}" in captured.out
    assert f"{bad_scene}: robot: unknown robot 'pnda'; did you mean 'panda'? (line 1)" in captured.err
    assert f"{bad_scene}: targets[0].rot_mask: expected 3 booleans, got 2 (line 5)" in captured.err
    assert "1 of 2 scene files ok" in captured.out


def test_check_reports_missing_file(capsys, tmp_path):
    assert cli.main(["check", str(tmp_path / "none.yaml")]) == 1
    assert f"{tmp_path / 'none.yaml'}: no such file" in capsys.readouterr().err


def test_shipped_scenes_are_found_by_name_outside_the_repository(capsys, tmp_path, monkeypatch):
    """A wheel install has no scenes/ folder beside the user: ``scenes/NAME.yaml``, ``NAME.yaml``
    and ``NAME`` name the shipped scene when no such file is here; a file that is here wins."""
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "scenes/panda_clutter_plan.yaml", "panda_clutter.yaml", "ur5_figure8"]) == 0
    assert "3 of 3 scene files ok" in capsys.readouterr().out
    assert cli.main(["check", "scenes/no_such_scene.yaml"]) == 1
    assert "scenes/no_such_scene.yaml: no such file" in capsys.readouterr().err
    (tmp_path / "ur5_figure8.yaml").write_text("robot: {file: pnda}\n")  # the user's own file of that name
    assert cli.main(["check", "ur5_figure8.yaml"]) == 1
    assert "unknown robot 'pnda'" in capsys.readouterr().err


def test_robots_lists_the_catalog(capsys):
    assert cli.main(["robots"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[1:-1]}
    assert rows["panda"][1:] == ["mjcf", "arm", "ikstudio"]
    assert rows["ur5"][1:] == ["urdf", "arm", "example-robot-data"]
    assert cli.main(["robots", "--family", "quadruped"]) == 0
    out = capsys.readouterr().out
    assert "solo12" in out and "panda" not in out
    assert cli.main(["robots", "--family", "fish"]) == 2


@pytest.mark.parametrize("args", [["record"], ["record", "x.yaml", "--size", "big"], ["record", "x.yaml",
                                  "--frames", "0"], ["record", "x.yaml", "--frames", "3", "--seconds", "1"],
                                  ["check"], ["robots", "--nope"], ["bench", "--n-envs", "-4"]])
def test_usage_errors_exit_2(capsys, args):
    assert cli.main(args) == 2
    assert "usage: ikstudio" in capsys.readouterr().err


def test_bad_scene_never_prints_a_traceback(bad_scene, tmp_path):
    for args in (["check", bad_scene], [bad_scene], ["record", bad_scene, "-o", tmp_path / "x.mp4"]):
        result = run_cli(*args)
        assert result.returncode == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
        assert f"{bad_scene}: robot: unknown robot 'pnda'; did you mean 'panda'? (line 1)" in result.stderr
        assert len(result.stderr.splitlines()) <= 20  # one screen


def test_yaml_syntax_error_in_subprocess(tmp_path):
    path = tmp_path / "syntax.yaml"
    path.write_text("robot: panda\ntargets:\n  - link: hand\n   pos: [0.4, 0, 0.3]\n")
    result = run_cli("check", path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{path}: YAML syntax error: " in result.stderr and "at line 4, column 4" in result.stderr


def test_gui_missing_gives_a_clear_message(monkeypatch, capsys):
    monkeypatch.setattr(cli, "display_problem", lambda: None)
    monkeypatch.setitem(sys.modules, "app.gui", None)  # as if app/gui/ did not exist
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert "GUI is not part of this build yet" in err and "ikstudio record" in err


def test_gui_gets_the_scene_path(monkeypatch, tmp_path):
    monkeypatch.setattr(cli, "display_problem", lambda: None)
    opened = []
    fake = types.ModuleType("app.gui")
    fake.run = lambda path: opened.append(path) or 0
    monkeypatch.setitem(sys.modules, "app.gui", fake)
    monkeypatch.setattr(cli, "init_engine", lambda backend: "cpu")
    assert cli.main([]) == 0
    assert opened == [str(cli.DEFAULT_SCENE)] and cli.DEFAULT_SCENE.resolve() == GOOD.resolve()
    assert cli.main([str(REPO / "scenes" / "ur5_figure8.yaml")]) == 0
    assert opened[-1] == str(REPO / "scenes" / "ur5_figure8.yaml")
    assert cli.main(["gui", str(GOOD)]) == 0 and opened[-1] == str(GOOD)


def test_gui_without_a_display_is_a_clear_error_not_an_abort(tmp_path):
    """dearpygui aborts the process with no X server: the CLI must say so first (exit 1)."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    result = subprocess.run([sys.executable, "-m", "app"], capture_output=True, text=True, cwd=REPO, env=env,
                            timeout=120)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "needs a display" in result.stderr and "ikstudio record" in result.stderr
    assert "Traceback" not in result.stderr
    env["DISPLAY"] = ":4711"  # set, but nothing listens there
    result = subprocess.run([sys.executable, "-m", "app"], capture_output=True, text=True, cwd=REPO, env=env,
                            timeout=120)
    assert result.returncode == 1 and "no X server answers on DISPLAY=:4711" in result.stderr


def test_record_writes_a_video(tmp_path):
    out = tmp_path / "demo.mp4"
    result = run_cli("record", REPO / "scenes" / "multilink_panda.yaml", "-o", out, "--frames", 4, "--size",
                     "160x96", "--fps", 20, "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert out.is_file() and out.stat().st_size > 0
    assert f"wrote {out}: 4 frames (0.20 s of video at 20 fps) in " in result.stdout
    assert "frames/s" in result.stdout
    assert "4/4" in result.stderr  # the progress bar

    import imageio.v2 as iio

    reader = iio.get_reader(str(out))
    frames = [f for f in reader]
    reader.close()
    assert len(frames) == 4 and frames[0].shape == (96, 160, 3)


def test_record_rejects_a_non_video_output(capsys, tmp_path):
    assert cli.main(["record", str(GOOD), "-o", str(tmp_path / "demo.txt")]) == 2
    assert "expected a video file ending in .mp4" in capsys.readouterr().err


def test_bench_reports_solves_per_second_and_fk_verified_success():
    result = run_cli("bench", "--n-envs", 64, "--calls", 2, "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "solves/s" in out and "verified by FK" in out
    verified = float(out.split("reported by IK, ")[1].split("%")[0])
    assert verified >= 90.0, out


@pytest.mark.parametrize("user_value", [None, "egl"])
def test_ikstudio_turns_mujocos_gl_off_unless_the_user_set_it(user_value):
    """The command line sets MUJOCO_GL=disable before anything imports mujoco (importing it with GL
    probes GLFW: CPU spent at every start); a user's own MUJOCO_GL stays as set."""
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("MUJOCO_GL", None)
    if user_value is not None:
        env["MUJOCO_GL"] = user_value
    code = ("import os, sys; import app.cli.commands; "
            "print(os.environ.get('MUJOCO_GL'), 'mujoco' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env,
                         timeout=120).stdout.split()
    assert out == [user_value or "disable", "False"], out
