"""Visual geometry -> trimesh, for the renderer. Loaded lazily: kinematics never needs meshes."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValueError


def visual_to_trimesh(visual):
    """A ``trimesh.Trimesh`` of one :class:`~engine.model.tree.Visual`, in the visual's own frame.

    Returns None when a mesh file cannot be read (a warning names the file).
    """
    import warnings

    import trimesh

    kind, size = visual.kind, np.asarray(visual.size, float)
    if kind == "box":
        return trimesh.creation.box(extents=size)
    if kind == "sphere":
        return trimesh.creation.icosphere(subdivisions=2, radius=size[0])
    if kind == "ellipsoid":
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
        mesh.apply_scale(size)
        return mesh
    if kind == "cylinder":
        return trimesh.creation.cylinder(radius=size[0], height=size[1], sections=24)
    if kind == "capsule":
        return trimesh.creation.capsule(radius=size[0], height=size[1], count=[16, 16])
    if kind == "mesh":
        if visual.mesh_data is not None:
            vertices, faces = visual.mesh_data
            mesh = trimesh.Trimesh(vertices=vertices, faces=faces, process=False)
        else:
            try:
                mesh = trimesh.load(str(visual.mesh_file), force="mesh", process=False)
            except Exception as err:  # trimesh raises many types for unreadable files
                warnings.warn(f"mesh file '{visual.mesh_file}' could not be read: {err}", RuntimeWarning,
                              stacklevel=2)
                return None
        mesh = mesh.copy()
        mesh.apply_scale(size)
        return mesh
    raise InvalidValueError(f"visual.kind: unknown kind '{kind}'")
