"""The exact tier of the robot collision model: each link's convex hull.

The spheres (:mod:`engine.collision.cover`) contain a link's collision geometry and stand a few
millimetres out of it; its convex hull contains it too and, for the convex collision meshes most
robot descriptions ship (example-robot-data's Panda: every link), is the geometry itself. Both are
lower bounds of the mesh distance, so the checks take the larger of the two per pair
(:mod:`engine.kernels.gjk`): the spheres cull and settle every pair that is clear anyway, and the
hulls decide the pairs within a few millimetres, to :data:`engine.collision.gjk.TOLERANCE`.

A hull is the vertices of the convex hull of the link's collision geometry as the sphere fit reads it
(:func:`engine.collision.spheres.link_mesh`: every geometry posed in the link frame, curved primitives
grown so that their tessellation holds the true surface). A link gets none when it has no geometry,
only sphere primitives (the spheres are then exact), or a hull of more than :data:`MAX_VERTICES`
vertices (each GJK step reads every vertex).
"""

from __future__ import annotations

import numpy as np

from .spheres import link_mesh

MAX_VERTICES = 512  # a link's hull with more vertices than this is not used (its spheres alone decide)


def link_hull(geoms) -> np.ndarray | None:
    """``(n, 3)`` float64 vertices (link frame, m) of the convex hull of a link's collision ``geoms``
    (``[Visual]``), or None (see the module docstring)."""
    if not geoms or all(g.kind == "sphere" for g in geoms):
        return None
    mesh = link_mesh(geoms)
    if mesh is None or len(mesh.vertices) < 4:
        return None
    try:
        vertices = np.asarray(mesh.convex_hull.vertices, float)
    except Exception:  # qhull refuses flat or degenerate geometry: the spheres stand alone
        return None
    if len(vertices) < 4 or len(vertices) > MAX_VERTICES:
        return None
    return np.ascontiguousarray(vertices)


def link_hulls(geometry) -> list[np.ndarray | None]:
    """Each link's hull (:func:`link_hull`) for ``geometry`` (``[n_links]`` lists of ``Visual``)."""
    return [link_hull(geoms) for geoms in geometry]


def hull_rows(hulls: list[np.ndarray | None], first_row: int) -> tuple[np.ndarray, np.ndarray]:
    """``(vertices (V, 3), ranges int32 (n_links, 2))``: the hulls stacked, and each link's rows
    ``[h0, h1)`` counted from ``first_row`` (an empty range for a link without a hull)."""
    ranges = np.zeros((len(hulls), 2), np.int32)
    stacked, row = [], first_row
    for link, vertices in enumerate(hulls):
        if vertices is None:
            ranges[link] = row, row
            continue
        ranges[link] = row, row + len(vertices)
        stacked.append(vertices)
        row += len(vertices)
    return (np.concatenate(stacked) if stacked else np.zeros((0, 3))), ranges


__all__ = ["MAX_VERTICES", "hull_rows", "link_hull", "link_hulls"]
