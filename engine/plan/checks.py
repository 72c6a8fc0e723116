"""Collision checks for the planner: clearances of batched configurations and certified segments.

Distances come from the engine's one batched distance kernel (the kernel of
:func:`engine.collision.checks.distance`, at the FK kernel's link poses), once over the self pairs
and once over the obstacles, for rows that may belong to any env (each row reads its own env's
obstacle poses).

A configuration's *clearance* ``c`` (m) folds both into the distance any sphere may still move:
``min(d_world - margin, (d_self - margin) / 2) - SLACK`` (a self pair's two spheres both move).
By :mod:`engine.plan.bounds`, every configuration ``y`` with ``motion_bound(y - x) < c(x)`` is
then at least ``margin`` from collision, so a segment is certified once its points' clearance
balls cover it (:meth:`Checker.certify`).
"""

from __future__ import annotations

import numpy as np

from ..collision.checks import AvoidTables, distance, loop_count, pack, search
from ..collision.world import scene_obstacles, world_tables
from .bounds import lever_arms, motion_bound
from .carried import augment

SLACK = 1e-5  # m: float32 FK and distance rounding (a few 1e-7 m on the Panda), with room to spare
MAX_EVALS = 4096  # configurations one segment may take before it counts as not certified
SPLIT_MAX = 8  # points one interval gets per round at most


