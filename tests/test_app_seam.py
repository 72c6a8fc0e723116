"""The app's wings and the controller-sim seam (issue 25 items 1 and 7, ``app/__init__.py``,
``app/seam.py``): each wing imports only the wings after it (cli -> gui -> control -> sim), the sim
reads only the controller fields the seam names, the GUI side uses only the sim members it names,
and the modules of the GUI thread import no engine module that launches kernels or holds the
scene. Read with ``ast``."""

from __future__ import annotations

import ast
from pathlib import Path

from _imports import REPO, imports, module_name

from app import seam

APP = REPO / "app"
WINGS = ("cli", "gui", "control", "sim")  # each may import only the ones after it
SHARED = {"app", "app.seam", "app.signals"}  # any wing may import these
GUI_THREAD = ("gui", "control")  # the wings whose code runs in the GUI thread


def _tree(path: Path) -> ast.AST:
    return ast.parse(path.read_text(encoding="utf-8"))


def _wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in WINGS else None


def test_every_app_module_lives_in_a_wing():
    loose = [p.name for p in APP.glob("*.py") if module_name(p) not in SHARED | {"app.__main__"}]
    assert not loose, f"app/ keeps only its wings' folders, seam.py and signals.py at the top: {loose}"
    assert {p.name for p in APP.iterdir() if p.is_dir() and (p / "__init__.py").exists()} == set(WINGS)


def test_each_wing_imports_only_the_wings_after_it():
    bad = []
    for path in sorted(APP.rglob("*.py")):
        wing = _wing(module_name(path))
        if wing is None:
            continue
        allowed = set(WINGS[WINGS.index(wing):])
        for target, line, _ in imports(path, "app"):
            other = _wing(target)
            if target not in SHARED and other not in allowed:
                bad.append(f"{path.relative_to(REPO)}:{line} ({wing}) imports {target} ({other})")
    assert not bad, "cli -> gui -> control -> sim, never back (app/__init__.py):\n" + "\n".join(bad)


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
    read = set().union(*(controller_fields_read_by_the_sim(_tree(p)) for p in (APP / "sim").glob("*.py")))
    new = sorted(read - seam.CONTROLLER_FIELDS)
    assert not new, f"new crossings, name them in app/seam.py: {new}"
    assert seam.CONTROLLER_FIELDS - read == set(), f"named but unused: {sorted(seam.CONTROLLER_FIELDS - read)}"


def test_the_gui_side_uses_only_the_sim_members_the_seam_names():
    used = {}
    for path in sorted(APP.rglob("*.py")):
        if _wing(module_name(path)) != "sim":
            for member in sim_members_used(_tree(path)):
                used.setdefault(member, []).append(str(path.relative_to(APP)))
    unnamed = {m: files for m, files in used.items() if m not in seam.SIM_MEMBERS}
    assert not unnamed, f"new crossings, name them in app/seam.py: {unnamed}"
    assert seam.SIM_MEMBERS - set(used) == set(), f"named but unused: {sorted(seam.SIM_MEMBERS - set(used))}"


def test_the_gui_thread_modules_import_no_engine_caller():
    bad = []
    gui_thread = [p for wing in GUI_THREAD for p in sorted((APP / wing).glob("*.py"))]
    assert len(gui_thread) > 10
    for path in gui_thread:
        for target, line, _ in imports(path, "engine"):
            if any(target == m or target.startswith(m + ".") for m in seam.ENGINE_CALLING):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {target}")
    assert not bad, "the GUI thread never calls the engine (docs/design.md, Threads):\n" + "\n".join(bad)


def test_the_readers_see_crossings():
    tree = ast.parse("def f(self):\n    self.c.playing = 1\n    x = self.c.spec\n    return c.lod\n")
    assert controller_fields_read_by_the_sim(tree) == {"playing", "spec", "lod"}
    tree = ast.parse("def g(self):\n    self.controller.sim.tick()\n    sim = self.controller.sim\n    sim.stage\n")
    assert sim_members_used(tree) == {"tick", "stage"}
