"""A tight sphere cover of a link's surface: spheres sunk into the body, each standing out of it by
about ``tolerance``, chosen greedily until every triangle of the surface lies in one of them.

Fitting (:func:`cover_spheres`):

1. The surface (a triangle mesh in the link frame, as :func:`engine.collision.spheres.link_mesh`
   gives it) is split into small triangles, in their own planes (the surface is the same).
2. Candidate centres are sunk from surface points along the inward normal, at several depths
   (:data:`DEPTHS`), and kept where they are inside the body (behind the face of the nearest
   surface sample, which copes with meshes that are not closed). A candidate's radius is its distance to the surface
   (estimated from dense surface samples) plus ``tolerance``: the largest ball about it that stands
   out of the surface by about ``tolerance``.
3. A candidate *covers* a triangle when the triangle's three corners are inside it; a ball is
   convex, so then the whole triangle is. Candidates are taken greedily, the one covering the most
   uncovered area first, until every triangle is covered. Each kept sphere then shrinks to the
   farthest corner of the triangles it is the first to cover.

So every point of the surface is inside some sphere, exactly (not only sample points): the
model contains the mesh's surface. Where ``max_spheres`` do not suffice at ``tolerance``, the
tolerance grows (x :data:`GROWTH`) and the fit runs again; the caller falls back to the cluster
fit of :func:`engine.collision.spheres.fit_spheres` when even that fails (None).
"""

from __future__ import annotations

import numpy as np

DEFAULT_TOLERANCE = 0.004  # m: how far a sphere may stand out of the surface it covers, about
GROWTH = 1.5  # the tolerance's growth when the sphere budget does not suffice
TRIES = 6  # fits at growing tolerance before giving up
DEPTHS = (0.002, 0.005, 0.01, 0.02, 0.035, 0.05, 0.07, 0.1, 0.15)  # m: candidate centres below the surface
SURFACE_SAMPLES = 20_000  # dense surface points for the depth estimate
SEEDS = 600  # surface points the candidates are sunk from
MAX_TRIANGLES = 4_000  # the split stops before the surface has more triangles than this
MAX_SPLIT = 16_000  # ... or, for a finer mesh, 3 times its own, up to this
MAX_PIECES = 16  # a link of more separate pieces than this is sunk into whole
MAX_HELD = 20_000_000  # (candidate, vertex) entries of one link's coverage at most (memory: ~0.5 GB)
ROUNDING = 2e-6  # m: room for float32's rounding of the candidates' corner distances


def _split(vertices: np.ndarray, faces: np.ndarray, edge: float) -> tuple[np.ndarray, np.ndarray]:
    """The surface with its triangles split to edges below ``edge`` (m), or as fine as
    :data:`MAX_TRIANGLES` (for a finer mesh 3 times its triangles, up to :data:`MAX_SPLIT`)
    allows: long thin triangles would force large balls. A mesh finer than that stays as it is."""
    import trimesh

    limit = min(max(MAX_TRIANGLES, 3 * len(faces)), MAX_SPLIT)
    if len(faces) >= limit:
        return vertices, faces
    for _ in range(12):
        v, f = trimesh.remesh.subdivide_to_size(vertices, faces, max_edge=edge, max_iter=10)
        if len(f) <= limit:
            return v, f
        edge *= 1.5
    return vertices, faces


def _candidates(mesh, rng) -> tuple[np.ndarray, np.ndarray]:
    """Candidate sphere centres ``(k, 3)`` inside the body (surface points sunk along the inward
    normal) and their depths ``(k,)`` (m, the distance to the surface, estimated from dense
    samples and rather under than over). A surface of several closed pieces (a link of overlapping
    boxes and cylinders) is sunk into piece by piece, each candidate kept where it is inside its
    own piece: the nearest face of another piece says nothing of which side of this one a point
    is. A surface with an open piece is taken whole (an open piece has no inside of its own)."""
    from scipy.spatial import cKDTree

    dense = surface_samples(mesh, SURFACE_SAMPLES, rng)[0]
    # a few closed pieces are sunk into one by one; an open piece's inside is the whole's, and a
    # triangle soup (vertices not shared: a body per triangle) is taken whole
    pieces = closed_pieces(mesh)
    centres = np.concatenate([_sunk(piece, rng, piece.area / mesh.area) for piece in pieces])
    near = cKDTree(dense).query(centres)[0] if len(centres) else np.zeros(0)  # to the whole surface
    spacing = np.sqrt(mesh.area / len(dense))  # the samples' spacing: the nearest is about this far off
    return centres, np.maximum(near - 0.5 * spacing, 0.0)


def closed_pieces(mesh) -> list:
    """``mesh``'s separate closed pieces (trimesh meshes), judged one by one where a point inside
    one may be nearest a face of another; ``[mesh]`` for a surface with an open piece (which has no
    inside of its own), a triangle soup (vertices not shared: a body per triangle) or more than
    :data:`MAX_PIECES` pieces."""
    pieces = mesh.split(only_watertight=False) if 1 < mesh.body_count <= MAX_PIECES else [mesh]
    return pieces if all(piece.is_watertight for piece in pieces) else [mesh]


