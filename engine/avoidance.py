"""Collision avoidance in IK: the tables a COLLIDE task's kernel reads, and each answer's distance.

A solve with avoidance (``avoid_collisions=True``, or a :class:`~engine.tasks.CollisionTask`)
reads the entity's sphere model (:meth:`~engine.collision_api.CollisionMethods.collision_model`:
its spheres and counted pairs) and the scene's obstacles (:mod:`engine.collision_world`) through
the tables named in :mod:`engine.kernels.tables` (``coll_i``, ``coll_f``, ``shape_pose``); the
kernel side is :mod:`engine.kernels.avoid`. The tables are packed again only when the model (pairs
added or removed) or the set of obstacles changed; obstacle poses are copied in every call, so
obstacles move between calls, and differ per env, with no recompile.

After the solve, each env's answer is checked on the host (:func:`answer_distance`: the same
sphere distances as :meth:`collision_distance`), which gives ``IKResult.min_distance`` and the
pair that sets it, and an answer closer than the margin is never reported as a success.
"""

from __future__ import annotations

import numpy as np

from .collision_world import KINDS, scene_obstacles, world_links, world_tables
from .kernels.tables import (
    AVOID_HEAD,
    BOUND_F,
    COLL_F_WIDTH,
    COLL_I_WIDTH,
    LINK_C,
    PAIR_I,
    SHAPE_F,
    SHAPE_I,
    SPHERE_F,
    bound_row,
    link_row_c,
    pair_row,
    shape_row_f,
    shape_row_i,
)


class AvoidTables:
    """One plan's collision tables: ``coll_i``, ``coll_f`` (robot and obstacle shapes) and
    ``shape_pose`` (n_sel, max(O, 1), 7), refreshed by :meth:`update` before each solve. A plan
    without a COLLIDE task keeps the placeholders (one zero row each), which the kernel never reads."""

    def __init__(self, n_sel: int, dtype):
        self.dtype = dtype
        self.coll_i = np.zeros((1, COLL_I_WIDTH), np.int32)
        self.coll_f = np.zeros((1, COLL_F_WIDTH), dtype)
        self.shape_pose = np.zeros((n_sel, 1, 7), dtype)
        self._key = None

    def args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.coll_i, self.coll_f, self.shape_pose

    def update(self, entity, envs: np.ndarray) -> None:
        """Pack the tables for ``entity``'s current model and obstacles (when either changed) and
        copy the obstacles' poses in the envs ``envs``."""
        model = entity.collision_model()
        robot_tables = model.kernel_tables(self.dtype)  # a new tuple whenever the pairs change
        obstacles = scene_obstacles(entity._scene, entity)
        shapes, poses = world_tables(obstacles, envs, self.dtype)
        key = shapes.tobytes()
        if self._key is None or self._key[0] is not model or self._key[1] is not robot_tables or self._key[2] != key:
            self.coll_i, self.coll_f = pack(entity, robot_tables, shapes)
            self._key = (model, robot_tables, key)  # held, so that a new model or table is never taken for it
        if poses.shape[1] == 0:
            poses = np.zeros((len(envs), 1, 7), self.dtype)
        if self.shape_pose.shape != poses.shape:
            self.shape_pose = np.empty(poses.shape, self.dtype)
        self.shape_pose[:] = poses


def pack(entity, robot_tables, shapes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(coll_i, coll_f)`` for the sphere model's tables ``robot_tables`` (spheres, bounds, pairs:
    :meth:`RobotCollision.kernel_tables`) and the obstacles' ``shapes`` (O, 4)."""
    spheres, bounds, pairs = robot_tables
    S, L, P, O = len(spheres), entity.tree.n_links, len(pairs), len(shapes)
    dtype = spheres.dtype
    coll_i = np.zeros((1 + P + L + O, COLL_I_WIDTH), np.int32)
    coll_i[0, AVOID_HEAD.n_pairs], coll_i[0, AVOID_HEAD.n_links] = P, L
    coll_i[0, AVOID_HEAD.n_shapes], coll_i[0, AVOID_HEAD.n_spheres] = O, S
    if P:
        coll_i[pair_row(0):pair_row(P), :PAIR_I.width] = pairs
    link = spheres[:, SPHERE_F.link].astype(np.int64)
    checked = world_links(entity.tree, not entity.is_free)
    for l in range(L):
        idx = np.flatnonzero(link == l)
        row = coll_i[link_row_c(P, l)]
        if len(idx):
            row[LINK_C.s0], row[LINK_C.s1] = idx[0], idx[-1] + 1
        row[LINK_C.world] = int(checked[l] and len(idx) > 0)
    if O:
        coll_i[shape_row_i(P, L, 0):shape_row_i(P, L, O), SHAPE_I.kind] = shapes[:, 0].astype(np.int32)
    coll_f = np.zeros((max(S + L + O, 1), COLL_F_WIDTH), dtype)
    coll_f[:S, :SPHERE_F.width] = spheres
    coll_f[bound_row(S, 0):bound_row(S, L), :BOUND_F.width] = bounds
    if O:
        rows = coll_f[shape_row_f(S, L, 0):shape_row_f(S, L, O)]
        rows[:, SHAPE_F.size:SHAPE_F.size + 3] = shapes[:, 1:4]
        rows[:, SHAPE_F.bound] = [shape_bound(KINDS[int(k)], size) for k, *size in shapes]
    return coll_i, coll_f


def shape_bound(kind: str, size) -> float:
    """Radius (m) of a ball about an obstacle's origin that holds it (1e30 for a half-space)."""
    size = np.asarray(size, float)
    if kind == "box":
        return float(np.linalg.norm(size))
    if kind == "sphere":
        return float(size[0])
    if kind == "cylinder":
        return float(np.hypot(size[0], size[1]))
    return 1e30


def loop_count(entity) -> int:
    """Loop iterations one solver iteration's avoidance search may run at most (every pair close),
    for the software-Vulkan launch budget (:func:`engine.dispatch.solver_budget`)."""
    model = entity.collision_model()
    per_link = np.bincount(model.spheres.link, minlength=entity.tree.n_links)
    pairs = model.kernel_tables(np.float32)[2]
    obstacles = len(scene_obstacles(entity._scene, entity))
    self_loops = sum(int(per_link[a] * (per_link[b] + 1)) + 1 for a, b in pairs[:, :2])
    return self_loops + entity.tree.n_links * (obstacles + 1) + model.spheres.n_spheres * obstacles + 6


def answer_distance(entity, qpos: np.ndarray, envs: np.ndarray) -> tuple[np.ndarray, list]:
    """Smallest sphere distance ``(n,)`` m of each answer ``qpos (n, n_qs)`` (envs ``envs``) over
    the counted pairs and the obstacles, and what sets it (``(link, link)`` or ``(link,
    obstacle)``; None when there is nothing to check): as ``collision_distance(qpos,
    return_pair=True)``."""
    from .collision_world import world_distance

    model = entity.collision_model()
    pose = entity._fk_poses(np.ascontiguousarray(qpos, dtype=entity._dtype))
    dist, which = model.distance(pose)
    pairs = model.pairs
    names = [pairs[k] if k >= 0 else None for k in which]
    wdist, wnames = world_distance(model, entity, pose, envs, True)
    closer = wdist < dist
    return np.where(closer, wdist, dist), [w if c else n for n, w, c in zip(names, wnames, closer, strict=True)]


__all__ = ["KINDS", "AvoidTables", "answer_distance", "loop_count", "pack"]
