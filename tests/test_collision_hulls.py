"""The checks' exact tier: each link's convex hull (:mod:`engine.collision.hulls`) and the GJK lower
bound on it (:mod:`engine.collision.gjk` in numpy, :mod:`engine.kernels.gjk` in the kernels),
judged by coal on the robots' collision meshes as Pinocchio loads them from the URDF:

* every hull holds its link's collision meshes (so a hull distance is a lower bound of the mesh's);
* GJK's bound never exceeds coal's distance, and on convex meshes (the Panda's) comes within
  its tolerance of it, against every primitive and between two links;
* the checks (``collision_distance``) near contact: still a lower bound, and within a tenth of a
  millimetre of coal's distance where the spheres alone give away millimetres;
* ``collision_model(hulls=False)`` gives the spheres alone, and a bad ``hulls`` is refused by name.
"""

from __future__ import annotations

import sys
from pathlib import Path

import coal
import numpy as np
import pinocchio as pin
import pytest
import trimesh
from _backend import active, init_engine
from _coal import coal_mesh, pin_coal

import engine as gs
from engine.assets import erd_robots_dir
from engine.collision import gjk
from engine.collision.geometry import collision_geometry
from engine.collision.hulls import MAX_VERTICES, Hull, link_hull
from engine.errors import InvalidValueError
from engine.model import load
from engine.obstacle_kinds import BOX, CAPSULE, CYLINDER, PLANE, SPHERE
from engine.transforms import quat_to_matrix

sys.path.append(str(Path(__file__).resolve().parent.parent / "bench"))
from _near import NEAR, clutter_scene, near_configurations  # noqa: E402

ROBOTS = ("panda", "baxter", "ur5", "xarm7")


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


def _rng_quat(rng):
    q = rng.normal(size=4)
    return q / np.linalg.norm(q)


def _tf(pos, quat):
    return coal.Transform3s(quat_to_matrix(np.asarray(quat, float)), np.asarray(pos, float))


@pytest.mark.cpu_backend_only  # no kernel runs here
@pytest.mark.parametrize("name", ROBOTS)
def test_each_hull_holds_its_links_collision_meshes(name):
    """The mesh files as Pinocchio places them on their links (its own URDF reading), every vertex
    inside the hull of that link (its facets' planes, to 1e-9 m)."""
    from scipy.spatial import ConvexHull

    tree = load(gs.morphs.URDF(file=f"erd:{name}", fixed=True))
    geometry = collision_geometry(tree, gs.morphs.URDF(file=f"erd:{name}", fixed=True))
    names = tree.link_names()
    ref, geom = pin_coal(tree)
    checked = 0
    for obj in geom.geometryObjects:
        link = names.index(ref.model.frames[obj.parentFrame].name)
        hull = link_hull(geometry[link])
        if hull is None:
            continue
        frame = ref.model.frames[obj.parentFrame].placement  # the link's frame in its parent joint's
        local = _surface_points(obj)
        placement = obj.placement  # the geometry in the parent joint's frame
        points = local @ placement.rotation.T + placement.translation
        points = (points - frame.translation) @ frame.rotation  # in the link's frame
        planes = ConvexHull(hull.vertices).equations
        out = (points @ planes[:, :3].T + planes[:, 3]).max(axis=1) > 1e-9
        if out.any():  # only a reduced hull may leave points out, each within its radius
            assert hull.radius > 0, (obj.name, int(out.sum()))
            _, dist, _ = trimesh.proximity.closest_point(trimesh.convex.convex_hull(hull.vertices), points[out])
            assert dist.max() <= hull.radius + 1e-9, (obj.name, dist.max(), hull.radius)
        assert len(hull.vertices) <= MAX_VERTICES and hull.radius <= 0.005, (obj.name, hull.radius)
        checked += 1
    assert checked >= 5, checked


