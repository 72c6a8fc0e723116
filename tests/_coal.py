"""Independent collision references for the tests: Pinocchio + coal on the robots' meshes.

Imported the same way everywhere: ``from _coal import coal_distance, coal_shape, pin_coal``
(the benches too: ``bench/_near.py`` puts ``tests/`` on the path).
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import trimesh
from pinref import PinReference

from engine.assets import erd_robots_dir
from engine.collision.world import world_links
from engine.model.srdf import find_srdf
from engine.transforms import quat_to_matrix


def pin_coal(tree):
    """Pinocchios model of ``tree``'s URDF and its collision meshes (coal), the SRDF's pairs removed."""
    ref = PinReference(tree)
    path = str(tree.source)
    geom = pin.buildGeomFromUrdf(ref.model, path, pin.GeometryType.COLLISION,
                                 package_dirs=[str(erd_robots_dir().parent.parent)])
    geom.addAllCollisionPairs()
    pin.removeCollisionPairs(ref.model, geom, str(find_srdf(path)))
    return ref, geom


def counted_mesh_distances(robot, qpos):
    """coal's smallest mesh distance ``(n,)`` and collision ``(n,)`` over the link pairs the
    robot's model counts (Pinocchio's pairs after the SRDF, less any the model does not count),
    at configurations ``qpos (n, n_qs)``."""
    ref, geom = pin_coal(robot.tree)
    link = [ref.model.frames[obj.parentFrame].name for obj in geom.geometryObjects]
    ours = {frozenset(p) for p in robot.collision_pairs()}
    keep = [k for k, cp in enumerate(geom.collisionPairs) if frozenset((link[cp.first], link[cp.second])) in ours]
    assert keep, "no pair in common with Pinocchio's"
    data, gdata = ref.model.createData(), pin.GeometryData(geom)
    dist, hit = np.empty(len(qpos)), np.zeros(len(qpos), bool)
    for i, q in enumerate(qpos):
        pq = ref.pin_q(q)
        pin.computeDistances(ref.model, data, geom, gdata, pq)
        dist[i] = min(gdata.distanceResults[k].min_distance for k in keep)
        pin.computeCollisions(ref.model, data, geom, gdata, pq, False)
        hit[i] = any(gdata.collisionResults[k].isCollision() for k in keep)
    return dist, hit


def assert_conservative(robot, qpos) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check the robot's collision model against coal on the meshes at ``qpos (n, n_qs)``: no
    configuration in mesh collision reads free, and each self distance is a lower bound of the mesh
    distance (1e-5 m for float32 FK against coal's float64). Returns ``(ours, mesh distance, mesh
    hit)``, each ``(n,)`` (m; bool)."""
    dist = np.asarray(robot.collision_distance(qpos, world=False), float)
    mesh_dist, mesh_hit = counted_mesh_distances(robot, qpos)
    free = dist > 0
    assert not np.any(free & mesh_hit), f"mesh collisions read free: {np.flatnonzero(free & mesh_hit)}"
    assert np.all(dist <= np.maximum(mesh_dist, 0.0) + 1e-5), np.max(dist - mesh_dist)
    return dist, mesh_dist, mesh_hit


def coal_shape(morph, world: bool = False):
    """coal's shape of a single-body morph in its body frame. A Plane is the half-space behind it:
    through the body origin, or with ``world`` through the morph's ``pos`` (for a plane placed
    with an identity transform)."""
    if morph.kind == "box":
        return coal.Box(*morph.size)
    if morph.kind == "sphere":
        return coal.Sphere(morph.radius)
    if morph.kind == "cylinder":
        return coal.Cylinder(morph.radius, morph.height)
    if morph.kind == "capsule":
        return coal.Capsule(morph.radius, morph.length)
    offset = float(np.dot(morph.normal, morph.pos)) if world else 0.0
    return coal.Halfspace(np.asarray(morph.normal, float), offset)


def coal_tf(pos, quat):
    return coal.Transform3s(quat_to_matrix(np.asarray(quat, float)), np.asarray(pos, float))


def coal_mesh(path, scale):
    mesh = trimesh.load(path, force="mesh")
    bvh = coal.BVHModelOBBRSS()
    bvh.beginModel(len(mesh.faces), len(mesh.vertices))
    bvh.addVertices(np.asarray(mesh.vertices, float) * np.asarray(scale, float))
    bvh.addTriangles(np.asarray(mesh.faces, np.int64))
    bvh.endModel()
    return bvh


def coal_distance(a, tf_a, b, tf_b) -> float:
    return coal.distance(a, tf_a, b, tf_b, coal.DistanceRequest(), coal.DistanceResult())  # a fresh result each


class MeshJudge:
    """One configuration at mesh level: Pinocchio + coal on a fixed-base robot's collision meshes
    (self pairs as the SRDF leaves them) and its moving links against the obstacle morphs' exact
    shapes (the links rigidly attached to the world are not checked against obstacles, as in the
    engine)."""

    def __init__(self, robot, morphs):
        self.ref, self.geom = pin_coal(robot.tree)
        self.data, self.gdata = self.ref.model.createData(), pin.GeometryData(self.geom)
        keep, names = world_links(robot.tree, fixed_base=True), robot.tree.link_names()
        self.moving = [g for g, obj in enumerate(self.geom.geometryObjects)
                       if keep[names.index(self.ref.model.frames[obj.parentFrame].name)]]
        self.shapes = [(coal_shape(m, world=True), coal_tf(m.pos, m.quat)) for m in morphs]

    def judge(self, qpos) -> tuple[bool, float]:
        """(self collision, the smallest mesh distance to an obstacle (m; <= 0: touching)) at ``qpos``."""
        pq = self.ref.pin_q(np.asarray(qpos, float))
        hit_self = pin.computeCollisions(self.ref.model, self.data, self.geom, self.gdata, pq, True)
        pin.updateGeometryPlacements(self.ref.model, self.data, self.geom, self.gdata)
        best = np.inf
        for g in self.moving:
            obj = self.geom.geometryObjects[g]
            tf = coal.Transform3s(self.gdata.oMg[g].rotation, self.gdata.oMg[g].translation)
            for shape, shape_tf in self.shapes:
                best = min(best, coal_distance(obj.geometry, tf, shape, shape_tf))
        return bool(hit_self), float(best)

    def collides(self, qpos) -> bool:
        hit_self, d = self.judge(qpos)
        return hit_self or d <= 0.0

    def count(self, qpos, which) -> int:
        """How many of ``qpos[which]`` collide at mesh level (self or an obstacle)."""
        return sum(self.collides(q) for q in np.asarray(qpos)[which])


def near_free_configurations(robot, judge: MeshJudge, n: int, seed: int, near: float, beyond: float = 0.0,
                             chunk: int = 256) -> np.ndarray:
    """``(n, n_qs)`` configurations of ``robot`` that ``judge`` finds free at mesh level, with the
    nearest obstacle within ``near`` and farther than ``beyond`` (m): seeded draws, ``chunk`` at a
    time (seeds ``seed``, ``seed + 1``, ...)."""
    from engine.collision.robot import sample_qpos

    kept, k = [], 0
    while len(kept) < n:
        for q in sample_qpos(robot.tree, chunk, seed=seed + k):
            hit_self, d = judge.judge(q)
            if not hit_self and max(beyond, 0.0) < d <= near:
                kept.append(q)
        k += 1
        if k * chunk > 102_400:
            raise RuntimeError(f"only {len(kept)} near-obstacle configurations in {k * chunk} samples")
    return np.array(kept[:n])
