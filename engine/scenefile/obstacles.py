"""A scene file's ``obstacles:``: the checks that need the file system (mesh files) and the
engine bodies they build into.

Each obstacle becomes a fixed single body of the scene (``engine.morphs.Box`` / ``Sphere`` /
``Cylinder`` / ``Plane`` / ``Mesh`` with ``fixed=True``, coloured by a ``Default`` surface when
the file gives ``color``), which the collision checks and IK with ``avoid_collisions`` see as an
obstacle (:mod:`engine.collision.world`). A mesh file is looked for relative to the scene file's
folder, then among the engine's own meshes (``meshes/axis.obj``).
"""

from __future__ import annotations

from pathlib import Path

from .. import morphs, surfaces
from ..errors import MissingFileError
from ..obstacle_kinds import BY_NAME
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


def _mesh_problem(path: str) -> str | None:
    """Why the mesh file cannot serve as an obstacle (None: it can); see
    :func:`engine.model.meshes.mesh_file_problem`."""
    from ..model.meshes import mesh_file_problem

    return mesh_file_problem(path)


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
        problem = _mesh_problem(str(path))
        if problem is not None:
            issues.append(Issue(("obstacles", i, "file"), problem))
    return issues


def obstacle_morph(spec: SceneSpec, obstacle):
    """The engine morph (fixed) of one obstacle of ``spec``."""
    pose = {"pos": obstacle.pos, "quat": obstacle.orientation()}
    if obstacle.kind in BY_NAME:  # a primitive: engine.obstacle_kinds
        return BY_NAME[obstacle.kind].from_spec(obstacle, pose)
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
