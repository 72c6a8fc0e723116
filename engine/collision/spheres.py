"""Spheres fitted per link to its collision geometry: a conservative, bounded collision model.

Fitting one link (``fit_spheres``):

1. Its collision geometries become one triangle mesh in the link frame (trimesh does the mesh
   work; primitives are tessellated and then grown by :data:`PRIMITIVE_GROWTH`, so the polygon
   contains the true curved surface).
2. Long triangles are split in their own planes, then the face centroids are split into at
   most ``max_spheres`` clusters (seeded k-means++), so each cluster is a compact patch of surface.
3. Each cluster's sphere is the (approximate, Badoiu-Clarkson) smallest ball around the vertices
   of its faces. A triangle whose three corners lie in a ball lies in it entirely (a ball is
   convex), so every point of the surface is covered, not only the vertices.
4. A last pass grows the nearest sphere over any vertex still outside (vertices of no face).

A link whose geometry is nothing but sphere primitives (no more than the budget) keeps them as
they are. So "sphere clearance implies mesh clearance" holds by construction, at the price of some
over-coverage (on the Panda 24 mm on average with 8 spheres per link, 19 mm with 32: docs/collision.md).

That is the *cluster* fit, asked for by a sphere count (``spheres_per_link``). The default model is
the *cover* fit of :mod:`engine.collision.cover`: spheres sunk into the body, standing out of its
surface by about ``tolerance`` (default :data:`engine.collision.cover.DEFAULT_TOLERANCE`), as many
as that takes, up to :data:`COVER_MAX_SPHERES` per link; it contains the surface exactly as well.
On a body thicker than its spheres reach, the cover is a shell, and balls inscribed in the body
fill its hollow (:mod:`engine.collision.fill`, up to :data:`engine.collision.fill.MAX_FILL` more).
Results are cached on disk (:func:`cache_dir`) under a hash of the robot file, its mesh files, the
parameters and :data:`FIT_VERSION`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidValueError
from . import fit_store

FIT_VERSION = 10  # bump when the fitting changes: old cache entries are then ignored
DEFAULT_SPHERES_PER_LINK = 8  # the cluster fit's count where a caller asks for it without one (obstacles: their own)
MAX_SPHERES_PER_LINK = 64
COVER_MAX_SPHERES = 128  # the cover fit's budget per link (the tolerance grows where it does not suffice)
MAX_TOLERANCE = 0.1  # m
PRIMITIVE_GROWTH = 1.02  # tessellated spheres / cylinders / ellipsoids, scaled about their centre
# A capsule's tessellation (16 x 16) has facets 0.9768 r from their hemisphere's centre: 1.02 left a
# short, fat capsule 0.42 % of r out of its grown hull (r = 0.5 m, length 0.02 m: 2 mm); 1.025 > 1 / 0.9768
CAPSULE_GROWTH = 1.025
EDGE_FRACTION = 0.5  # triangles are split to edges below this fraction of the mesh extent / sqrt(max_spheres)
MAX_FIT_FACES = 200_000  # a mesh with more faces is not subdivided
CLUSTER_SAMPLE = 20_000  # face centroids the k-means sees; every face is then labelled and covered


@dataclass(frozen=True)
class SphereModel:
    """Spheres of a robot, every one fixed to a link.

    ``link``: ``(n,)`` int, the link (tree index) of each sphere; ``centers``: ``(n, 3)`` m in
    that link's body frame; ``radii``: ``(n,)`` m. Spheres are grouped by link, in link order."""

    link: np.ndarray
    centers: np.ndarray
    radii: np.ndarray

    @property
    def n_spheres(self) -> int:
        return int(self.radii.shape[0])

    def of_link(self, link: int) -> np.ndarray:
        """Indices of the spheres of ``link``."""
        return np.flatnonzero(self.link == link)


def _grow_primitive(geom, mesh):
    if geom.kind in ("sphere", "cylinder", "capsule", "ellipsoid"):
        mesh = mesh.copy()
        mesh.apply_scale(CAPSULE_GROWTH if geom.kind == "capsule" else PRIMITIVE_GROWTH)
    return mesh


