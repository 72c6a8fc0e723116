"""The exact tier of the robot collision model, cut where one convex hull is loose: each link's
*pieces*, convex hulls whose union holds the link's collision geometry.

A link's one convex hull (:mod:`engine.collision.hulls`) is its geometry where that is convex (the
Panda's arm links), but bridges every concave part of a non-convex link (hyq's trunk, hector's
base: centimetres). So each link is measured first: points spread by area over its hull's
surface, each one's distance to the link's collision mesh (m, exact point-to-triangle). Where the
:data:`PERCENTILE` th percentile of those distances is at most :data:`LOOSE`, the hull is the
link's one piece (*tight*). Otherwise the link is *loose* and is cut:

* a link of one primitive is never cut: its piece is its hull (the hull of its tessellation grown
  to hold the true surface, :func:`engine.collision.spheres.link_mesh`), except a cylinder over
  0.2 m in radius, whose piece is a prism touching the true cylinder (:func:`_cylinder_piece`);
* a link of several geometries (the Panda's fingers: four boxes each; so101's links: several
  meshes each; simple_humanoid's body: a cylinder and a mesh) is cut along them first, each
  geometry cut as a link of its own; a sphere primitive's piece is the hull of its grown
  tessellation;
* a link of one mesh into ``k`` surface patches (:func:`surface_pieces`), each patch's convex hull a
  piece, for the smallest ``k`` of :data:`CUTS` whose pieces stand at most :data:`TARGET` off the
  mesh at that percentile (measured the same way, over the union's boundary: points of a piece's
  surface inside another piece are left out, and points inside the body count 0), else the ``k``
  whose pieces stand least off.

Every patch's piece keeps at most :data:`PIECE_VERTICES` vertices, and a hull (a link's or one
geometry's) at most :data:`engine.collision.hulls.MAX_VERTICES`, each with a radius that holds the
dropped ones (:func:`engine.collision.hulls.reduced`), so the union still contains the geometry. The pieces of
a robot are cached on disk (:mod:`engine.collision.fit_store`, ``pieces_<key>.npz``, the key a
hash of the robot's files, the scale and :data:`PIECES_VERSION`): a link's measure and cut take
0.05-2 s (hyq: ~20 s the robot, the Panda ~1 s), once per robot file and machine; the catalog
robots' pieces ship with the package (``python -m engine.collision.prefit``), so they cost nothing.
"""

from __future__ import annotations

import numpy as np

from . import fit_store
from .hulls import Hull, link_hull, reduced

PIECES_VERSION = 2  # bump when the cutting changes: old cache entries are then ignored
LOOSE = 0.004       # m: a hull standing further off the mesh than this (at PERCENTILE) is cut
TARGET = 0.002      # m: the pieces' aim at the same percentile (the smallest k of CUTS that reaches it)
PERCENTILE = 90
CUTS = (8, 16, 32, 64)  # patches tried per loose link, fewest first
PIECE_VERTICES = 64  # a piece keeps at most this many vertices (and a radius for the rest)
SAMPLES = 1000      # surface points per link for the measure (seeded)
THICKNESS = 1e-6    # m: half the thickness given to a flat patch
CYLINDER_SECTIONS = 24  # sides of a big cylinder's prism (its tessellation's); bump PIECES_VERSION with it


def surface_pieces(mesh, k: int, seed: int = 0) -> list[np.ndarray]:
    """``[(n_i, 3)]``: the vertices (link frame, m) of the convex hulls of ``k`` patches of the
    trimesh ``mesh`` (fewer where clusters come out empty). Triangles longer than the patches'
    expected size are split first (so that one long triangle does not stretch a patch across the
    body); the patches are k-means clusters (scipy, seeded) of the triangles' centroids. Every
    triangle lies in one patch, so in that patch's hull: the union holds the surface exactly. A
    patch too flat for qhull keeps its points with :data:`THICKNESS` either side along its mean
    normal (still holding its triangles)."""
    import warnings

    import trimesh
    from scipy.cluster.vq import kmeans2

    with warnings.catch_warnings():  # trimesh's volume of a flat patch divides by 0 (the patch is kept flat)
        warnings.simplefilter("ignore", RuntimeWarning)
        return _surface_pieces(mesh, k, seed, trimesh, kmeans2)


