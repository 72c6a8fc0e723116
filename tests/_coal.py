"""Independent collision references for the tests: Pinocchio + coal on the robots' meshes.

Imported the same way everywhere: ``from _coal import coal_distance, coal_shape, pin_coal``.
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import trimesh
from pinref import PinReference

from engine.assets import erd_robots_dir
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