class Checker:
    """Clearances and certified segments of ``entity`` (a robot of hinges and slides) against its
    counted self pairs and the scene's obstacles as they stand in the envs ``envs`` (packed once),
    ``margin`` m apart (the ``safety_margin``).
    ``ignore``: every configuration and segment is free (``ignore_collision``)."""

    def __init__(self, entity, envs: np.ndarray, margin: float = 0.0, ignore: bool = False, carried=None):
        self.entity, self.margin, self.ignore = entity, float(margin), bool(ignore)
        cfg = entity.configuration
        self.dtype = cfg.dtype
        model = entity.collision_model()
        pieces = list(model.link_pieces())
        if carried is not None:  # the carrying link's pieces hold not the body: its spheres decide
            pieces[carried[0]] = []
        # the distances are the spheres' or, near contact, the pieces' (engine.kernels.gjk): the
        # motion bound covers the sphere centres and each piece's vertex farthest from its link's origin
        far = [(l, h.vertices[np.argmax(np.linalg.norm(h.vertices, axis=1))], h.radius)
               for l, link in enumerate(pieces) for h in link]
        links = np.concatenate([model.spheres.link, np.array([l for l, _, _ in far], np.int64)])
        centres = np.concatenate([model.spheres.centers, np.array([v for _, v, _ in far]).reshape(-1, 3)])
        extra = np.concatenate([np.zeros(len(model.spheres.link)), [r for _, _, r in far]])
        if carried is not None:  # (link, centres, radii) of a carried body: engine.plan.carried
            links = np.concatenate([links, np.full(len(carried[2]), carried[0])])
            centres = np.concatenate([centres, carried[1]])
            extra = np.concatenate([extra, np.zeros(len(carried[2]))])
        self.R = lever_arms(entity.tree, links, centres, extra)
        envs = np.unique(np.asarray(envs, np.int64))
        self._self = AvoidTables(1, cfg.dtype, self_pairs=True, world=False)
        self._world = AvoidTables(len(envs), cfg.dtype, self_pairs=False, world=True)
        self._self.update(entity, envs[:1])  # packed once per call: the obstacles' poses stand still meanwhile
        self._world.update(entity, envs)
        if carried is not None:
            tables = augment(model.kernel_tables(cfg.dtype), *carried)
            shapes, _ = world_tables(scene_obstacles(entity.scene, entity), envs[:1], cfg.dtype)
            for t, pairs, shp in ((self._self, tables[2], shapes[:0]), (self._world, tables[2][:0], shapes)):
                t.coll_i, t.coll_f = pack(entity, (tables[0], tables[1], pairs), shp, pieces)
                t.loops = loop_count(t.coll_i)
        self._poses = self._world.shape_pose.copy()  # (len(envs), O, 7): each env's obstacle poses
        self._row = np.full(cfg.n_envs, -1, np.int64)
        self._row[envs] = np.arange(len(envs))
        self.evaluations = 0  # configurations checked so far (a figure for the status)

    def distances(self, q: np.ndarray, envs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(d_self, d_world)`` (M,) m (inf: nothing to check) at configurations ``q (M, n_qs)`` of
        the envs ``envs (M,)`` (repeats allowed; each among the envs the checker was made for)."""
        envs = np.asarray(envs, np.int64)
        if len(q) == 0:
            return np.zeros(0), np.zeros(0)
        pose = self.entity.configuration.fk_poses(np.ascontiguousarray(q, dtype=self.dtype))
        self._world.shape_pose = np.ascontiguousarray(self._poses[self._row[envs]])
        d_self = self._distance(pose, envs, self._self)
        d_world = self._distance(pose, envs, self._world)
        self.evaluations += len(q)
        return d_self, d_world

    def _distance(self, pose: np.ndarray, envs: np.ndarray, tables: AvoidTables) -> np.ndarray:
        """The smallest distance per row ``(M,)`` m (inf: nothing to check) over ``tables``: the
        kernel's search (:func:`engine.collision.checks.search`), or the numpy twins where a
        software Vulkan device cannot run it (:func:`engine.collision.checks.distance`)."""
        found = search(pose, tables)
        return distance(self.entity, pose, envs, tables)[0] if found is None else found[0]

    def clearance(self, q: np.ndarray, envs: np.ndarray) -> np.ndarray:
        """Clearance ``(M,)`` m of configurations ``q (M, n_qs)``: negative means closer than the
        margin (in collision when the margin is 0); inf with ``ignore``."""
        if self.ignore:
            return np.full(len(q), np.inf)
        d_self, d_world = self.distances(q, envs)
        return np.minimum(d_world - self.margin, 0.5 * (d_self - self.margin)) - SLACK

    def certify(self, qa: np.ndarray, qb: np.ndarray, ca: np.ndarray, cb: np.ndarray,
                envs: np.ndarray, max_evals: int = MAX_EVALS) -> np.ndarray:
        """Whether each segment ``qa[i] -> qb[i]`` (M, n_qs), with end clearances ``ca``, ``cb`` (M,),
        is free along its whole length: ``(M,)`` bool. Each round, the gap the end balls of an
        interval leave gets ``k`` evenly spread points (about as many as clearances like its ends'
        would need, 1 to :data:`SPLIT_MAX`), all intervals of the batch in one distance call; a point
        found closer than the margin, or more than ``max_evals`` points, fails the segment."""
        M = len(qa)
        ok = (np.asarray(ca) > 0) & (np.asarray(cb) > 0)
        if self.ignore or M == 0:
            return np.ones(M, bool)
        evals = np.zeros(M, np.int64)
        a, b = np.asarray(qa, float), np.asarray(qb, float)
        ca, cb = np.asarray(ca, float), np.asarray(cb, float)
        seg = np.arange(M)
        while len(seg):
            bound = motion_bound(self.R, b - a)
            keep = (ca + cb <= bound) & ok[seg]
            a, b, ca, cb, seg, bound = a[keep], b[keep], ca[keep], cb[keep], seg[keep], bound[keep]
            if not len(seg):
                break
            gap = bound - ca - cb
            k = np.clip(np.ceil(gap / np.maximum(ca + cb, 1e-12)), 1, SPLIT_MAX).astype(np.int64)
            J, total = len(seg), int(k.sum())
            owner = np.repeat(np.arange(J), k)
            i = np.arange(total) - np.repeat(np.cumsum(k) - k, k)
            t0, t1 = ca / bound, 1.0 - cb / bound
            t = np.clip(t0[owner] + (t1 - t0)[owner] * (i + 0.5) / k[owner], 0.0, 1.0)[:, None]
            m = a[owner] + t * (b - a)[owner]
            cm = self.clearance(m, envs[seg[owner]])
            np.add.at(evals, seg[owner], 1)
            ok[seg[owner[cm <= 0]]] = False
            ok[evals > max_evals] = False
            # every interval's nodes in order: a, its k points, b; the new intervals join neighbours
            size = k + 2
            first = np.cumsum(size) - size
            N = int(size.sum())
            nq, nc, ns = np.empty((N, a.shape[1])), np.empty(N), np.repeat(seg, size)
            nq[first], nc[first] = a, ca
            nq[first + k + 1], nc[first + k + 1] = b, cb
            inner = first[owner] + 1 + i
            nq[inner], nc[inner] = m, cm
            left = np.ones(N, bool)
            left[first + k + 1] = False
            left &= ok[ns]
            lo = np.flatnonzero(left)
            a, b, ca, cb, seg = nq[lo], nq[lo + 1], nc[lo], nc[lo + 1], ns[lo]
        return ok

    def certify_path(self, path: np.ndarray, envs: np.ndarray) -> np.ndarray:
        """Whether every waypoint and every segment between consecutive waypoints of ``path
        (T, M, n_qs)`` is free, per env ``(M,)``."""
        T, M, n = path.shape
        rows = np.tile(np.asarray(envs), T)
        c = self.clearance(path.reshape(T * M, n), rows).reshape(T, M)
        ok = (c > 0).all(axis=0)
        if T > 1:
            seg_ok = self.certify(path[:-1].reshape(-1, n), path[1:].reshape(-1, n), c[:-1].ravel(), c[1:].ravel(),
                                  np.tile(np.asarray(envs), T - 1))
            ok &= seg_ok.reshape(T - 1, M).all(axis=0)
        return ok


__all__ = ["MAX_EVALS", "SLACK", "SPLIT_MAX", "Checker", "motion_bound"]
