"""Counter-based uniform draws for the planner: a pure function of (seed, stream, env, counter, k).

Each draw hashes its integer coordinates with SplitMix64's finaliser, so an env's random samples
do not depend on how many envs share the call, on which subset ``envs_idx`` picked, or on the
backend: the same seed gives the same samples, hence the same paths, in any process.
"""

from __future__ import annotations

import numpy as np

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _mix(x: np.ndarray) -> np.ndarray:
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def uniform(seed: int, stream: int, env: np.ndarray, counter: int, width: int) -> np.ndarray:
    """Uniform draws in [0, 1) of shape ``(len(env), width)`` (float64): row ``i`` is a function of
    (seed, stream, env[i], counter, column) only."""
    env = np.asarray(env, np.uint64)[:, None]
    col = np.arange(width, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        x = np.uint64(seed & 0xFFFFFFFFFFFF) * _GOLDEN
        x = _mix(x + np.uint64(stream & 0xFFFF) * _M1)
        x = _mix(x + env * _GOLDEN)
        x = _mix(x + np.uint64(counter & 0xFFFFFFFF) * _M2)
        x = _mix(x + col * _GOLDEN + np.uint64(1))
    return (x >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


__all__ = ["uniform"]
