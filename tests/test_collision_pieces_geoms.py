"""Pieces of links made of several geometries, and of cylinder primitives
(engine/collision/pieces.py): a loose link of several geometries is cut along them, each cut as a
link of its own; a cylinder's piece is a prism whose faces touch the true cylinder.

Before, a link that mixed a mesh with a primitive (simple_humanoid's body: a 1 m cylinder and a
box mesh) was cut into surface patches across both, and a cylinder's piece was the hull of its
24-sided tessellation grown by 2 % (2 cm on a 1 m cylinder): its model reached 27 mm beyond the
geometry on average (bench/collision_model.py)."""

from __future__ import annotations

import numpy as np
import pytest

import engine as gs
from engine.collision import pieces
from engine.collision.cover import cover_spheres
from engine.collision.hulls import Hull
from engine.collision.spheres import PRIMITIVE_GROWTH, link_mesh
from engine.model.tree import Visual


def _true_cylinder_points(radius: float, length: float, n: int, rng) -> np.ndarray:
    """``(n, 3)`` points on the true surface of a z-axis cylinder (side and caps; its own frame)."""
    angle = rng.uniform(0, 2 * np.pi, n)
    side = np.c_[radius * np.cos(angle), radius * np.sin(angle), rng.uniform(-0.5, 0.5, n) * length]
    rho = radius * np.sqrt(rng.uniform(0, 1, n))
    caps = np.c_[rho * np.cos(angle), rho * np.sin(angle), np.sign(rng.uniform(-1, 1, n)) * 0.5 * length]
    return np.concatenate([side, caps])


def _quat_matrix(q: np.ndarray) -> np.ndarray:
    """The rotation matrix of ``q`` (w, x, y, z) by scipy (a reference apart from the engine's own)."""
    from scipy.spatial.transform import Rotation

    w, x, y, z = np.asarray(q, float)
    return Rotation.from_quat([x, y, z, w]).as_matrix()


@pytest.mark.cpu_backend_only
@pytest.mark.parametrize("radius,length", [(1.0, 1.0), (0.3, 0.2), (0.04, 0.3)])
def test_a_cylinder_piece_holds_the_true_cylinder_and_hugs_it(radius, length):
    """A cylinder over 0.2 m in radius (where the tessellation's 2 % growth is over ``LOOSE``) gets
    the prism touching it; a smaller one keeps its tessellation's hull (what the sphere fit reads).
    Both hold the true cylinder."""
    quat, pos = np.array([0.9, 0.3, -0.2, 0.25]), np.array([0.1, -0.2, 0.3])
    geom = Visual(kind="cylinder", size=np.array([radius, length]), pos=pos, quat=quat)
    (piece,) = pieces.link_pieces([geom])
    rotation = _quat_matrix(quat)
    rng = np.random.default_rng(3)
    surface = _true_cylinder_points(radius, length, 4000, rng) @ rotation.T + pos
    assert pieces.outside([piece], surface).max() <= 1e-9 * max(1.0, radius)  # the whole cylinder inside
    local = (piece.vertices - pos) @ rotation  # back in the cylinder's frame
    standoff = np.hypot(local[:, 0], local[:, 1]).max() - radius
    if radius * (PRIMITIVE_GROWTH - 1) > pieces.LOOSE:
        bound = radius * (1 / np.cos(np.pi / pieces.CYLINDER_SECTIONS) - 1)  # the corners: 0.86 % at 24 sides
        assert standoff <= bound + 1e-12 and bound <= 0.009 * radius, standoff  # not 2 % (2 cm at 1 m)
        assert np.abs(local[:, 2]).max() <= 0.5 * length + 1e-12  # no growth along the axis
    else:
        assert standoff <= (PRIMITIVE_GROWTH - 1) * radius + 1e-12, standoff
    assert len(piece.vertices) <= pieces.PIECE_VERTICES and piece.radius == 0.0


