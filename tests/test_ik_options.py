"""The solver settings are one table (``engine.ik.options``, issue 25 item 4): the Genesis calls'
keywords, scene files' ``solver:`` section, ``ikstudio solve``'s flags and the app's solver panel
all follow it, and every bad value is an error naming the keyword, key or flag it came in."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from engine.entity import RigidEntity
from engine.errors import InvalidTypeError, InvalidValueError
from engine.ik.options import BY_NAME, SETTINGS, SolverOptions
from engine.scenefile import SceneFileError, SolverSpec, loads

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("call", ["inverse_kinematics", "inverse_kinematics_multilink", "solve_ik"])
def test_every_ik_call_takes_the_settings_with_the_tables_defaults(call):
    params = inspect.signature(getattr(RigidEntity, call)).parameters
    wanted = [s for s in SETTINGS if not (call == "solve_ik" and s.name == "rest_weight")]  # a PostureTask there
    assert {s.name: params[s.name].default for s in wanted if s.name in params} == \
        {s.name: s.default for s in wanted}


def test_options_are_checked_frozen_and_named_in_errors():
    options = SolverOptions.from_keywords(damping=0.1, kernel="generic")
    assert options.damping == 0.1 and options.kernel == "generic" and options.max_samples == 50
    assert hash(options) == hash(SolverOptions(damping=0.1, kernel="generic"))
    with pytest.raises(AttributeError):
        options.damping = 1.0  # frozen
    assert options.replace(max_samples=3).max_samples == 3 and options.max_samples == 50
    for values, message in [({"max_samples": 0}, "max_samples: expected a positive number, got 0"),
                            ({"max_solver_iters": -1}, "max_solver_iters: expected a non-negative number, got -1"),
                            ({"pos_tol": float("nan")}, "pos_tol: expected a positive number, got nan"),
                            ({"kernel": "fast"}, "kernel: expected one of 'auto', 'per_robot', 'generic'"),
                            ({"max_samples": 2.5}, "max_samples: expected an integer, got 2.5")]:
        with pytest.raises(InvalidValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            SolverOptions.from_keywords(**values)
    with pytest.raises(InvalidTypeError, match="avoid_collisions: expected True or False, got 'yes'"):
        SolverOptions.from_keywords(avoid_collisions="yes")
    with pytest.raises(InvalidTypeError, match="dampng: not a solver setting; expected one of max_samples"):
        SolverOptions.from_keywords(dampng=0.1)
    with pytest.raises(InvalidValueError, match="--damping: expected a positive number"):
        SolverOptions.from_keywords(labels={"damping": "--damping"}, damping=0)


def test_scene_files_solver_section_is_the_table():
    assert list(SolverSpec.model_fields) == [s.name for s in SETTINGS] + ["seed", "track", "max_joint_velocity", "plan",
                                                                          "plan_max_nodes"]
    spec = SolverSpec()
    assert {s.name: getattr(spec, s.name) for s in SETTINGS} == \
        {s.name: ("generic" if s.name == "kernel" else s.default) for s in SETTINGS}  # scenes: generic kernel
    with pytest.raises(SceneFileError, match=r"solver.max_samples: expected an integer in \[1, 10000\], got 0"):
        loads("robot: {file: panda}\nsolver: {max_samples: 0}\n")
    with pytest.raises(SceneFileError, match=r"solver.kernel"):
        loads("robot: {file: panda}\nsolver: {kernel: fast}\n")


def test_the_solve_command_has_a_flag_per_setting():
    help_text = subprocess.run([sys.executable, "-m", "app", "solve", "--help"], cwd=REPO, capture_output=True,
                               text=True, timeout=120).stdout
    for setting in SETTINGS:
        assert setting.flag in help_text, setting.flag
    assert "--no-respect-joint-limit" in help_text and "--no-avoid-collisions" in help_text


def test_the_apps_solver_panel_shows_the_panel_settings():
    from app.gui.panels import solver as panels

    assert [s.name for s in panels.SOLVER_FIELDS] == [s.name for s in SETTINGS if s.panel]
    assert {"max_samples", "max_solver_iters", "damping", "respect_joint_limit"} <= set(s.name for s in
                                                                                      panels.SOLVER_FIELDS)
    assert all(s.ui_range is not None for s in panels.SOLVER_FIELDS if s.kind in ("int", "float"))
    assert all(BY_NAME[s.name] is s for s in panels.SOLVER_FIELDS)
