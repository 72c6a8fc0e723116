"""The default collision model, the cover fit (:mod:`engine.collision.cover`), judged by Pinocchio +
coal on example-robot-data's collision meshes (the SRDF's pairs removed), for the Panda, Baxter
and two more catalog robots:

* conservative: no configuration that collides at mesh level reads free;
* its distance is a lower bound of coal's mesh distance;
* tighter than the cluster model it replaced (8 spheres per link): the mean gap between mesh and
  model distances is less than half the old one's;
* every point of every collision mesh lies inside the model (surface samples and vertices), and
  the cache is keyed by the fit's version and tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest
from _backend import init_engine
from _coal import assert_conservative

import engine as gs
from engine.collision import spheres as spheres_mod
from engine.collision.cover import cover_spheres
from engine.collision.geometry import collision_geometry
from engine.collision.robot import sample_qpos
from engine.collision.spheres import fit_spheres, link_mesh, sphere_model
from engine.errors import InvalidValueError
from engine.model import load

ROBOTS = {"panda": 120, "baxter": 60, "ur5": 120, "xarm7": 120}  # catalog name: random configurations


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


@pytest.mark.parametrize("name", list(ROBOTS))
def test_cover_model_is_conservative_and_tighter_than_the_old(name):
    n = ROBOTS[name]
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.URDF(file=f"erd:{name}", fixed=True))
    scene.build(n_envs=n)
    model = robot.collision_model()
    assert model.spheres_per_link is None and model.tolerance == pytest.approx(0.004)
    qpos = sample_qpos(robot.tree, n, seed=5)
    dist, mesh_dist, mesh_hit = assert_conservative(robot, qpos)
    free = dist > 0
    robot.collision_model(spheres_per_link=8, hulls=False)  # the model before the cover fit and the hulls
    old = np.asarray(robot.collision_distance(qpos, world=False), float)
    both = free & (old > 0)
    assert both.sum() >= n // 5, f"only {both.sum()} configurations free by both models"
    gap_new, gap_old = np.mean(mesh_dist[both] - dist[both]), np.mean(mesh_dist[both] - old[both])
    assert gap_new < 0.5 * gap_old, (gap_new, gap_old)
    assert free.sum() >= (old > 0).sum()
    print(f"{name}: {model.spheres.n_spheres} spheres; free {free.mean():.0%} (old {np.mean(old > 0):.0%}, "
          f"mesh {np.mean(~mesh_hit):.0%}); mean gap {gap_new * 1e3:.1f} mm (old {gap_old * 1e3:.1f} mm)")
    scene.destroy()


def test_cover_holds_every_point_of_the_panda_meshes():
    morph = gs.morphs.URDF(file="erd:panda", fixed=True)
    tree = load(morph)
    geometry = collision_geometry(tree, morph)
    model = sphere_model(tree, geometry, None)
    assert model.n_spheres > 11 * 8  # finer than the old model
    for i, geoms in enumerate(geometry):
        mesh = link_mesh(geoms, grow=False)
        if mesh is None:
            continue
        pts = np.concatenate([mesh.sample(2000, seed=i), mesh.vertices])
        idx = model.of_link(i)
        gap = (np.linalg.norm(pts[:, None] - model.centers[idx][None], axis=-1) - model.radii[idx][None]).min(1)
        assert gap.max() <= 1e-9, (tree.links[i].name, gap.max())


def _box(flip: bool, open_top: bool):
    import trimesh

    mesh = trimesh.creation.box((0.1, 0.2, 0.3))
    faces = mesh.faces[:, ::-1] if flip else mesh.faces
    if open_top:  # drop the two faces of the top (z = +0.15)
        faces = faces[~np.all(mesh.vertices[faces][:, :, 2] > 0.1, axis=1)]
    return mesh.vertices, faces


@pytest.mark.parametrize("flip, open_top", [(False, False), (True, False), (False, True)])
def test_cover_fit_holds_inside_out_and_open_meshes(flip, open_top):
    v, f = _box(flip, open_top)
    c, r = cover_spheres(v, f, 0.01, 400)  # flat faces take many spheres: ~150 here
    rng = np.random.default_rng(0)
    tri = v[f]
    w = rng.dirichlet(np.ones(3), 20000)
    k = rng.integers(len(tri), size=20000)
    pts = np.einsum("nk,nkd->nd", w, tri[k])
    gap = (np.linalg.norm(pts[:, None] - c[None], axis=-1) - r[None]).min(1)
    assert gap.max() <= 0.0
    # tight: the spheres stand out of the box's faces by about the tolerance (1 cm); the cluster
    # fit's balls around patches of faces, as many of them, by twice that
    out = (np.abs(c) + r[:, None] - np.array([0.05, 0.1, 0.15])).max(1)
    c_old, r_old = fit_spheres(v, f, len(r))
    out_old = (np.abs(c_old) + r_old[:, None] - np.array([0.05, 0.1, 0.15])).max(1)
    assert np.mean(out) < 0.015 and np.mean(out) < 0.6 * np.mean(out_old), (np.mean(out), np.mean(out_old))


def test_tolerance_and_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path))
    urdf = tmp_path / "arm.urdf"
    urdf.write_text("""<robot name="arm"><link name="base"><collision><geometry><box size="0.1 0.1 0.05"/></geometry>
      </collision></link><link name="arm"><collision><origin xyz="0 0 0.15"/><geometry><box size="0.05 0.06 0.3"/>
      </geometry></collision></link><joint name="j" type="revolute"><parent link="base"/><child link="arm"/>
      <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>""")
    morph = gs.morphs.URDF(file=str(urdf), fixed=True)
    tree = load(morph)
    geometry = collision_geometry(tree, morph)
    first = sphere_model(tree, geometry, None, tolerance=0.01)
    files = sorted((tmp_path / "collision").glob("spheres_*.npz"))
    assert len(files) == 1
    again = sphere_model(tree, geometry, None, tolerance=0.01)
    np.testing.assert_array_equal(first.radii, again.radii)
    monkeypatch.setattr(spheres_mod, "FIT_VERSION", spheres_mod.FIT_VERSION + 1)  # a newer fit: refitted
    sphere_model(tree, geometry, None, tolerance=0.01)
    assert len(list((tmp_path / "collision").glob("spheres_*.npz"))) == 2
    finer = sphere_model(tree, geometry, None, tolerance=0.004)
    assert finer.n_spheres > first.n_spheres
    for bad in (0.0, -1.0, float("nan"), 1.0, "4 mm", True):
        with pytest.raises(InvalidValueError, match="tolerance"):
            sphere_model(tree, geometry, None, tolerance=bad)
    scene = gs.Scene()
    robot = scene.add_entity(morph)
    scene.build()
    with pytest.raises(InvalidValueError, match="spheres_per_link, tolerance"):
        robot.collision_model(spheres_per_link=8, tolerance=0.01)
    assert robot.collision_model(tolerance=0.01).tolerance == 0.01
    assert robot.collision_model(spheres_per_link=4).tolerance is None
    assert robot.collision_model(tolerance=0.01).spheres_per_link is None
    scene.destroy()


def _standing_out(centres: np.ndarray, radii: np.ndarray, mesh, rng, n: int = 1500) -> np.ndarray:
    """How far (m) points spread over the outer boundary of the spheres' union lie outside ``mesh``
    (0 inside it): each point's distance to the nearest of dense surface samples of each closed
    piece, the side told by that sample's face normal (inside any piece is inside)."""
    import trimesh
    from scipy.spatial import cKDTree

    pick = rng.choice(len(radii), n, p=radii ** 2 / (radii ** 2).sum())
    u = rng.normal(size=(n, 3))
    pts = centres[pick] + u / np.linalg.norm(u, axis=1, keepdims=True) * radii[pick, None]
    covered = np.linalg.norm(pts[:, None] - centres[None], axis=-1) < radii[None] * (1 - 1e-9)
    covered[np.arange(n), pick] = False
    pts = pts[~covered.any(1)]
    pieces = mesh.split(only_watertight=False) if 1 < mesh.body_count <= 400 else [mesh]  # a soup: whole
    inside, dist = np.zeros(len(pts), bool), np.full(len(pts), np.inf)
    for piece in pieces:
        samples, face = trimesh.sample.sample_surface(piece, max(200, int(20000 * piece.area / mesh.area)), seed=1)
        d, j = cKDTree(samples).query(pts)
        normal = piece.face_normals[face[j]] * (1.0 if piece.volume >= 0 else -1.0)
        inside |= ((pts - samples[j]) * normal).sum(1) < 0
        dist = np.minimum(dist, d)
    return np.where(inside, 0.0, dist)


