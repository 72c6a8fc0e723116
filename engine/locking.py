"""Thread safety: one lock per entity, taken by every public method that reads or writes its state.

An entity keeps per-call buffers between calls (IK plans whose arrays the kernels are launched
with, solver scratch, reused FK outputs) and per-env state. Two threads calling one entity at once
would share those, so each call holds the entity's re-entrant lock for its whole duration: calls
from several threads on one entity run one after another and each gets exactly the answer it
would get alone. Kernel launches themselves are serialised process-wide by
:data:`engine.backend.LOCK` (taichi's runtime is shared), so calls on different entities from
different threads also get their sequential answers.
"""

from __future__ import annotations

import functools
import threading


def new_lock() -> threading.RLock:
    """The lock an entity holds during each of its calls (re-entrant: methods call each other)."""
    return threading.RLock()


def serialised(method):
    """Run ``method`` holding ``self._lock``."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return locked
