"""Reading the project's imports with ``ast``, for the code-rule tests (circles, layers).

``imports(path, top)`` lists what one file imports of package ``top``; ``cycles(edges)`` finds
import circles in a module graph. Nothing is imported or executed: the files are parsed.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def sources(*folders: str) -> list[Path]:
    """The ``.py`` files under ``folders`` (relative to the repository), robot data left out."""
    return sorted(p for folder in folders for p in (REPO / folder).rglob("*.py") if "data" not in p.parts)


def module_name(path: Path) -> str:
    """``engine/ik/run.py`` -> ``engine.ik.run``; a package's ``__init__.py`` -> the package."""
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(name: str) -> bool:
    """Whether dotted ``name`` is a module or a package of the repository."""
    base = REPO / Path(*name.split("."))
    return (base / "__init__.py").is_file() or base.with_suffix(".py").is_file()


def imports(path: Path, top: str) -> list[tuple[str, int, bool]]:
    """``(imported module of package top, line, at module level)`` for every import in ``path``,
    inside functions too, relative ones resolved. ``from pkg import name`` counts as importing
    ``pkg.name`` when that is a module, else ``pkg``; ``importlib.import_module("...")`` and
    ``__import__("...")`` with a literal name count too. Imports inside a top-level ``if`` or ``try``
    (``TYPE_CHECKING`` blocks, optional dependencies) count as module level."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    top_level = {id(node) for node in tree.body}
    for node in tree.body:
        if isinstance(node, ast.If | ast.Try):
            top_level.update(id(n) for n in ast.walk(node))
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            subs = [f"{module}.{alias.name}" for alias in node.names if is_module(f"{module}.{alias.name}")]
            targets = subs if len(subs) == len(node.names) else [module, *subs]  # `from . import x` is x alone
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute | ast.Name):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
            if func in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
                targets = [str(node.args[0].value)]
        found += [(t, node.lineno, id(node) in top_level) for t in targets if t == top or t.startswith(top + ".")]
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle's entry found by a depth-first search over ``edges`` (module -> the
    modules it imports), each as ``[a, b, ..., a]``; empty when there is none."""
    found, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(edges):
        if node not in state:
            visit(node, [])
    return found
