"""Thread safety: one lock per entity, taken by every public method that reads or writes its state.

An entity keeps per-call buffers between calls (IK plans whose arrays the kernels are launched
with, solver scratch, reused FK outputs) and per-env state. Two threads calling one entity at once
would share those, so each call holds the entity's re-entrant lock for its whole duration: calls
from several threads on one entity run one after another and each gets exactly the answer it
would get alone. Kernel launches themselves are serialised process-wide by
:data:`engine.runtime.backend.LOCK` (taichi's runtime is shared), so calls on different entities from
different threads also get their sequential answers.
"""

from __future__ import annotations

import functools
import threading


def new_lock() -> threading.RLock:
    """The lock an entity holds during each of its calls (re-entrant: methods call each other)."""
    return threading.RLock()


_active = {"calls": 0}
_active_lock = threading.Lock()
_local = threading.local()  # per thread: how deep in engine calls it is


def calls_in_progress() -> int:
    """How many engine calls (outermost ones) other threads are in now: :func:`engine.init` refuses
    to reset taichi under them."""
    with _active_lock:
        return _active["calls"] - (1 if getattr(_local, "depth", 0) else 0)


def serialised(method):
    """Run ``method`` holding ``self.lock`` (the object's re-entrant lock: an entity's or a scene's) and
    counted by :func:`calls_in_progress`."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        depth = getattr(_local, "depth", 0)
        if depth == 0:
            with _active_lock:
                _active["calls"] += 1
        _local.depth = depth + 1
        try:
            with self.lock:
                return method(self, *args, **kwargs)
        finally:
            _local.depth = depth
            if depth == 0:
                with _active_lock:
                    _active["calls"] -= 1

    return locked