def _surface_pieces(mesh, k: int, seed: int, trimesh, kmeans2) -> list[np.ndarray]:
    extent = float(np.linalg.norm(mesh.bounds[1] - mesh.bounds[0]))
    v, f = trimesh.remesh.subdivide_to_size(mesh.vertices, mesh.faces, max_edge=extent / (2 * np.sqrt(k)),
                                            max_iter=20)
    tri = np.asarray(v, float)[np.asarray(f)]  # (F, 3, 3)
    _, label = kmeans2(tri.mean(axis=1), k, seed=seed, minit="++")
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    pieces = []
    for j in range(k):
        own = label == j
        if not own.any():
            continue
        points = np.unique(tri[own].reshape(-1, 3), axis=0)
        try:
            hull = trimesh.convex.convex_hull(points)
            if hull.volume > 0:
                pieces.append(np.asarray(hull.vertices, float))
                continue
        except Exception:  # flat: qhull refuses
            pass
        n = normal[own].sum(axis=0)
        n = n / max(np.linalg.norm(n), 1e-30)
        pieces.append(np.concatenate([points + THICKNESS * n, points - THICKNESS * n]))
    return pieces


def _planes(vertices: np.ndarray):
    """``(normals (F, 3), offsets (F,), trimesh hull)`` of the convex hull of ``vertices``, or None (flat)."""
    import trimesh

    try:
        solid = trimesh.convex.convex_hull(vertices)
    except Exception:
        return None
    normals = np.asarray(solid.face_normals, float)
    return normals, np.einsum("ij,ij->i", normals, solid.vertices[solid.faces[:, 0]]), solid


def outside(pieces: list[Hull], points: np.ndarray, planes: list | None = None) -> np.ndarray:
    """``(n, len(pieces))``: how far (m) each of ``points (n, 3)`` lies out of each piece by its face
    planes, less the piece's radius (negative: inside by that much; at most the true distance
    out of a grown piece for a point outside it). A flat piece reads +inf. ``planes``: the pieces'
    :func:`_planes`, where the caller has them."""
    planes = [_planes(p.vertices) for p in pieces] if planes is None else planes
    out = np.full((len(points), len(pieces)), np.inf)
    for j, (piece, plane) in enumerate(zip(pieces, planes)):
        if plane is not None:
            out[:, j] = (points @ plane[0].T - plane[1]).max(axis=1) - piece.radius
    return out


def gap(pieces: list[Hull], mesh, samples: int = SAMPLES, seed: int = 0) -> float:
    """The :data:`PERCENTILE` th percentile (m) of the distances to ``mesh`` (trimesh) of points
    spread by area over the boundary of the union of ``pieces`` (each piece's hull surface, less
    the points inside another piece; a grown piece's points pushed out by its radius), a point
    behind the nearest face of the mesh (inside the body, by its face normal) counting 0: the
    union of surface patches is a shell, whose inner side is no reach beyond the link."""
    import trimesh

    hulls = [_planes(p.vertices) for p in pieces]
    areas = np.array([0.0 if h is None else h[2].area for h in hulls])
    if areas.sum() <= 0:
        return 0.0
    rng = np.random.default_rng(seed)
    counts = rng.multinomial(samples, areas / areas.sum())
    points = []
    for j, (h, n) in enumerate(zip(hulls, counts)):
        if h is None or n == 0:
            continue
        pts, face = trimesh.sample.sample_surface(h[2], int(n), seed=int(rng.integers(1 << 31)))
        pts = np.asarray(pts, float) + pieces[j].radius * h[0][face]
        if len(pieces) > 1:
            depth = outside(pieces, pts, hulls)
            depth[:, j] = np.inf
            pts = pts[depth.min(axis=1) > -1e-7]  # inside another piece: not on the union's boundary
        points.append(pts)
    points = np.concatenate(points) if points else np.zeros((0, 3))
    if not len(points):
        return 0.0
    closest, dist, tri = trimesh.proximity.closest_point(mesh, points)
    inward = np.einsum("ij,ij->i", points - closest, np.asarray(mesh.face_normals)[tri]) < 0
    return float(np.percentile(np.where(inward, 0.0, dist), PERCENTILE))  # inside the body: no reach beyond it


def _piece(vertices: np.ndarray) -> Hull | None:
    """A piece of ``vertices``' convex hull, reduced to :data:`PIECE_VERTICES` (None: degenerate)."""
    import trimesh

    try:
        hull = np.asarray(trimesh.convex.convex_hull(vertices).vertices, float)
    except Exception:
        hull = np.asarray(vertices, float)
    if len(hull) < 4:
        return None
    if len(hull) <= PIECE_VERTICES:
        return Hull(np.ascontiguousarray(hull))
    return reduced(hull, PIECE_VERTICES)


