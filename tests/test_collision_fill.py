"""The balls that fill the hollow of a thick link's sphere cover (:mod:`engine.collision.fill`).

The cover's spheres hug the surface, so on a body thicker than they reach their union is a shell
whose inner walls are boundary too, centimetres inside the body. The fill puts balls inscribed in
the body into that hollow. Judged here against the geometry itself (trimesh's exact distances and
the box's own faces), not against the fill's estimates:

* every ball lies inside the body (its centre inside, its radius no more than its centre's
  distance to the surface), so the model reaches no farther out than before;
* the union's inner walls (its boundary inside the body) add at most 2.5-3 mm to the mean
  over-coverage over its whole boundary (the issue's goal: 5 mm in all) for a 1.2 m box and for
  simple_humanoid's 1 m body, where without the balls they add 1-4 cm;
* a thin link gets no ball;
* an obstacle wholly inside a thick body reads colliding, where some read free before.
"""

from __future__ import annotations

import numpy as np
import pytest
from _surfaces import true_surface

from engine.collision.cover import DEFAULT_TOLERANCE, cover_spheres
from engine.collision.fill import fill_hollow
from engine.collision.geometry import collision_geometry
from engine.collision.spheres import link_mesh, sphere_model

# numpy and trimesh, and one world check on the CPU (its kernels are judged on every backend by
# tests/test_collision_obstacles.py and test_collision_world.py)
pytestmark = pytest.mark.cpu_backend_only


def _boundary(centres: np.ndarray, radii: np.ndarray, n: int, rng) -> np.ndarray:
    """About ``n`` points spread per unit area over the boundary of the spheres' union (``(m, 3)``)."""
    pick = rng.choice(len(radii), 8 * n, p=radii ** 2 / (radii ** 2).sum())
    u = rng.normal(size=(len(pick), 3))
    pts = centres[pick] + u / np.linalg.norm(u, axis=1, keepdims=True) * radii[pick, None]
    keep = np.ones(len(pts), bool)
    for s in range(0, len(pts), 2048):
        d = np.linalg.norm(pts[s:s + 2048, None] - centres[None], axis=-1) < radii[None] * (1 - 1e-9)
        d[np.arange(len(d)), pick[s:s + 2048]] = False
        keep[s:s + 2048] = ~d.any(1)
    return pts[keep][:n]


def _walls(mesh, centres: np.ndarray, radii: np.ndarray, n: int = 3000) -> float:
    """What the union's inner walls add to its mean over-coverage (m): the mean, over points spread
    on the union's whole boundary, of each point's distance to ``mesh``'s surface (trimesh, exact)
    where it lies inside the mesh (by winding number) and 0 elsewhere (the outer boundary, which the
    fill leaves as it is and the pieces trim, :mod:`engine.collision.pieces`)."""
    import trimesh

    from engine.collision.winding import winding_inside

    pts = _boundary(centres, radii, n, np.random.default_rng(0))
    return float((trimesh.proximity.closest_point(mesh, pts)[1] * winding_inside(mesh, pts)).mean())


def _inside(mesh, centres: np.ndarray, radii: np.ndarray) -> None:
    """Each ball within ``mesh``: its centre inside (generalized winding number, which holds for a
    link of overlapping closed pieces, where trimesh's ray test counts two crossings as outside)
    and its radius no more than the centre's exact distance to the surface."""
    import trimesh

    from engine.collision.winding import winding_numbers

    assert np.all(np.abs(winding_numbers(mesh, centres)) > 0.99)
    surface = trimesh.proximity.closest_point(mesh, centres)[1]
    assert np.all(radii <= surface * (1 + 1e-9)), (radii - surface).max()


def test_a_big_box_is_filled_and_its_whole_boundary_hugs_the_surface():
    import trimesh

    box = trimesh.creation.box((1.2, 1.0, 0.8))  # the cover reaches ~30 cm in: a thinner box has no hollow
    c, r = cover_spheres(box.vertices, box.faces, 0.01, 600)
    shell = _walls(box, c, r)
    fc, fr = fill_hollow(box, c, r)
    assert 0 < len(fr)
    _inside(box, fc, fr)
    assert np.all(np.abs(fc) + fr[:, None] <= np.array([0.6, 0.5, 0.4]) + 1e-9)  # the box's own faces
    filled = _walls(box, np.concatenate([c, fc]), np.concatenate([r, fr]))
    print(f"1.2 m box: {len(r)} cover spheres, inner walls {shell * 1e3:.1f} mm; "
          f"{len(fr)} balls more, {filled * 1e3:.1f} mm")
    assert shell > 0.01 and filled <= 0.0025, (shell, filled)