def _sunk(piece, rng, share: float) -> np.ndarray:
    """Points ``(k, 3)`` sunk into one piece of surface along its inward normals, those that land
    behind the face of the piece's nearest surface sample (so the piece need not be closed);
    ``share``: the piece's part of the link's area (its part of the seeds and samples)."""
    from scipy.spatial import cKDTree

    dense, dense_face = surface_samples(piece, max(500, int(SURFACE_SAMPLES * share)), rng)
    seeds, face = surface_samples(piece, max(32, int(SEEDS * share)), rng)
    sign = 1.0 if piece.volume >= 0 else -1.0  # a piece wound inside out has its face normals inward
    normals = piece.face_normals[face] * sign
    extent = float(np.linalg.norm(piece.extents))
    depths = np.array([d for d in DEPTHS if d < 0.5 * extent] or [0.1 * extent])
    centres = (seeds[:, None, :] - normals[:, None, :] * depths[None, :, None]).reshape(-1, 3)
    nearest = cKDTree(dense).query(centres)[1]
    inside = ((centres - dense[nearest]) * piece.face_normals[dense_face[nearest]]).sum(1) * sign < 0
    return centres[inside]


def surface_samples(mesh, n: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """``n`` area-uniform surface points ``(n, 3)`` and their faces ``(n,)``."""
    area = mesh.area_faces
    face = rng.choice(len(area), n, p=area / area.sum())
    uv = rng.random((n, 2))
    flip = uv.sum(1) > 1
    uv[flip] = 1 - uv[flip]
    tri = mesh.triangles[face]
    pts = tri[:, 0] + uv[:, :1] * (tri[:, 1] - tri[:, 0]) + uv[:, 1:] * (tri[:, 2] - tri[:, 0])
    return pts, face


def _far_corner(centres: np.ndarray, tri: np.ndarray, dtype=np.float64) -> np.ndarray:
    """``(k, m)`` the distance from each centre ``(k, 3)`` to the farthest corner of each triangle
    ``(m, 3, 3)``, in ``dtype`` (|c|^2 - 2 c.v + |v|^2 about the corners' mean: float32 a few
    1e-7 m off, float64 ~1e-12 m)."""
    origin = tri.reshape(-1, 3).mean(0)  # near the numbers, for the rounding's sake
    c, t = (centres - origin).astype(dtype), (tri - origin).astype(dtype)
    cc = (c * c).sum(1)[:, None]
    out = np.zeros((len(c), len(t)), dtype)
    for k in range(3):
        v = t[:, k, :]
        np.maximum(out, cc - 2 * (c @ v.T) + (v * v).sum(1)[None], out=out)
    return np.sqrt(np.maximum(out, 0, out=out), out=out)


def _covers(centres: np.ndarray, radii: np.ndarray, v: np.ndarray, f: np.ndarray):
    """Sparse ``(k, m)`` 0/1 matrix (scipy CSR): sphere ``i`` (centre ``centres[i]``, radius
    ``radii[i]``) holds the three corners of triangle ``j`` of the mesh ``v (n, 3)``, ``f (m, 3)``.
    A k-d tree finds each sphere's vertices; a triangle is held when all its corners are."""
    from scipy import sparse
    from scipy.spatial import cKDTree

    found = cKDTree(v).query_ball_point(centres, radii, return_sorted=False)
    counts = np.fromiter((len(x) for x in found), np.int64, len(found))
    cols = np.concatenate([np.asarray(x, np.int64) for x in found]) if counts.sum() else np.zeros(0, np.int64)
    holds = sparse.csr_matrix((np.ones(len(cols), np.int32), cols, np.concatenate([[0], np.cumsum(counts)])),
                              shape=(len(centres), len(v)))
    # corners per (vertex, triangle); a degenerate triangle names a vertex twice, counted twice
    corners = sparse.csr_matrix((np.ones(f.size, np.int32), (f.ravel(), np.repeat(np.arange(len(f)), 3))),
                                shape=(len(v), len(f)))
    out = (holds @ corners).tocsr()
    out.data = (out.data == 3).astype(np.int32)
    out.eliminate_zeros()
    return out


def _within_budget(centres: np.ndarray, radii: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The candidates (centres ``(k, 3)``, radii ``(k,)``) whose vertex lists fit
    :data:`MAX_HELD` entries in all: on a fine mesh the deep candidates each hold a large share of
    its vertices, and those holding the most go first (a triangle then left to none gets its own
    ball, so the cover stays whole)."""
    from scipy.spatial import cKDTree

    held = cKDTree(v).query_ball_point(centres, radii, return_length=True)
    if held.sum() <= MAX_HELD:
        return centres, radii
    order = np.argsort(held, kind="stable")
    keep = np.sort(order[:np.searchsorted(np.cumsum(held[order]), MAX_HELD, side="right")])
    return centres[keep], radii[keep]


def _greedy(covers, area: np.ndarray, max_spheres: int) -> list[int] | None:
    """Candidates (indices) covering every triangle, greedily by uncovered area; None when more
    than ``max_spheres`` would be needed. ``covers``: :func:`_covers` (sparse ``(k, m)``)."""
    by_triangle = covers.tocsc()  # each triangle's candidates
    gain = np.asarray(covers @ area, float).ravel()
    open_ = np.ones(covers.shape[1], bool)
    chosen: list[int] = []
    while open_.any():
        if len(chosen) == max_spheres:
            return None
        best = int(np.argmax(gain))
        if gain[best] <= 0:
            return None
        chosen.append(best)
        held = covers.indices[covers.indptr[best]:covers.indptr[best + 1]]
        new = held[open_[held]]
        open_[new] = False
        starts, ends = by_triangle.indptr[new], by_triangle.indptr[new + 1]
        who = np.concatenate([by_triangle.indices[a:b] for a, b in zip(starts, ends)]) if len(new) else \
            np.zeros(0, np.int64)
        gain -= np.bincount(who, weights=np.repeat(area[new], ends - starts), minlength=len(gain))
    return chosen


def cover_spheres(vertices: np.ndarray, faces: np.ndarray, tolerance: float = DEFAULT_TOLERANCE,
                  max_spheres: int = 64, seed: int = 0) -> tuple[np.ndarray, np.ndarray] | None:
    """Spheres ``(centres (k, 3), radii (k,))``, ``k <= max_spheres``, whose union holds every
    triangle of the mesh ``vertices (n, 3)`` / ``faces (m, 3)`` (m), standing out of the surface by
    about ``tolerance`` (m) or, where the budget forces it, a larger tolerance; None when
    :data:`TRIES` growing tolerances do not fit the budget."""
    import trimesh
    from scipy import sparse

    vertices = np.asarray(vertices, float)
    faces = np.asarray(faces, np.int64).reshape(-1, 3)
    keep = trimesh.Trimesh(vertices, faces, process=False).area_faces > 0
    if not keep.any():
        return None
    surface = trimesh.Trimesh(vertices, faces[keep], process=False)  # sampled for candidates
    v, f = _split(vertices, faces, 1.5 * tolerance)  # every face, degenerate ones too, is covered
    tri = v[f]
    area = trimesh.Trimesh(v, f, process=False).area_faces + 1e-12
    centres, depth = _candidates(surface, np.random.default_rng(seed))
    for _ in range(TRIES):
        radii = depth + tolerance + ROUNDING  # ROUNDING: a corner on the boundary is held
        centres_t, radii_t = _within_budget(centres, radii, v)
        covers = _covers(centres_t, radii_t, v, f)
        # a triangle no candidate holds gets its own: the ball about its centroid through its far corner
        alone = covers.getnnz(axis=0) == 0
        c_all, r_all = centres_t, radii_t
        if alone.sum() > max_spheres:  # more triangles no candidate holds than the budget: coarser
            tolerance *= GROWTH
            continue
        if alone.any():
            extra = tri[alone].mean(1)
            r_extra = np.sqrt(((tri[alone] - extra[:, None]) ** 2).sum(-1).max(1)) + ROUNDING
            c_all, r_all = np.concatenate([centres, extra]), np.concatenate([radii, r_extra])
            covers = sparse.vstack([covers, _covers(extra, r_extra, v, f)]).tocsr()
        chosen = _greedy(covers, area, max_spheres)
        del covers
        if chosen is not None:
            far = _far_corner(c_all[chosen], tri)  # float64 for the radii kept
            radii = r_all[chosen]
            # each triangle to the first chosen sphere holding it; each sphere shrinks to its triangles
            slack = far - radii[:, None]
            owner = np.where((slack <= 0).any(0), np.argmax(slack <= 0, axis=0), np.argmin(slack, axis=0))
            r = np.array([far[j, owner == j].max(initial=0.0) for j in range(len(chosen))])
            used = r > 0
            return _hold_vertices(vertices, c_all[chosen][used], r[used])
        tolerance *= GROWTH
    return None


def _hold_vertices(vertices: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every vertex (those of no face, or of degenerate faces, too) inside: the sphere that needs
    the least growth grows; radii get a hair of rounding room."""
    gap = np.sqrt(((vertices[:, None, :] - centres[None]) ** 2).sum(-1)) - radii[None]
    best = np.argmin(gap, axis=1)
    need = gap[np.arange(len(vertices)), best]
    radii = radii.copy()
    for j in np.unique(best[need > 0]):
        radii[j] += need[(best == j) & (need > 0)].max()
    return centres, radii * (1.0 + 1e-9) + 1e-9