def link_pieces(geoms) -> list[Hull]:
    """A link's pieces for its collision ``geoms`` (``[Visual]``; see the module docstring): ``[]``
    where it has no hull (no geometry, or spheres only), else at least one :class:`Hull`."""
    from .spheres import link_mesh

    hull = link_hull(geoms)
    if hull is None:
        return []
    if len(geoms) == 1 and geoms[0].kind != "mesh":  # one primitive: its hull is it (as tessellated and grown)
        return [_cylinder_piece(geoms[0]) if _loose_cylinder(geoms[0]) else hull]
    mesh = link_mesh(geoms, grow=False)
    if mesh is None or gap([hull], mesh) <= LOOSE:
        return [hull]
    if len(geoms) > 1:  # several geometries: cut along them first, each one as a link of its own
        per_geom = [_geometry_pieces(g) for g in geoms]
        if all(per_geom):  # every geometry held by pieces (one without a hull: the link's one hull stands)
            return [p for cut in per_geom for p in cut]
        return [hull]
    grown = link_mesh(geoms)  # what the hull is of: curved primitives grown to hold the true surface
    best, least = [hull], np.inf
    for k in CUTS:
        cut = [p for p in (_piece(v) for v in surface_pieces(grown, k)) if p is not None]
        if not cut:
            continue
        reach = gap(cut, mesh)
        if reach < least:
            best, least = cut, reach
        if reach <= TARGET:
            break
    return best


def _geometry_pieces(geom) -> list[Hull]:
    """The pieces of one geometry of a link of several, cut as a link of its own (a sphere
    primitive, which has no hull of its own: the hull of its grown tessellation); ``[]`` where it
    has none."""
    if geom.kind == "sphere":
        piece = _sphere_piece(geom)
        return [] if piece is None else [piece]
    return link_pieces([geom])


def _loose_cylinder(geom) -> bool:
    """Whether ``geom`` is a cylinder whose tessellation's growth
    (:data:`~engine.collision.spheres.PRIMITIVE_GROWTH`, about its centre) stands more than
    :data:`LOOSE` off it: a radius over 0.2 m (simple_humanoid's 1 m body). Smaller cylinders
    (Baxter's arms, 5-7 cm in radius: grown 1-1.4 mm) keep their tessellation's hull, which the
    sphere fit reads too (the prism on them was tried: docs/collision.md, "Pieces")."""
    from .spheres import PRIMITIVE_GROWTH

    return geom.kind == "cylinder" and float(geom.size[0]) * (PRIMITIVE_GROWTH - 1) > LOOSE


def _cylinder_piece(geom) -> Hull:
    """A cylinder primitive's piece: a prism of :data:`CYLINDER_SECTIONS` sides whose faces touch the
    true cylinder (its corners at ``radius / cos(pi / sections)``), so it holds the cylinder exactly
    and stands off it by at most ``radius * (1 / cos(pi / sections) - 1)`` (0.86 % of the radius at 24),
    not the :data:`~engine.collision.spheres.PRIMITIVE_GROWTH` of the tessellation (2 %: 2 cm on a
    1 m cylinder)."""
    from ..transforms import quat_to_matrix

    radius, length = float(geom.size[0]), float(geom.size[1])
    angle = np.arange(CYLINDER_SECTIONS) * (2 * np.pi / CYLINDER_SECTIONS)
    ring = np.stack([np.cos(angle), np.sin(angle)], axis=1) * (radius / np.cos(np.pi / CYLINDER_SECTIONS))
    local = np.concatenate([np.c_[ring, np.full(len(ring), z)] for z in (-0.5 * length, 0.5 * length)])
    rotation = quat_to_matrix(np.asarray(geom.quat, float) / np.linalg.norm(geom.quat))
    return Hull(np.ascontiguousarray(local @ rotation.T + np.asarray(geom.pos, float)))


def _sphere_piece(geom) -> Hull | None:
    """A sphere primitive's piece: the hull of its grown tessellation."""
    from .spheres import link_mesh

    mesh = link_mesh([geom])
    return None if mesh is None else _piece(np.asarray(mesh.vertices, float))


