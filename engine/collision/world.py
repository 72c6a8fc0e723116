"""World obstacles for the collision checks: the scene's fixed Plane, Box, Sphere, Cylinder, Capsule
and Mesh entities (morph ``fixed=True``, ``collision=True``); the primitives are the rows of
:mod:`engine.obstacle_kinds`.

A primitive is one obstacle, its exact shape. A Mesh stands for its surface through spheres
fitted to it (:func:`obstacle_spheres`, :mod:`engine.collision.spheres`: every point of the surface is
inside some sphere, so clearance from the spheres implies clearance from the mesh): one
``"sphere"`` obstacle per sphere, all named ``"mesh#<entity index>"``. Only the surface is
covered: a robot sphere wholly inside a closed mesh, touching no sphere, is not seen.

Each obstacle's pose is its entity's pose in the scene state, per env (``set_pos`` / ``set_quat``
move a fixed body, per env with ``envs_idx``), composed with the obstacle's centre in the body
frame (a mesh's sphere), so obstacles that moved, or whose pose differs per env, are handled as
they stand: the kernels read the poses each call (:func:`world_tables`) and compile nothing new.

Which robot links are checked: every link with spheres except, for a fixed-base robot, the links
rigidly attached to the world through the root (they cannot move away from a table they stand
on).

Distance of a robot sphere (centre ``c``, radius ``r``) to a shape: the shape's signed distance
at ``c`` minus ``r`` (m; negative inside). A Plane is a half-space: everything behind its
normal is inside.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidTypeError, InvalidValueError
from ..model.meshes import mesh_file_problem
from ..obstacle_kinds import BY_NAME, KINDS
from ..transforms import quat_rotate_unit
from .gjk import pieces_shape_bound
from .robot import rigid_groups

MESH_SPHERES = 32  # spheres fitted to a Mesh obstacle unless obstacle_spheres() asked for another count


@dataclass(frozen=True)
class Obstacle:
    """One obstacle: ``entity`` (a fixed single-body entity), ``kind`` (one of :data:`KINDS`),
    ``size`` (as :mod:`engine.obstacle_kinds` packs it: box half extents ``(3,)``, sphere
    ``(radius,)``, cylinder ``(radius, half height)``, capsule ``(radius, half length)``, plane
    its unit normal in the body frame ``(3,)``), ``name`` (``"<kind>#<entity
    index>"``; ``"mesh#<entity index>"`` for a Mesh's spheres) and ``center`` (``(3,)`` m, where
    the shape sits in the entity's body frame; None: at its origin)."""

    entity: object
    kind: str
    size: np.ndarray
    name: str
    center: np.ndarray | None = None


def _fixed_body(entity) -> bool:
    from ..morphs import Shape

    morph = entity.morph
    return isinstance(morph, Shape) and morph.fixed and morph.collision


def obstacle_spheres(entity, spheres_per_link: int | None = None):
    """The :class:`~engine.collision.spheres.SphereModel` standing for a fixed Mesh entity as an
    obstacle: at most ``spheres_per_link`` spheres (1..64; default: the ones fitted before, else
    :data:`MESH_SPHERES`) covering its surface, centres in its body frame (m). Fitted once per
    entity and count, cached on disk under the mesh file's hash."""
    from .geometry import collision_geometry
    from .spheres import check_spheres_per_link, sphere_model

    morph = getattr(entity, "morph", None)
    if morph is None or not (_fixed_body(entity) and morph.kind == "mesh"):
        got = type(entity).__name__ if morph is None else \
            f"an entity of a {type(morph).__name__}{'' if getattr(morph, 'fixed', True) else ' (not fixed)'}"
        raise InvalidTypeError(f"entity: expected a fixed, colliding Mesh entity (morphs.Mesh(..., fixed=True, "
                               f"collision=True)), got {got}")
    with entity.lock:
        state = entity.collision_state
        kept = state.obstacle_spheres
        if kept is not None and spheres_per_link in (None, kept[0]):
            return kept[1]
        n = check_spheres_per_link(MESH_SPHERES if spheres_per_link is None else spheres_per_link)
        problem = mesh_file_problem(str(morph.file))
        if problem is not None:  # an empty or broken mesh would stand for nothing: refused by name
            raise InvalidValueError(f"obstacle entity #{entity.idx} (morphs.Mesh): {problem}")
        model = sphere_model(entity.tree, collision_geometry(entity.tree, morph), n, 0, morph.scale)
        state.obstacle_spheres = (n, model)
        return model


def scene_obstacles(scene, robot) -> list[Obstacle]:
    """The obstacles of ``scene`` for ``robot``: its fixed single bodies other than ``robot``, in
    entity order (a Mesh's spheres in a row)."""
    out = []
    for entity in scene.entities:
        if entity is robot or not _fixed_body(entity):
            continue
        morph = entity.morph
        kind = morph.kind
        name = f"{kind}#{entity.idx}"
        if kind in BY_NAME:
            size = BY_NAME[kind].size(morph)
        elif kind == "mesh":
            model = obstacle_spheres(entity)
            out += [Obstacle(entity, "sphere", np.array([r]), name, c) for c, r in zip(model.centers, model.radii)]
            continue
        else:
            continue
        out.append(Obstacle(entity, kind, size, name))
    return out


def obstacle_poses(obstacles: list[Obstacle], envs: np.ndarray) -> np.ndarray:
    """The obstacles' poses ``(len(envs), O, 7)`` float64 (pos m, quat wxyz; env-local world) in
    the envs ``envs``: each entity's current pose, moved to the obstacle's centre."""
    if not obstacles:
        return np.zeros((len(envs), 0, 7))
    pose = np.stack([o.entity.configuration.pose[envs, 0] for o in obstacles], axis=1).astype(float)
    offset = [k for k, o in enumerate(obstacles) if o.center is not None]
    if offset:
        centers = np.array([obstacles[k].center for k in offset], float)
        quat = pose[:, offset, 3:]
        pose[:, offset, :3] += quat_rotate_unit(quat, np.broadcast_to(centers, quat.shape[:-1] + (3,)))
    return pose


def world_tables(obstacles: list[Obstacle], envs: np.ndarray, dtype) -> tuple[np.ndarray, np.ndarray]:
    """The obstacles as the kernels take them (:func:`engine.collision.checks.pack`): ``shapes (O, 4)``
    (kind index into :data:`KINDS`, size padded to 3) and their poses ``(len(envs), O, 7)`` (pos,
    quat wxyz; env-local world: :func:`obstacle_poses`) in the envs ``envs``, both in ``dtype``."""
    shapes = np.array([[KINDS.index(o.kind), *np.resize(o.size, 3)] for o in obstacles], dtype).reshape(-1, 4)
    return shapes, np.ascontiguousarray(obstacle_poses(obstacles, envs), dtype)


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
    local = quat_rotate_unit(np.broadcast_to(inverse, points.shape[:-1] + (4,)), points - pos)
    if kind not in BY_NAME:
        raise ValueError(f"kind: expected one of {KINDS}, got {kind!r}")
    return BY_NAME[kind].distance(size, local)


def world_distance_numpy(model, robot, pose: np.ndarray, envs: np.ndarray) -> tuple[np.ndarray, list]:
    """Smallest distance ``(B,)`` m between ``robot``'s checked spheres (at link poses ``pose
    (B, n_links, 7)`` of envs ``envs``) and the scene's obstacles (inf without any), and per env
    the ``(link name, obstacle name)`` that sets it (None without obstacles), in numpy (float64):
    the reference of the kernel's distances (:func:`engine.collision.checks.distance`), and its stand-in
    where a software Vulkan device would stop the kernel's loops."""
    centers = model.world_centers(pose)
    B = centers.shape[0]
    best = np.full(B, np.inf)
    obstacles = scene_obstacles(robot.scene, robot)
    keep = world_links(robot.tree, not robot.is_free)[model.spheres.link]
    if not obstacles or not keep.any():
        return best, [None] * B
    idx = np.flatnonzero(keep)
    pts, radii = centers[:, idx].astype(float), model.spheres.radii[idx]
    owner = model.spheres.link[idx]
    link, obstacle = np.zeros(B, np.int64), np.zeros(B, np.int64)
    poses = obstacle_poses(obstacles, envs)
    pieces, balls = model.link_pieces(), model.piece_balls()
    for o, ob in enumerate(obstacles):
        d_all = signed_distance(ob.kind, ob.size, poses[:, o], pts) - radii
        for l in np.unique(owner):  # link by link: near contact the pieces' bound too, as the kernels
            d = d_all[:, owner == l].min(axis=1)
            if pieces[l]:
                for r in np.flatnonzero(d < best):
                    d[r] = max(d[r], pieces_shape_bound(pieces[l], balls[l], pose[r, l], BY_NAME[ob.kind].code,
                                                        np.resize(ob.size, 3), poses[r, o], best[r]))
            closer = d < best
            best = np.where(closer, d, best)
            link = np.where(closer, l, link)
            obstacle = np.where(closer, o, obstacle)
    names = robot.tree.link_names()
    which = [(names[link[b]], obstacles[obstacle[b]].name) for b in range(B)]
    return best, which