def test_simple_humanoids_body_is_filled_by_the_default_model():
    from engine.assets import resolve
    from engine.model import load
    from engine.morphs import URDF

    morph = URDF(file=str(resolve("simple_humanoid").path), fixed=True)
    tree = load(morph)
    geometry = collision_geometry(tree, morph)
    model = sphere_model(tree, geometry, None)
    body = tree.link_names().index("BODY")
    idx = model.of_link(body)
    grown, true = link_mesh(geometry[body]), true_surface(geometry[body])
    c, r = model.centers[idx], model.radii[idx]
    # the balls: the spheres within the grown surface (a cover sphere reaches out of it, by design)
    import trimesh

    inner = r <= trimesh.proximity.closest_point(grown, c)[1] * (1 + 1e-9)
    assert inner.sum() >= 10 and (~inner).any() and np.all(np.flatnonzero(inner) > np.flatnonzero(~inner).max())
    _inside(grown, c[inner], r[inner])  # within the grown cylinder the cover holds (the true one is 2 % smaller)
    # and by the shapes themselves: points of each ball's surface lie in the cylinder (radius 1 m,
    # height 1 m, grown 2 %) or in the box mesh (its own bounds: an axis-aligned box)
    u = np.random.default_rng(1).normal(size=(200, 3))
    pts = (c[inner][:, None] + r[inner][:, None, None] * (u / np.linalg.norm(u, axis=1, keepdims=True))).reshape(-1, 3)
    box = next(g for g in geometry[body] if g.kind == "mesh")
    lo, hi = np.asarray(link_mesh([box], grow=False).bounds)
    in_cylinder = (np.hypot(pts[:, 0], pts[:, 1]) <= 1.02 + 1e-6) & (np.abs(pts[:, 2]) <= 0.51 + 1e-6)
    in_box = np.all((pts >= lo - 1e-6) & (pts <= hi + 1e-6), axis=1)
    assert np.all(in_cylinder | in_box)
    shell, whole = _walls(true, c[~inner], r[~inner]), _walls(true, c, r)
    print(f"simple_humanoid BODY: inner walls, shell {shell * 1e3:.1f} mm, "
          f"filled {whole * 1e3:.1f} mm ({inner.sum()} balls)")
    assert shell > 0.02 and whole <= 0.003, (shell, whole)


@pytest.mark.parametrize("link", ["panda_link3", "panda_hand"])
def test_a_thin_link_gets_no_ball(link):
    from engine.assets import resolve
    from engine.model import load
    from engine.morphs import URDF

    morph = URDF(file=str(resolve("panda_urdf").path), fixed=True)
    tree = load(morph)
    geometry = collision_geometry(tree, morph)
    i = tree.link_names().index(link)
    mesh = link_mesh(geometry[i])
    c, r = cover_spheres(mesh.vertices, mesh.faces, DEFAULT_TOLERANCE, 128)
    assert len(fill_hollow(mesh, c, r)[1]) == 0


