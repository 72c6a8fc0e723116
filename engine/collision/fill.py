"""Spheres that fill the hollow of a link's sphere cover.

The cover (:mod:`engine.collision.cover`) sinks its spheres just below the surface, so on a body
thicker than its spheres reach the union is a shell: a hollow inside the body, walled by sphere
surface. Those walls give no clearance away (anything reaching them crosses the surface first),
but they are boundary of the model, centimetres from the mesh, and they make it look looser than
it is by any measure of its whole boundary (and an obstacle wholly inside the body, in the
hollow, touched no sphere and read free). So the hollow is filled with balls inscribed in the
body: each centre proven inside, each radius its centre's exact distance to the surface. They add
nothing outside the mesh, and the model only grows, so it stays conservative.

Filling (:func:`fill_hollow`, about 0.1-2 s a link): points of a grid over the link's convex hull
that no cover sphere holds, that lie deeper than :data:`FILL_DEPTH` (by dense surface samples) and
behind their nearest sample's face are the hollow. The deepest gets a ball once its winding
number (:mod:`engine.collision.winding`) proves it inside; the points the ball holds whole leave
the hollow, and so on. Then :data:`ROUNDS` passes over the union's boundary look for walls still
deeper than :data:`FILL_DEPTH` (slivers between balls, thinner than the grid's step) and fill
them the same way; :data:`MAX_FILL` balls a link at most. A link thinner than its cover reaches
has no such point and gets nothing.
"""

from __future__ import annotations

import numpy as np

from .cover import closed_pieces, surface_samples

FILL_DEPTH = 0.006  # m: hollow points deeper than this are filled (the walls left are nearer the surface)
MAX_FILL = 64  # spheres added per link at most
MAX_REFUSED = 256  # centres proven shallower or outside after all, per link at most (a point each)
GRID = 8_000  # grid points over the link's bounding box, about (more where the step would pass MAX_STEP)
MAX_STEP = 0.03  # m: the grid's step at most (unless that would pass MAX_GRID points)
MAX_GRID = 200_000  # grid points at most (a body of metres: the step grows past MAX_STEP)
SURFACE_SAMPLES = 10_000  # surface points for the depth estimate
ROUNDS = 3  # passes over the union's boundary for walls left deep
WALL_SAMPLES = 64  # boundary samples per sphere in those passes
INSIDE = 0.9  # |winding number| above this: surely inside (an open mesh's fractions are passed over)


def _behind(mesh, points: np.ndarray, rng) -> np.ndarray:
    """``(m,)`` bool: ``points (m, 3)`` behind the face of their nearest surface sample, in some
    closed piece of ``mesh`` (a link of overlapping boxes and cylinders is judged piece by piece:
    a point inside one piece may be nearest a face of another that lies inside it)."""
    from scipy.spatial import cKDTree

    out = np.zeros(len(points), bool)
    for piece in closed_pieces(mesh):
        if piece.area <= 0:
            continue
        samples, face = surface_samples(piece, max(500, int(SURFACE_SAMPLES * piece.area / mesh.area)), rng)
        nearest = cKDTree(samples).query(points)[1]
        sign = 1.0 if piece.volume >= 0 else -1.0  # a piece wound inside out has its normals inward
        out |= ((points - samples[nearest]) * piece.face_normals[face[nearest]]).sum(1) * sign < 0
    return out


def _closed(mesh):
    """``mesh`` as one closed, consistently wound surface (vertices merged, zero-area faces
    dropped: a copy), or None where it is not: a piece with a hole or a face wound against its
    neighbours has no inside its winding number can be trusted on (it reads ~1 in the empty space
    beside a flipped face, and a ball there would stand wholly outside the body)."""
    import trimesh

    closed = trimesh.Trimesh(np.asarray(mesh.vertices, float), np.asarray(mesh.faces), process=True)
    closed.update_faces(closed.nondegenerate_faces())
    closed.remove_unreferenced_vertices()
    if len(closed.faces) == 0 or not closed.is_watertight or not closed.is_winding_consistent:
        return None
    return closed


