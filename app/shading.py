"""Smooth shading for robot meshes whose files repeat every vertex per triangle (STL: TALOS).

The engine loads mesh files as they are (``engine.model.meshes``, ``process=False``), so an STL's
triangles share no vertex, each gets its own face normal, and a finely tessellated curved shell
is drawn as a speckle of tiny flat facets that catch the light each its own way. Before a scene's
visualizer first builds its meshes, :func:`smooth_meshes` replaces each such mesh (the one the
``Visual`` caches) by a copy with the shared vertices merged and normals smoothed, split again at
creases sharper than trimesh's smoothing angle (30 degrees) so that edges stay sharp. A mesh that
already shares its vertices is left alone. Results are kept per file, for the next build.

(The engine change this stands in for: merge the duplicate vertices where mesh files are loaded.)
"""

from __future__ import annotations

import numpy as np

_SMOOTHED: dict[tuple, object] = {}  # (mesh file, scale) -> smoothed trimesh


def needs_smoothing(mesh) -> bool:
    """Most vertices are used by one face only: the file repeats vertices per triangle."""
    if mesh is None or len(mesh.faces) == 0:
        return False
    return len(mesh.vertices) >= 2.5 * len(mesh.faces)


def smooth_meshes(tree) -> int:
    """Smooth every mesh visual of ``tree`` that needs it (see the module docstring); returns how
    many were replaced."""
    n = 0
    for link in tree.links:
        for visual in link.visuals:
            if visual.kind != "mesh" or visual.mesh_file is None:
                continue
            key = (str(visual.mesh_file), tuple(np.round(np.asarray(visual.size, float), 9)))
            smoothed = _SMOOTHED.get(key)
            if smoothed is None:
                mesh = visual.mesh
                if not needs_smoothing(mesh):
                    continue
                merged = mesh.copy()
                merged.merge_vertices()
                smoothed = _SMOOTHED[key] = merged.smooth_shaded
            visual.__dict__["mesh"] = smoothed  # Visual.mesh is a cached_property: this is its cache
            n += 1
    return n
