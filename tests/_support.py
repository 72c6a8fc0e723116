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
