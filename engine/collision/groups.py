"""The sphere rows the collision kernels read: each link's spheres in groups, each group led by
its bounding ball, so that the search skips a far group in one step (coarse, then fine).

A link of ``n`` spheres gets about ``sqrt(n)`` groups (seeded k-means on the centres; a link of
at most :data:`FLAT` spheres gets none and lists its spheres as they are). Rows, link by link
(:data:`engine.kernels.tables.SPHERE_F`): ``link``, ``center`` (link frame, m), ``radius`` (m),
``count``: a group's row holds its bounding ball (every member sphere inside it) and the number of
member rows that follow it; a sphere's row has count 0. The kernels (:mod:`engine.kernels.avoid`)
walk a link's rows: a group whose ball is farther than what they look for is skipped with its
members, else its members are searched. Group balls are never distances: only sphere rows are.
"""

from __future__ import annotations

import numpy as np

FLAT = 12  # links with at most this many spheres are not grouped
COLUMNS = 6  # link, centre (3), radius, count


def _groups(centers: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """``(n,)`` group labels 0..k-1 of the ``centers (n, 3)`` (k-means, seeded; empty groups dropped)."""
    rng = np.random.default_rng(seed)
    means = centers[rng.choice(len(centers), k, replace=False)]
    for _ in range(15):
        label = np.argmin(((centers[:, None] - means[None]) ** 2).sum(-1), axis=1)
        means = np.array([centers[label == j].mean(0) if np.any(label == j) else means[j] for j in range(k)])
    label = np.argmin(((centers[:, None] - means[None]) ** 2).sum(-1), axis=1)
    return np.unique(label, return_inverse=True)[1]


def sphere_rows(link: np.ndarray, centers: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, dict]:
    """``(rows (R, COLUMNS) float64, {link: (first row, end row)})`` for the spheres ``link (n,)``,
    ``centers (n, 3)``, ``radii (n,)`` (grouped by link, in link order)."""
    rows, ranges = [], {}
    for l in np.unique(link):
        idx = np.flatnonzero(link == l)
        start = sum(len(r) for r in rows)
        if len(idx) <= FLAT:
            block = np.column_stack([np.full(len(idx), l), centers[idx], radii[idx], np.zeros(len(idx))])
        else:
            label = _groups(centers[idx], int(np.ceil(np.sqrt(len(idx)))))
            parts = []
            for g in range(label.max() + 1):
                m = idx[label == g]
                c = 0.5 * (centers[m].min(0) + centers[m].max(0))
                r = (np.linalg.norm(centers[m] - c, axis=1) + radii[m]).max() * (1 + 1e-6) + 1e-7
                parts.append([l, *c, r, len(m)])
                parts += [[l, *centers[s], radii[s], 0] for s in m]
            block = np.array(parts, float)
        rows.append(block)
        ranges[int(l)] = (start, start + len(block))
    out = np.concatenate(rows) if rows else np.zeros((0, COLUMNS))
    return out, ranges
