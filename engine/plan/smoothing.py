"""Shortcutting and resampling of found paths (lists of vertices per env).

:func:`shortcut`: each round, every path of three vertices or more draws two vertices ``i < j``
(``j - i >= 2``, :mod:`engine.plan.draws`) and drops the vertices between them when the straight
segment ``i -> j`` is certified free; all envs' attempts share one batch of checks.

:func:`resample`: ``num_waypoints`` waypoints along the polyline, evenly spaced along each edge,
with the edges' waypoint counts proportional to their lengths (largest remainders) and every
vertex kept, so each returned segment lies on a certified edge. A path with more
vertices than waypoints is shortcut further first (:func:`fit_vertices`); if it still has too
many, it is resampled evenly by length instead (the caller then certifies it again).
"""

from __future__ import annotations

import numpy as np

from .draws import uniform

SHORTCUT_ROUNDS = 32
TIMED_ROUNDS = 128  # shortcut rounds of a path that is timed (each vertex is a stop: fewer is faster)
COLLINEAR_TOL = 1e-7  # rad / m
_STREAM = 1 << 12  # draw stream of the shortcut rounds (the search uses the attempt numbers below it)
TIMED_STREAM = _STREAM + 64  # draw stream of a timed path's extra rounds (fit_vertices uses the few after _STREAM)


def shortcut(checker, paths: list, envs: np.ndarray, seed: int, rounds: int = SHORTCUT_ROUNDS,
             stream: int = _STREAM) -> list:
    """``paths`` (list of (k, n_qs) arrays, None skipped) with shortcuts taken, per env of ``envs``."""
    paths = [None if p is None else np.asarray(p, float) for p in paths]
    idx = [r for r, p in enumerate(paths) if p is not None and len(p) >= 3]
    if not idx:
        return paths
    clear = {r: checker.clearance(paths[r], np.full(len(paths[r]), envs[r])) for r in idx}
    for rnd in range(rounds):
        idx = [r for r in idx if len(paths[r]) >= 3]
        if not idx:
            break
        u = uniform(seed, stream, np.asarray(envs)[idx], rnd, 2)
        ij = []
        for k, r in enumerate(idx):
            L = len(paths[r])
            i = int(u[k, 0] * (L - 2))  # 0 .. L-3
            j = i + 2 + int(u[k, 1] * (L - i - 2))  # i+2 .. L-1
            ij.append((i, min(j, L - 1)))
        qa = np.array([paths[r][i] for r, (i, _) in zip(idx, ij)])
        qb = np.array([paths[r][j] for r, (_, j) in zip(idx, ij)])
        ca = np.array([clear[r][i] for r, (i, _) in zip(idx, ij)])
        cb = np.array([clear[r][j] for r, (_, j) in zip(idx, ij)])
        ok = checker.certify(qa, qb, ca, cb, np.asarray(envs)[idx])
        for k in np.flatnonzero(ok):
            r, (i, j) = idx[k], ij[k]
            paths[r] = np.concatenate([paths[r][:i + 1], paths[r][j:]])
            clear[r] = np.concatenate([clear[r][:i + 1], clear[r][j:]])
    return paths


def merge_collinear(path: np.ndarray | None, tol: float = COLLINEAR_TOL) -> np.ndarray | None:
    """``path (k, n_qs)`` without the vertices that lie on the segment between their neighbours
    (within ``tol`` rad or m): a search extends in equal steps along straight lines, and each vertex
    is a stop of a timed path. The merged segments are the same points, already certified."""
    if path is None or len(path) < 3:
        return path
    kept = [np.asarray(path[0], float)]
    for k in range(1, len(path) - 1):
        a, b, c = kept[-1], np.asarray(path[k], float), np.asarray(path[k + 1], float)
        ac = c - a
        span = float(ac @ ac)
        f = float((b - a) @ ac) / span if span > 0 else 0.0
        if not (0.0 <= f <= 1.0 and np.abs(a + f * ac - b).max() <= tol):
            kept.append(b)
    kept.append(np.asarray(path[-1], float))
    return np.array(kept)


def fit_vertices(checker, paths: list, envs: np.ndarray, seed: int, num: int, passes: int = 8) -> list:
    """Shortcut the paths with more than ``num`` vertices further (``passes`` more rounds of
    :data:`SHORTCUT_ROUNDS`), so that :func:`resample` can keep every vertex among ``num``
    waypoints."""
    for k in range(passes):
        long = [r for r, p in enumerate(paths) if p is not None and len(p) > num]
        if not long:
            break
        fitted = shortcut(checker, [paths[r] for r in long], np.asarray(envs)[long], seed, stream=_STREAM + 1 + k)
        for r, p in zip(long, fitted):
            paths[r] = p
    return paths


def resample(path: np.ndarray, num: int) -> tuple[np.ndarray, bool]:
    """``(waypoints (num, n_qs), on_edges)``: ``on_edges`` when every vertex of ``path (k, n_qs)``
    is among the waypoints (each returned segment is part of an edge)."""
    path = np.asarray(path, float)
    if len(path) == 1 or num == 1:
        return np.repeat(path[:1], num, axis=0) if num > 1 else path[:1].copy(), len(path) == 1
    seg = np.linalg.norm(np.diff(path, axis=0), axis=1)
    edges = len(seg)
    if edges <= num - 1:
        total = seg.sum()
        share = seg / total * (num - 1) if total > 0 else np.full(edges, (num - 1) / edges)
        count = np.maximum(np.floor(share).astype(int), 1)
        while count.sum() > num - 1:  # the floor of 1 may overshoot: take from the longest-counted edges
            count[np.argmax(np.where(count > 1, count - share, -np.inf))] -= 1
        rest = share - count
        while count.sum() < num - 1:
            k = int(np.argmax(rest))
            count[k] += 1
            rest[k] -= 1.0
        out = [path[k] + (path[k + 1] - path[k]) * (np.arange(count[k])[:, None] / count[k]) for k in range(edges)]
        return np.concatenate(out + [path[-1:]]), True
    s = np.concatenate([[0.0], np.cumsum(seg)])
    t = np.linspace(0.0, s[-1], num)
    return np.stack([np.interp(t, s, path[:, k]) for k in range(path.shape[1])], axis=1), False


def path_length(path: np.ndarray) -> float:
    """Joint-space length (Euclidean over qpos) of waypoints ``(T, n_qs)``."""
    return float(np.linalg.norm(np.diff(np.asarray(path, float), axis=0), axis=1).sum())


__all__ = ["COLLINEAR_TOL", "SHORTCUT_ROUNDS", "TIMED_ROUNDS", "fit_vertices", "merge_collinear", "path_length",
           "resample", "shortcut"]
