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
(:data:`engine.runtime.dispatch.SOFTWARE_LOOP_LIMIT`) the search runs in several launches
(:mod:`engine.collision.launches`); where even one piece pair is over that limit, or the
launches would cost more than numpy for the rows asked, the same distances come from numpy.
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
    PIECE_F,
    PIECE_I,
    SHAPE_F,
    SHAPE_I,
    SPHERE_F,
    bound_row,
    link_row_c,
    pair_row,
    piece_row_f,
    piece_row_i,
    shape_row_f,
    shape_row_i,
)
from ..obstacle_kinds import shape
from .launches import LAUNCHES_PER_ROW, item_loops, piece_sizes, split
from .world import KINDS, scene_obstacles, world_links, world_tables


class AvoidTables:
    """Collision tables: ``coll_i``, ``coll_f`` (robot and obstacle shapes) and ``shape_pose``
    (n_sel, max(O, 1), 7), refreshed by :meth:`update` before each use; ``self_pairs`` / ``world`` /
    ``hulls``: whether they hold the counted self pairs / the obstacles / the links' pieces. An IK plan
    without a COLLIDE task keeps the placeholders (one zero row each), which the kernel never reads."""

    def __init__(self, n_sel: int, dtype, self_pairs: bool = True, world: bool = True, hulls: bool = True):
        self.dtype = dtype
        self.self_pairs, self.world = self_pairs, world  # which checks the tables hold
        self.hulls = hulls  # whether they hold the model's pieces (the checks' exact tier)
        self.coll_i = np.zeros((1, COLL_I_WIDTH), np.int32)
        self.coll_f = np.zeros((1, COLL_F_WIDTH), dtype)
        self.shape_pose = np.zeros((n_sel, 1, 7), dtype)
        self._key = None
        self.names: list[str] = []  # each obstacle row's name
        self.loops = 0  # the exact search's most loop iterations (:func:`loop_count`)
        self._parts = (None, 0, None)  # (coll_i, a loop limit, its launches under it): :meth:`launches`
        self.solver_loops = 0  # the solver's search's, per solver iteration (:func:`solver_loop_count`)

    def args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self.coll_i, self.coll_f, self.shape_pose

    def launches(self, limit: int) -> list[np.ndarray] | None:
        """The ``coll_i`` of each launch of the exact search under ``limit`` loop iterations
        (:func:`engine.collision.launches.split`; the tables themselves when they fit), or None
        where even one piece pair is over it. Kept until the tables are packed again."""
        if self.loops <= limit:
            return [self.coll_i]
        if self._parts[0] is not self.coll_i or self._parts[1] != limit:
            self._parts = (self.coll_i, limit, split(self.coll_i, limit))
        return self._parts[2]

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
        key = (shapes.tobytes(), search_rows())
        if self._key is None or self._key[0] is not model or self._key[1] is not robot_tables or self._key[2] != key:
            spheres, bounds, pairs = robot_tables
            self.coll_i, self.coll_f = pack(entity, (spheres, bounds, pairs if self.self_pairs else pairs[:0]), shapes,
                                            model.link_pieces() if self.hulls else None)
            self.loops = loop_count(self.coll_i)
            self.solver_loops = solver_loop_count(self.coll_i)
            self._key = (model, robot_tables, key)  # held, so that a new model or table is never taken for it
        if poses.shape[1] == 0:
            poses = np.zeros((len(envs), 1, 7), self.dtype)
        if self.shape_pose.shape != poses.shape:
            self.shape_pose = np.empty(poses.shape, self.dtype)
        self.shape_pose[:] = poses


