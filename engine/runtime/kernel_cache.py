"""Taichi's disk cache of compiled kernels, kept usable when several processes share it.

Taichi 1.7.4 guards the index of its offline cache (``ticache.tcb``) with a lock *file*,
``ticache.lock`` beside it, made with ``O_CREAT | O_EXCL`` and deleted when done. A process holds
it while it reads the index (its runtime's first compile: ``engine.init``'s first kernel) and
while it writes the index and its new kernels' files (``ti.reset``, or the end of the process).
A process that finds it taken tries 5 times 50 ms, then warns "Lock ... failed" and goes on
*without the cache*: it compiles every kernel again and writes none. Two ways that hurt:

* **A lock left behind.** A process killed while it held it (SIGKILL, the OOM killer, a power cut
  during its exit's write) leaves the file, and from then on every process on the machine
  compiled everything, every time, with only that warning to say why.
* **A slow holder.** A writer slowed beyond 0.2 s (a busy machine; a warm-up at the lowest CPU
  priority writing a large solver's files) made a process that started meanwhile compile its
  solver from scratch: tens of seconds on a busy 2-core machine, where a load takes one.

:func:`settle` runs just before each of those moments (``engine.init`` before its first kernel
and before it resets taichi, ``engine.destroy``, and at exit): it waits while a lock younger than
:data:`STALE_S` is held (taichi's holders keep it for well under a second on an idle machine, a
few seconds on a busy one), and removes one older than that, which no live taichi process holds.
It cannot close the window between its look and taichi's own try (taichi's 0.2 s of retries
cover a holder that starts then), and a holder slower than :data:`STALE_S` would lose its lock:
two writers may then leave an index that taichi finds corrupt, which costs one compile, no error.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import NamedTuple

LOCK_NAME = "ticache.lock"  # taichi 1.7.4's lock file (kernel_compilation_manager.cpp, offline_cache.h)
INDEX_NAME = "ticache.tcb"  # the index it guards (``ti cache clean`` deletes it with the kernels' files)
STALE_S = 30.0  # s: a lock file older than this was left by a process that died holding it
POLL_S = 0.05  # s between looks while a live holder writes

_log = logging.getLogger("engine")


class Settled(NamedTuple):
    """What :func:`settle` found: ``waited_s`` s spent waiting on a live holder; ``removed``: the
    age (s) of a lock left behind that it deleted, or None; ``held``: the lock was still taken when
    it gave up (taichi will then run without its cache this once)."""

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


def has_index(folder: Path) -> bool:
    """Whether taichi's cache ``folder`` holds an index (no index: no kernel in it is ever loaded)."""
    return (Path(folder) / INDEX_NAME).is_file()


def lock_age(folder: Path, now: float | None = None) -> float | None:
    """Seconds since ``folder``'s taichi lock file was made, or None when there is none."""
    try:
        made = os.stat(folder / LOCK_NAME).st_mtime
    except OSError:
        return None
    return max(0.0, (time.time() if now is None else now) - made)


def settle(folder: Path | None = None, wait_s: float = STALE_S) -> Settled:
    """Make taichi's cache lock in ``folder`` (default: the running program's) free for the next
    read or write: wait up to ``wait_s`` s while a live process holds it, and delete it once it is
    :data:`STALE_S` s old. Never raises (an unreadable folder is taichi's to report)."""
    folder = cache_folder() if folder is None else Path(folder)
    if folder is None:
        return Settled(0.0, None, False)
    t0 = time.monotonic()
    while True:
        age = lock_age(folder)
        if age is None:
            return Settled(time.monotonic() - t0, None, False)
        if age >= STALE_S:
            removed = _remove_stale(folder)
            if removed is not None:
                _log.warning("taichi's kernel cache lock %s was %.0f s old, left by a process that ended while "
                             "holding it: removed, so this process can use the cache", folder / LOCK_NAME, removed)
                return Settled(time.monotonic() - t0, removed, False)
            again = lock_age(folder)
            if again is not None and again >= STALE_S:  # not ours to delete (permissions): taichi says so
                return Settled(time.monotonic() - t0, None, True)
            continue  # gone, or taken anew, meanwhile: look again
        if time.monotonic() - t0 >= wait_s:
            return Settled(time.monotonic() - t0, None, True)
        time.sleep(POLL_S)


def _remove_stale(folder: Path) -> float | None:
    """Delete the lock file if it is still :data:`STALE_S` old when looked at again; its age then,
    or None when it was gone or made anew."""
    age = lock_age(folder)
    if age is None or age < STALE_S:
        return None
    try:
        os.unlink(folder / LOCK_NAME)
    except FileNotFoundError:  # another process removed it first
        return None
    except OSError:  # not ours to delete (permissions)
        return None
    return age
