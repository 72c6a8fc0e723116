"""Over-coverage of a link's collision solid: points spread uniformly over its boundary, and each
point's distance to the link's collision mesh (used by ``bench/collision_model.py``).

The solids measured, per link (link frame, m):

* a **sphere union** (``centres (k, 3)``, ``radii (k,)``): the spheres alone;
* the **effective solid** of the checks, spheres ∩ hull: a pair's distance is the larger of the
  spheres' and the hulls' (:mod:`engine.collision.hulls`, :func:`engine.collision.gjk.pair_bound`),
  so what a link keeps off others is the intersection of its sphere union and its hull. The hull
  is :func:`engine.collision.hulls.link_hull`'s: the convex hull of ``vertices (n, 3)`` grown by
  ``radius`` (a Minkowski sum with a ball; 0 for an exact hull, up to a few mm for a reduced one).
  The 0.01 mm ``SAFETY`` that the GJK bound takes off per pair is left out. A link without a hull
  (sphere primitives only, or geometry qhull refuses) is its spheres alone; so is any link against
  one without a hull, since a pair takes the hull bound only when both links have one (obstacles
  always take it): the effective solid is the best case of a link, met against other hulled links
  and obstacles.

The boundary of A ∩ B is (∂A ∩ B) ∪ (∂B ∩ A): both surfaces are sampled uniformly per unit area at
the same density and each point is kept where it lies in the other solid (a point of a sphere's
surface is also kept only where no other sphere of the union holds it). Sampling goes on until a
link has ``n`` kept points; a link's points are then ``n`` uniform samples of its boundary.
"""

from __future__ import annotations

import numpy as np

from engine.collision.winding import winding_inside

CHUNK = 4096  # points per block in the point-by-sphere tests (memory: CHUNK x spheres x 3 doubles)
MAX_CANDIDATES = 400  # candidates drawn per link at most, in multiples of the points wanted
INSIDE_FLOOR = 2e-4  # m: boundary points nearer the mesh than this are not tested for being inside it


def _unit(rng, n: int) -> np.ndarray:
    """``(n, 3)`` directions uniform on the unit sphere."""
    u = rng.normal(size=(n, 3))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


def in_spheres(points: np.ndarray, centres: np.ndarray, radii: np.ndarray, own: np.ndarray | None = None,
               strict: bool = False) -> np.ndarray:
    """``(m,)`` bool: ``points (m, 3)`` lie in some sphere ``centres (k, 3)``, ``radii (k,)`` (the
    one of index ``own (m,)`` not counted; ``strict``: in its interior, up to a 1e-9 relative margin)."""
    out = np.zeros(len(points), bool)
    limit = radii * (1 - 1e-9) if strict else radii * (1 + 1e-9)
    for s in range(0, len(points), CHUNK):
        d = np.linalg.norm(points[s:s + CHUNK, None] - centres[None], axis=-1) < limit[None]
        if own is not None:
            d[np.arange(len(d)), own[s:s + CHUNK]] = False
        out[s:s + CHUNK] = d.any(1)
    return out


