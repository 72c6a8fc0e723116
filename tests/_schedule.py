"""How the suite's tests are ordered and shared out among pytest-xdist's workers.

One cost decides it, measured on the 2-core VM with warm caches (a timeline of every test):
taichi's runtime.

The kinematics reference modules run once per backend (the ``backend`` fixture). Taichi keeps its
runtime, and every kernel it has compiled or loaded, when ``engine.init`` names the backend in use
again; a switch of backend resets it, and the next module then loads each kernel again from the
disk cache (on Vulkan, taichi 1.7.4 also parses each kernel's SPIR-V again). So the tests are
ordered and scheduled in three runs of modules:

1. the halves of the reference modules on backends other than the CPU (``[vulkan]`` ids), module
   after module, so that one worker's Vulkan modules share one runtime;
2. every other test, the CPU halves included, in collection order;
3. the modules that set ``RUN_LAST = True`` (see ``conftest.py``).

A lane of their own for the app-window modules (the first worker taking them one after another)
cut the warm suite from 942 to 930 s, but in three cold runs of the whole suite it failed each time
in a window test that the order before had passed (a robot switch, the collision spheres' toggle:
docs/testing.md), so the window modules share the workers as any other module does.

:func:`order` puts the items in that order (on every worker, and under ``-n 0``), and
:class:`BackendHalvesScheduling` gives the workers a module's non-CPU half as a work unit of its
own, taking the units in that order (pytest-xdist's ``loadfile`` gives a whole file as one unit,
largest first).
"""

from __future__ import annotations

import _backend
from xdist.scheduler import LoadFileScheduling

OTHER_BACKENDS = tuple(name for name in _backend.TEST_BACKENDS if name != "cpu")


def runs_off_the_cpu(item) -> bool:
    """Whether ``item`` is a test of the ``backend`` fixture on a backend other than the CPU."""
    spec = getattr(item, "callspec", None)
    return spec is not None and spec.params.get("backend", "cpu") != "cpu" and "backend" in item.fixturenames


def order(items: list) -> None:
    """Reorder ``items`` in place: non-CPU backend halves, the rest, then ``RUN_LAST`` modules (each
    run keeps the items' relative order)."""
    def run(item) -> int:
        if getattr(item.module, "RUN_LAST", False):
            return 2
        return 0 if runs_off_the_cpu(item) else 1

    items.sort(key=run)  # stable


def backend_of_nodeid(nodeid: str) -> str | None:
    """The non-CPU backend named among a test id's parameters (``"vulkan"`` for
    ``tests/test_x.py::test_y[vulkan-generic]``), or None."""
    name = nodeid.rsplit("::", 1)[-1]
    if not name.endswith("]") or "[" not in name:
        return None
    params = name[name.index("[") + 1:-1].split("-")
    return next((p for p in params if p in OTHER_BACKENDS), None)


class BackendHalvesScheduling(LoadFileScheduling):
    """``--dist loadfile`` with a module's non-CPU tests as a work unit of their own, and the units
    handed out in collection order (see the module docstring). A test whose own parameters (not the
    ``backend`` fixture's) name a backend is split off too; that costs only its module's fixtures
    once more."""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        config.option.loadscopereorder = False  # collection order, which order() chose

    def _split_scope(self, nodeid: str) -> str:
        scope = super()._split_scope(nodeid)
        backend = backend_of_nodeid(nodeid)
        return scope if backend is None else f"{scope}::[{backend}]"