def growth_params(geometry) -> dict:
    """What the cache keys of a robot's fits, pieces and pairs add for its ``geometry``
    (``[n_links]`` lists of ``Visual``): the capsules' growth where it has capsules (so their
    fits made before :data:`CAPSULE_GROWTH` are not read), nothing otherwise (every other robot's
    files keep their names)."""
    return {"capsule_growth": CAPSULE_GROWTH} if any(g.kind == "capsule" for link in geometry for g in link) else {}


def link_mesh(geoms, grow: bool = True):
    """The link's collision geometries ``[Visual]`` as one ``trimesh.Trimesh`` in the link frame, or
    None when there is none (or no mesh file could be read). ``grow``: curved primitives grown by
    :data:`PRIMITIVE_GROWTH` (so that they contain the true surface); False: as tessellated."""
    import trimesh

    from ..transforms import quat_to_matrix

    parts = []
    for geom in geoms:
        mesh = geom.mesh
        if mesh is None or len(mesh.faces) == 0:
            continue
        mesh = _grow_primitive(geom, mesh) if grow else mesh
        transform = np.eye(4)
        transform[:3, :3] = quat_to_matrix(np.asarray(geom.quat, float) / np.linalg.norm(geom.quat))
        transform[:3, 3] = geom.pos
        mesh = mesh.copy()
        mesh.apply_transform(transform)
        parts.append(trimesh.Trimesh(vertices=np.asarray(mesh.vertices, float), faces=np.asarray(mesh.faces),
                                     process=False))
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else trimesh.util.concatenate(parts)


def _squared_distances(columns: tuple, point: np.ndarray) -> np.ndarray:
    """Squared distances ``(m,)`` from the points given as coordinate ``columns`` (x, y, z: each
    ``(m,)``, contiguous) to ``point`` (3,). The same numbers as ``((points - point) ** 2).sum(1)``,
    bit for bit (numpy sums a row of three as (x + y) + z), ~4x sooner: a reduction along a short
    axis costs numpy more than three whole-column operations."""
    dx, dy, dz = columns[0] - point[0], columns[1] - point[1], columns[2] - point[2]
    return (dx * dx + dy * dy) + dz * dz


def _columns(points: np.ndarray) -> tuple:
    """The coordinate columns of ``points`` ``(m, 3)``, each contiguous ``(m,)``."""
    return tuple(np.ascontiguousarray(points[:, i]) for i in range(3))


def _enclosing(points: np.ndarray, iterations: int = 64) -> tuple[np.ndarray, float]:
    """Near-smallest ball ``(centre (3,), radius)`` around ``points`` ``(m, 3)``: Badoiu-Clarkson
    steps from the box centre; the radius is exact for the centre found."""
    columns = _columns(points)
    box = 0.5 * (points.min(0) + points.max(0))
    c = box
    for i in range(iterations):
        far = points[np.argmax(_squared_distances(columns, c))]
        c = c + (far - c) / (i + 2)
    r_c = np.sqrt(_squared_distances(columns, c).max())
    r_box = np.sqrt(_squared_distances(columns, box).max())
    return (c, float(r_c)) if r_c <= r_box else (box, float(r_box))


def _kmeans(points: np.ndarray, k: int, rng, iterations: int = 20) -> np.ndarray:
    """``k`` cluster means ``(k, 3)`` of ``points`` ``(m, 3)``: k-means++ seeding, then Lloyd steps.
    (Distances by columns and means by ``np.bincount``: the numbers of the plain numpy expressions,
    bit for bit, in a fraction of the time.)"""
    columns = _columns(points)
    means = [points[rng.integers(len(points))]]
    d2 = _squared_distances(columns, means[0])
    for _ in range(1, k):
        total = d2.sum()
        pick = rng.integers(len(points)) if total <= 0 else rng.choice(len(points), p=d2 / total)
        means.append(points[pick])
        d2 = np.minimum(d2, _squared_distances(columns, points[pick]))
    means = np.array(means)
    for _ in range(iterations):
        label = _nearest(columns, means)
        count = np.bincount(label, minlength=k)
        sums = np.stack([np.bincount(label, weights=col, minlength=k) for col in columns], axis=1)
        moved = np.where(count[:, None] > 0, sums / np.maximum(count, 1)[:, None], means)
        if np.allclose(moved, means):
            break
        means = moved
    return means