class GrownHull:
    """The convex hull of ``vertices (n, 3)`` (m) grown by ``radius`` (m): its area, uniform
    samples of its boundary and a containment test.

    The boundary of a polytope P grown by r has three parts: each face moved out by r along its
    normal (area: the face's), a cylinder wedge of radius r along each edge, as wide as the angle
    between the two faces' normals (area: angle x r x length), and a sphere cap of radius r at each
    vertex over its normal cone (the caps make one sphere: area 4 pi r^2)."""

    def __init__(self, vertices: np.ndarray, radius: float = 0.0):
        import trimesh

        self.mesh = trimesh.convex.convex_hull(np.asarray(vertices, float))
        self.radius = float(radius)
        self.normals = np.asarray(self.mesh.face_normals, float)  # (F, 3), outward
        self.offsets = np.einsum("ij,ij->i", self.normals, self.mesh.vertices[self.mesh.faces[:, 0]])
        self.face_area = np.asarray(self.mesh.area_faces, float)  # (F,)
        pairs = np.asarray(self.mesh.face_adjacency)  # (E, 2) faces sharing an edge
        self.edges = np.asarray(self.mesh.vertices)[np.asarray(self.mesh.face_adjacency_edges)]  # (E, 2, 3)
        self.edge_faces = pairs
        self.edge_angle = np.asarray(self.mesh.face_adjacency_angles, float)  # (E,) rad
        self.edge_area = self.edge_angle * self.radius * np.linalg.norm(self.edges[:, 1] - self.edges[:, 0], axis=1)
        self.vertex_area = 4 * np.pi * self.radius ** 2

    @property
    def area(self) -> float:
        """Boundary area (m^2)."""
        return float(self.face_area.sum() + self.edge_area.sum() + self.vertex_area)

    def sample(self, n: int, rng) -> np.ndarray:
        """``(n, 3)`` points uniform (per unit area) on the boundary."""
        parts = np.array([self.face_area.sum(), self.edge_area.sum(), self.vertex_area])
        counts = rng.multinomial(n, parts / parts.sum())
        out = []
        k = counts[0]  # faces, moved out by the radius
        f = rng.choice(len(self.face_area), k, p=self.face_area / self.face_area.sum())
        a, b = rng.random((2, k))
        flip = a + b > 1
        a[flip], b[flip] = 1 - a[flip], 1 - b[flip]
        tri = self.mesh.vertices[self.mesh.faces[f]]
        out.append(tri[:, 0] + a[:, None] * (tri[:, 1] - tri[:, 0]) + b[:, None] * (tri[:, 2] - tri[:, 0])
                   + self.radius * self.normals[f])
        k = counts[1]  # edge wedges
        if k:
            e = rng.choice(len(self.edge_area), k, p=self.edge_area / self.edge_area.sum())
            t, phi = rng.random(k), rng.random(k) * self.edge_angle[e]
            n1, n2 = self.normals[self.edge_faces[e, 0]], self.normals[self.edge_faces[e, 1]]
            m = n2 - np.einsum("ij,ij->i", n1, n2)[:, None] * n1
            m /= np.linalg.norm(m, axis=1, keepdims=True)
            p = self.edges[e, 0] + t[:, None] * (self.edges[e, 1] - self.edges[e, 0])
            out.append(p + self.radius * (np.cos(phi)[:, None] * n1 + np.sin(phi)[:, None] * m))
        k = counts[2]  # vertex caps: a uniform direction, from the vertex whose normal cone holds it
        if k:
            u = _unit(rng, k)
            v = self.mesh.vertices[np.argmax(u @ np.asarray(self.mesh.vertices).T, axis=1)]
            out.append(v + self.radius * u)
        return np.concatenate(out)

    def contains(self, points: np.ndarray, strict: bool = False) -> np.ndarray:
        """``(m,)`` bool: ``points (m, 3)`` lie in the grown hull (within ``radius`` of the hull;
        ``strict``: in its interior, by more than a 1e-9 relative margin)."""
        import trimesh

        s = (points @ self.normals.T - self.offsets).max(axis=1)  # a lower bound of the distance outside
        tol = 1e-9 * max(1.0, float(np.abs(self.offsets).max()))
        if strict:
            tol = -tol
        inside = s <= tol
        near = ~inside & (s <= self.radius + tol)
        if near.any():
            _, dist, _ = trimesh.proximity.closest_point(self.mesh, points[near])
            inside[near] = dist <= self.radius * (1 + 1e-9) + tol
        return inside


def in_pieces(points: np.ndarray, pieces: list, skip: int = -1, strict: bool = False) -> np.ndarray:
    """``(m,)`` bool: ``points (m, 3)`` lie in some of ``pieces`` (:class:`GrownHull`), piece
    ``skip`` not counted (``strict``: in its interior)."""
    out = np.zeros(len(points), bool)
    for k, piece in enumerate(pieces):
        if k != skip and not out.all():
            out[~out] = piece.contains(points[~out], strict)
    return out