def _surface_points(obj) -> np.ndarray:
    """Points of a Pinocchio geometry object's surface in its own frame: a mesh's vertices, a box's
    corners, points spread over a sphere's, a cylinder's or a capsule's surface."""
    g = obj.geometry
    if isinstance(g, coal.Box):
        h = np.asarray(g.halfSide, float)
        return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h
    if isinstance(g, (coal.Sphere, coal.Cylinder, coal.Capsule)):
        rng = np.random.default_rng(0)
        u = rng.normal(size=(4000, 3))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        if isinstance(g, coal.Sphere):
            return u * g.radius
        half = g.halfLength
        t = rng.uniform(-half, half, 4000)
        ring = u[:, :2] / np.linalg.norm(u[:, :2], axis=1, keepdims=True) * g.radius
        side = np.column_stack([ring, t])
        if isinstance(g, coal.Cylinder):
            r = g.radius * np.sqrt(rng.uniform(0, 1, 4000))
            cap = np.column_stack([r * u[:, 0] / np.linalg.norm(u[:, :2], axis=1),
                                   r * u[:, 1] / np.linalg.norm(u[:, :2], axis=1), np.sign(t) * half])
            return np.concatenate([side, cap])
        return np.concatenate([side, u * g.radius + np.where(u[:, 2:] > 0, half, -half) * [0, 0, 1]])
    mesh = trimesh.load(obj.meshPath, force="mesh")
    return np.asarray(mesh.vertices, float) * np.asarray(obj.meshScale, float)


@pytest.mark.cpu_backend_only
def test_gjk_bound_is_below_coal_and_tight_on_convex_meshes():
    """The Panda's collision meshes are convex (their hulls are the meshes), so the bound must come
    within GJK's tolerance of coal's exact distance, and never above it, for every kind of
    obstacle and between two links."""
    folder = erd_robots_dir() / "panda_description" / "meshes" / "collision"
    files = [folder / "link4.stl", folder / "hand.stl", folder / "link6.stl"]
    rng = np.random.default_rng(0)
    shapes = {BOX: lambda s: coal.Box(*(2 * s)), SPHERE: lambda s: coal.Sphere(s[0]),
              CYLINDER: lambda s: coal.Cylinder(s[0], 2 * s[1]), CAPSULE: lambda s: coal.Capsule(s[0], 2 * s[1]),
              PLANE: None, -1: None}
    apart = 0
    for trial in range(240):
        f = files[trial % 3]
        hull = Hull(np.asarray(trimesh.load(f, force="mesh").convex_hull.vertices, float))
        mesh = coal_mesh(str(f), [1.0, 1.0, 1.0])
        pose = np.concatenate([rng.normal(size=3) * 0.1, _rng_quat(rng)])
        other = np.concatenate([pose[:3] + rng.normal(size=3) * 0.15, _rng_quat(rng)])
        code = list(shapes)[trial % len(shapes)]
        size = rng.uniform(0.02, 0.1, 3)
        if code == -1:  # another link
            g = files[(trial + 1) % 3]
            ours = gjk.pair_bound(hull, pose, Hull(np.asarray(trimesh.load(g, force="mesh").convex_hull.vertices)),
                                  other)
            ref = coal.distance(mesh, _tf(pose[:3], pose[3:]), coal_mesh(str(g), [1.0, 1.0, 1.0]),
                                _tf(other[:3], other[3:]), coal.DistanceRequest(), coal.DistanceResult())
        elif code == PLANE:
            normal = rng.normal(size=3)
            normal /= np.linalg.norm(normal)
            ours = gjk.shape_bound(hull, pose, PLANE, normal, np.concatenate([other[:3], [1.0, 0, 0, 0]]))
            ref = coal.distance(mesh, _tf(pose[:3], pose[3:]), coal.Halfspace(normal, float(normal @ other[:3])),
                                coal.Transform3s(), coal.DistanceRequest(), coal.DistanceResult())
        else:
            ours = gjk.shape_bound(hull, pose, code, size, other)
            ref = coal.distance(mesh, _tf(pose[:3], pose[3:]), shapes[code](size), _tf(other[:3], other[3:]),
                                coal.DistanceRequest(), coal.DistanceResult())
        if ref <= 0:
            assert ours == -np.inf  # in contact the bound says nothing
            continue
        apart += 1
        assert ours <= ref + 1e-12, (trial, code, ours, ref)
        if ours > -np.inf:
            assert ref - ours <= gjk.TOLERANCE + gjk.SAFETY + 1e-9, (trial, code, ours, ref)
        else:
            assert ref <= gjk.SAFETY + gjk.TOLERANCE  # only a hair's breadth apart reads as contact
    assert apart >= 100