def pack(entity, robot_tables, shapes: np.ndarray, pieces: list | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(coll_i, coll_f)`` for the sphere model's tables ``robot_tables`` (spheres, bounds, pairs:
    :meth:`RobotCollision.kernel_tables`), the obstacles' ``shapes`` (O, 4) and the links'
    ``pieces`` (``[n_links]`` lists of :class:`~engine.collision.hulls.Hull`:
    :meth:`RobotCollision.link_pieces`; None: none, the spheres alone)."""
    from .pieces import ball
    from .pieces import protrusion as pieces_protrusion

    spheres, bounds, pairs = robot_tables
    S, L, P, O = len(spheres), entity.tree.n_links, len(pairs), len(shapes)
    dtype = spheres.dtype
    pieces = pieces if pieces is not None else [[]] * L
    flat = [p for link in pieces for p in link]
    N, V = len(flat), sum(len(p.vertices) for p in flat)
    coll_i = np.zeros((1 + P + L + O + N, COLL_I_WIDTH), np.int32)
    coll_i[0, AVOID_HEAD.n_pairs], coll_i[0, AVOID_HEAD.n_links] = P, L
    coll_i[0, AVOID_HEAD.n_shapes], coll_i[0, AVOID_HEAD.n_spheres] = O, S
    coll_i[0, AVOID_HEAD.n_pieces] = N
    coll_i[0, AVOID_HEAD.search_rows] = search_rows()
    if P:
        coll_i[pair_row(0):pair_row(P), :PAIR_I.width] = pairs
    link = spheres[:, SPHERE_F.link].astype(np.int64)
    checked = world_links(entity.tree, not entity.is_free)
    coll_f = np.zeros((max(S + L + O + N + V, 1), COLL_F_WIDTH), dtype)
    piece, row = 0, S + L + O + N  # the next piece, and its first vertex row
    leaf = spheres[:, SPHERE_F.count] == 0  # the spheres, not their groups' balls
    for l in range(L):
        idx = np.flatnonzero(link == l)
        out = coll_i[link_row_c(P, l)]
        if len(idx):
            out[LINK_C.s0], out[LINK_C.s1] = idx[0], idx[-1] + 1
        out[LINK_C.world] = int(checked[l] and len(idx) > 0)
        out[LINK_C.p0], out[LINK_C.p1] = piece, piece + len(pieces[l])
        for p in pieces[l]:
            centre, radius = ball(p)
            coll_i[piece_row_i(P, L, O, piece), PIECE_I.h0:PIECE_I.h1 + 1] = row, row + len(p.vertices)
            ball_row = coll_f[piece_row_f(S, L, O, piece)]
            ball_row[PIECE_F.center:PIECE_F.center + 3] = centre
            ball_row[PIECE_F.radius], ball_row[PIECE_F.grown] = radius, p.radius
            coll_f[row:row + len(p.vertices), HULL_F.vertex:HULL_F.vertex + 3] = p.vertices
            piece, row = piece + 1, row + len(p.vertices)
        if pieces[l]:
            centre = bounds[l, :3].astype(float)
            coll_f[bound_row(S, l), BOUND_F.reach] = max(
                np.linalg.norm(ball(p)[0] - centre) + ball(p)[1] for p in pieces[l]) * (1 + 1e-6) + 1e-6
            own = leaf & (link == l)
            centers = spheres[own, SPHERE_F.center:SPHERE_F.center + 3].astype(float)
            coll_f[bound_row(S, l), BOUND_F.protrusion] = pieces_protrusion(pieces[l], centers,
                                                                            spheres[own, SPHERE_F.radius])
    if O:
        coll_i[shape_row_i(P, L, 0):shape_row_i(P, L, O), SHAPE_I.kind] = shapes[:, 0].astype(np.int32)
    coll_f[:S, :SPHERE_F.width] = spheres
    coll_f[bound_row(S, 0):bound_row(S, L), :BOUND_F.radius + 1] = bounds
    if O:
        rows = coll_f[shape_row_f(S, L, 0):shape_row_f(S, L, O)]
        rows[:, SHAPE_F.size:SHAPE_F.size + 3] = shapes[:, 1:4]
        rows[:, SHAPE_F.bound] = [shape_bound(KINDS[int(k)], size) for k, *size in shapes]
    return coll_i, coll_f


def shape_bound(kind: str, size) -> float:
    """Radius (m) of a ball about an obstacle's origin that holds it (1e30 for a half-space)."""
    return shape(kind).bound(np.asarray(size, float))


def loop_count(coll_i: np.ndarray) -> int:
    """Loop iterations the exact search of the checks (:func:`distance`) may run at most in one
    launch (every pair close) over the packed tables ``coll_i`` (:func:`pack`), against a software
    Vulkan device's loop limit: :func:`engine.collision.launches.item_loops` summed."""
    per_pair, per_link, base = item_loops(coll_i)
    return int(base + per_pair.sum() + per_link.sum())


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


def search_rows() -> int:
    """The row budget of the solver's search that tables packed now carry: the current value of
    :data:`engine.kernels.avoid.SEARCH_ROWS` (the kernels read it from the tables at run time, so a
    budget set in a running process takes effect at the next packing, with the same compiled kernels)."""
    from ..kernels import avoid

    rows = avoid.SEARCH_ROWS
    if not (isinstance(rows, int) and 0 < rows < 2**31):
        raise ValueError(f"engine.kernels.avoid.SEARCH_ROWS: expected an int in [1, 2**31 - 1] (rows), got {rows!r}")
    return rows


