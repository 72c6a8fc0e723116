"""Visual geometry -> trimesh, for the renderer. Loaded lazily: kinematics never needs meshes."""

from __future__ import annotations

import functools

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


MAX_VERTEX = 1e30  # m: a mesh vertex beyond this (or not finite) is refused, as a robot file's numbers are


def mesh_file_problem(path: str) -> str | None:
    """Why the mesh file ``path`` cannot stand for a solid body (an obstacle): unreadable, no
    triangles (empty, or points only), a vertex that is not finite or beyond :data:`MAX_VERTEX`,
    or a face indexing a vertex that does not exist. None: it can."""
    import os

    try:
        info = os.stat(path)
    except OSError as err:
        return f"cannot read mesh file {path}: {err.strerror or err}"
    return _problem(str(path), info.st_mtime_ns, info.st_size)


@functools.lru_cache(maxsize=64)
def _problem(path: str, mtime_ns: int, size: int) -> str | None:
    import trimesh

    try:
        mesh = trimesh.load(path, force="mesh", process=False)
    except Exception as err:  # trimesh raises many kinds for unreadable files
        return f"cannot read mesh file {path}: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
    vertices = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), float).reshape(-1, 3)
    faces = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))), np.int64).reshape(-1, 3)
    if len(faces) == 0:
        return f"mesh file {path} has no triangles"
    bad = ~np.isfinite(vertices).all(axis=1) | (np.abs(np.nan_to_num(vertices)) > MAX_VERTEX).any(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        return (f"mesh file {path}: vertex {i} is {vertices[i].tolist()}; expected finite coordinates within "
                f"{MAX_VERTEX:g}")
    wrong = (faces < 0) | (faces >= len(vertices))
    if wrong.any():
        i = int(np.flatnonzero(wrong.any(axis=1))[0])
        return (f"mesh file {path}: face {i} is {faces[i].tolist()}; expected vertex indices 0 to "
                f"{len(vertices) - 1}")
    return None