def _true_capsule_points(radius: float, length: float, n: int, rng) -> np.ndarray:
    """``(n, 3)`` points on the true surface of a z-axis capsule (its own frame): its side and caps."""
    direction = rng.normal(size=(n, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    caps = radius * direction + np.c_[np.zeros((n, 2)), np.sign(direction[:, 2]) * 0.5 * length]
    angle = rng.uniform(0, 2 * np.pi, n)
    side = np.c_[radius * np.cos(angle), radius * np.sin(angle), rng.uniform(-0.5, 0.5, n) * length]
    return np.concatenate([caps, side])


@pytest.mark.cpu_backend_only
@pytest.mark.parametrize("radius,length", [(0.06, 0.001), (0.5, 0.02), (0.05, 0.2)])
def test_a_capsule_is_held_by_its_piece_and_its_spheres(radius, length):
    """Short, fat capsules: their tessellation's facets lie 0.977 r from the caps' centres, so the
    2 % growth the other primitives get left 0.42 % of r out of the grown hull (0.2 mm at r = 6 cm,
    2 mm at 0.5 m) and of the spheres fitted to it. Both now hold the true capsule."""
    geom = Visual(kind="capsule", size=np.array([radius, length]), pos=np.zeros(3), quat=np.array([1.0, 0, 0, 0]))
    surface = _true_capsule_points(radius, length, 6000, np.random.default_rng(5))
    (piece,) = pieces.link_pieces([geom])
    assert pieces.outside([piece], surface).max() <= 1e-9
    grown = link_mesh([geom])
    centres, radii = cover_spheres(grown.vertices, grown.faces, tolerance=0.05 * radius, max_spheres=128)
    gap = (np.linalg.norm(surface[:, None] - centres[None], axis=-1) - radii[None]).min(axis=1)
    assert gap.max() <= 1e-9, gap.max()


def _robot(name: str):
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.URDF(file=f"erd:{name}", fixed=True))
    scene.build()
    return scene, robot


@pytest.mark.cpu_backend_only
def test_a_link_of_a_cylinder_and_a_mesh_is_cut_along_them(backend):
    """simple_humanoid's body: a 1 m cylinder and a 1 m box mesh, overlapping. Its pieces are
    the two, each holding its own geometry (the true cylinder's surface, the mesh's vertices)."""
    scene, robot = _robot("simple_humanoid")
    model = robot.collision_model()
    (link,) = [i for i, g in enumerate(model.geometry) if g]
    geoms, cut = model.geometry[link], model.link_pieces()[link]
    assert sorted(g.kind for g in geoms) == ["cylinder", "mesh"]
    assert len(cut) == 2, [len(p.vertices) for p in cut]
    cylinder = next(g for g in geoms if g.kind == "cylinder")
    rotation = _quat_matrix(np.asarray(cylinder.quat, float))
    surface = _true_cylinder_points(*cylinder.size, 3000, np.random.default_rng(0)) @ rotation.T + cylinder.pos
    box = next(g for g in geoms if g.kind == "mesh")
    box_rotation = _quat_matrix(np.asarray(box.quat, float))
    corners = np.asarray(box.mesh.vertices, float) @ box_rotation.T + box.pos  # box.mesh: scaled by its size
    for points in (surface, corners):
        assert pieces.outside(cut, points).min(axis=1).max() <= 1e-9
    prism = min(cut, key=lambda p: -len(p.vertices))  # the cylinder's (48 corners; the box's: 8)
    local = (prism.vertices - cylinder.pos) @ rotation
    standoff = np.hypot(local[:, 0], local[:, 1]).max() - cylinder.size[0]
    assert standoff <= cylinder.size[0] * (1 / np.cos(np.pi / pieces.CYLINDER_SECTIONS) - 1) + 1e-9  # not 2 %
    scene.destroy()


@pytest.mark.cpu_backend_only
@pytest.mark.parametrize("name", ["so101", "go2"])
def test_links_of_several_meshes_are_cut_along_them(name, backend):
    """A loose link of several meshes gets at least one piece per mesh, and its pieces (each grown
    by its radius) hold every vertex of every mesh; each piece's corners lie within one mesh's
    hull: none bridges two meshes."""
    scene, robot = _robot(name)
    model = robot.collision_model()
    several = [i for i, g in enumerate(model.geometry) if len(g) > 1]
    assert several, "the robot has no link of several geometries"
    cut_along = 0
    for i in several:
        geoms, cut = model.geometry[i], model.link_pieces()[i]
        meshes = [link_mesh([g], grow=True) for g in geoms]
        vertices = np.unique(np.concatenate([np.asarray(m.vertices, float) for m in meshes]), axis=0)  # STL: repeats
        assert pieces.outside(cut, vertices).min(axis=1).max() <= 1e-7
        if len(cut) == 1:
            continue  # one hull tight enough: not cut
        cut_along += 1
        assert len(cut) >= len(geoms)
        hulls = [Hull(np.asarray(m.convex_hull.vertices, float)) for m in meshes]
        corners = np.concatenate([p.vertices for p in cut])
        owner = np.repeat(np.arange(len(cut)), [len(p.vertices) for p in cut])
        far = pieces.outside(hulls, corners)  # (corners, geometries): how far out of each geometry's hull
        worst = np.array([far[owner == j].max(axis=0) for j in range(len(cut))])  # (pieces, geometries)
        assert worst.min(axis=1).max() <= 1e-6, worst.min(axis=1)  # each piece within one geometry's hull
    assert cut_along, f"no link of {name} was cut"
    scene.destroy()
