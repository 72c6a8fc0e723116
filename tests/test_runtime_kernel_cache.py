"""engine.runtime.kernel_cache: taichi's disk cache stays in use when its lock file was left behind
by a killed process, or is held a while by another one (a busy machine), where taichi alone gives
up after 0.2 s and compiles every kernel again, writing none.

Each process here runs with its own cache folder (TI_OFFLINE_CACHE_FILE_PATH). Whether a process
used the cache is read from what taichi prints when it does not ("Lock ... failed") and from the
kernel files it writes at its end; the controls run plain taichi on the same folder, to show
that the lock really stops it (so the engine's guard is what makes the difference)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.runtime import kernel_cache

ROOT = Path(__file__).resolve().parent.parent

KERNEL = """
@ti.kernel
def scale(a: ti.types.ndarray()):
    for i in a:
        a[i] = FACTOR * a[i]
a = np.ones(3, np.float32)
scale(a)
assert a[0] == FACTOR, a
"""

HEAD = """
import sys
import numpy as np
import taichi as ti
"""

# the engine's process (its cache from TI_OFFLINE_CACHE_FILE_PATH); "--wait": it ends when its input closes
ENGINE_SCRIPT = HEAD + """
import engine
print("START", flush=True)
engine.init(backend="cpu")
""" + KERNEL + """
print("READY", flush=True)
if "--wait" in sys.argv:
    sys.stdin.read()
"""

# the control: plain taichi on the same folder
PLAIN_SCRIPT = HEAD + """
ti.init(arch=ti.cpu, offline_cache=True, offline_cache_file_path=sys.argv[1])
""" + KERNEL

FAILED = "ticache.lock failed"  # taichi's warning when it goes on without its cache


def _env(cache: Path) -> dict:
    return dict(os.environ, TI_OFFLINE_CACHE_FILE_PATH=str(cache))


def _script(template: str, cache: Path, factor: float) -> list[str]:
    """The command running ``template`` (written to a file beside ``cache``: taichi reads a kernel's
    source from its file) with ``factor`` for FACTOR and ``cache`` as its argument."""
    name = "engine" if template is ENGINE_SCRIPT else "plain"
    path = cache.parent / f"{name}_{factor:g}.py"
    path.write_text(template.replace("FACTOR", repr(float(factor))))
    return [sys.executable, str(path), str(cache)]


def _run(template: str, cache: Path, factor: float) -> subprocess.CompletedProcess:
    return subprocess.run(_script(template, cache, factor), cwd=ROOT, env=_env(cache), capture_output=True,
                          text=True, timeout=300)


def _engine(cache: Path, factor: float) -> subprocess.CompletedProcess:
    return _run(ENGINE_SCRIPT, cache, factor)


def _plain(cache: Path, factor: float) -> subprocess.CompletedProcess:
    return _run(PLAIN_SCRIPT, cache, factor)


def _kernel_files(cache: Path) -> set[str]:
    return {p.name for p in cache.glob("*.tic")}


def _line(proc, word: str) -> None:
    """Read ``proc``'s output up to a line that is ``word`` (taichi prints its own lines too)."""
    for line in proc.stdout:
        if line.strip() == word:
            return
    pytest.fail(f"the process ended before saying {word}: {proc.stderr.read()}")


def _leave_lock(cache: Path, age_s: float) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    lock = cache / kernel_cache.LOCK_NAME
    lock.touch()
    t = time.time() - age_s
    os.utime(lock, (t, t))
    return lock


def _release_after(lock: Path, delay_s: float) -> threading.Thread:
    t = threading.Timer(delay_s, lambda: lock.unlink(missing_ok=True))
    t.start()
    return t


# -- settle itself ------------------------------------------------------------------------------------------
def test_settle_returns_at_once_without_a_lock(tmp_path):
    s = kernel_cache.settle(tmp_path, wait_s=5.0)
    assert s.removed is None and not s.held and s.waited_s < 1.0


def test_settle_removes_a_lock_left_behind(tmp_path):
    lock = _leave_lock(tmp_path, kernel_cache.STALE_S + 60)
    s = kernel_cache.settle(tmp_path, wait_s=5.0)
    assert not lock.exists()
    assert s.removed == pytest.approx(kernel_cache.STALE_S + 60, abs=5) and not s.held


def test_settle_waits_for_a_live_holder_and_gives_up_after_its_wait(tmp_path):
    lock = _leave_lock(tmp_path, 0)
    s = kernel_cache.settle(tmp_path, wait_s=0.3)
    assert s.held and s.waited_s >= 0.3 and s.removed is None
    assert lock.exists(), "a live holder's lock is not taken from it"
    _release_after(lock, 0.5)
    s = kernel_cache.settle(tmp_path, wait_s=30.0)
    assert not s.held and s.removed is None and 0.4 <= s.waited_s < 29, s