def solver_loop_count(coll_i: np.ndarray) -> int:
    """Loop iterations the IK solver's avoidance task (:func:`engine.kernels.avoid.collision_task`)
    runs at most per solver iteration: its search, :func:`_sphere_loops` or less where the search's
    row budget (the tables' ``search_rows``: :func:`search_rows`, exit tests counted) binds first (past it
    each pair and link-obstacle pair left costs one more test); the pieces' bound
    (:data:`engine.kernels.avoid.HULL_WORK`, and each bound's exit tests) where the tables hold pieces;
    each near pair's insertion among
    the kept ones (:data:`~engine.kernels.avoid.KEEP_LOOPS`); and the rows' Jacobians (two chains of
    at most every link per row)."""
    from ..kernels.avoid import HULL_WORK, KEEP_LOOPS, ROWS
    from ..kernels.gjk import EXITS

    head = coll_i[0]
    P, L, O, budget = (int(head[c]) for c in (AVOID_HEAD.n_pairs, AVOID_HEAD.n_links, AVOID_HEAD.n_shapes,
                                              AVOID_HEAD.search_rows))
    search = min(_sphere_loops(coll_i), budget + 2 * (P + L * O) + L * (O + 1) + 6)
    hulls = HULL_WORK + ROWS * (EXITS + 1) if piece_sizes(coll_i)[0].any() else 0  # the kept pairs' bounds
    return search + hulls + KEEP_LOOPS * (P + L * O) + ROWS * (2 * L + 3) + 1


def distance(entity, pose: np.ndarray, envs: np.ndarray, tables: AvoidTables, reach: float | None = None
             ) -> tuple[np.ndarray, list]:
    """Smallest sphere distance ``(B,)`` m at link poses ``pose (B, n_links, 7)`` of the envs
    ``envs`` over what ``tables`` holds (updated for those envs: :meth:`AvoidTables.update`), and
    what sets it (``(link, link)`` or ``(link, obstacle)``; None when there is nothing to check,
    then the distance is inf): the kernel's search (:func:`search`), or numpy where a software
    Vulkan device cannot run it. ``reach`` (m): distances below it are exact, and one at or above it
    may only say so (a search that stops there costs a fraction of the whole: the check of an
    answer that needs only its clearance); None: every distance exact."""
    found = search(pose, tables, reach)
    if found is None:
        return _distance_numpy(entity, pose, envs, tables)
    dist, which = found
    links = entity.tree.link_names()
    names = [None if a < 0 else (links[a], links[b]) if o < 0 else (links[a], tables.names[o])
             for a, b, o in which.tolist()]
    return dist, names


def search(pose: np.ndarray, tables: AvoidTables, reach: float | None = None
           ) -> tuple[np.ndarray, np.ndarray] | None:
    """The kernel's exact search (:func:`engine.kernels.avoid.answer_distance`) over ``tables`` at
    link poses ``pose (B, n_links, 7)``: ``(distance (B,) m, inf with nothing to check; which (B, 3)
    int: link a, link b or -1, obstacle or -1)``. On a software Vulkan device, launch by launch
    under its loop limit (:meth:`AvoidTables.launches`), the least taken; None where even one piece
    pair is over it, or where the launches would cost more than the numpy twins, which then answer
    (more than :data:`~engine.collision.launches.LAUNCHES_PER_ROW` a row). ``reach``: as
    :func:`distance` says."""
    from ..kernels import avoid
    from ..runtime.dispatch import SOFTWARE_LOOP_LIMIT, serial
    from ..runtime.state import STATE

    n = len(pose)
    parts = tables.launches(SOFTWARE_LOOP_LIMIT) if STATE.software else [tables.coll_i]
    if parts is None or len(parts) > LAUNCHES_PER_ROW * max(n, 1):
        return None
    pose = np.ascontiguousarray(pose)
    dist, which = np.empty(n, pose.dtype), np.empty((n, 3), np.int32)

    def launch(coll_i, d, w):
        avoid.answer_distance(pose, coll_i, tables.coll_f, tables.shape_pose, d, w, serial(n),
                              avoid.NO_PAIR if reach is None else reach)

    if n:
        launch(parts[0], dist, which)  # the answer; each further launch may lower it
        d, w = np.empty_like(dist), np.empty_like(which)
        for coll_i in parts[1:]:
            launch(coll_i, d, w)
            closer = d < dist
            dist[closer], which[closer] = d[closer], w[closer]
    return np.where(dist >= avoid.NO_PAIR, np.inf, dist.astype(float)), which


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


__all__ = ["KINDS", "AvoidTables", "answer_distance", "distance", "loop_count", "pack", "search", "shape_bound",
           "search_rows", "solver_loop_count"]
