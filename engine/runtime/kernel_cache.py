"""Taichi's disk cache of compiled kernels, kept usable when several processes share it.

Taichi 1.7.4 guards the index of its offline cache (``ticache.tcb``) with a lock *file*,
``ticache.lock`` beside it, made with ``O_CREAT | O_EXCL`` and deleted when done. A process takes
it to read the index (its runtime's first compile, where an index exists: ``engine.init``'s first
kernel) and at every ``ti.reset`` or end of process (to clean the cache and write the index and
its new kernels' files). A process that finds it taken tries 5 times 50 ms, then warns
"Lock ... failed" and goes on without that step: a failed read means every kernel of the process
is compiled again, a failed write that its new kernels are lost to the next process. Two ways
that hurt:

* **A lock left behind.** A process killed while it held it (SIGKILL, the OOM killer, a power cut
  during its exit's write) leaves the file, and from then on every process on the machine
  compiled everything, every time, with only that warning to say why.
* **A slow holder.** A writer slowed beyond 0.2 s (a busy machine; a warm-up at the lowest CPU
  priority writing a large solver's files) made a process that started meanwhile compile its
  solver from scratch: tens of seconds on a busy 2-core machine, where a load takes one.

:func:`settle` runs just before each of those moments (``engine.init`` before its first kernel
and before it resets taichi, ``engine.destroy``, and at exit): it waits while a lock younger than
:data:`STALE_S` is held (taichi's holders keep it well under a second on an idle machine, a few
seconds on a busy one), and deletes one older than that, or dated in the future. A process of
the engine marks the moments it may hold the lock itself (:func:`holding`: a file naming its pid
beside the lock), so that its lock is never taken for a dead one's however slow it runs (the
generic solver's warm-up at the lowest priority on a busy machine). What remains: settle cannot
close the window between its look and taichi's own try (taichi's 0.2 s of retries cover a holder
that starts then), and a non-engine taichi process slower than :data:`STALE_S` would lose its
lock; two writers may then leave an index taichi finds corrupt, and taichi then empties the
cache: compiles again, never a wrong kernel.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from typing import NamedTuple

LOCK_NAME = "ticache.lock"  # taichi 1.7.4's lock file (kernel_compilation_manager.cpp, offline_cache.h)
INDEX_NAME = "ticache.tcb"  # the index it guards (``ti cache clean`` deletes it with the kernels' files)
HOLDER_PREFIX = ".ikstudio-holder-"  # + pid: an engine process that may hold the lock now (holding())
STALE_S = 30.0  # s: a lock file older than this was left by a process that died holding it
FUTURE_S = 5.0  # s: a lock dated further ahead than this was made under another clock: not live
POLL_S = 0.05  # s between looks while a live holder writes

_log = logging.getLogger("engine")


class Settled(NamedTuple):
    """What :func:`settle` found: ``waited_s`` s spent waiting on a live holder; ``removed``: the
    age (s) of a lock left behind that it deleted, or None; ``held``: the lock was still taken when
    it gave up (taichi then skips that read or write this once)."""

    waited_s: float
    removed: float | None
    held: bool


def cache_folder() -> Path | None:
    """The offline cache folder of taichi's running program, or None before ``ti.init``."""
    from taichi.lang import impl

    try:
        return Path(impl.current_cfg().offline_cache_file_path)
    except AttributeError:  # no program yet
        return None


def has_index(folder: Path | None) -> bool:
    """Whether taichi's cache ``folder`` holds an index (no index: no kernel in it is ever loaded;
    None, no folder known: False)."""
    return folder is not None and (Path(folder) / INDEX_NAME).is_file()


def lock_age(folder: Path, now: float | None = None) -> float | None:
    """Seconds since ``folder``'s taichi lock file was made (negative: dated in the future), or
    None when there is none."""
    try:
        made = os.stat(folder / LOCK_NAME).st_mtime
    except OSError:
        return None
    return (time.time() if now is None else now) - made


def _left_behind(age: float) -> bool:
    return age >= STALE_S or age <= -FUTURE_S


@contextlib.contextmanager
def holding(folder: Path | None = None):
    """Mark, for other engine processes' :func:`settle`, that this process may hold taichi's lock
    in ``folder`` (default: the running program's) while the block runs."""
    path = _mark_holding(folder)
    try:
        yield
    finally:
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()


def mark_holding_until_exit(folder: Path | None = None) -> None:
    """:func:`holding` for the rest of this process (its exit's write); the mark of a process that
    has ended is ignored, and deleted by the next :func:`settle` of any engine process."""
    _mark_holding(folder)


def _mark_holding(folder: Path | None) -> Path | None:
    folder = cache_folder() if folder is None else Path(folder)
    if folder is None:
        return None
    path = folder / f"{HOLDER_PREFIX}{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path.touch()
    except OSError:  # an unwritable cache: taichi will say so
        return None
    return path


def _live_holders(folder: Path) -> list[int]:
    """Pids of other engine processes marked as holding (the marks of ended ones are deleted)."""
    live = []
    try:
        names = [p.name for p in folder.iterdir() if p.name.startswith(HOLDER_PREFIX)]
    except OSError:
        return live
    for name in names:
        try:
            pid = int(name[len(HOLDER_PREFIX):])
        except ValueError:
            continue
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                (folder / name).unlink()
            continue
        except OSError:  # another user's process: alive
            pass
        live.append(pid)
    return live


_LAST: list = [None]  # the Settled of this process's newest settle()


def last_settled() -> Settled | None:
    """What this process's newest :func:`settle` found (``held``: taichi's next read or write then
    found the lock taken, and skipped), or None before any."""
    return _LAST[0]


def settle(folder: Path | None = None, wait_s: float = STALE_S) -> Settled:
    """Make taichi's cache lock in ``folder`` (default: the running program's) free for the next
    read or write: wait up to ``wait_s`` s while a live process holds it, and delete it once it is
    :data:`STALE_S` s old (or dated in the future) and no live engine process is marked as holding
    it. Never raises (an unreadable folder is taichi's to report)."""
    _LAST[0] = found = _settle(folder, wait_s)
    return found


def _settle(folder: Path | None, wait_s: float) -> Settled:
    folder = cache_folder() if folder is None else Path(folder)
    if folder is None:
        return Settled(0.0, None, False)
    t0 = time.monotonic()
    _live_holders(folder)  # (which deletes the marks of processes that have ended)
    while True:
        age = lock_age(folder)
        if age is None:
            return Settled(time.monotonic() - t0, None, False)
        if _left_behind(age) and not _live_holders(folder):
            removed = _remove_left_behind(folder)
            if removed is not None:
                _log.warning("taichi's kernel cache lock %s was %.0f s old, left by a process that ended while "
                             "holding it: removed, so this process can use the cache", folder / LOCK_NAME, removed)
                return Settled(time.monotonic() - t0, removed, False)
            again = lock_age(folder)
            if again is not None and _left_behind(again):  # not ours to delete (permissions): taichi says so
                return Settled(time.monotonic() - t0, None, True)
            continue  # gone, or taken anew, meanwhile: look again
        if time.monotonic() - t0 >= wait_s:
            return Settled(time.monotonic() - t0, None, True)
        time.sleep(POLL_S)


def _remove_left_behind(folder: Path) -> float | None:
    """Delete the lock file if it still looks left behind when looked at again; its age then, or
    None when it was gone or made anew."""
    age = lock_age(folder)
    if age is None or not _left_behind(age):
        return None
    try:
        os.unlink(folder / LOCK_NAME)
    except OSError:  # another process deleted it first, or it is not ours to delete
        return None
    return age
