"""Mesh-level judge of planned paths: Pinocchio + coal on the robot's collision meshes.

Independent of the engine's sphere model and of its motion bounds: along each segment between
consecutive waypoints, configurations are checked at mesh level (coal distances of the SRDF's
self pairs and of every moving link against the obstacle shapes) at steps no longer than 1 mm of
any mesh point's motion and 0.005 rad of any joint, and longer only where the measured mesh
clearance proves the skipped stretch free: each geometry's motion per unit of the segment is
bounded from Pinocchio's joint placements and the mesh's vertices (distance to each joint above
it along the chain), so a stretch whose motion bound stays below the clearance cannot collide.
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
from _coal import coal_shape, pin_coal

from engine.collision.world import world_links
from engine.transforms import quat_to_matrix

SAMPLE_M = 1e-3  # m of any mesh point between checks, at most (where clearance proves nothing more)
SAMPLE_RAD = 5e-3  # rad of any joint between checks, at most
EXACT_BELOW = 0.05  # m: bounding balls nearer than this get coal's exact distance, others their own gap


class SegmentJudge:
    def __init__(self, robot, obstacles):
        self.robot = robot
        self.ref, self.geom = pin_coal(robot.tree)
        model = self.ref.model
        self.data, self.gdata = model.createData(), pin.GeometryData(self.geom)
        keep = world_links(robot.tree, fixed_base=True)
        names = robot.tree.link_names()
        objs = self.geom.geometryObjects
        self.moving = [g for g, obj in enumerate(objs) if keep[names.index(model.frames[obj.parentFrame].name)]]
        self.shapes = [(coal_shape(m), coal.Transform3s(quat_to_matrix(m.quat), np.asarray(m.pos, float)))
                       for m in obstacles]
        self.pairs = [(p.first, p.second) for p in self.geom.collisionPairs]
        self.radius = np.array([_radius(obj.geometry) for obj in objs])
        self.shape_balls = [(np.asarray(m.pos, float), _ball(m)) for m in obstacles]
        self.lever = np.zeros((len(objs), model.nv))  # m per rad (1 per m for a slide) of each joint
        for g, obj in enumerate(objs):
            radius = _radius(obj.geometry)
            reach = radius + float(np.linalg.norm(obj.placement.translation))
            j = obj.parentJoint
            while j > 0:
                jm = model.joints[j]
                prismatic = "Prismatic" in jm.shortname()
                self.lever[g, jm.idx_v] = 1.0 if prismatic else reach
                reach += float(np.linalg.norm(model.jointPlacements[j].translation))
                j = model.parents[j]
        self.evaluations = 0

    def clearances(self, qpos):
        """(per-geometry world distance (G,), per-pair self distance (P,)) m at ``qpos``: lower bounds,
        exact (coal) wherever two shapes' bounding balls come within :data:`EXACT_BELOW` m."""
        pq = self.ref.pin_q(np.asarray(qpos, float))
        pin.updateGeometryPlacements(self.ref.model, self.data, self.geom, self.gdata, pq)
        objs = self.geom.geometryObjects
        centre = np.array([self.gdata.oMg[g].translation for g in range(len(objs))])
        d_self = np.empty(len(self.pairs))
        for k, (a, b) in enumerate(self.pairs):
            d_self[k] = np.linalg.norm(centre[a] - centre[b]) - self.radius[a] - self.radius[b]
            if d_self[k] < EXACT_BELOW:
                d_self[k] = pin.computeDistance(self.geom, self.gdata, k).min_distance
        d_world = np.full(len(objs), np.inf)
        for g in self.moving:
            tf = None
            for (shape, s_tf), (s_pos, s_rad) in zip(self.shapes, self.shape_balls):
                d = np.linalg.norm(centre[g] - s_pos) - self.radius[g] - s_rad
                if d < EXACT_BELOW:
                    tf = tf or coal.Transform3s(self.gdata.oMg[g].rotation, self.gdata.oMg[g].translation)
                    d = coal.distance(objs[g].geometry, tf, shape, s_tf, coal.DistanceRequest(), coal.DistanceResult())
                d_world[g] = min(d_world[g], d)
        self.evaluations += 1
        return d_world, d_self

    def segment_free(self, qa, qb) -> bool:
        """Whether every configuration of ``qa -> qb`` is free at mesh level (checked as above)."""
        qa, qb = np.asarray(qa, float), np.asarray(qb, float)
        dv = pin.difference(self.ref.model, self.ref.pin_q(qa), self.ref.pin_q(qb))
        unit = self.lever @ np.abs(dv)  # each geometry's motion bound over the whole segment, m
        pa, pb = np.array([p[0] for p in self.pairs], int), np.array([p[1] for p in self.pairs], int)
        step_min = min(SAMPLE_RAD / max(np.abs(dv).max(), 1e-12), SAMPLE_M / max(unit.max(), 1e-12))
        t = 0.0
        while True:
            d_world, d_self = self.clearances(qa + t * (qb - qa))
            if d_world.min() <= 0 or (len(d_self) and d_self.min() <= 0):
                return False
            if t >= 1.0:
                return True
            with np.errstate(divide="ignore"):
                reach = min((d_world / unit).min(), (d_self / (unit[pa] + unit[pb])).min() if len(d_self) else np.inf)
            t = min(1.0, t + max(reach, step_min))

    def path_free(self, path) -> bool:
        """Every segment of waypoints ``path (T, n_qs)`` free (the waypoints too)."""
        return all(self.segment_free(path[k], path[k + 1]) for k in range(len(path) - 1))


def _radius(shape) -> float:
    """Distance (m) from a coal shape's origin to its farthest point, at most: its local box's corner."""
    shape.computeLocalAABB()
    box = shape.aabb_local
    lo, hi = np.asarray(box.min_), np.asarray(box.max_)
    return float(np.linalg.norm(np.maximum(np.abs(lo), np.abs(hi))))


def _ball(morph) -> float:
    """Radius (m) of a ball about a single-body morph's position holding it (inf for a plane)."""
    if morph.kind == "box":
        return float(np.linalg.norm(morph.size)) / 2
    if morph.kind == "sphere":
        return float(morph.radius)
    if morph.kind == "cylinder":
        return float(np.hypot(morph.radius, morph.height / 2))
    return np.inf
