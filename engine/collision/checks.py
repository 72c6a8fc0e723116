"""Collision avoidance in IK, and every sphere-distance check: the tables the kernels read, and the
distances they give.

A solve with avoidance (``avoid_collisions=True``, or a :class:`~engine.ik.tasks.CollisionTask`)
reads the entity's sphere model (:meth:`~engine.collision.api.CollisionMethods.collision_model`:
its spheres and counted pairs) and the scene's obstacles (:mod:`engine.collision.world`) through
the tables named in :mod:`engine.kernels.tables` (``coll_i``, ``coll_f``, ``shape_pose``); the
kernel side is :mod:`engine.kernels.avoid`. The tables are packed again only when the model (pairs
added or removed) or the set of obstacles changed; obstacle poses are copied in every call, so
obstacles move between calls, and differ per env, with no recompile.

:func:`distance` gives the smallest sphere distance of link poses over those tables, from one
kernel (the search of the avoidance task, exact). ``collision_distance`` and ``in_collision``
use it, and so does the check of each IK answer (:func:`answer_distance`), which gives
``IKResult.min_distance`` and the pair that sets it: an answer closer than the margin is never
reported as a success. Where a software Vulkan device would stop the kernel's loops
(:data:`engine.runtime.dispatch.SOFTWARE_LOOP_LIMIT`) the same distances come from numpy.
"""

from __future__ import annotations

import copy

import numpy as np

