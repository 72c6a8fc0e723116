"""Session-wide test setup: headless GL, a quiet taichi, the Xvfb display, and the CI skip rule.

* ``PYOPENGL_PLATFORM`` defaults to ``osmesa``: the renderer draws offscreen with no display.
* ``display`` and ``launch``: the real app window in a subprocess, driven with xdotool (``_appwindow``).
* ``xvfb_display`` (session fixture): the X display for GUI tests; with no usable ``DISPLAY`` it
  starts a private Xvfb (1920x1080x24) for the session and stops it at the end.
* ``backend`` (module fixture): the kinematics reference modules run once per backend, CPU and
  Vulkan by default (see ``_backend.py``).
* ``IKSTUDIO_CACHE_DIR`` defaults to pytest's cache folder (a temporary folder without the cache
  plugin), so the collision model's fitted
  spheres and sampled pairs are cached there between runs, never in the user's cache.
* Under ``CI=true`` every skip is reported as a failure (see ``_support.py``); expected failures
  (``xfail``) are left as they are.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")
# Quiet taichi: no version banner on import, no telemetry or version check over the network.
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")
os.environ.setdefault("TI_ENABLE_TELEMETRY", "0")
os.environ.setdefault("TI_SKIP_VERSION_CHECK", "ON")

import _backend  # noqa: E402
from _appwindow import AppProcess, late_kernel_note  # noqa: E402
from _support import in_ci, require_or_fail, skip_or_fail  # noqa: E402

__all__ = ["in_ci", "require_or_fail", "skip_or_fail"]


@pytest.fixture(scope="module", params=_backend.TEST_BACKENDS)
def backend(request):
    """The backend a reference module runs on (every module that takes this fixture runs once per
    backend of ``_backend.TEST_BACKENDS``); ``_backend.init_engine`` starts it. Afterwards the
    engine is back on the CPU, where the modules that never call ``engine.init`` expect it."""
    _backend.use(request.param)
    yield request.param
    if request.param != "cpu":
        import engine

        engine.init(backend="cpu")

CI_SKIP_NOTE = "skipped under CI=true, which counts as a failure (a skip must not hide a missing dependency)"


def pytest_configure(config):
    if not os.environ.get("IKSTUDIO_CACHE_DIR"):  # the collision model's disk cache (engine.collision.spheres)
        cache = getattr(config, "cache", None)  # None under -p no:cacheprovider (as .ci/run runs)
        os.environ["IKSTUDIO_CACHE_DIR"] = str(cache.mkdir("ikstudio") if cache is not None else
                                               Path(tempfile.gettempdir()) / "ikstudio-test-cache")
    # taichi 1.7.4 calls a locale function that Python 3.11+ deprecates; not ours to fix.
    config.addinivalue_line("filterwarnings",
                            "ignore:'locale.getdefaultlocale' is deprecated:DeprecationWarning:taichi")
    config.addinivalue_line("markers", "cpu_backend_only: a case that runs under the `backend` fixture's CPU "
                            "parameter only (deselected on the others; pytest counts them where it collects: -n 0, "
                            "--collect-only)")


def _display_usable(display: str | None) -> bool:
    """False for an unset DISPLAY or a local ``:N`` whose X socket is gone."""
    if not display:
        return False
    local = re.fullmatch(r":(\d+)(\.\d+)?", display)
    return local is None or Path(f"/tmp/.X11-unix/X{local[1]}").exists()


@pytest.fixture(scope="session")
def xvfb_display():
    """The X display GUI tests use (``":N"``); ``os.environ["DISPLAY"]`` is set for the session."""
    if _display_usable(os.environ.get("DISPLAY")):
        yield os.environ["DISPLAY"]
        return
    error = None
    try:
        from xvfbwrapper import Xvfb

        xvfb = Xvfb(width=1920, height=1080, colordepth=24, timeout=20)
        xvfb.start()  # picks a free display, waits for /tmp/.X11-unix/XN, sets DISPLAY
    except Exception as err:  # package or binary missing, or the server died on start
        error = f"{type(err).__name__}: {err}"
    if error is not None:
        skip_or_fail(f"no DISPLAY and Xvfb could not be started ({error}); "
                     "install the system packages listed in .ci/run")
    try:
        yield os.environ["DISPLAY"]
    finally:
        xvfb.stop()  # also restores the previous DISPLAY


def _reason(longrepr) -> str:
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    if rep.skipped and not hasattr(rep, "wasxfail") and in_ci():
        rep.outcome = "failed"
        rep.longrepr = f"{CI_SKIP_NOTE}: {_reason(rep.longrepr)}"
    return rep


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    rep = yield  # a module-level skip (pytest.importorskip, allow_module_level=True) lands here
    if rep.skipped and in_ci():
        rep.outcome = "failed"
        rep.longrepr = f"{CI_SKIP_NOTE}: {_reason(rep.longrepr)}"
    return rep


@pytest.fixture(scope="module")
def display(xvfb_display):
    """The X display for tests that drive the real window with xdotool."""
    require_or_fail(shutil.which("xdotool"), "xdotool is not installed (apt install xdotool)")
    return xvfb_display


@pytest.fixture
def launch(display, tmp_path):
    """``launch(**kwargs)`` starts ``app.gui.run(**kwargs)`` as an :class:`AppProcess`; all are killed at the
    end, and the test fails if any window's process prepared a kernel after its first frame."""
    started = []

    def start(**kwargs) -> AppProcess:
        app = AppProcess(display, tmp_path, **kwargs)
        started.append(app)
        return app

    yield start
    for app in started:
        app.close()
    note = late_kernel_note(started)  # every window test guards it (tests/_appwindow.py)
    if note is not None:
        pytest.fail(note)


MAX_WORKERS = 4  # each worker holds a taichi runtime, an Xvfb and the app windows it starts: ~1.5 GB


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown where xdist is not loaded
def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (pyproject's addopts): one worker per core this process may run on, at most
    :data:`MAX_WORKERS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def pytest_collection_modifyitems(config, items):
    """Modules that set ``RUN_LAST = True`` run after all the others, in their own order. The batch
    job modules do: they use pyarrow in the test process, whose threads and pools stay there and
    grow its memory (the memory checks that are judged in a test process, test_resources.py and
    test_state_api.py, come before them)."""
    _deselect_cpu_only_elsewhere(config, items)
    last = [item for item in items if getattr(item.module, "RUN_LAST", False)]
    if last:
        chosen = {id(item) for item in last}
        items[:] = [item for item in items if id(item) not in chosen] + last


def _deselect_cpu_only_elsewhere(config, items) -> None:
    """Items marked ``cpu_backend_only`` whose ``backend`` parameter is not the CPU: deselected (pytest
    reports them as such where it collects: under xdist the workers do, and the summary line does
    not count them)."""
    def elsewhere(item) -> bool:
        spec = getattr(item, "callspec", None)
        return (item.get_closest_marker("cpu_backend_only") is not None and spec is not None
                and spec.params.get("backend", "cpu") != "cpu")

    dropped = {id(item) for item in items if elsewhere(item)}
    if dropped:
        config.hook.pytest_deselected(items=[item for item in items if id(item) in dropped])
        items[:] = [item for item in items if id(item) not in dropped]