def pieces_file_name(tree, geometry, scale=1.0) -> str | None:
    """The fit-store file name (``pieces_<key>.npz``) of ``tree``'s pieces for ``geometry`` at
    ``scale``; None for a tree not read from a file (nothing to key it by: never cached)."""
    from .geometry import mesh_files
    from .spheres import growth_params

    if tree.source is None or not tree.source.is_file():
        return None
    params = {"what": "pieces", "v": PIECES_VERSION, "scale": scale, "links": ",".join(tree.link_names()),
              "loose": LOOSE, "target": TARGET, "cuts": CUTS, "vertices": PIECE_VERTICES, **growth_params(geometry)}
    return f"pieces_{fit_store.cache_key(tree.source, mesh_files(geometry), params)}.npz"


def robot_pieces(tree, geometry, scale=1.0, use_cache: bool = True) -> list[list[Hull]]:
    """Each link's pieces (:func:`link_pieces`) for ``geometry`` (``[n_links]`` lists of ``Visual``)
    of ``tree``, from the disk cache where a process made them before (keyed by the robot file's
    and its meshes' bytes, ``scale`` and :data:`PIECES_VERSION`)."""
    name = pieces_file_name(tree, geometry, scale) if use_cache else None
    if name is not None:
        held = fit_store.load(name, ("per_link", "sizes", "radii", "vertices"))
        if held is not None and len(held["per_link"]) == len(geometry):
            return unpack(held["per_link"], held["sizes"], held["radii"], held["vertices"])
    out = [link_pieces(geoms) for geoms in geometry]
    if name is not None:
        fit_store.save(name, **pack(out))
    return out


def pack(pieces: list[list[Hull]]) -> dict[str, np.ndarray]:
    """The arrays a pieces file holds: ``per_link (L,)`` pieces per link, ``sizes (N,)`` vertices
    per piece, ``radii (N,)`` m, ``vertices (V, 3)`` m (link frames)."""
    flat = [p for link in pieces for p in link]
    return dict(per_link=np.array([len(link) for link in pieces], np.int64),
                sizes=np.array([len(p.vertices) for p in flat], np.int64),
                radii=np.array([p.radius for p in flat], float),
                vertices=np.concatenate([p.vertices for p in flat]) if flat else np.zeros((0, 3)))


def unpack(per_link, sizes, radii, vertices) -> list[list[Hull]]:
    """:func:`pack`'s arrays back into ``[n_links]`` lists of :class:`Hull`."""
    ends = np.cumsum(sizes)
    flat = [Hull(np.ascontiguousarray(vertices[e - n:e], float), float(r)) for n, e, r in zip(sizes, ends, radii)]
    starts = np.concatenate([[0], np.cumsum(per_link)])
    return [flat[s:e] for s, e in zip(starts[:-1], starts[1:])]


def ball(piece: Hull) -> tuple[np.ndarray, float]:
    """``(centre (3,), radius)`` (link frame, m): a ball holding ``piece`` grown by its radius, with
    1 micrometre to spare (the kernels read the centre in float32: a few 1e-8 m off)."""
    v = piece.vertices
    centre = 0.5 * (v.min(axis=0) + v.max(axis=0))
    return centre, float(np.linalg.norm(v - centre, axis=1).max() * (1 + 1e-6) + piece.radius + 1e-6)


def balls(pieces: list[Hull]) -> tuple[np.ndarray, np.ndarray]:
    """``(centres (n, 3), radii (n,))``: each piece's :func:`ball` (link frame, m)."""
    out = [ball(p) for p in pieces]
    return np.array([c for c, _ in out]).reshape(-1, 3), np.array([r for _, r in out])


def protrusion(pieces: list[Hull], centers: np.ndarray, radii: np.ndarray) -> float:
    """How far (m) the spheres ``centers (n, 3)``, ``radii (n,)`` (link frame) stand out of the
    union of ``pieces`` at most, by their face planes (each sphere's radius plus its centre's
    least :func:`outside` over the pieces; 0 without pieces or spheres): the solver's cue that GJK
    cannot prove a deep pair apart (:func:`engine.collision.hulls.protrusion` for one hull). An
    estimate either way costs tightness only, never soundness (the spheres' distance stands)."""
    if not pieces or not len(radii):
        return 0.0
    depth = outside(pieces, np.asarray(centers, float)).min(axis=1)
    keep = np.isfinite(depth)
    if not keep.any():
        return 0.0
    return float(max(0.0, (np.asarray(radii)[keep] + depth[keep]).max()))


__all__ = ["CUTS", "LOOSE", "PIECES_VERSION", "PIECE_VERTICES", "TARGET", "ball", "balls", "gap", "link_pieces",
           "outside", "pack", "pieces_file_name", "protrusion", "robot_pieces", "surface_pieces", "unpack"]
