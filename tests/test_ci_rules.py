"""The CI rules of conftest.py: a skip stays a skip on a developer's machine and fails under CI=true;
the ``xvfb_display`` fixture gives a display that X clients can open."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

HERE = Path(__file__).resolve().parent

INNER_TESTS = """
import pytest
from _support import require_or_fail

def test_passes():
    pass

def test_skip_call():
    pytest.skip("no widget here")

@pytest.mark.skipif(True, reason="marker says no")
def test_skip_marker():
    pass

def test_require_unmet():
    require_or_fail(False, "needs a frobnicator")

def test_require_met():
    require_or_fail(True, "never shown")

@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False
"""

INNER_MODULE_SKIP = """
import pytest
pytest.importorskip("surely_not_an_installed_module_4711")

def test_never_runs():
    pass
"""


@pytest.fixture
def inner(pytester, monkeypatch):
    """A pytester dir with this repo's conftest.py and _support.py; no third-party plugins (speed)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makeconftest((HERE / "conftest.py").read_text())
    pytester.makepyfile(_support=(HERE / "_support.py").read_text(), test_inner=INNER_TESTS)
    pytester.syspathinsert()
    return pytester


def test_skips_stay_skips_outside_ci(inner, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    result = inner.runpytest("-ra")
    result.assert_outcomes(passed=2, skipped=3, xfailed=1)
    result.stdout.fnmatch_lines(["*no widget here*", "*needs a frobnicator*"])
    assert result.ret == 0


@pytest.mark.parametrize("ci", ["true", "TRUE", "1"])
def test_every_skip_fails_under_ci(inner, monkeypatch, ci):
    monkeypatch.setenv("CI", ci)
    result = inner.runpytest("-ra")
    # pytest.skip in the test body and require_or_fail -> failed; a skipif marker acts at setup -> error.
    result.assert_outcomes(passed=2, failed=2, errors=1, xfailed=1)
    result.stdout.fnmatch_lines(["*CI=true*no widget here*", "*CI=true*marker says no*",
                                 "*needs a frobnicator*CI=true*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_ci_false_is_not_ci(inner, monkeypatch):
    monkeypatch.setenv("CI", "false")
    inner.runpytest().assert_outcomes(passed=2, skipped=3, xfailed=1)


def test_module_level_skip_fails_under_ci(inner, monkeypatch):
    inner.makepyfile(test_module_skip=INNER_MODULE_SKIP)
    monkeypatch.delenv("CI", raising=False)
    inner.runpytest("test_module_skip.py").assert_outcomes(skipped=1)
    monkeypatch.setenv("CI", "true")
    result = inner.runpytest("test_module_skip.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*CI=true*surely_not_an_installed_module_4711*"])
    assert result.ret != pytest.ExitCode.OK


def test_xvfb_display_opens(xvfb_display):
    assert os.environ["DISPLAY"] == xvfb_display
    local = re.fullmatch(r":(\d+)(\.\d+)?", xvfb_display)
    if local:
        assert Path(f"/tmp/.X11-unix/X{local[1]}").exists()
    xdpyinfo = shutil.which("xdpyinfo")
    if xdpyinfo:
        out = subprocess.run([xdpyinfo], capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        assert "screen #0" in out.stdout
