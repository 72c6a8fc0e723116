"""Skip rules shared by the tests: a skip is fine on a developer's machine, never in CI.

``CI=true`` in the environment marks a CI run (``.ci/run`` sets it). There a test that cannot
run because the machine lacks something must fail, so that a missing install step can never
pass as a green run. Use :func:`require_or_fail` instead of ``pytest.skip`` for any
environment-dependent condition; ``tests/conftest.py`` also turns every other skip into a
failure under CI.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    """True when the CI environment variable says this is a CI run (``true``, any case, or ``1``)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def skip_or_fail(reason: str):
    """Skip the current test with ``reason``; under CI fail it instead."""
    if in_ci():
        pytest.fail(f"{reason} [CI=true: a test that cannot run is a failure]", pytrace=False)
    pytest.skip(reason)


def require_or_fail(condition, reason: str) -> None:
    """Go on when ``condition`` holds; else skip (developer machine) or fail (CI) with ``reason``."""
    if not condition:
        skip_or_fail(reason)


def rss_mb() -> float:
    """This process's resident memory, MiB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def in_fresh_process(module: str, function: str, timeout: float = 600.0):
    """``module.function()`` (a module of tests/) run in a new Python process; its return value (JSON).

    Memory checks run there: the RSS of a process that has run hundreds of other tests (1-2 GB of
    other modules' caches and allocator arenas, in whatever order a parallel run dealt them) grows
    by tens of MB for reasons of its own, while a fresh process sees what the code under test does."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    tests = Path(__file__).resolve().parent
    code = (f"import json, sys; sys.path.insert(0, {str(tests)!r}); import {module}; "
            f"print('RESULT ' + json.dumps({module}.{function}()))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tests.parent, capture_output=True, text=True,
                          timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"{module}.{function}() failed in its process (rc {proc.returncode}):\n"
                    f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])