def test_a_ball_inside_a_thick_body_reads_colliding():
    """An obstacle wholly inside simple_humanoid's 1 m body (a solid cylinder, as coal and
    Pinocchio take a primitive) collides. Without the balls, 8 of these 64 positions lay in the
    cover's hollow, where a ball touched no sphere and read free: a missed collision."""
    import trimesh
    from _backend import init_engine

    import engine as gs
    from engine.assets import resolve

    init_engine(precision="32")
    n = 64
    scene = gs.Scene()
    # a floating base: a fixed base's links are not checked against the world (engine.collision.world)
    robot = scene.add_entity(gs.morphs.URDF(file=str(resolve("simple_humanoid").path), fixed=False))
    ball = scene.add_entity(gs.morphs.Sphere(radius=0.03, fixed=True))
    scene.build(n_envs=n)
    body = robot.tree.link_names().index("BODY")
    pos = robot.get_links_pos().reshape(n, -1, 3)[:, body]
    quat = robot.get_links_quat().reshape(n, -1, 4)[:, body]
    # the body's cylinder: radius 1 m, height 1 m, at the link's origin; centres >= 10 cm inside it
    rng = np.random.default_rng(0)
    rho, angle = 0.9 * np.sqrt(rng.uniform(0, 1, n)), rng.uniform(0, 2 * np.pi, n)
    local = np.c_[rho * np.cos(angle), rho * np.sin(angle), rng.uniform(-0.4, 0.4, n)]
    from scipy.spatial.transform import Rotation

    world = pos + Rotation.from_quat(quat[:, [1, 2, 3, 0]]).apply(local)
    ball.set_pos(world)
    assert np.all(robot.in_collision(world=True, self_collision=False))
    # the control: these positions in the cover alone (the spheres that reach out of the surface)
    model = robot.collision_model().spheres
    idx = model.of_link(body)
    c, r = model.centers[idx], model.radii[idx]
    grown = link_mesh(collision_geometry(robot.tree, robot.morph)[body])
    shell = r > trimesh.proximity.closest_point(grown, c)[1] * (1 + 1e-9)
    gap = (np.linalg.norm(local[:, None] - c[shell][None], axis=-1) - r[shell][None]).min(1)
    assert np.sum(gap > 0.03) >= 4, np.sum(gap > 0.03)  # these would have read free (8 of the 64)
    scene.destroy()


def test_odd_meshes_get_no_ball_and_no_error():
    """Links with no inside the winding number can be trusted on get no ball, and no error: the
    fit of such a robot goes on as before the fill (the model holds their surface all the same).
    One triangle (qhull has no hull of 3 points), triangles along a line, a box with no top, a
    sphere with a small hole (the winding number reads 0.92 inside it, and a ball there reached
    out through the hole), and a U whose slot walls face the wrong way (the winding number reads
    ~1 in the empty slot, and balls stood wholly outside the body there). A link with a piece of
    zero area keeps its other piece's balls; an inside-out box is filled all the same."""
    import trimesh

    one = trimesh.Trimesh(np.array([[0, 0, 0], [1, 0.5, 0.2], [0.3, 1, 0.7]], float), [[0, 1, 2]], process=False)
    line = trimesh.Trimesh(np.array([[0, 0, 0], [1, 1, 1], [2, 2, 2], [0.5, 0.5, 0.5]], float), [[0, 1, 2], [0, 3, 1]],
                           process=False)
    box = trimesh.creation.box((1.0, 1.0, 1.0))
    open_top = trimesh.Trimesh(box.vertices, box.faces[~np.all(box.vertices[box.faces][:, :, 2] > 0.4, axis=1)],
                               process=False)
    ball = trimesh.creation.icosphere(4, 0.5)
    rim = 0.5 * np.cos(np.radians(30)) * 0.999  # a 30-degree cap cut off the top
    holed = trimesh.Trimesh(ball.vertices, ball.faces[ball.triangles_center[:, 2] < rim], process=False)
    arms = [trimesh.creation.box(size) for size in ((1.2, 0.4, 0.6), (1.2, 0.4, 0.6), (0.4, 1.2, 0.6))]
    for arm, at in zip(arms, [(0, -0.4, 0), (0, 0.4, 0), (-0.4, 0, 0)]):
        arm.apply_translation(at)
    u = trimesh.boolean.union(arms)  # a U: its slot is |y| < 0.2, x > -0.2
    centre = u.triangles_center
    wall = (np.abs(np.abs(centre[:, 1]) - 0.2) < 1e-6) & (centre[:, 0] > -0.2)
    faces = u.faces.copy()
    faces[wall] = faces[wall][:, ::-1]
    flipped = trimesh.Trimesh(u.vertices, faces, process=False)
    shell = (np.array([[0.45, 0.45, 0.45]]), np.array([0.05]))
    for mesh in (one, line, open_top, holed, flipped):
        assert len(fill_hollow(mesh, *shell)[1]) == 0
    dot = trimesh.creation.box((0.1, 0.1, 0.1))
    dot.vertices[:] = 0.0
    c, r = fill_hollow(trimesh.util.concatenate([box, dot]), *shell)
    assert len(r) > 0 and np.all(np.abs(c) + r[:, None] <= 0.5 + 1e-9)
    inside_out = trimesh.Trimesh(box.vertices, box.faces[:, ::-1], process=False)
    c, r = fill_hollow(inside_out, *shell)
    assert len(r) > 0 and np.all(np.abs(c) + r[:, None] <= 0.5 + 1e-9)