def _in_spheres(points: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> np.ndarray:
    """``(m,)`` bool: ``points (m, 3)`` inside some sphere ``centres (k, 3)``, ``radii (k,)``."""
    out = np.zeros(len(points), bool)
    for s in range(0, len(points), 4096):
        d2 = ((points[s:s + 4096, None] - centres[None]) ** 2).sum(-1)
        out[s:s + 4096] = (d2 <= radii[None] ** 2).any(1)
    return out


def _union_boundary(centres: np.ndarray, radii: np.ndarray, per_sphere: int, rng) -> np.ndarray:
    """Points ``(m, 3)`` of the boundary of the union of spheres ``centres (k, 3)``, ``radii (k,)``:
    ``per_sphere`` uniform points of each sphere's surface, kept where no other sphere holds them."""
    u = rng.normal(size=(len(radii), per_sphere, 3))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    points = (centres[:, None] + radii[:, None, None] * u).reshape(-1, 3)
    own = np.repeat(np.arange(len(radii)), per_sphere)
    keep = np.ones(len(points), bool)
    for s in range(0, len(points), 4096):
        d2 = ((points[s:s + 4096, None] - centres[None]) ** 2).sum(-1)
        d2[np.arange(len(d2)), own[s:s + 4096]] = np.inf
        keep[s:s + 4096] = ~(d2 < (radii[None] * (1 - 1e-9)) ** 2).any(1)
    return points[keep]


class _Filler:
    """The balls placed so far in one link's hollow, and the search for the next."""

    def __init__(self, mesh, rng):
        from scipy.spatial import cKDTree

        self.mesh, self.rng = mesh, rng
        surface, _ = surface_samples(mesh, SURFACE_SAMPLES, rng)
        self.tree = cKDTree(surface)
        self.spacing = np.sqrt(float(mesh.area) / SURFACE_SAMPLES)  # the samples' spacing
        self.centres, self.radii, self.refused = [], [], 0

    def candidates(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of ``points (m, 3)``, those that look deeper than :data:`FILL_DEPTH` inside the body,
        and their estimated depths (m, rather under than over)."""
        depth = self.tree.query(points)[0] - self.spacing
        deep = depth > FILL_DEPTH
        points, depth = points[deep], depth[deep]
        behind = _behind(self.mesh, points, self.rng)  # a guess at inside: each centre is proven inside
        return points[behind], depth[behind]

    def place(self, points: np.ndarray, depth: np.ndarray, reach: float) -> None:
        """Balls at the deepest of ``points (m, 3)`` (estimated ``depth (m,)``), each as large as
        the body allows (its exact distance to the surface), until every point lies in one (a
        point leaves when its ball holds everything within ``reach`` m of it) or the budget is spent."""
        import trimesh

        from .winding import winding_inside

        while len(points) and len(self.radii) < MAX_FILL and self.refused < MAX_REFUSED:
            i = int(np.argmax(depth))
            c = points[i]
            r = float(trimesh.proximity.closest_point(self.mesh, c[None])[1][0])
            if r <= FILL_DEPTH or not winding_inside(self.mesh, c[None], INSIDE)[0]:  # shallower, or outside
                self.refused += 1
                points, depth = np.delete(points, i, 0), np.delete(depth, i)
                continue
            self.centres.append(c)
            self.radii.append(r)
            keep = ((points - c) ** 2).sum(1) > max(r - reach, 0.0) ** 2
            points, depth = points[keep], depth[keep]


def fill_hollow(mesh, centres: np.ndarray, radii: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Spheres ``(centres (j, 3), radii (j,))``, ``j <= MAX_FILL``, inside ``mesh`` (a
    ``trimesh.Trimesh`` in the link frame, m) that fill the hollow of the cover ``centres (k, 3)``,
    ``radii (k,)``; ``j = 0`` where the cover is not hollow deeper than :data:`FILL_DEPTH`.

    First a grid over the body finds the hollow's deep parts; then the boundary of the union
    (cover and balls) is sampled, :data:`ROUNDS` times, for walls still deeper than
    :data:`FILL_DEPTH` (the slivers between balls, thinner than the grid's step)."""
    import trimesh
    from scipy.spatial import QhullError

    none = (np.zeros((0, 3)), np.zeros(0))
    if len(mesh.faces) == 0 or len(radii) == 0 or float(mesh.area) <= 0:
        return none
    lo, hi = np.asarray(mesh.bounds, float)
    if np.any(hi - lo < 2 * FILL_DEPTH):
        return none
    mesh = _closed(mesh)
    if mesh is None:  # open, or wound inconsistently: left hollow (the model holds its surface all the same)
        return none
    rng = np.random.default_rng(seed)
    filler = _Filler(mesh, rng)
    volume = float(np.prod(hi - lo))
    step = max(min((volume / GRID) ** (1 / 3), MAX_STEP), (volume / MAX_GRID) ** (1 / 3))
    axes = [np.arange(a + 0.5 * step, b, step) for a, b in zip(lo, hi)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    try:
        hull = trimesh.convex.convex_hull(np.asarray(mesh.vertices, float))
    except QhullError:  # fewer than 4 vertices, or all in a line: no inside to fill
        return none
    normals = np.asarray(hull.face_normals, float)
    offsets = np.einsum("ij,ij->i", normals, np.asarray(hull.triangles_center, float))
    inside = np.zeros(len(grid), bool)
    for s in range(0, len(grid), 8192):  # in the hull: the body is
        inside[s:s + 8192] = (grid[s:s + 8192] @ normals.T <= offsets[None]).all(1)
    grid = grid[inside]
    grid, depth = filler.candidates(grid)
    hollow = ~_in_spheres(grid, centres, radii)
    filler.place(grid[hollow], depth[hollow], 0.5 * np.sqrt(3) * step)  # a grid point's cell reaches this far
    if not filler.radii:
        return none
    for _ in range(ROUNDS):
        c_all = np.concatenate([centres, np.array(filler.centres)])
        r_all = np.concatenate([radii, np.array(filler.radii)])
        walls, depth = filler.candidates(_union_boundary(c_all, r_all, WALL_SAMPLES, rng))
        if not len(walls) or len(filler.radii) >= MAX_FILL:
            break
        filler.place(walls, depth, 0.0)
    return np.array(filler.centres), np.array(filler.radii)
