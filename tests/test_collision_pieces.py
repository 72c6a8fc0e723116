"""The checks' exact tier cut into pieces (engine/collision/pieces.py): a link whose one convex hull
stands off its mesh is cut into convex pieces, and the kernels bound a pair by the least over its
piece pairs. Judged by Pinocchio + coal on the meshes (no mesh collision ever reads free, the
distance never above coal's), the kernel against its numpy twin on every test backend, and the
pieces' disk cache."""

from __future__ import annotations

import numpy as np
import pytest
from _backend import active, init_engine
from _coal import assert_conservative
from _surfaces import true_surface

import engine as gs
from engine.collision import checks, pieces
from engine.collision.robot import sample_qpos
from engine.kernels import avoid
from engine.kernels.tables import LINK_C, link_row_c

# catalog name: random configurations (hyq and borinot: non-convex links, cut)
ROBOTS = {"panda": 100, "baxter": 40, "hyq": 100, "borinot": 100, "go2": 60}  # go2: calves of two meshes
TWIN_TOL = 1e-4  # m: float32 GJK against float64, each within TOLERANCE where it converged


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


def _robot(name: str, n: int):
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.URDF(file=f"erd:{name}", fixed=True))
    scene.build(n_envs=n)
    return scene, robot


@pytest.mark.cpu_backend_only
@pytest.mark.parametrize("name", list(ROBOTS))
def test_pieces_are_conservative_against_coal(name):
    n = ROBOTS[name]
    scene, robot = _robot(name, n)
    model = robot.collision_model()
    cut = [len(p) for p in model.link_pieces()]
    if name in ("hyq", "borinot"):
        assert max(cut) > 1, cut  # some link is loose, and cut
    qpos = sample_qpos(robot.tree, n, seed=11)
    dist, mesh_dist, mesh_hit = assert_conservative(robot, qpos)
    free = dist > 0
    both = free & ~mesh_hit
    print(f"{name}: pieces per link {cut}; free {free.mean():.0%} (mesh {np.mean(~mesh_hit):.0%}); "
          f"mean gap {np.mean(mesh_dist[both] - dist[both]) * 1e3:.2f} mm")
    scene.destroy()


@pytest.mark.cpu_backend_only
@pytest.mark.parametrize("name", ["hyq", "borinot", "go2", "simple_humanoid"])
def test_pieces_hold_the_link_geometry(name):
    """Every vertex of each link's collision geometry (its meshes, and its curved primitives'
    true surface, finely tessellated) lies in one of its pieces, grown by the piece's radius."""
    scene, robot = _robot(name, 1)
    model = robot.collision_model()
    for geoms, link in zip(model.geometry, model.link_pieces()):
        if not link:
            continue
        vertices = np.asarray(true_surface(geoms).vertices, float)
        assert pieces.outside(link, vertices).min(axis=1).max() <= 1e-7
    scene.destroy()


@pytest.mark.cpu_backend_only
def test_kernel_matches_numpy_on_hyq():
    """The whole of hyq's self check, kernel against numpy, in contact too: the kernel's search of a
    pair is cut at TOLERANCE at the least, so that a pair its spheres put deeper than the least
    distance so far is still proven apart where numpy proves it (before, the kernel read such
    pairs up to 5.9 cm deeper than numpy)."""
    n = 192
    scene, robot = _robot("hyq", n)
    model = robot.collision_model()
    qpos = sample_qpos(robot.tree, n, seed=3)
    pose = robot.configuration.fk_poses(np.ascontiguousarray(qpos, dtype=robot.configuration.dtype))
    d_kernel = np.asarray(robot.collision_distance(qpos, world=False), float)
    d_numpy, _ = model.distance_numpy(pose)
    assert (d_kernel < 0).sum() > n // 10 and (d_kernel > 0).sum() > n // 10
    np.testing.assert_allclose(d_kernel, d_numpy, atol=TWIN_TOL)
    scene.destroy()