def test_settle_removes_a_lock_dated_in_the_future(tmp_path):
    lock = _leave_lock(tmp_path, -(kernel_cache.FUTURE_S + 60))  # made under another clock
    s = kernel_cache.settle(tmp_path, wait_s=5.0)
    assert not lock.exists() and s.removed is not None and not s.held


def test_an_old_lock_of_a_live_engine_process_is_not_taken_from_it(tmp_path):
    """A slow holder (the generic solver's warm-up at the lowest priority on a busy machine) is
    marked as such; its lock is waited for however old, and taken once the mark is gone."""
    lock = _leave_lock(tmp_path, kernel_cache.STALE_S + 60)
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / f"{kernel_cache.HOLDER_PREFIX}{holder.pid}").touch()
        s = kernel_cache.settle(tmp_path, wait_s=0.5)
        assert s.held and s.removed is None and lock.exists()
    finally:
        holder.kill()
        holder.wait()
    s = kernel_cache.settle(tmp_path, wait_s=5.0)  # the holder ended: its mark is ignored, then deleted
    assert not lock.exists() and s.removed is not None
    assert not list(tmp_path.glob(f"{kernel_cache.HOLDER_PREFIX}*"))


def test_holding_marks_this_process_for_the_block_and_ended_ones_are_swept(tmp_path):
    mark = tmp_path / f"{kernel_cache.HOLDER_PREFIX}{os.getpid()}"
    with kernel_cache.holding(tmp_path):
        assert mark.exists()
    assert not mark.exists()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = tmp_path / f"{kernel_cache.HOLDER_PREFIX}{int(ended.stdout)}"  # a process's exit mark, left at its end
    gone.touch()
    kernel_cache.settle(tmp_path, wait_s=1.0)  # any engine process's next settle sweeps it
    assert not gone.exists()


# -- processes sharing a cache ------------------------------------------------------------------------------
def test_a_lock_left_by_a_killed_process_no_longer_disables_the_cache(tmp_path):
    # the control: plain taichi with a lock left behind neither reads nor writes its cache
    _leave_lock(tmp_path / "plain", 600)
    plain = _plain(tmp_path / "plain", 2.0)
    assert plain.returncode == 0, plain.stderr
    assert FAILED in plain.stderr and not _kernel_files(tmp_path / "plain")

    lock = _leave_lock(tmp_path / "guarded", 600)
    run = _engine(tmp_path / "guarded", 2.0)
    assert run.returncode == 0, run.stderr
    assert FAILED not in run.stderr, run.stderr
    assert "left by a process that ended while holding it" in run.stderr, run.stderr  # says what it did
    assert not lock.exists() and len(_kernel_files(tmp_path / "guarded")) >= 2  # its kernels were written


def test_a_process_waits_for_a_live_holder_to_read_and_to_write_the_cache(tmp_path):
    cache = tmp_path / "cache"
    first = _engine(cache, 2.0)
    assert first.returncode == 0 and FAILED not in first.stderr, first.stderr

    # the control: plain taichi while another process holds the lock goes on without the cache,
    # reading none and writing none
    lock = _leave_lock(cache, 0)
    before = _kernel_files(cache)
    plain = _plain(cache, 5.0)
    lock.unlink()
    assert FAILED in plain.stderr and _kernel_files(cache) == before, plain.stderr

    # the engine waits for the holder: at init, to read the cache (the lock goes 1 s after the
    # process says it starts its engine), and at its end, to write its new kernel (scale by 3)
    lock = _leave_lock(cache, 0)
    proc = subprocess.Popen([*_script(ENGINE_SCRIPT, cache, 3.0), "--wait"], cwd=ROOT,
                            env=_env(cache), text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    timer = None
    try:
        _line(proc, "START")
        _release_after(lock, 1.0).join()
        _line(proc, "READY")
        lock = _leave_lock(cache, 0)
        timer = _release_after(lock, 3.0)
        t_close = time.monotonic()
        out, err = proc.communicate("", timeout=300)
        ended_after = time.monotonic() - t_close
    finally:
        if proc.poll() is None:
            proc.kill()
        if timer is not None:
            timer.join()
    assert proc.returncode == 0, err
    assert FAILED not in err, err
    assert ended_after >= 2.5, f"the process ended {ended_after:.1f} s after its input closed: it did not wait"
    assert len(_kernel_files(cache) - before) == 1, "the new kernel was not written to the cache at the end"
