"""A scene file's ``obstacles:``: the checks that need the file system (mesh files) and the
engine bodies they build into.

Each obstacle becomes a fixed single body of the scene (``engine.morphs.Box`` / ``Sphere`` /
``Cylinder`` / ``Plane`` / ``Mesh`` with ``fixed=True``, coloured by a ``Default`` surface when
the file gives ``color``), which the collision checks and IK with ``avoid_collisions`` see as an
obstacle (:mod:`engine.collision.world`). A mesh file is looked for relative to the scene file's
folder, then among the engine's own meshes (``meshes/axis.obj``).
"""

from __future__ import annotations

import functools
from pathlib import Path

from .. import morphs, surfaces
from ..errors import MissingFileError
from .errors import Issue
from .models import MeshObstacle, SceneSpec


def mesh_path(spec: SceneSpec, obstacle: MeshObstacle) -> Path:
    """The mesh file of ``obstacle``: ``file`` relative to the scene file's folder, else one of
    the engine's meshes. Raises :class:`~engine.errors.MissingFileError` (none found) or
    ``ValueError`` (not a mesh file)."""
    for candidate in (spec.resolve_path(obstacle.file), morphs.DATA_DIR / obstacle.file):
        if candidate.is_file():
            return morphs.resolve_mesh_file(candidate)
    raise MissingFileError(f"no such mesh file: {obstacle.file!r} (looked for {spec.resolve_path(obstacle.file)} "
                           f"and among the engine's meshes in {morphs.DATA_DIR})")


@functools.lru_cache(maxsize=64)
def _mesh_problem(path: str, mtime: float) -> str | None:
    """Why the mesh file cannot serve as an obstacle (None: it can); cached while the file is unchanged."""
    import trimesh

    try:
        mesh = trimesh.load(path, force="mesh", process=False)
    except Exception as err:  # trimesh raises many kinds for unreadable files
        return f"cannot read mesh file {path}: {str(err).splitlines()[0] if str(err) else type(err).__name__}"
    if len(getattr(mesh, "faces", ())) == 0:
        return f"mesh file {path} has no triangles"
    return None


def obstacle_issues(spec: SceneSpec) -> list[Issue]:
    """Problems of the spec's obstacles that the models cannot see: mesh files that are missing,
    not meshes, or unreadable."""
    issues = []
    for i, obstacle in enumerate(spec.obstacles):
        if not isinstance(obstacle, MeshObstacle):
            continue
        try:
            path = mesh_path(spec, obstacle)
        except (ValueError, OSError) as err:
            issues.append(Issue(("obstacles", i, "file"), str(err).removeprefix("file: ")))
            continue
        problem = _mesh_problem(str(path), path.stat().st_mtime)
        if problem is not None:
            issues.append(Issue(("obstacles", i, "file"), problem))
    return issues


def obstacle_morph(spec: SceneSpec, obstacle):
    """The engine morph (fixed) of one obstacle of ``spec``."""
    pose = {"pos": obstacle.pos, "quat": obstacle.orientation()}
    kind = obstacle.kind
    if kind == "box":
        return morphs.Box(size=obstacle.size, fixed=True, **pose)
    if kind == "sphere":
        return morphs.Sphere(radius=obstacle.size, fixed=True, **pose)
    if kind == "cylinder":
        return morphs.Cylinder(radius=obstacle.size[0], height=obstacle.size[1], fixed=True, **pose)
    if kind == "plane":
        return morphs.Plane(**pose)
    return morphs.Mesh(file=mesh_path(spec, obstacle), scale=obstacle.scale, fixed=True, **pose)


def add_obstacles(spec: SceneSpec, scene) -> list:
    """Add the spec's obstacles to ``scene`` (not built yet), in file order; returns their entities.
    A body the engine refuses raises ``ValueError`` naming ``obstacles[i]``."""
    out = []
    for i, obstacle in enumerate(spec.obstacles):
        surface = None if obstacle.color is None else surfaces.Default(color=obstacle.color)
        try:
            out.append(scene.add_entity(obstacle_morph(spec, obstacle), surface=surface))
        except (ValueError, TypeError, OSError) as err:
            raise ValueError(f"obstacles[{i}]: {err}") from None
    return out
