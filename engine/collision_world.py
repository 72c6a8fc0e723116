"""World obstacles for the collision checks: the scene's fixed Box, Sphere, Cylinder and Plane
entities (morph ``fixed=True``, ``collision=True``), as exact shapes.

Each obstacle's pose is its link's pose in the scene state, per env, so obstacles whose pose
differs per env are handled as they stand. Which robot links are checked: every link with
spheres except, for a fixed-base robot, the links rigidly attached to the world through the root
(they cannot move away from a table they stand on).

Distance of a robot sphere (centre ``c``, radius ``r``) to a shape: the shape's signed distance
at ``c`` minus ``r`` (m; negative inside). A Plane is a half-space: everything behind its
normal is inside.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .collision import _rotate, rigid_groups

KINDS = ("box", "sphere", "cylinder", "plane")


@dataclass(frozen=True)
class Obstacle:
    """One obstacle: ``entity`` (a fixed single-body entity), ``kind``, ``size`` (box: half extents
    ``(3,)``; sphere: ``(radius,)``; cylinder: ``(radius, half height)``; plane: its unit normal in
    the body frame ``(3,)``), ``name`` (``"<kind>#<entity index>"``)."""

    entity: object
    kind: str
    size: np.ndarray
    name: str


def scene_obstacles(scene, robot) -> list[Obstacle]:
    """The fixed primitive entities of ``scene`` other than ``robot``, in entity order."""
    from .morphs import Primitive

    out = []
    for entity in scene.entities:
        morph = entity.morph
        if entity is robot or not isinstance(morph, Primitive) or not morph.fixed or not morph.collision:
            continue
        kind = morph.kind
        if kind == "box":
            size = np.asarray(morph.size, float) / 2
        elif kind == "sphere":
            size = np.array([float(morph.radius)])
        elif kind == "cylinder":
            size = np.array([float(morph.radius), float(morph.height) / 2])
        elif kind == "plane":
            size = np.asarray(morph.normal, float)
        else:
            continue
        out.append(Obstacle(entity, kind, size, f"{kind}#{entity.idx}"))
    return out


def world_tables(obstacles: list[Obstacle], envs: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The obstacles as the kernels take them (:mod:`engine.kernels.collide`): ``shapes (O, 4)``
    (kind index into :data:`KINDS`, size padded to 3) and their poses ``(len(envs), O, 7)`` (pos,
    quat wxyz; env-local world) in the envs ``envs``, both in ``dtype``."""
    shapes = np.array([[KINDS.index(o.kind), *np.resize(o.size, 3)] for o in obstacles], dtype).reshape(-1, 4)
    if not obstacles:
        return shapes, np.zeros((len(envs), 0, 7), dtype)
    shape_pose = np.stack([o.entity._pose[envs, 0] for o in obstacles], axis=1)
    return shapes, np.ascontiguousarray(shape_pose, dtype)


def world_links(tree, fixed_base: bool) -> np.ndarray:
    """``(n_links,)`` bool: the links checked against obstacles (see the module docstring)."""
    keep = np.ones(tree.n_links, bool)
    if fixed_base:
        group = rigid_groups(tree)
        keep &= group != group[0]
    return keep


def signed_distance(kind: str, size: np.ndarray, pose: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Signed distance ``(B, n)`` m of ``points (B, n, 3)`` to one shape posed at ``pose (B, 7)``
    (pos, quat wxyz; env-local world), negative inside."""
    pos, quat = pose[:, None, :3], pose[:, None, 3:]
    inverse = quat * np.array([1.0, -1.0, -1.0, -1.0])
    local = _rotate(np.broadcast_to(inverse, points.shape[:-1] + (4,)), points - pos)
    if kind == "sphere":
        return np.linalg.norm(local, axis=-1) - size[0]
    if kind == "plane":
        return local @ size
    if kind == "box":
        q = np.abs(local) - size
    elif kind == "cylinder":
        q = np.stack([np.linalg.norm(local[..., :2], axis=-1) - size[0], np.abs(local[..., 2]) - size[1]], axis=-1)
    else:
        raise ValueError(f"kind: expected one of {KINDS}, got {kind!r}")
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(-1), 0.0)


def world_distance(model, robot, pose: np.ndarray, envs: np.ndarray, names: bool = True) -> tuple[np.ndarray, list]:
    """Smallest distance ``(B,)`` m between ``robot``'s checked spheres (at link poses ``pose
    (B, n_links, 7)`` of envs ``envs``) and the scene's obstacles (inf without any), and per env
    the ``(link name, obstacle name)`` that sets it (None without obstacles, or unless ``names``). A taichi kernel
    (:func:`engine.kernels.collide.world_distance`); :func:`world_distance_numpy` is the same in numpy."""
    from .kernels import collide, threads

    B = pose.shape[0]
    obstacles = scene_obstacles(robot._scene, robot)
    checked = world_links(robot.tree, not robot.is_free)[model.spheres.link]
    if not obstacles or not checked.any() or not B:
        return np.full(B, np.inf), [None] * B
    from . import backend
    from .dispatch import SOFTWARE_LOOP_LIMIT

    if backend.STATE.software and int(checked.sum()) * (len(obstacles) + 1) > SOFTWARE_LOOP_LIMIT:
        dist, which = world_distance_numpy(model, robot, pose, envs)  # beyond lavapipe's loop limit
        return dist, (which if names else [None] * B)
    pose = np.ascontiguousarray(pose)
    spheres = model.kernel_tables(pose.dtype)[0]
    shapes, shape_pose = world_tables(obstacles, envs, pose.dtype)
    dist, which = np.empty(B, pose.dtype), np.empty((B, 2), np.int32)
    checked = checked.astype(np.int32)
    threads.CHOICE.launch(("world_distance", id(model)), B, lambda serial: collide.world_distance(
        pose, spheres, checked, shapes, shape_pose, dist, which, serial))
    if not names:
        return dist.astype(float), [None] * B
    link_names = robot.tree.link_names()
    link = model.spheres.link[which[:, 0]]
    return dist.astype(float), [(link_names[link[b]], obstacles[which[b, 1]].name) for b in range(B)]


def world_distance_numpy(model, robot, pose: np.ndarray, envs: np.ndarray) -> tuple[np.ndarray, list]:
    """:func:`world_distance` in numpy (float64)."""
    centers = model.world_centers(pose)
    B = centers.shape[0]
    best = np.full(B, np.inf)
    obstacles = scene_obstacles(robot._scene, robot)
    keep = world_links(robot.tree, not robot.is_free)[model.spheres.link]
    if not obstacles or not keep.any():
        return best, [None] * B
    idx = np.flatnonzero(keep)
    pts, radii = centers[:, idx].astype(float), model.spheres.radii[idx]
    sphere, obstacle = np.zeros(B, np.int64), np.zeros(B, np.int64)
    for o, ob in enumerate(obstacles):
        pose = ob.entity._pose[envs, 0].astype(float)
        d = signed_distance(ob.kind, ob.size, pose, pts) - radii
        k = np.argmin(d, axis=1)
        dk = d[np.arange(B), k]
        closer = dk < best
        best = np.where(closer, dk, best)
        sphere = np.where(closer, k, sphere)
        obstacle = np.where(closer, o, obstacle)
    names = robot.tree.link_names()
    link = model.spheres.link[idx[sphere]]
    which = [(names[link[b]], obstacles[obstacle[b]].name) for b in range(B)]
    return best, which
