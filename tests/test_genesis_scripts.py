"""Scripts written in the style of Genesis' IK examples (``tests/genesis_scripts/``) run unchanged
on this engine: each has ``import engine as gs`` as its only engine import, runs headless, and
checks every IK answer by forward kinematics itself (an ``assert`` fails the script).

What they cover between them: options (SimOptions, RigidOptions, ViewerOptions, VisOptions),
Plane, Mesh and Box targets moved by ``set_qpos``, surfaces and materials, ``return_error``,
``dofs_idx_local`` (other dofs kept bit-identical), batched and unbatched scenes, multilink IK,
and a free body driven by IK through its first link.
"""

from __future__ import annotations

import ast
import contextlib
import io
import runpy
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent / "genesis_scripts"
NAMES = sorted(p.stem for p in SCRIPTS.glob("*.py"))


def test_the_scripts_are_there():
    expected = {"ik_panda_target", "ik_panda_batched", "ik_fingers_multilink", "ik_dofs_subset", "ik_free_body"}
    assert expected <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_a_genesis_style_script_imports_engine_as_gs_only(name):
    tree = ast.parse((SCRIPTS / f"{name}.py").read_text(encoding="utf-8"))
    imports = [(alias.name, alias.asname) for node in ast.walk(tree) if isinstance(node, ast.Import)
               for alias in node.names]
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)], "no `from ... import` in a script"
    assert ("engine", "gs") in imports
    assert {name for name, _ in imports} <= {"engine", "numpy", "sys"}
    top = [n for n in tree.body if isinstance(n, ast.Import)]
    assert top == [n for n in tree.body[: len(top) + 1] if isinstance(n, ast.Import)], "imports come first"


@pytest.mark.parametrize("name", NAMES)
def test_a_genesis_style_script_runs_and_reaches_every_target(name, monkeypatch):
    monkeypatch.setattr(sys, "argv", [str(SCRIPTS / f"{name}.py")])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(SCRIPTS / f"{name}.py"), run_name="__main__")
    assert out.getvalue().strip().splitlines()[-1].startswith("ok:"), out.getvalue()