def boundary_points(centres: np.ndarray, radii: np.ndarray, pieces: list | None, n: int,
                    rng) -> tuple[np.ndarray, np.ndarray]:
    """``(points (n, 3), on_spheres (n,) bool)``: points uniform over the boundary of the union of
    the spheres ``centres (k, 3)``, ``radii (k,)``, intersected with the union of ``pieces`` (a
    link's convex pieces, :class:`GrownHull`) where they are given (fewer if ``MAX_CANDIDATES * n``
    candidates do not give ``n``), and which of them lie on a sphere (the others on a piece). A
    piece's point counts where the spheres hold it and no other piece holds it in its interior."""
    pieces = list(pieces or [])
    sphere_area = 4 * np.pi * radii ** 2
    areas = np.array([sphere_area.sum()] + [p.area for p in pieces])
    kept, source, drawn, batch = [], [], 0, 2 * n
    while sum(len(k) for k in kept) < n and drawn < MAX_CANDIDATES * n:
        counts = rng.multinomial(batch, areas / areas.sum())
        pick = rng.choice(len(radii), counts[0], p=sphere_area / sphere_area.sum())
        pts = centres[pick] + _unit(rng, counts[0]) * radii[pick, None]
        keep = ~in_spheres(pts, centres, radii, own=pick, strict=True)
        if pieces:
            keep[keep] = in_pieces(pts[keep], pieces)
        kept.append(pts[keep])
        source.append(np.ones(int(keep.sum()), bool))
        for k, piece in enumerate(pieces):
            if not counts[1 + k]:
                continue
            pts = piece.sample(counts[1 + k], rng)
            keep = in_spheres(pts, centres, radii)
            if len(pieces) > 1:
                keep[keep] = ~in_pieces(pts[keep], pieces, skip=k, strict=True)
            kept.append(pts[keep])
            source.append(np.zeros(int(keep.sum()), bool))
        drawn += batch
        have = sum(len(k) for k in kept)
        rate = max(have / drawn, 1.0 / (MAX_CANDIDATES * n))
        batch = int(min(MAX_CANDIDATES * n - drawn, max(n, 1.2 * (n - have) / rate)))
    pts, source = np.concatenate(kept), np.concatenate(source)
    pick = rng.permutation(len(pts))[:n]
    return pts[pick], source[pick]


def mesh_distance(mesh, points: np.ndarray) -> np.ndarray:
    """``(m,)`` unsigned distances (m) of ``points (m, 3)`` to the nearest triangle of ``mesh``
    (trimesh, exact point-to-triangle; a point inside the mesh gets its distance to the surface)."""
    import trimesh

    if not len(points):
        return np.zeros(0)
    return trimesh.proximity.closest_point(mesh, points)[1]


def convexity(mesh) -> str:
    """The mesh's volume over its hull's, as a percentage (its vertices merged first; "soup" where
    it is still not a closed solid, so has no volume to compare)."""
    import trimesh

    try:
        solid = trimesh.Trimesh(vertices=mesh.vertices, faces=mesh.faces, process=True)
        if not solid.is_watertight or solid.volume <= 0:
            return "soup"
        return f"{100 * solid.volume / solid.convex_hull.volume:.0f} %"
    except Exception:
        return "soup"


def enclosed(mesh, points: np.ndarray, dist: np.ndarray, on_spheres: np.ndarray,
             floor: float = INSIDE_FLOOR) -> np.ndarray:
    """``(m,)`` bool: which of a link's boundary ``points (m, 3)`` (their unsigned distances ``dist
    (m,)``, m, and ``on_spheres (m,)``, :func:`boundary_points`) lie inside the mesh: the walls of
    the sphere union's hollows, enclosed by the model (which holds the whole surface), so not on
    its *outer* boundary. Only sphere points farther than ``floor`` (m) are tested
    (:func:`winding_inside`): a hull point is never inside (the hull holds the mesh), and a nearer
    point changes the mean by less than ``floor``."""
    test = np.flatnonzero(on_spheres & (dist > floor))
    inside = np.zeros(len(dist), bool)
    if len(test):
        inside[test[winding_inside(mesh, points[test])]] = True
    return inside


def inside_zeroed(mesh, points: np.ndarray, dist: np.ndarray, on_spheres: np.ndarray,
                  floor: float = INSIDE_FLOOR) -> tuple[np.ndarray, float]:
    """``(dist (m,) with the points inside the mesh set to 0, the share of points inside)``
    (:func:`enclosed`)."""
    inside = enclosed(mesh, points, dist, on_spheres, floor)
    return np.where(inside, 0.0, dist), float(inside.mean()) if len(dist) else 0.0