from ..kernels.tables import (
    AVOID_HEAD,
    BOUND_F,
    COLL_F_WIDTH,
    COLL_I_WIDTH,
    HULL_F,
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
from ..obstacle_kinds import shape
from .hulls import hull_rows, protrusion
from .world import KINDS, scene_obstacles, world_links, world_tables


class AvoidTables:
    """Collision tables: ``coll_i``, ``coll_f`` (robot and obstacle shapes) and ``shape_pose``
    (n_sel, max(O, 1), 7), refreshed by :meth:`update` before each use; ``self_pairs`` / ``world`` /
    ``hulls``: whether they hold the counted self pairs / the obstacles / the links' hulls. An IK plan
    without a COLLIDE task keeps the placeholders (one zero row each), which the kernel never reads."""

    def __init__(self, n_sel: int, dtype, self_pairs: bool = True, world: bool = True, hulls: bool = True):
        self.dtype = dtype
        self.self_pairs, self.world = self_pairs, world  # which checks the tables hold
        self.hulls = hulls  # whether they hold the model's hulls (the checks' exact tier)
        self.coll_i = np.zeros((1, COLL_I_WIDTH), np.int32)
        self.coll_f = np.zeros((1, COLL_F_WIDTH), dtype)
        self.shape_pose = np.zeros((n_sel, 1, 7), dtype)
        self._key = None
        self.names: list[str] = []  # each obstacle row's name
        self.loops = 0  # the exact search's most loop iterations (:func:`loop_count`)
        self.solver_loops = 0  # the solver's search's, per solver iteration (:func:`solver_loop_count`)

    def args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.coll_i, self.coll_f, self.shape_pose

    def has_checks(self) -> bool:
        """Whether the tables hold anything to check: a counted pair, or an obstacle and a link
        checked against obstacles."""
        head = self.coll_i[0]
        P, L, O = (int(head[c]) for c in (AVOID_HEAD.n_pairs, AVOID_HEAD.n_links, AVOID_HEAD.n_shapes))
        return P > 0 or (O > 0 and bool(self.coll_i[link_row_c(P, 0):link_row_c(P, L), LINK_C.world].any()))

    def subset(self, rows: np.ndarray) -> AvoidTables:
        """These tables for some of the envs of the last :meth:`update` only: ``rows``, indices
        into its ``envs`` (the robot's and obstacles' tables are shared, the poses copied)."""
        out = copy.copy(self)
        out.shape_pose = np.ascontiguousarray(self.shape_pose[rows])
        return out

    def update(self, entity, envs: np.ndarray) -> None:
        """Pack the tables for ``entity``'s current model and obstacles (when either changed) and
        copy the obstacles' poses in the envs ``envs``."""
        model = entity.collision_model()
        robot_tables = model.kernel_tables(self.dtype)  # a new tuple whenever the pairs change
        obstacles = scene_obstacles(entity.scene, entity) if self.world else []
        shapes, poses = world_tables(obstacles, envs, self.dtype)
        self.names = [o.name for o in obstacles]
        key = shapes.tobytes()
        if self._key is None or self._key[0] is not model or self._key[1] is not robot_tables or self._key[2] != key:
            spheres, bounds, pairs = robot_tables
            self.coll_i, self.coll_f = pack(entity, (spheres, bounds, pairs if self.self_pairs else pairs[:0]), shapes,
                                            model.link_hulls() if self.hulls else None)
            self.loops = loop_count(self.coll_i)
            self.solver_loops = solver_loop_count(self.coll_i)
            self._key = (model, robot_tables, key)  # held, so that a new model or table is never taken for it
        if poses.shape[1] == 0:
            poses = np.zeros((len(envs), 1, 7), self.dtype)
        if self.shape_pose.shape != poses.shape:
            self.shape_pose = np.empty(poses.shape, self.dtype)
        self.shape_pose[:] = poses


def pack(entity, robot_tables, shapes: np.ndarray, hulls: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(coll_i, coll_f)`` for the sphere model's tables ``robot_tables`` (spheres, bounds, pairs:
    :meth:`RobotCollision.kernel_tables`), the obstacles' ``shapes`` (O, 4) and the links' convex
    ``hulls`` (``[n_links]`` vertex arrays or None: :meth:`RobotCollision.link_hulls`; None: no hull)."""
    spheres, bounds, pairs = robot_tables
    S, L, P, O = len(spheres), entity.tree.n_links, len(pairs), len(shapes)
    dtype = spheres.dtype
    vertices, ranges, grown = hull_rows(hulls if hulls is not None else [None] * L, S + L + O)
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
        row[LINK_C.h0], row[LINK_C.h1] = ranges[l]
    if O:
        coll_i[shape_row_i(P, L, 0):shape_row_i(P, L, O), SHAPE_I.kind] = shapes[:, 0].astype(np.int32)
    coll_f = np.zeros((max(S + L + O + len(vertices), 1), COLL_F_WIDTH), dtype)
    coll_f[S + L + O:S + L + O + len(vertices), HULL_F.vertex:HULL_F.vertex + 3] = vertices
    coll_f[:S, :SPHERE_F.width] = spheres
    coll_f[bound_row(S, 0):bound_row(S, L), :BOUND_F.hull_radius] = bounds
    coll_f[bound_row(S, 0):bound_row(S, L), BOUND_F.hull_radius] = grown
    if hulls is not None:
        leaf = spheres[:, SPHERE_F.count] == 0  # the spheres, not their groups' balls
        for l in range(L):
            own = leaf & (link == l)
            centers = spheres[own, SPHERE_F.center:SPHERE_F.center + 3].astype(float)
            coll_f[bound_row(S, l), BOUND_F.protrusion] = protrusion(hulls[l], centers, spheres[own, SPHERE_F.radius])
    if O:
        rows = coll_f[shape_row_f(S, L, 0):shape_row_f(S, L, O)]
        rows[:, SHAPE_F.size:SHAPE_F.size + 3] = shapes[:, 1:4]
        rows[:, SHAPE_F.bound] = [shape_bound(KINDS[int(k)], size) for k, *size in shapes]
    return coll_i, coll_f


def shape_bound(kind: str, size) -> float:
    """Radius (m) of a ball about an obstacle's origin that holds it (1e30 for a half-space)."""
    return shape(kind).bound(np.asarray(size, float))


def loop_count(coll_i: np.ndarray) -> int:
    """Loop iterations the exact search of the checks (:func:`distance`) may run at most (every pair
    close) over the packed tables ``coll_i`` (:func:`pack`), against a software Vulkan device's
    loop limit: the spheres' (:func:`_sphere_loops`) and every pair's hull bound run to
    :data:`engine.collision.gjk.ITERATIONS` steps (each step one support of each hull)."""
    from .gjk import ITERATIONS

    head = coll_i[0]
    P, O = int(head[AVOID_HEAD.n_pairs]), int(head[AVOID_HEAD.n_shapes])
    sizes = _hull_sizes(coll_i)
    pairs = coll_i[pair_row(0):pair_row(P)]
    steps = ITERATIONS + 1
    hulls = 0
    for a, b in pairs[:, [PAIR_I.link_a, PAIR_I.link_b]].tolist():
        if sizes[a] and sizes[b]:
            hulls += steps * (int(sizes[a] + sizes[b]) + 2)
    hulls += O * steps * int((sizes[sizes > 0] + 2).sum())
    return _sphere_loops(coll_i) + hulls


def _sphere_loops(coll_i: np.ndarray) -> int:
    """Loop iterations one sphere search may run at most (every pair close): per self pair, its
    first link's spheres times one more than its second's; per link, one more than the
    obstacles; per sphere, the obstacles."""
    head = coll_i[0]
    P, L, O, S = (int(head[c]) for c in (AVOID_HEAD.n_pairs, AVOID_HEAD.n_links, AVOID_HEAD.n_shapes,
                                         AVOID_HEAD.n_spheres))
    pairs = coll_i[pair_row(0):pair_row(P)]
    on_a = pairs[:, PAIR_I.a1] - pairs[:, PAIR_I.a0]
    on_b = pairs[:, PAIR_I.b1] - pairs[:, PAIR_I.b0]
    return int((on_a * (on_b + 1) + 1).sum()) + L * (O + 1) + S * O + 6


def solver_loop_count(coll_i: np.ndarray) -> int:
    """Loop iterations the IK solver's avoidance task (:func:`engine.kernels.avoid.collision_task`)
    runs at most per solver iteration: its search, :func:`_sphere_loops` or less where the search's
    row budget (:data:`engine.kernels.avoid.SEARCH_ROWS`, exit tests counted) binds first (past it
    each pair and link-obstacle pair left costs one more test); the hulls' bound
    (:data:`engine.kernels.avoid.HULL_WORK`) where the tables hold hulls; each near pair's insertion among
    the kept ones (:data:`~engine.kernels.avoid.KEEP_LOOPS`); and the rows' Jacobians (two chains of
    at most every link per row)."""
    from ..kernels.avoid import HULL_WORK, KEEP_LOOPS, ROWS, SEARCH_ROWS

    head = coll_i[0]
    P, L, O = (int(head[c]) for c in (AVOID_HEAD.n_pairs, AVOID_HEAD.n_links, AVOID_HEAD.n_shapes))
    search = min(_sphere_loops(coll_i), SEARCH_ROWS + 2 * (P + L * O) + L * (O + 1) + 6)
    hulls = HULL_WORK + ROWS if _hull_sizes(coll_i).any() else 0  # the kept pairs' hull bounds, per search
    return search + hulls + KEEP_LOOPS * (P + L * O) + ROWS * (2 * L + 3) + 1


def _hull_sizes(coll_i: np.ndarray) -> np.ndarray:
    """``(L,)``: each link's hull vertex count in the packed tables (0: none)."""
    head = coll_i[0]
    P, L = int(head[AVOID_HEAD.n_pairs]), int(head[AVOID_HEAD.n_links])
    rows = coll_i[link_row_c(P, 0):link_row_c(P, L)]
    return (rows[:, LINK_C.h1] - rows[:, LINK_C.h0]).astype(np.int64)


def distance(entity, pose: np.ndarray, envs: np.ndarray, tables: AvoidTables, reach: float | None = None
             ) -> tuple[np.ndarray, list]:
    """Smallest sphere distance ``(B,)`` m at link poses ``pose (B, n_links, 7)`` of the envs
    ``envs`` over what ``tables`` holds (updated for those envs: :meth:`AvoidTables.update`), and
    what sets it (``(link, link)`` or ``(link, obstacle)``; None when there is nothing to check,
    then the distance is inf): one kernel (:func:`engine.kernels.avoid.answer_distance`), or numpy
    beyond a software Vulkan device's loop limit. ``reach`` (m): distances below it are exact, and one
    at or above it may only say so (a search that stops there costs a fraction of the whole: the
    check of an answer that needs only its clearance); None: every distance exact."""
    from ..kernels import avoid
    from ..runtime.dispatch import SOFTWARE_LOOP_LIMIT, serial
    from ..runtime.state import STATE

    n = len(pose)
    if STATE.software and tables.loops > SOFTWARE_LOOP_LIMIT:
        return _distance_numpy(entity, pose, envs, tables)
    dist, which = np.empty(n, pose.dtype), np.empty((n, 3), np.int32)
    if n:
        avoid.answer_distance(np.ascontiguousarray(pose), *tables.args(), dist, which, serial(n),
                              avoid.NO_PAIR if reach is None else reach)
    links = entity.tree.link_names()
    names = [None if a < 0 else (links[a], links[b]) if o < 0 else (links[a], tables.names[o])
             for a, b, o in which.tolist()]
    return np.where(dist >= avoid.NO_PAIR, np.inf, dist.astype(float)), names


def _distance_numpy(entity, pose: np.ndarray, envs: np.ndarray, tables: AvoidTables) -> tuple[np.ndarray, list]:
    """:func:`distance` in numpy (float64): the self pairs sphere by sphere, then the obstacles."""
    from .world import world_distance_numpy

    model = entity.collision_model()
    dist, names = np.full(len(pose), np.inf), [None] * len(pose)
    if tables.self_pairs:
        dist, which = model.distance_numpy(pose)
        pairs = model.pairs
        names = [pairs[k] if k >= 0 else None for k in which]
    if tables.world:
        wdist, wnames = world_distance_numpy(model, entity, pose, envs)
        closer = wdist < dist
        dist = np.where(closer, wdist, dist)
        names = [w if c else s for s, w, c in zip(names, wnames, closer)]
    return dist, names


def answer_distance(entity, qpos: np.ndarray, envs: np.ndarray, tables: AvoidTables, reach: float | None = None
                    ) -> tuple[np.ndarray, list]:
    """:func:`distance` of the answers ``qpos (n, n_qs)`` of the envs ``envs``: the distances
    ``collision_distance`` gives for them (below ``reach``, as :func:`distance` says)."""
    cfg = entity.configuration
    return distance(entity, cfg.fk_poses(np.ascontiguousarray(qpos, dtype=cfg.dtype)), envs, tables, reach)


__all__ = ["KINDS", "AvoidTables", "answer_distance", "distance", "loop_count", "pack", "shape_bound",
           "solver_loop_count"]