# robot: (mean, most) the model's outer boundary may stand out of the links' collision geometry, m.
# The meshes of example-robot-data are covered within a few mm; the project's MJCF robots are built
# of overlapping capsules, cylinders and boxes, whose links the cover fits more loosely (~1-2 cm,
# docs/collision.md), but a sphere on the wrong side of a surface (10 cm out of the MJCF Panda's
# hand before the fit took such links piece by piece) still fails. UR5's and Baxter's meshes are
# triangle soups (hundreds of bodies a link), for which this side test has no reliable inside
LIMITS = {"erd:panda": (0.004, 0.015), "panda": (0.02, 0.06), "dual_arm": (0.02, 0.06)}


@pytest.mark.cpu_backend_only  # numpy and trimesh only: no kernel runs
@pytest.mark.parametrize("robot", list(LIMITS))
def test_no_sphere_stands_far_out_of_its_link(robot):
    """Tight everywhere, not only on average: how far the model's outer boundary stands out of
    every link's collision geometry, on average and at most (:data:`LIMITS`)."""
    from engine.assets import resolve

    entry = resolve(robot)
    morph = gs.morphs.URDF(file=str(entry.path), fixed=True) if entry.format == "urdf" else \
        gs.morphs.MJCF(file=str(entry.path))
    tree = load(morph)
    geometry = collision_geometry(tree, morph)
    model = sphere_model(tree, geometry, None)
    rng = np.random.default_rng(0)
    out = []
    for i, geoms in enumerate(geometry):
        mesh, idx = link_mesh(geoms, grow=False), model.of_link(i)
        if mesh is not None and len(idx):
            out.append(_standing_out(model.centers[idx], model.radii[idx], mesh, rng))
    d = np.concatenate(out)
    print(f"{robot}: boundary outside the meshes {np.mean(d > 0):.0%}, by {d[d > 0].mean() * 1e3:.1f} mm on "
          f"average, {d.max() * 1e3:.1f} mm at most")
    mean, most = LIMITS[robot]
    assert d[d > 0].mean() <= mean and d.max() <= most, (d[d > 0].mean(), d.max())
