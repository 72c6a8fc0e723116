"""Which points lie inside a triangle surface, by its generalized winding number.

The winding number of a point is the sum of the solid angles its triangles subtend, over 4 pi
(Van Oosterom and Strackee's formula per triangle): 1 inside a closed surface wound outward, -1
inside one wound inward, 0 outside, 2 where two closed pieces overlap, and a fraction near an
open surface's hole. Triangle soups (vertices repeated per triangle) need no merging."""

from __future__ import annotations

import numpy as np


def winding_numbers(mesh, points: np.ndarray, block: int = 2_000_000) -> np.ndarray:
    """``(m,)`` the generalized winding number of ``mesh`` (anything with ``vertices (n, 3)`` and
    ``faces (f, 3)``) at each of ``points (m, 3)`` (same length unit). ``block``: point-triangle
    pairs per step (memory: ~200 bytes each)."""
    points = np.asarray(points, float).reshape(-1, 3)
    tri = np.asarray(mesh.vertices, float)[np.asarray(mesh.faces)]  # (F, 3, 3)
    total = np.zeros(len(points))
    if not len(points):
        return total
    step = max(1, block // len(points))
    for s in range(0, len(tri), step):
        t = tri[None, s:s + step] - points[:, None, None]  # (m, f, 3, 3): corners seen from each point
        a, b, c = t[..., 0, :], t[..., 1, :], t[..., 2, :]
        la, lb, lc = (np.linalg.norm(x, axis=-1) for x in (a, b, c))
        det = np.einsum("...i,...i->...", a, np.cross(b, c))
        den = (la * lb * lc + np.einsum("...i,...i->...", a, b) * lc + np.einsum("...i,...i->...", b, c) * la
               + np.einsum("...i,...i->...", c, a) * lb)
        total += 2 * np.arctan2(det, den).sum(axis=1)
    return total / (4 * np.pi)


def winding_inside(mesh, points: np.ndarray, threshold: float = 0.5) -> np.ndarray:
    """``(m,)`` bool: ``points (m, 3)`` inside ``mesh``, |winding number| > ``threshold`` (either
    orientation of a closed surface counts; 0.5 splits inside from outside, a threshold near 1
    keeps only points a surface with holes surely encloses)."""
    return np.abs(winding_numbers(mesh, points)) > threshold