def test_checks_are_within_a_tenth_of_a_millimetre_near_contact():
    """The Panda among the clutter scene's obstacles, at configurations coal finds mesh-free and
    within 4 cm of an obstacle: the distance to the obstacles is at most coal's, and within 0.1 mm
    of it for nearly all of them; the spheres alone stand millimetres off."""
    n = 64 if active() == "cpu" else 16
    scene, panda, judge = clutter_scene(n)
    qs = near_configurations(panda, judge, n, seed=3)
    mesh = np.array([judge.judge(q)[1] for q in qs])
    assert (mesh > 0).all() and (mesh <= NEAR).all()
    ours = np.asarray(panda.collision_distance(qs, self_collision=False), float)
    panda.collision_model(hulls=False)
    spheres = np.asarray(panda.collision_distance(qs, self_collision=False), float)
    panda.collision_model(hulls=True)
    scene.destroy()
    assert np.all(ours <= mesh + 2e-6), np.max(ours - mesh)  # float32 FK against coal's float64
    assert np.all(ours >= spheres - 1e-7)  # the larger of the two bounds
    gap = mesh - ours
    assert (gap <= 1e-4).mean() >= 0.9 and np.median(gap) <= 5e-5, np.percentile(gap, [50, 90, 100])
    assert np.mean(mesh - spheres) >= 1e-3  # what the spheres alone give away
    print(f"gap to coal: hulls median {np.median(gap) * 1e3:.3f} mm, max {gap.max() * 1e3:.2f} mm; "
          f"spheres alone mean {np.mean(mesh - spheres) * 1e3:.2f} mm")


def test_hulls_can_be_left_out_and_are_checked_by_name():
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.build()
    model = panda.collision_model()
    assert model.hulls and sum(h is not None for h in model.link_hulls()) >= 9
    with pytest.raises(InvalidValueError, match="hulls: expected True or False, got 'yes'"):
        panda.collision_model(hulls="yes")
    assert panda.collision_model() is model  # unchanged by the refusal
    bare = panda.collision_model(hulls=False)
    assert not bare.hulls and all(h is None for h in bare.link_hulls())
    assert panda.collision_model(hulls=True).hulls
    scene.destroy()


def test_pin_geometry_frames_are_what_the_hull_test_assumes():
    """The hull test reads Pinocchio's geometry placements in the parent joint's frame: check that
    reading on the Panda against the link poses Pinocchio's own FK gives."""
    tree = load(gs.morphs.URDF(file="erd:panda", fixed=True))
    ref, geom = pin_coal(tree)
    data = ref.model.createData()
    gdata = pin.GeometryData(geom)
    q = pin.neutral(ref.model)
    pin.forwardKinematics(ref.model, data, q)
    pin.updateFramePlacements(ref.model, data)
    pin.updateGeometryPlacements(ref.model, data, geom, gdata)
    for g, obj in enumerate(geom.geometryObjects):
        frame = ref.model.frames[obj.parentFrame]
        link_world = data.oMf[obj.parentFrame]
        via_joint = data.oMi[frame.parentJoint] * obj.placement
        np.testing.assert_allclose(gdata.oMg[g].translation, via_joint.translation, atol=1e-12)
        local = link_world.inverse() * via_joint
        expect = frame.placement.inverse() * obj.placement
        np.testing.assert_allclose(local.translation, expect.translation, atol=1e-12)
