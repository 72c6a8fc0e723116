"""Choosing among restarts solved plain, stage 3 of an avoiding request (:mod:`engine.ik.avoiding`).

An env whose plain answer reached its targets but is not clear gets the continuity window's
restarts (samples 1 .. W-1, :data:`engine.ik.plan.CONTINUITY_WINDOW`) solved plain, one thread
each, and their answers checked together: the clear success nearest the start
(:func:`nearest_clear`, continuity's weighted distance) is its answer, as the window chooses.
Failing that, the next restarts are solved the same way and the lowest clear success wins
(:func:`first_clear`), as beyond the window.

The checks cost more than the choice, so they are made best first (:func:`check_best_first`):
each env's preferred success is checked, and the env's other successes only where that one is
not clear. The choice is the one checking every success would give.
"""

from __future__ import annotations

import numpy as np

__all__ = ["check_best_first", "first_clear", "from_start", "nearest_clear"]


def from_start(candidates: np.ndarray, start: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Continuity's distance ``(S, n)`` of the restarts' answers ``candidates (S, n, n_qs)`` from
    ``start (n, n_qs)``: ``sum_q weights[q] (candidate - start)^2`` (``weights (n_qs,)``: 1 /
    range^2 per entry, 0 for entries it does not weigh)."""
    return np.einsum("snq,q->sn", (candidates - start[None]) ** 2, weights)


def nearest_clear(candidates: np.ndarray, good: np.ndarray, start: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per env, the restart to take: ``candidates (S, n, n_qs)`` the restarts' answers, ``good
    (S, n)`` bool whether each succeeded and is clear, ``start (n, n_qs)``, ``weights (n_qs,)``
    (:func:`from_start`). Returns ``(n,)`` the index into ``S`` of the good answer nearest the
    start (ties: the lower), -1 where none is."""
    dist = np.where(good, from_start(candidates, start, weights), np.inf)
    pick = np.argmin(dist, axis=0)
    return np.where(good.any(axis=0), pick, -1)


def first_clear(good: np.ndarray) -> np.ndarray:
    """Per env, the first of the restarts ``good (S, n)`` (bool: succeeded and clear), -1 where none is."""
    return np.where(good.any(axis=0), np.argmax(good, axis=0), -1)


def check_best_first(rank: np.ndarray, reached: np.ndarray, check) -> np.ndarray:
    """Which of the restarts that ``reached (S, n)`` bool their targets are clear, checking as few
    as the choice needs: ``check(flat) -> clear`` checks the answers at the flat indices ``flat
    (k,)`` into ``(S, n)`` (row-major) and returns ``(k,)`` bool. First each env's preferred success
    (lowest ``rank (S, n)``, ties: the lower restart), in one call; then, in a second, every other
    success of the envs where that one is not clear. Returns ``clear (S, n)`` bool, False where not
    checked: :func:`nearest_clear` / :func:`first_clear` over ``reached & clear`` pick as they would
    with every success checked, when ``rank`` is their order."""
    S, n = reached.shape
    clear = np.zeros((S, n), bool)
    envs = np.flatnonzero(reached.any(axis=0))
    if not len(envs):
        return clear
    best = np.argmin(np.where(reached, rank, np.inf), axis=0)[envs]
    clear[best, envs] = check(best * n + envs)
    again = envs[~clear[best, envs]]
    others = np.zeros((S, n), bool)
    others[:, again] = reached[:, again]
    others[best, envs] = False
    flat = np.flatnonzero(others)
    if len(flat):
        clear.reshape(-1)[flat] = check(flat)
    return clear
