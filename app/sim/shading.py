"""Smooth shading for robot meshes whose files repeat every vertex per triangle (STL: TALOS).

The engine loads mesh files as they are (``engine.model.meshes``, ``process=False``), so an STL's
triangles share no vertex, each gets its own face normal, and a finely tessellated curved shell
is drawn as a speckle of tiny flat facets that catch the light each its own way. Before a scene's
visualizer first builds its meshes, :func:`smooth_meshes` replaces each such mesh (the one the
``Visual`` caches) by a copy with the shared vertices merged and normals smoothed, split again at
creases sharper than trimesh's smoothing angle (30 degrees) so that edges stay sharp. A mesh that
already shares its vertices is left alone. Results are kept per file, for the next build.

When the visualizer draws a reduced level of detail (``lod="decimated"``: from 16 envs up), the
merged mesh is decimated here, to the visualizer's face budget, *before* the normals are split at
creases (at 60 degrees: a coarse shell's facets meet at wider angles): decimating the split copy
(as the visualizer would, given it) tears it open along its seams, and vertex clustering folds
thin shells into holes and dark blotches. :func:`prepare` raises the visualizer's budget to the
largest mesh made here, so that it draws them as they are.

(The engine change this stands in for: merge the duplicate vertices where mesh files are loaded.)
"""

from __future__ import annotations

import numpy as np

_SMOOTHED: dict[tuple, object] = {}  # (mesh file, scale, face budget or None) -> smoothed trimesh


def needs_smoothing(mesh) -> bool:
    """Most vertices are used by one face only: the file repeats vertices per triangle."""
    from engine.vis.meshes import repeats_vertices

    return repeats_vertices(mesh)


def reduce_faces(mesh, max_faces: int):
    """``mesh`` (vertices shared) decimated toward ``max_faces`` faces by quadric edge collapse
    (fast-simplification's, off the GIL: :mod:`engine.vis.quadric`). Its best try may keep more
    faces than asked (a shell with many borders: TALOS' chest stops at 1735 for 1000); that is kept
    up to twice the budget, since vertex clustering (:func:`engine.vis.meshes.decimate`'s fallback, used past that or
    without the library) folds thin shells into holes."""
    from engine.vis import quadric
    from engine.vis.meshes import decimate

    if len(mesh.faces) <= max_faces:
        return mesh
    try:
        out = quadric.simplify(mesh, int(max_faces))
    except (ImportError, ValueError, TypeError, AttributeError):  # no backend, or its API changed
        out = None
    if out is not None and 0 < len(out.faces) <= 2 * max_faces:
        return out
    return decimate(mesh, int(max_faces))


def smooth_shade(mesh, coarse: bool):
    """A copy of ``mesh`` with smoothed normals, its vertices split where faces meet at more than
    30 degrees (trimesh's default), or 60 for a ``coarse`` (decimated) mesh, whose facets of a
    curved shell meet at wider angles."""
    from trimesh.graph import smooth_shade as shade

    return shade(mesh, angle=np.radians(60.0) if coarse else None)


def smooth_meshes(tree, max_faces: int | None = None) -> list[int]:
    """Smooth every mesh visual of ``tree`` that needs it (see the module docstring); with
    ``max_faces`` (the visualizer's ``max_faces_per_mesh`` when its ``lod`` is "decimated"), first
    reduce each merged mesh toward that many faces (:func:`reduce_faces`). Returns the face count
    of each mesh replaced (a decimating visualizer's budget must take the largest)."""
    faces = []
    for link in tree.links:
        for visual in link.visuals:
            if visual.kind != "mesh" or visual.mesh_file is None:
                continue
            key = (str(visual.mesh_file), tuple(np.round(np.asarray(visual.size, float), 9)), max_faces)
            smoothed = _SMOOTHED.get(key)
            if smoothed is None:
                mesh = visual.mesh
                if not needs_smoothing(mesh):
                    continue
                merged = mesh.copy()
                merged.merge_vertices()
                if max_faces is not None:
                    merged = reduce_faces(merged, int(max_faces))
                smoothed = _SMOOTHED[key] = smooth_shade(merged, max_faces is not None)
            visual.__dict__["mesh"] = smoothed  # Visual.mesh is a cached_property: this is its cache
            faces.append(len(smoothed.faces))
    return faces


def prepare(visualizer, tree) -> int:
    """Smooth ``tree``'s meshes (:func:`smooth_meshes`) for ``visualizer`` at its level of detail,
    before it first draws them: a decimating visualizer gets them reduced to its face budget, and
    the budget raised to the largest of them, so that it draws them as they are. Returns how many
    meshes were replaced."""
    budget = visualizer.max_faces_per_mesh if visualizer.lod == "decimated" else None
    faces = smooth_meshes(tree, budget)
    visualizer.max_faces_per_mesh = max([visualizer.max_faces_per_mesh, *faces])
    return len(faces)
