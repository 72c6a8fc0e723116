"""The files a job's answers depend on, fingerprinted: the robot's collision meshes (its robot
file is fingerprinted by :class:`~engine.batch.settings.JobSpec` itself) and the obstacle scene
file's meshes. The manifest keeps ``{"<role>:<path>": sha256}``, paths relative to the robot
file's folder or the scene file's, so the same job run from another checkout matches; a rerun
whose files differ is refused, naming the file (:func:`engine.batch.dataset.differences`)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import InvalidValueError
from .manifest import os_error


def _key(role: str, file: Path, base: Path) -> str:
    try:
        name = file.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        name = file.resolve().as_posix()
    return f"{role}:{name}"


def _hash(file: Path, label: str) -> str:
    from .settings import file_sha256

    try:
        return file_sha256(file)
    except OSError as err:
        raise os_error(label, file, err, "read") from None


def robot_files(tree, morph, robot_path: Path) -> dict[str, str]:
    """``{"robot:<mesh path>": sha256}`` of the robot's collision meshes (what avoidance reads)."""
    from ..collision.geometry import collision_geometry, mesh_files

    try:
        files = mesh_files(collision_geometry(tree, morph))
    except Exception as err:  # a robot file whose collision part cannot be read: refused by name
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InvalidValueError(f"robot: cannot read the collision geometry of '{robot_path}': {first}") from None
    base = Path(robot_path).parent
    return {_key("robot", f, base): _hash(f, "robot") for f in files if Path(f).is_file()}


def obstacle_files(obstacles: tuple[str, str] | None, label: str = "obstacles") -> dict[str, str]:
    """``{"obstacles:<mesh path>": sha256}`` of the mesh files the obstacle scene file
    ``(text, folder)`` names (:func:`~engine.batch.settings.obstacle_file`)."""
    if obstacles is None:
        return {}
    from ..scenefile.io import loads
    from ..scenefile.models import MeshObstacle
    from ..scenefile.obstacles import mesh_path

    text, folder = obstacles
    spec = loads(text, file=os.path.join(folder, "obstacles"), base_dir=folder, check=False)
    out = {}
    for obstacle in spec.obstacles:
        if isinstance(obstacle, MeshObstacle):
            path = mesh_path(spec, obstacle)
            out[_key("obstacles", path, Path(folder))] = _hash(path, label)
    return out
