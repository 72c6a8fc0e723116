"""The controller-sim seam (issue 25 item 7, ``app/seam.py``): the sim reads only the controller
fields the seam names, the GUI side uses only the sim members it names, and the modules of the GUI
thread import no engine module that launches kernels or holds the scene. Read with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

from _imports import imports

from app import seam

APP = Path(__file__).resolve().parent.parent / "app"
SIM_SIDE = {"sim.py", "solver_proc.py", "collision_view.py", "recording.py", "placement.py", "cli.py",
            "solve_cmd.py", "cli_common.py", "tuning.py"}  # the sim thread, its child process, the command line


def _tree(name: str) -> ast.AST:
    return ast.parse((APP / name).read_text(encoding="utf-8"))


def controller_fields_read_by_the_sim(tree: ast.AST) -> set[str]:
    """Attributes read through ``c.X``, ``self.c.X`` or ``<...>.c.X`` (the sim's controller)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            v = node.value
            if (isinstance(v, ast.Name) and v.id == "c") or (isinstance(v, ast.Attribute) and v.attr == "c"):
                found.add(node.attr)
    return found


def sim_members_used(tree: ast.AST) -> set[str]:
    """Attributes read through ``<...>.sim.X``, or through a local name bound to ``<...>.sim``."""
    aliases = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and isinstance(node.value, ast.Attribute) and node.value.attr == "sim"
               for target in node.targets if isinstance(target, ast.Name)}
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            v = node.value
            if (isinstance(v, ast.Attribute) and v.attr == "sim") or (isinstance(v, ast.Name) and v.id in aliases):
                found.add(node.attr)
    return found


def test_the_sim_reads_only_the_controller_fields_the_seam_names():
    read = controller_fields_read_by_the_sim(_tree("sim.py"))
    new = sorted(read - seam.CONTROLLER_FIELDS)
    assert not new, f"new crossings, name them in app/seam.py: {new}"
    assert seam.CONTROLLER_FIELDS - read == set(), f"named but unused: {sorted(seam.CONTROLLER_FIELDS - read)}"


def test_the_gui_side_uses_only_the_sim_members_the_seam_names():
    used = {}
    for path in sorted(APP.glob("*.py")):
        if path.name != "sim.py":
            for member in sim_members_used(_tree(path.name)):
                used.setdefault(member, []).append(path.name)
    unnamed = {m: files for m, files in used.items() if m not in seam.SIM_MEMBERS}
    assert not unnamed, f"new crossings, name them in app/seam.py: {unnamed}"
    assert seam.SIM_MEMBERS - set(used) == set(), f"named but unused: {sorted(seam.SIM_MEMBERS - set(used))}"


def test_the_gui_thread_modules_import_no_engine_caller():
    bad = []
    for path in sorted(APP.glob("*.py")):
        if path.name in SIM_SIDE or path.name == "__main__.py":
            continue
        for target, line, _ in imports(path, "engine"):
            if any(target == m or target.startswith(m + ".") for m in seam.ENGINE_CALLING):
                bad.append(f"app/{path.name}:{line} imports {target}")
    assert not bad, "the GUI thread never calls the engine (docs/design.md, Threads):\n" + "\n".join(bad)


def test_the_readers_see_crossings():
    tree = ast.parse("def f(self):\n    self.c.playing = 1\n    x = self.c.spec\n    return c.lod\n")
    assert controller_fields_read_by_the_sim(tree) == {"playing", "spec", "lod"}
    tree = ast.parse("def g(self):\n    self.controller.sim.tick()\n    sim = self.controller.sim\n    sim.stage\n")
    assert sim_members_used(tree) == {"tick", "stage"}