def _pair_tables(robot, links: list[str], dtype):
    """Tables of ``robot``'s model holding the pairs among ``links`` only (a few cut links: within
    a software Vulkan device's loop limit)."""
    model = robot.collision_model()
    names = robot.tree.link_names()
    idx = [names.index(n) for n in links]
    spheres, bounds, pairs = model.kernel_tables(dtype)
    keep = [r for r in pairs if r[0] in idx and r[1] in idx]
    pairs = np.array(keep, np.int32).reshape(-1, 6)
    coll_i, coll_f = checks.pack(robot, (spheres, bounds, pairs), np.zeros((0, 4), dtype), model.link_pieces())
    return coll_i, coll_f, pairs


def test_kernel_matches_numpy_on_every_backend():
    """hyq's trunk, two hips and two lower legs (the trunk cut in 64 pieces, the hips in 32), the
    kernel on the active backend against the numpy twin over the pairs among them."""
    n = 128
    scene, robot = _robot("hyq", n)
    model = robot.collision_model()
    dtype = robot.configuration.dtype
    links = ["trunk", "lf_hipassembly", "lf_lowerleg", "rf_hipassembly", "rf_lowerleg"]
    coll_i, coll_f, pairs = _pair_tables(robot, links, dtype)
    P = len(pairs)
    names = robot.tree.link_names()
    cut = {n: int(np.subtract(*coll_i[link_row_c(P, names.index(n)), [LINK_C.p1, LINK_C.p0]])) for n in links}
    assert P >= 4 and cut["trunk"] > 1 and cut["lf_hipassembly"] > 1, (P, cut)
    qpos = sample_qpos(robot.tree, n, seed=4)
    pose = robot.configuration.fk_poses(np.ascontiguousarray(qpos, dtype=dtype))
    dist, which = np.empty(n, dtype), np.empty((n, 3), np.int32)
    avoid.answer_distance(np.ascontiguousarray(pose), coll_i, coll_f, np.zeros((n, 1, 7), dtype), dist, which, False)
    best = np.full(n, np.inf)
    centres = model.world_centers(pose.astype(float))
    for a, b, *_ in pairs.tolist():
        d = model._pair_distance(centres, a, b)
        best = np.minimum(best, model._hull_refined(d, pose.astype(float), best, a, b))
    print(f"{active()}: pairs {P}, pieces {cut}, worst-case loops {checks.loop_count(coll_i)}; "
          f"free {np.mean(best > 0):.0%}")
    assert 0.5 < np.mean(best > 0) < 1
    np.testing.assert_allclose(dist.astype(float), best, atol=TWIN_TOL)
    scene.destroy()


@pytest.mark.cpu_backend_only
def test_pieces_are_cached(tmp_path, monkeypatch):
    """The first model of a robot outside the shipped fits cuts its pieces and writes them to the
    cache; a second process's (here: a fresh model with the cutting disabled) reads them back, the
    same to the bit."""
    from engine.collision import fit_store

    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(fit_store, "SHIPPED", tmp_path / "shipped")  # as for a robot the catalog lacks
    scene, robot = _robot("panda", 1)
    first = robot.collision_model().link_pieces()
    files = list((tmp_path / "collision").glob("pieces_*.npz"))
    assert len(files) == 1
    assert max(len(p) for p in first) > 1  # the fingers' boxes: one piece each
    scene.destroy()

    def refuse(*_):
        raise AssertionError("pieces cut again despite the cache")

    monkeypatch.setattr(pieces, "link_pieces", refuse)
    scene, robot = _robot("panda", 1)
    second = robot.collision_model().link_pieces()
    assert [len(p) for p in second] == [len(p) for p in first]
    for a, b in zip([p for link in first for p in link], [p for link in second for p in link]):
        np.testing.assert_array_equal(a.vertices, b.vertices)
        assert a.radius == b.radius
    scene.destroy()
