"""The exact tier of the robot collision model: each link's convex hull.

The spheres (:mod:`engine.collision.cover`) contain a link's collision geometry and stand a few
millimetres out of it; its convex hull contains it too and, for the convex collision meshes most
robot descriptions ship (example-robot-data's Panda: every link), is the geometry itself. Both are
lower bounds of the mesh distance, so the checks take the larger of the two per pair
(:mod:`engine.kernels.gjk`): the spheres cull and settle every pair that is clear anyway, and the
hulls decide the pairs within a few millimetres, to :data:`engine.collision.gjk.TOLERANCE`. A
link whose hull stands off its geometry (a non-convex link) is cut into several convex pieces
instead (:mod:`engine.collision.pieces`); the kernels read each link's pieces, a tight link's
hull its one piece.

A hull is the convex hull of the link's collision geometry as the sphere fit reads it
(:func:`engine.collision.spheres.link_mesh`: every geometry posed in the link frame, curved
primitives grown so that their tessellation holds the true surface). Each GJK step reads every
vertex, so a hull of more than :data:`MAX_VERTICES` vertices is reduced: :data:`MAX_VERTICES` of
them spread over it (farthest-point order), grown by a ``radius`` (m) that brings every dropped
vertex inside (its exact distance to the reduced hull), which keeps it containing the geometry.
A link gets none when it has no geometry, or only sphere primitives (the spheres are then exact).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .spheres import link_mesh

MAX_VERTICES = 256  # a hull keeps at most this many vertices (and a radius for the rest)


@dataclass(frozen=True)
class Hull:
    """A link's convex hull: ``vertices (n, 3)`` (link frame, m) grown by ``radius`` (m; 0: exact)."""

    vertices: np.ndarray
    radius: float = 0.0


def link_hull(geoms) -> Hull | None:
    """The :class:`Hull` of a link's collision ``geoms`` (``[Visual]``), or None (see the module
    docstring)."""
    if not geoms or all(g.kind == "sphere" for g in geoms):
        return None
    mesh = link_mesh(geoms)
    if mesh is None or len(mesh.vertices) < 4:
        return None
    try:
        hull = mesh.convex_hull
    except Exception:  # qhull refuses flat or degenerate geometry: the spheres stand alone
        return None
    vertices = np.asarray(hull.vertices, float)
    if len(vertices) < 4:
        return None
    if len(vertices) <= MAX_VERTICES:
        return Hull(np.ascontiguousarray(vertices))
    return reduced(vertices)


def reduced(vertices: np.ndarray, max_vertices: int = MAX_VERTICES) -> Hull | None:
    """``max_vertices`` of ``vertices (n, 3)`` (a hull's, m; farthest-point order from the one
    farthest from their centre) and the radius (m) that holds the rest: every vertex's exact
    distance to the reduced hull, where it lies outside (also :mod:`engine.collision.pieces`)."""
    import trimesh

    centre = vertices.mean(axis=0)
    chosen = [int(np.argmax(np.linalg.norm(vertices - centre, axis=1)))]
    gap = np.linalg.norm(vertices - vertices[chosen[0]], axis=1)
    for _ in range(max_vertices - 1):
        k = int(np.argmax(gap))
        chosen.append(k)
        gap = np.minimum(gap, np.linalg.norm(vertices - vertices[k], axis=1))
    kept = vertices[np.sort(chosen)]
    try:
        small = trimesh.convex.convex_hull(kept)
    except Exception:
        return None
    planes = np.column_stack([small.face_normals, -np.einsum("ij,ij->i", small.face_normals,
                                                              small.vertices[small.faces[:, 0]])])
    outside = (vertices @ planes[:, :3].T + planes[:, 3]).max(axis=1) > 0
    radius = 0.0
    if outside.any():
        _, dist, _ = trimesh.proximity.closest_point(small, vertices[outside])
        radius = float(dist.max()) * (1 + 1e-6) + 1e-9
    return Hull(np.ascontiguousarray(np.asarray(small.vertices, float)), radius)


def protrusion(hull: Hull | None, centers: np.ndarray, radii: np.ndarray) -> float:
    """How far (m) the spheres ``centers (n, 3)`` (link frame), ``radii (n,)`` stand out of
    ``hull`` at most, by its face planes: the largest ``r + max_f (n_f . c - o_f)`` (exact for a
    centre inside the hull, an underestimate for one outside; 0 without a hull or spheres).

    Two spheres that overlap by more than twice the larger protrusion of their links share a point
    inside both hulls (a ball about it of that radius lies in each sphere, so within both hulls
    grown by the protrusion, so its centre lies in both), and the hulls cannot prove the pair
    apart: the solver skips their GJK there (:func:`engine.kernels.avoid._refine_slots`). Where
    the estimate is short it only costs a bound that might have been tighter, never soundness."""
    if hull is None or not len(radii):
        return 0.0
    import trimesh

    try:
        solid = trimesh.convex.convex_hull(hull.vertices)
    except Exception:
        return 0.0
    normals = solid.face_normals
    offsets = np.einsum("ij,ij->i", normals, solid.vertices[solid.faces[:, 0]])
    return float(max(0.0, (radii + (centers @ normals.T - offsets).max(axis=1)).max()))


def link_hulls(geometry) -> list[Hull | None]:
    """Each link's hull (:func:`link_hull`) for ``geometry`` (``[n_links]`` lists of ``Visual``)."""
    return [link_hull(geoms) for geoms in geometry]


__all__ = ["MAX_VERTICES", "Hull", "link_hull", "link_hulls", "protrusion", "reduced"]
