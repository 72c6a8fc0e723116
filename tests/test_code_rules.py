"""Rules of the code's shape (docs/design.md, "Layout"), read from the source with ``ast``:

* no import circles among the modules of ``engine`` or of ``app``, counting imports made inside
  functions (a circle hidden behind a lazy import is still a circle);
* no source file of ``engine``, ``app`` or ``bench`` over :data:`MAX_LINES` lines;
* no module reads or writes another module's private names: ``obj._name`` is allowed only where
  ``_name`` is defined (assigned, or a function or class) in the same module, and no module imports
  another's ``_name``. The few reaches into a library's internals are listed in
  :data:`LIBRARY_INTERNALS`, each with the test that guards it;
* no power (``x ** 2``) of a run-time value inside a taichi function or kernel: taichi lowers it to a
  loop, and on lavapipe every loop counts against its per-invocation loop limit
  (``engine.kernels.quat.square``; docs/backends.md, item 4).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from _imports import cycles, imports, module_name, sources

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("engine", "app")
MAX_LINES = 500

# (module, attribute) -> the test that fails if the library changes under the hack
LIBRARY_INTERNALS = {
    ("engine/kernels/lane_fk.py", "_assign"): "tests/test_static_kernels.py (lane FK against MuJoCo)",
    ("engine/kernels/per_robot.py", "_replace"): "namedtuple's public API (its name starts with _ by design)",
    ("engine/vis/renderer.py", "_renderer"): "tests/test_vis_render.py (pyrender's renderer patched)",
    ("engine/vis/renderer.py", "_platform"): "tests/test_vis_render.py (pyrender's platform patched)",
    ("engine/vis/renderer.py", "_Pointer"): "tests/test_vis_render.py (the OSMesa context fix)",
    ("engine/vis/renderer.py", "_in_context"): "tests/test_vis_render.py (primitive buffers freed)",
    ("engine/vis/renderer.py", "_buffers"): "tests/test_vis_render.py (primitive buffers freed)",
    ("engine/vis/renderer.py", "_program_cache"): "tests/test_vis_render.py (the program cache patch)",
    ("engine/vis/renderer.py", "_address_ids"): "tests/test_vis_render.py (the OSMesa context fix)",
    ("engine/runtime/launch.py", "_primal"): "tests/test_launch.py (fast launches equal taichi's own)",
}


def _edges(top: str) -> dict[str, set[str]]:
    edges = {}
    for path in sources(top):
        # a package's __init__ re-exports its modules; importing a module loads its package first,
        # which is no edge back from the module
        name = module_name(path)
        edges[name] = {t for t, _, _ in imports(path, top) if t != name and not name.startswith(t + ".")}
    return edges


@pytest.mark.parametrize("top", PACKAGES)
def test_no_import_circles(top):
    found = cycles(_edges(top))
    assert found == [], "import circles (inside functions too):\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_circle_finder_sees_lazy_imports(tmp_path):
    assert cycles({"a": {"b"}, "b": {"a"}}) == [["a", "b", "a"]]
    assert "engine.vis" in {t for t, _, _ in imports(REPO / "engine" / "__init__.py", "engine")}  # inside a function


def test_no_file_is_over_the_line_limit():
    long = {str(p.relative_to(REPO)): n for p in sources("engine", "app", "bench")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"files over {MAX_LINES} lines: {long}"


def _defined(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _private_reaches(path: Path) -> list[str]:
    rel = str(path.relative_to(REPO))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own = _defined(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if node.attr not in own and (rel, node.attr) not in LIBRARY_INTERNALS:
                out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom):
            out += [f"{rel}:{node.lineno}: imports {a.name} from {node.module or '.'}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")]
    return out


def test_no_module_reaches_into_another_modules_private_names():
    found = [line for path in sources(*PACKAGES) for line in _private_reaches(path)]
    assert found == [], "private names used outside their module:\n" + "\n".join(found)


def test_the_private_reach_reader_finds_reaches(tmp_path):
    probe = REPO / "engine" / "_probe_for_test.py"
    try:
        probe.write_text("from .options import _number\n\ndef f(entity):\n    return entity._qpos\n")
        assert [line.split(": ", 1)[1] for line in _private_reaches(probe)] == ["imports _number from options",
                                                                               "entity._qpos"]
    finally:
        probe.unlink()


def test_every_library_internal_names_its_guard():
    for (module, attr), guard in LIBRARY_INTERNALS.items():
        assert (REPO / module).is_file(), module
        assert attr in (REPO / module).read_text(encoding="utf-8"), f"{module} no longer uses {attr}: drop it"
        guard_file = guard.split(" ")[0]
        assert not guard_file.startswith("tests/") or (REPO / guard_file).is_file(), guard


def _taichi_powers(path: Path) -> list[str]:
    """``file:line: expression`` of each ``**`` in a ``ti.func`` or ``ti.kernel`` of ``path`` that is
    not folded while tracing (both sides literals, or inside ``ti.static(...)``)."""
    rel = str(path.relative_to(REPO))
    out = []

    def visit(node, folded: bool):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "ti.static":
            folded = True
        power = (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow)
                 and not (isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant))) or (
            isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Pow)) or (
            isinstance(node, ast.Call) and ast.unparse(node.func) in ("pow", "ti.pow", "ti.math.pow"))
        if power and not folded:
            out.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, folded)

    taichi = ("ti.func", "ti.kernel", "ti.real_func")
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef) and any(ast.unparse(d).split("(")[0] in taichi
                                                     for d in node.decorator_list):
            for statement in node.body:
                visit(statement, False)
    return out


def test_no_taichi_function_raises_a_value_to_a_power():
    found = [line for path in sources("engine") for line in _taichi_powers(path)]
    assert found == [], "powers in taichi code (write square(x) or x * x):\n" + "\n".join(found)


def test_the_power_reader_finds_powers(tmp_path):
    probe = REPO / "engine" / "_probe_for_test.py"
    try:
        probe.write_text("import taichi as ti\n\n@ti.func\ndef f(x):\n"
                         "    return x ** 2 + ti.static(2 ** x) + 2 ** 3\n\ndef g(x):\n    return x ** 2\n\n"
                         "@ti.real_func\ndef h(y):\n    y **= 2\n    return ti.pow(y, 2) + pow(y, 3)\n")
        assert [line.split(": ", 1)[1] for line in _taichi_powers(probe)] == ["x ** 2", "y **= 2", "ti.pow(y, 2)",
                                                                               "pow(y, 3)"]
    finally:
        probe.unlink()
