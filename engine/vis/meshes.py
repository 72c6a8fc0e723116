"""Geometry for the renderer: link visuals merged per (link, colour), levels of detail, the debug
shapes and the ground grid, and their conversion to instanced pyrender meshes.

Every renderable is a :class:`MeshSpec` (a trimesh in the frame its instances are posed in, plus
its material); the renderer turns each into ONE pyrender mesh drawn once per instance pose.
A link's visuals are merged into one mesh in the link frame with per-vertex colours, so a link
costs one draw call however many envs and colours there are (in software GL each draw call
costs ~0.5 ms of uniform and state setup, more than the vertices of 16 instances).

Levels of detail: ``"full"`` keeps every face; ``"decimated"`` caps each visual's mesh at
``max_faces`` faces, with quadric decimation (``fast_simplification``, trimesh's backend, a
dependency, run off the caller's GIL: :mod:`engine.vis.quadric`; a triangle soup, as STL files
hold, has its vertices merged first) and
:func:`cluster_vertices` (ours) where that fails or is missing, and tessellates primitives
(capsules, cylinders, spheres) more coarsely.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace

import numpy as np

from ..errors import InvalidValueError
from ..transforms import pose_to_matrix
from . import mesh_cache, quadric

LODS = ("full", "decimated")
_DECIMATED: dict[tuple, object] = {}  # (visual key, max_faces) -> decimated trimesh


@dataclass(eq=False)
class MeshSpec:
    """A trimesh and its look. ``colors`` (n_vertices, 4): per-vertex rgba (a link's visuals of several
    colours in one mesh), else every vertex has ``rgba``. ``mode`` "triangles" or "lines" (a line
    list, 2 vertices a line)."""

    mesh: object
    rgba: tuple = (1.0, 1.0, 1.0, 1.0)
    colors: np.ndarray | None = None
    mode: str = "triangles"
    double_sided: bool = False
    emissive: float = 0.0
    roughness: float = 0.65

    @property
    def n_faces(self) -> int:
        return len(self.mesh.faces) if self.mode == "triangles" else 0

    def tinted(self, tint: tuple, amount: float = 0.75) -> MeshSpec:
        """The same geometry with its colours pulled ``amount`` of the way to ``tint`` (alpha: tint's)."""
        tint = np.asarray(tint, float)
        colors = self.colors if self.colors is not None else np.asarray([self.rgba], float)
        mixed = np.empty((len(colors), 4), np.float32)
        mixed[:, :3] = (1 - amount) * colors[:, :3] + amount * tint[:3]
        mixed[:, 3] = tint[3]
        if self.colors is None:
            return replace(self, rgba=tuple(float(x) for x in mixed[0]), emissive=max(self.emissive, 0.15))
        return replace(self, colors=mixed, emissive=max(self.emissive, 0.15))


# -- level of detail ------------------------------------------------------------------------------
def cluster_vertices(mesh, max_faces: int):
    """Decimate by vertex clustering: snap vertices to a grid, merge each cell into its mean, drop
    collapsed and duplicate faces. The finest grid that leaves at most ``max_faces`` faces wins."""
    import trimesh

    v = np.asarray(mesh.vertices, float)
    f = np.asarray(mesh.faces, np.int64)
    lo = v.min(axis=0)
    extent = max(float((v.max(axis=0) - lo).max()), 1e-9)
    best, lo_k, hi_k = None, 1, 1024  # cells along the longest side
    while hi_k - lo_k > 1:
        k = (lo_k + hi_k) // 2
        out = _cluster(v, f, lo, extent / k, k + 1)
        if len(out[1]) <= max_faces:
            best, lo_k = out, k
        else:
            hi_k = k
    if best is None:
        best = _cluster(v, f, lo, extent, 2)
    return trimesh.Trimesh(vertices=best[0], faces=best[1], process=False)


def _cluster(v: np.ndarray, f: np.ndarray, lo: np.ndarray, cell: float, n: int):
    ijk = np.minimum(((v - lo) / cell).astype(np.int64), n - 1)
    key = ijk[:, 0] + n * (ijk[:, 1] + n * ijk[:, 2])
    _, inverse = np.unique(key, return_inverse=True)
    inverse = inverse.reshape(-1)
    count = np.bincount(inverse).astype(float)
    verts = np.stack([np.bincount(inverse, weights=v[:, i]) for i in range(3)], axis=1) / count[:, None]
    faces = inverse[f]
    keep = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    faces = faces[keep]
    if len(faces):
        m = len(verts)
        canon = np.sort(faces, axis=1)
        _, first = np.unique(canon[:, 0] + m * (canon[:, 1] + m * canon[:, 2]), return_index=True)
        faces = faces[np.sort(first)]
    return verts, faces


MIN_AREA_KEPT = 0.7  # a decimated mesh with less of its source's surface area is refused ...
MAX_BUDGET_DOUBLINGS = 3  # ... and the face budget doubled, up to 8 times the one asked


def decimate(mesh, max_faces: int, key=None):
    """``mesh`` with about ``max_faces`` faces (itself when already small enough). Cached by ``key``
    (a visual's ``(mesh file, scale)``): in memory, and on disk (:mod:`engine.vis.mesh_cache`).

    The vertices are merged by position first, whatever the file repeats (a COLLADA file splits
    vertices along normal and texture seams: Baxter's torso has 2.4 vertices per face): edges
    collapse only where triangles share vertices, and a quadric collapse of split triangles
    shrinks each one to a point (the torso kept 2 % of its area and vanished). A result that keeps
    less than :data:`MIN_AREA_KEPT` of the source's area has lost parts (thin struts, rotor
    blades; or hidden inner walls, which cost nothing to lose): the budget is doubled until one
    keeps enough, up to ``2 ** MAX_BUDGET_DOUBLINGS`` times ``max_faces``, past which the try that
    kept the most area wins. Without the quadric backend, vertex clustering
    (:func:`cluster_vertices`) does it."""
    if mesh is None or len(mesh.faces) <= max_faces:
        return mesh
    cache_key, path = _cache_entry(key, max_faces) if key is not None else (None, None)
    if cache_key is not None and cache_key in _DECIMATED:
        return _DECIMATED[cache_key]
    out = mesh_cache.load(path)
    if out is None:
        out = _decimate(mesh, int(max_faces))
        mesh_cache.save(path, out)
    if cache_key is not None:
        _DECIMATED[cache_key] = out
    return out


def _decimate(mesh, max_faces: int):
    source = mesh.copy()
    source.merge_vertices(merge_tex=True, merge_norm=True)
    budget, best = max_faces, None
    for _ in range(MAX_BUDGET_DOUBLINGS + 1):
        if len(source.faces) <= budget:
            return trimesh_plain(source)
        try:
            out = quadric.simplify(source, int(budget))
        except (ImportError, ValueError, TypeError, AttributeError):  # backend missing or API changed
            return trimesh_plain(cluster_vertices(source, max_faces))
        if 0 < len(out.faces) <= budget * 1.1:
            if out.area >= MIN_AREA_KEPT * source.area:
                return trimesh_plain(out)
            if best is None or out.area > best.area:
                best = out
        budget *= 2
    return trimesh_plain(best if best is not None else cluster_vertices(source, max_faces))


def trimesh_plain(mesh):
    """``mesh``'s vertices and faces alone, as a new unprocessed ``trimesh.Trimesh``."""
    import trimesh

    return trimesh.Trimesh(vertices=np.asarray(mesh.vertices, float), faces=np.asarray(mesh.faces, np.int64),
                           process=False)


def repeats_vertices(mesh) -> bool:
    """Most vertices belong to one face only: the file repeats its vertices per triangle (STL), so
    the mesh's triangles are not joined (each shaded flat, none of its edges shared)."""
    return mesh is not None and len(mesh.faces) > 0 and len(mesh.vertices) >= 2.5 * len(mesh.faces)


def _visual_key(visual):
    if visual.mesh_file is None:
        return None
    return str(visual.mesh_file), tuple(float(x) for x in np.round(np.asarray(visual.size, float), 9))


def decimation_cached(visual, max_faces: int) -> bool:
    """``visual`` needs no decimation at ``max_faces`` (a primitive, a small or no mesh) or its
    decimated mesh is in memory or in the disk cache (loads its mesh file, decimates nothing)."""
    if visual.kind != "mesh" and coarse_primitive(visual) is not None:
        return True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        mesh = visual.mesh
    if mesh is None or len(mesh.faces) <= max_faces:
        return True
    key = _visual_key(visual)
    if key is None:
        return False
    memo_key, path = _cache_entry(key, max_faces)
    return memo_key in _DECIMATED or (path is not None and path.is_file())


def _cache_entry(key, max_faces: int) -> tuple[tuple, object]:
    """Where a visual's decimated mesh is kept: its key in :data:`_DECIMATED` and its disk cache
    path (None: its file cannot be stat'ed)."""
    return (key, int(max_faces)), mesh_cache.entry_path(key[0], key[1], max_faces)


def coarse_primitive(visual):
    """A primitive visual tessellated for many small copies (about a third of the faces of
    ``visual.mesh``), or None for a mesh visual or an unknown kind."""
    import trimesh

    size = np.asarray(visual.size, float)
    if visual.kind == "capsule":
        return trimesh.creation.capsule(radius=size[0], height=size[1], count=[14, 8])
    if visual.kind == "cylinder":
        return trimesh.creation.cylinder(radius=size[0], height=size[1], sections=14)
    if visual.kind in ("sphere", "ellipsoid"):
        mesh = trimesh.creation.icosphere(subdivisions=1, radius=1.0)
        mesh.apply_scale(size if visual.kind == "ellipsoid" else size[0])
        return mesh
    return None


# -- link visuals -------------------------------------------------------------------------------
def visuals_signature(link) -> tuple | None:
    """What a link's merged mesh is made of (each visual's kind or mesh file, size, pose and colour),
    so that links drawn alike share one instanced mesh; None for a link with in-memory mesh data
    (not compared)."""
    out = []
    for v in link.visuals:
        if v.mesh_data is not None:
            return None
        out.append((v.kind, str(v.mesh_file), bool(v.mesh_colors),
                    *(tuple(np.round(np.asarray(a, float), 9).tolist()) for a in (v.size, v.pos, v.quat, v.rgba))))
    return tuple(out)


def tree_triangles(tree) -> int:
    """Triangles of every visual of ``tree`` at full detail (mesh files are read on first call)."""
    total = 0
    for link in tree.links:
        for visual in link.visuals:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                mesh = visual.mesh
            total += 0 if mesh is None else len(mesh.faces)
    return total


class Stopped(Exception):
    """:func:`link_specs` stopped before its end: its ``stop`` was set (a visualizer closed while
    its decimated meshes were being made in the background)."""


def link_specs(tree, lod: str = "full", max_faces: int = 1000, stop=None) -> list[tuple[int, MeshSpec]]:
    """``[(link index, MeshSpec)]``: each link's visuals merged into one mesh in the link frame,
    with per-vertex colours (one draw call per link, whatever its colours). ``stop``: a
    ``threading.Event`` looked at before each link (set: :class:`Stopped` is raised)."""
    import trimesh

    if lod not in LODS:
        raise InvalidValueError(f"lod: expected one of {LODS}, got {lod!r}")
    out = []
    for link in tree.links:
        if stop is not None and stop.is_set():
            raise Stopped(f"stopped before link {link.name!r}")
        parts, colors = [], []
        for visual in link.visuals:
            mesh = coarse_primitive(visual) if lod == "decimated" else None
            if mesh is None:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", DeprecationWarning)
                    mesh = visual.mesh
            if mesh is None or len(mesh.faces) == 0:
                continue
            own = _vertex_colors(mesh) if visual.mesh_colors else None
            if lod == "decimated":
                mesh = decimate(mesh, max_faces, _visual_key(visual))
            if visual.kind != "mesh":
                mesh = mesh.smooth_shaded  # sharp edges of boxes and cylinder caps stay sharp
            mesh = trimesh.Trimesh(vertices=mesh.vertices, faces=mesh.faces, process=False)
            mesh.apply_transform(pose_to_matrix(visual.pos, visual.quat))
            parts.append(mesh)
            if own is not None and len(own) == len(mesh.vertices):  # the file's colours (a decimated mesh: rgba)
                own[:, 3] *= float(np.clip(visual.rgba[3], 0, 1))
                colors.append(own)
            else:
                colors.append(np.tile(np.clip(visual.rgba, 0, 1).astype(np.float32), (len(mesh.vertices), 1)))
        if parts:
            merged = parts[0] if len(parts) == 1 else trimesh.util.concatenate(parts)
            out.append((link.idx, MeshSpec(merged, colors=np.concatenate(colors))))
    return out


def _vertex_colors(mesh) -> np.ndarray | None:
    """A mesh file's per-vertex colours (V, 4) in [0, 1], or None when it has none."""
    visual = getattr(mesh, "visual", None)
    if visual is None or getattr(visual, "kind", None) != "vertex":
        return None
    colors = np.asarray(visual.vertex_colors, np.float32)
    if colors.ndim != 2 or colors.shape[1] != 4 or len(colors) != len(mesh.vertices):
        return None
    return colors / 255.0


# -- debug shapes and the ground --------------------------------------------------------------------
def unit_shape(shape: str):
    """The unit mesh of a debug shape: sphere r=1 at the origin; cylinder / cone r=1, z from 0 to 1."""
    import trimesh

    if shape == "sphere":
        return trimesh.creation.icosphere(subdivisions=2, radius=1.0)
    if shape == "cylinder":
        m = trimesh.creation.cylinder(radius=1.0, height=1.0, sections=16)
        m.apply_translation((0, 0, 0.5))
        return m.smooth_shaded
    if shape == "cone":
        return trimesh.creation.cone(radius=1.0, height=1.0, sections=16).smooth_shaded
    raise InvalidValueError(f"shape: unknown debug shape {shape!r}")


def debug_spec(shape: str, rgba: tuple) -> MeshSpec:
    return MeshSpec(unit_shape(shape), tuple(rgba), emissive=0.35)


MAX_GRID_LINES = 32  # per side: a wider ground gets a coarser grid (finer lines alias into moire from afar)


def grid_spacing(lo, hi, spacing: float = 0.25) -> float:
    """The grid's line spacing, m, for a ground ``lo..hi`` (x, y): ``spacing`` doubled until at most
    :data:`MAX_GRID_LINES` lines cross each side (256 envs 1.2 m apart: 1 m, not 0.25 m)."""
    extent = float(np.max(np.asarray(hi, float) - np.asarray(lo, float)))
    while extent / spacing > MAX_GRID_LINES:
        spacing *= 2.0
    return spacing


def ground_specs(lo, hi, spacing: float = 0.25) -> dict[str, MeshSpec]:
    """A ground plane and grid lines covering ``lo..hi`` (x, y) at z = 0, every ``spacing`` m, or a
    multiple of it on a wide ground (:func:`grid_spacing`)."""
    import trimesh

    spacing = grid_spacing(lo, hi, spacing)
    lo = np.floor(np.asarray(lo, float) / spacing) * spacing
    hi = np.ceil(np.asarray(hi, float) / spacing) * spacing
    z = -1e-3
    plane = trimesh.Trimesh(vertices=[[lo[0], lo[1], z], [hi[0], lo[1], z], [hi[0], hi[1], z], [lo[0], hi[1], z]],
                            faces=[[0, 1, 2], [0, 2, 3]], process=False)
    segs = []
    for x in np.arange(lo[0], hi[0] + spacing / 2, spacing):
        segs += [[x, lo[1], 0.0], [x, hi[1], 0.0]]
    for y in np.arange(lo[1], hi[1] + spacing / 2, spacing):
        segs += [[lo[0], y, 0.0], [hi[0], y, 0.0]]
    lines = trimesh.Trimesh(vertices=np.array(segs), faces=np.zeros((0, 3), int), process=False)
    return {"plane": MeshSpec(plane, (0.30, 0.31, 0.33, 1.0), double_sided=True, roughness=0.9),
            "lines": MeshSpec(lines, (0.50, 0.52, 0.55, 1.0), mode="lines", emissive=0.3)}


# -- pyrender -----------------------------------------------------------------------------------
def to_pyrender(spec: MeshSpec, poses: np.ndarray):
    """One pyrender Mesh (a single primitive) drawn at each of ``poses`` (N, 4, 4)."""
    import pyrender

    rgba = spec.rgba
    transparent = rgba[3] < 1 or (spec.colors is not None and bool(np.any(spec.colors[:, 3] < 1)))
    material = pyrender.MetallicRoughnessMaterial(
        baseColorFactor=rgba, metallicFactor=0.0, roughnessFactor=spec.roughness,
        emissiveFactor=(spec.emissive,) * 3,  # our shader: self-lit fraction of the base colour
        alphaMode="BLEND" if transparent else "OPAQUE", doubleSided=spec.double_sided)
    verts = np.asarray(spec.mesh.vertices, np.float32)
    if spec.mode == "lines":
        normals = np.tile(np.float32([0, 0, 1]), (len(verts), 1))
        prim = pyrender.Primitive(positions=verts, normals=normals, material=material, mode=pyrender.GLTF.LINES,
                                  poses=poses)
    else:
        normals = np.asarray(spec.mesh.vertex_normals, np.float32)
        prim = pyrender.Primitive(positions=verts, normals=normals, indices=np.asarray(spec.mesh.faces, np.uint32),
                                  color_0=spec.colors, material=material, mode=pyrender.GLTF.TRIANGLES, poses=poses)
    return pyrender.Mesh([prim])
