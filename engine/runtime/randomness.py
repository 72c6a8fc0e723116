"""The engine's one random generator per process, seeded by :func:`engine.init`.

Every random draw the engine makes where the caller gave no seed (an IK call's ``seed=None``
picks its restarts' hash seed here) comes from this generator. ``init(seed=S)`` reseeds it, so a
script's answers are the same from run to run and on every backend; ``init()`` without a seed
(or never calling ``init``) seeds it from the OS, so ``seed=None`` calls differ from call to call
and from run to run, as in Genesis.
"""

from __future__ import annotations

import threading

import numpy as np

_lock = threading.Lock()
_rng = np.random.default_rng()


def reseed(seed: int | None) -> None:
    """Start the generator again from ``seed`` (None: fresh entropy from the OS)."""
    global _rng
    with _lock:
        _rng = np.random.default_rng(None if seed is None else int(seed))


def draw_seed() -> int:
    """The next call seed, in [0, 2**31 - 1)."""
    with _lock:
        return int(_rng.integers(0, 2**31 - 1))
