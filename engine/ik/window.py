"""Choosing among restarts solved plain, stage 3 of an avoiding request (:mod:`engine.ik.avoiding`).

An env whose plain answer reached its targets but is not clear gets the continuity window's
restarts (samples 1 .. W-1, :data:`engine.ik.plan.CONTINUITY_WINDOW`) solved plain, one thread
each, and their answers checked together: the clear success nearest the start
(:func:`nearest_clear`, continuity's weighted distance) is its answer, as the window chooses.
Failing that, the next restarts are solved the same way and the lowest clear success wins
(:func:`first_clear`), as beyond the window.
"""

from __future__ import annotations

import numpy as np

__all__ = ["first_clear", "nearest_clear"]


def nearest_clear(candidates: np.ndarray, good: np.ndarray, start: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per env, the restart to take: ``candidates (S, n, n_qs)`` the restarts' answers, ``good
    (S, n)`` bool whether each succeeded and is clear, ``start (n, n_qs)``, ``weights (n_qs,)``
    continuity's (1 / range^2 per entry, 0 for entries it does not weigh). Returns ``(n,)`` the
    index into ``S`` of the good answer nearest the start (ties: the lower), -1 where none is."""
    dist = np.einsum("snq,q->sn", (candidates - start[None]) ** 2, weights)
    dist = np.where(good, dist, np.inf)
    pick = np.argmin(dist, axis=0)
    return np.where(good.any(axis=0), pick, -1)


def first_clear(good: np.ndarray) -> np.ndarray:
    """Per env, the first of the restarts ``good (S, n)`` (bool: succeeded and clear), -1 where none is."""
    return np.where(good.any(axis=0), np.argmax(good, axis=0), -1)
