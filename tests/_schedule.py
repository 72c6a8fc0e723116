"""How the suite's tests are ordered and shared out among pytest-xdist's workers.

Two costs decide it, both measured on the 2-core VM with warm caches (a timeline of every test):
taichi's runtime, and the app windows.

The kinematics reference modules run once per backend (the ``backend`` fixture). Taichi keeps its
runtime, and every kernel it has compiled or loaded, when ``engine.init`` names the backend in use
again; a switch of backend resets it, and the next module then loads each kernel again from the
disk cache (on Vulkan, taichi 1.7.4 also parses each kernel's SPIR-V again). So the tests are
ordered and scheduled in three runs of modules:

1. the halves of the reference modules on backends other than the CPU (``[vulkan]`` ids), module
   after module, so that one worker's Vulkan modules share one runtime;
2. every other test, the CPU halves included, in collection order;
3. the modules that set ``RUN_LAST = True`` (see ``conftest.py``).

An app window (``launch`` or ``display``: the real window in a process of its own) takes all the
CPU it is given, ~1.6 cores, for as long as it is open: two at once on two cores made each window
module slower (the window modules' time summed over 620 -> 750 s when they ran side by side). So
the window modules are a lane of their own: once the non-CPU halves are handed out, the first
worker takes them, one after the other, and the other workers take them only when nothing else is
left.

:func:`order` puts the items in that order (on every worker, and under ``-n 0``), and
:class:`BackendHalvesScheduling` gives the workers a module's non-CPU half as a work unit of its
own, taking the units in that order (pytest-xdist's ``loadfile`` gives a whole file as one unit,
largest first).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

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


WINDOW_FIXTURES = re.compile(r"def \w+\([^)]*\b(?:launch|display)\b", re.S)


@cache
def opens_windows(path: str) -> bool:
    """Whether the test module at ``path`` opens app windows: a test or fixture of it takes the
    ``launch`` or ``display`` fixture (read from its source: xdist's controller sees only test ids)."""
    try:
        return WINDOW_FIXTURES.search(Path(path).read_text(encoding="utf-8")) is not None
    except OSError:
        return False


class BackendHalvesScheduling(LoadFileScheduling):
    """``--dist loadfile`` with a module's non-CPU tests as a work unit of their own, the units
    handed out in collection order, and the window modules in a lane of their own (see the module
    docstring). A test whose own parameters (not the ``backend`` fixture's) name a backend is split
    off too; that costs only its module's fixtures once more."""

    def __init__(self, config, log=None):
        super().__init__(config, log)
        config.option.loadscopereorder = False  # collection order, which order() chose
        self._root = Path(config.rootpath)
        self._lane = None  # the worker that takes the window modules

    def _opens_windows(self, scope: str) -> bool:
        return opens_windows(str(self._root / scope.split("::", 1)[0]))

    def _assign_work_unit(self, node) -> None:
        """Give ``node`` the first unit of the queue that suits it: on the window lane the first
        window module, elsewhere the first other one; failing that, the first unit."""
        if self._lane is None:
            self._lane = node
        # the lane opens once the non-CPU halves are handed out: a window at the very start of a cold
        # run meets empty sphere and mesh caches that the modules before it otherwise fill (a cold
        # run once timed out there waiting 30 s for the collision spheres to be drawn)
        windows = node is self._lane and not any(backend_of_nodeid(next(iter(unit))) for unit in
                                                  self.workqueue.values())
        chosen = next((scope for scope in self.workqueue if self._opens_windows(scope) == windows), None)
        if chosen is not None:
            self.workqueue.move_to_end(chosen, last=False)
        super()._assign_work_unit(node)

    def _split_scope(self, nodeid: str) -> str:
        scope = super()._split_scope(nodeid)
        backend = backend_of_nodeid(nodeid)
        return scope if backend is None else f"{scope}::[{backend}]"