def _nearest(columns: tuple, centers: np.ndarray) -> np.ndarray:
    """For each point (coordinate ``columns``), the index of the nearest of ``centers`` ``(k, 3)``
    (the first one on a tie): ``argmin`` over the same squared distances as above."""
    dx = columns[0][:, None] - centers[:, 0]
    dy = columns[1][:, None] - centers[:, 1]
    dz = columns[2][:, None] - centers[:, 2]
    return np.argmin((dx * dx + dy * dy) + dz * dz, axis=1)


def fit_spheres(vertices: np.ndarray, faces: np.ndarray, max_spheres: int = DEFAULT_SPHERES_PER_LINK,
                seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_spheres`` spheres ``(centers (k, 3), radii (k,))`` covering the surface of the
    mesh ``vertices (n, 3)`` / ``faces (m, 3)`` (same length unit) and every one of its vertices."""
    vertices = np.asarray(vertices, float)
    faces = np.asarray(faces, np.int64).reshape(-1, 3)
    if len(vertices) == 0:
        return np.zeros((0, 3)), np.zeros(0)
    if len(faces) == 0 or max_spheres == 1:
        c, r = _enclosing(vertices)
        return c[None], np.array([r])
    extent = float(np.linalg.norm(vertices.max(0) - vertices.min(0)))
    edge = extent * EDGE_FRACTION / np.sqrt(max_spheres)
    if extent > 0 and len(faces) < MAX_FIT_FACES:  # long thin triangles would force large balls: split
        import trimesh  # them in their own planes (the surface is the same)

        vertices, faces = trimesh.remesh.subdivide_to_size(vertices, faces, max_edge=edge, max_iter=8)
    tri = vertices[faces]  # (m, 3, 3)
    centroids = tri.mean(1)
    rng = np.random.default_rng(seed)
    sample = centroids if len(faces) <= CLUSTER_SAMPLE else centroids[rng.choice(len(faces), CLUSTER_SAMPLE, False)]
    k = int(min(max_spheres, len(np.unique(np.round(sample, 9), axis=0))))
    if k <= 1:
        c, r = _enclosing(vertices)
        return c[None], np.array([r])
    means = _kmeans(sample, k, rng)
    label = _nearest(_columns(centroids), means)
    centers, radii = [], []
    for j in np.unique(label):
        c, r = _enclosing(tri[label == j].reshape(-1, 3))
        centers.append(c)
        radii.append(r)
    centers, radii = np.array(centers), np.array(radii)
    # every vertex (those of no face too) inside: grow the sphere that needs the least growth
    gap = np.sqrt(((vertices[:, None, :] - centers[None]) ** 2).sum(-1)) - radii[None]
    best = np.argmin(gap, axis=1)
    need = gap[np.arange(len(vertices)), best]
    for j in np.unique(best[need > 0]):
        radii[j] += need[(best == j) & (need > 0)].max()
    radii *= 1.0 + 1e-9  # rounding: a vertex on the boundary counts as inside
    return centers, radii


def check_spheres_per_link(value) -> int:
    """``value`` as a sphere count, 1 .. :data:`MAX_SPHERES_PER_LINK`; ValueError naming the argument."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_SPHERES_PER_LINK:
        raise InvalidValueError(f"spheres_per_link: expected an int in 1..{MAX_SPHERES_PER_LINK}, got {value!r}")
    return int(value)


def check_tolerance(value) -> float:
    """``value`` as the cover fit's tolerance (m), in (0, :data:`MAX_TOLERANCE`]; ValueError naming
    the argument."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
    if not ok or not np.isfinite(value) or not 0 < value <= MAX_TOLERANCE:
        raise InvalidValueError(f"tolerance: expected a number of metres in (0, {MAX_TOLERANCE}], got {value!r}")
    return float(value)


def fit_name(tree, geometry, spheres_per_link: int | None, tolerance: float | None, seed: int = 0,
             scale: float | np.ndarray = 1.0) -> str:
    """The file name (:mod:`engine.collision.fit_store`) of the sphere fit of ``tree`` from its
    collision ``geometry`` with these parameters (checked ones: :func:`sphere_model`'s)."""
    from .geometry import mesh_files

    scale_key = float(scale) if np.ndim(scale) == 0 else tuple(float(x) for x in np.ravel(scale))
    params = {"fit": FIT_VERSION, "spheres_per_link": spheres_per_link, "tolerance": tolerance, "seed": int(seed),
              "scale": scale_key, "links": ",".join(tree.link_names()), **growth_params(geometry)}
    return f"spheres_{fit_store.cache_key(tree.source, mesh_files(geometry), params)}.npz"


def sphere_model(tree, geometry, spheres_per_link: int | None = DEFAULT_SPHERES_PER_LINK, seed: int = 0,
                 scale: float | np.ndarray = 1.0, use_cache: bool = True,
                 tolerance: float | None = None) -> SphereModel:
    """The :class:`SphereModel` of ``tree`` from its collision ``geometry`` (``[n_links]`` lists of
    :class:`Visual`, :func:`engine.collision.geometry.collision_geometry`), cached on disk.

    ``spheres_per_link``: the cluster fit with that many spheres per link (1..64); None: the cover
    fit (:mod:`engine.collision.cover`) at ``tolerance`` m (None: its default), up to
    :data:`COVER_MAX_SPHERES` per link. ``scale``: the morph's scale, one factor or 3 (part of the
    cache key; the geometry is already scaled)."""
    from .cover import DEFAULT_TOLERANCE

    if spheres_per_link is None:
        tolerance = DEFAULT_TOLERANCE if tolerance is None else check_tolerance(tolerance)
        budget = COVER_MAX_SPHERES
    else:
        spheres_per_link = budget = check_spheres_per_link(spheres_per_link)
        tolerance = None
    name = None
    if use_cache and Path(tree.source).is_file():
        name = fit_name(tree, geometry, spheres_per_link, tolerance, seed, scale)
        held = fit_store.load(name, ("link", "centers", "radii"))
        if held is not None:
            return SphereModel(held["link"], held["centers"], held["radii"])
    links, centers, radii = [], [], []
    for i, geoms in enumerate(geometry):
        if geoms and all(g.kind == "sphere" for g in geoms) and len(geoms) <= budget:
            links.append(np.full(len(geoms), i))  # sphere primitives are their own model, exactly
            centers.append(np.array([np.asarray(g.pos, float) for g in geoms]))
            radii.append(np.array([float(g.size[0]) for g in geoms]))
            continue
        mesh = link_mesh(geoms)
        if mesh is None:
            continue
        c, r = _fit_link(mesh, spheres_per_link, tolerance, seed)
        links.append(np.full(len(r), i))
        centers.append(c)
        radii.append(r)
    model = SphereModel(np.concatenate(links).astype(np.int64) if links else np.zeros(0, np.int64),
                        np.concatenate(centers) if centers else np.zeros((0, 3)),
                        np.concatenate(radii) if radii else np.zeros(0))
    if name is not None:
        fit_store.save(name, link=model.link, centers=model.centers, radii=model.radii)
    return model


def _fit_link(mesh, spheres_per_link: int | None, tolerance: float | None, seed: int):
    """One link's spheres: the cluster fit at ``spheres_per_link``, or the cover fit at
    ``tolerance`` (the cluster fit at :data:`COVER_MAX_SPHERES` where the cover does not fit) and
    the balls that fill its hollow (:func:`with_fill`)."""
    from .cover import cover_spheres

    if spheres_per_link is not None:
        return fit_spheres(mesh.vertices, mesh.faces, spheres_per_link, seed)
    out = cover_spheres(mesh.vertices, mesh.faces, tolerance, COVER_MAX_SPHERES, seed)
    if out is None:
        out = fit_spheres(mesh.vertices, mesh.faces, COVER_MAX_SPHERES, seed)
    return with_fill(mesh, *out, seed)


def with_fill(mesh, centers: np.ndarray, radii: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A cover fit's spheres ``centers (k, 3)``, ``radii (k,)`` of the link surface ``mesh``,
    followed by the balls that fill its hollow (:func:`engine.collision.fill.fill_hollow`)."""
    from .fill import fill_hollow

    c, r = fill_hollow(mesh, centers, radii, seed)
    return (np.concatenate([centers, c]), np.concatenate([radii, r])) if len(r) else (centers, radii)
