"""World obstacles in the collision checks: the scene's fixed Box / Sphere / Cylinder / Plane
entities, exact shapes against the robot's spheres; checked analytically and against coal (the
Panda's collision meshes against the same shapes)."""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import pytest
from _backend import init_engine
from _coal import coal_shape, coal_tf, pin_coal
from _twins import assert_like_twins, three_ways

import engine as gs
from engine.collision.gjk import TOLERANCE
from engine.collision.robot import sample_qpos
from engine.collision.world import scene_obstacles, signed_distance, world_links
from engine.runtime import state as runtime_state

N_CONFIGS = 200


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


def test_signed_distances():
    pose = np.array([[1.0, 0, 0, 1, 0, 0, 0]])
    pts = np.array([[[1.0, 0, 0], [3.0, 0, 0], [1.0, 0, 2.0], [1.0, 2.0, 2.5]]])
    np.testing.assert_allclose(signed_distance("box", np.array([0.5, 0.5, 1.0]), pose, pts),
                               [[-0.5, 1.5, 1.0, np.hypot(1.5, 1.5)]])
    np.testing.assert_allclose(signed_distance("sphere", np.array([0.5]), pose, pts)[0, :2], [-0.5, 1.5])
    np.testing.assert_allclose(signed_distance("cylinder", np.array([0.5, 1.0]), pose, pts),
                               [[-0.5, 1.5, 1.0, np.hypot(1.5, 1.5)]])
    np.testing.assert_allclose(signed_distance("plane", np.array([0, 0, 1.0]), pose, pts), [[0, 0, 2, 2.5]])
    turned = np.array([[0.0, 0, 0, np.cos(np.pi / 4), np.sin(np.pi / 4), 0, 0]])  # +90 deg about x: local z -> -y
    np.testing.assert_allclose(signed_distance("cylinder", np.array([0.1, 1.0]), turned, np.array([[[0, 0.9, 0.0]]])),
                               [[-0.1]], atol=1e-12)


def test_free_ball_among_obstacles(tmp_path, monkeypatch):
    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path))
    scene = gs.Scene()
    ball = scene.add_entity(gs.morphs.Sphere(radius=0.1))
    scene.add_entity(gs.morphs.Plane(pos=(0, 0, -1.0)))
    scene.add_entity(gs.morphs.Box(pos=(2.0, 0, 0), size=(1.0, 1.0, 1.0), fixed=True))
    scene.add_entity(gs.morphs.Cylinder(pos=(0, 2.0, 0), radius=0.2, height=1.0, fixed=True))
    scene.add_entity(gs.morphs.Box(pos=(0, -2.0, 0), size=(1.0, 1.0, 1.0)))  # free: not an obstacle
    scene.build(n_envs=4)
    assert [o.name for o in scene_obstacles(scene, ball)] == ["plane#1", "box#2", "cylinder#3"]
    r = ball.collision_model().spheres.radii[0]
    assert r == pytest.approx(0.1)  # a sphere primitive is its own model
    q = np.tile([0, 0, 0, 1.0, 0, 0, 0], (4, 1))
    q[1, :3] = (1.3, 0, 0)  # 0.2 from the box's face
    q[2, :3] = (0, 1.5, 0.2)  # 0.3 from the cylinder's side
    q[3, :3] = (0, -1.0, -0.95)  # into the plane (the free box is no obstacle)
    d, what = ball.collision_distance(q, return_pair=True)
    np.testing.assert_allclose(d, [1.0 - r, 0.2 - r, 0.3 - r, 0.05 - r], atol=1e-5)
    assert [w[1] for w in what] == ["plane#1", "box#2", "cylinder#3", "plane#1"]
    np.testing.assert_array_equal(ball.in_collision(q), [False, False, False, True])
    assert np.isinf(ball.collision_distance(q, world=False)).all()  # one link: no self pair
    ball.set_qpos(q)
    np.testing.assert_allclose(ball.collision_distance(), d)


@pytest.fixture(scope="module")
def cluttered(f32):
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    shapes = [gs.morphs.Plane(),
              gs.morphs.Box(pos=(0.5, 0.0, 0.2), size=(0.3, 0.6, 0.4), fixed=True),
              gs.morphs.Sphere(pos=(0.0, 0.45, 0.6), radius=0.12, fixed=True),
              gs.morphs.Cylinder(pos=(-0.4, -0.3, 0.5), radius=0.08, height=1.0, euler=(30, 0, 0), fixed=True)]
    for shape in shapes:
        scene.add_entity(shape)
    scene.build(n_envs=N_CONFIGS)
    return panda, shapes


def test_world_distance_is_a_lower_bound_of_coal(cluttered):

    panda, shapes = cluttered
    ref, geom = pin_coal(panda.tree)
    keep = world_links(panda.tree, fixed_base=True)
    names = panda.tree.link_names()
    assert not keep[names.index("panda_link0")] and keep[names.index("panda_link1")]
    qpos = sample_qpos(panda.tree, N_CONFIGS, seed=5)
    world_dist = panda.collision_distance(qpos, self_collision=False)
    data, gdata = ref.model.createData(), pin.GeometryData(geom)
    request, mesh = coal.DistanceRequest(), np.empty(N_CONFIGS)
    objects = [(coal_shape(m, world=True), coal_tf(m.pos, m.quat)) for m in shapes]
    for i, q in enumerate(qpos):
        pin.framesForwardKinematics(ref.model, data, ref.pin_q(q))
        pin.updateGeometryPlacements(ref.model, data, geom, gdata)
        best = np.inf
        for g, obj in enumerate(geom.geometryObjects):
            if not keep[names.index(ref.model.frames[obj.parentFrame].name)]:
                continue
            tf = coal.Transform3s(gdata.oMg[g].rotation, gdata.oMg[g].translation)
            for shape, shape_tf in objects:
                result = coal.DistanceResult()
                best = min(best, coal.distance(obj.geometry, tf, shape, shape_tf, request, result))
        mesh[i] = best
    assert np.all(world_dist <= np.maximum(mesh, 0.0) + 1e-5), np.max(world_dist - mesh)
    free = ~panda.in_collision(qpos, self_collision=False)
    assert free.sum() > N_CONFIGS // 5 and np.all(mesh[free] > 0)
    assert (~free).sum() > N_CONFIGS // 5  # the clutter is in the way often enough to test something
    print(f"{free.sum()} of {N_CONFIGS} clear of the obstacles by the spheres; by the meshes {np.sum(mesh > 0)}")


def test_world_kernel_matches_numpy(cluttered):
    from engine.collision.world import world_distance_numpy

    panda, _ = cluttered
    model = panda.collision_model()
    qpos = sample_qpos(panda.tree, N_CONFIGS, seed=9)
    pose = panda.configuration.fk_poses(qpos)
    envs = np.arange(N_CONFIGS)
    d_kernel, w_kernel = panda.collision_distance(qpos, envs_idx=envs, return_pair=True, self_collision=False)
    d_numpy, w_numpy = world_distance_numpy(model, panda, pose, envs)
    np.testing.assert_allclose(d_kernel, d_numpy, atol=TOLERANCE)  # near contact: GJK bounds, each within it
    agree = np.mean([a == b for a, b in zip(w_kernel, w_numpy)])
    assert agree > 0.95  # ties (float32 against float64) may pick another sphere of the same link


def test_beyond_the_loop_limit_numpy_gives_the_kernels_distances(cluttered, monkeypatch):
    """Where a software Vulkan device would stop the distance kernel's loops, collision_distance
    and IK's check of its answers take the numpy twins: the same distances and pairs."""
    from engine.collision import world as collision_world
    from engine.runtime import dispatch

    panda, _ = cluttered
    qpos = sample_qpos(panda.tree, N_CONFIGS, seed=21)
    hand = panda.get_link("panda_hand")
    pos, quat = (np.asarray(x)[:, hand.idx_local] for x in panda.forward_kinematics(qpos))
    calls = [lambda: panda.collision_distance(qpos, return_pair=True),
             lambda: panda.collision_distance(qpos, return_pair=True, world=False),
             lambda: panda.collision_distance(qpos, return_pair=True, self_collision=False)]

    def solve():
        r = panda.inverse_kinematics(hand, pos, quat, seed=0, max_samples=2, return_info=True, avoid_collisions=True)
        return r.min_distance, r.min_pair

    kernel = [f() for f in calls] + [solve()]
    monkeypatch.setattr(runtime_state.STATE, "software", True)
    monkeypatch.setattr(dispatch, "SOFTWARE_LOOP_LIMIT", 0)
    used = []
    twin = collision_world.world_distance_numpy
    monkeypatch.setattr(collision_world, "world_distance_numpy", lambda *a: used.append(1) or twin(*a))
    numpy = [f() for f in calls] + [solve()]
    # the whole-scene and world-only checks; the plain answers, those solved again avoiding, and
    # (where some still failed) those polished plainly
    assert len(used) in (4, 5)
    for (dk, wk), (dn, wn) in zip(kernel, numpy):
        assert_like_twins(dk, wk, dn, wn)

def test_the_search_in_launches_under_the_loop_limit(cluttered, monkeypatch):
    """A software Vulkan device (lavapipe) stops a launch's loops past ~65k iterations: there the
    checks' search runs in launches under the limit (engine.collision.launches). The Panda with its
    pieces and four obstacles (~0.6M iterations at worst in one launch) takes a dozen or more, each
    under the limit, every self pair and every link checked against the obstacles in exactly one.
    Their least is the distance and the pair of the numpy twins (as the test above judges them),
    no twin is called, and on the CPU it is the one launch's, to the bit."""
    from engine.collision import checks, launches
    from engine.kernels.tables import AVOID_HEAD, LINK_C, PAIR_I, link_row_c, pair_row
    from engine.runtime import dispatch

    panda, _ = cluttered
    limit = dispatch.SOFTWARE_LOOP_LIMIT
    tables = checks.AvoidTables(N_CONFIGS, panda.configuration.dtype)
    tables.update(panda, np.arange(N_CONFIGS))
    parts = launches.split(tables.coll_i, limit)
    assert tables.loops > 10 * limit and parts is not None and len(parts) >= 12, (tables.loops, len(parts or []))
    P, L = (int(tables.coll_i[0, c]) for c in (AVOID_HEAD.n_pairs, AVOID_HEAD.n_links))
    pairs, checked = [], []
    for part in parts:
        assert checks.loop_count(part) <= limit
        p = int(part[0, AVOID_HEAD.n_pairs])
        pairs += [tuple(r) for r in part[pair_row(0):pair_row(p), [PAIR_I.link_a, PAIR_I.link_b]].tolist()]
        checked += np.flatnonzero(part[link_row_c(p, 0):link_row_c(p, L), LINK_C.world]).tolist()
    whole = tables.coll_i
    assert pairs == [tuple(r) for r in whole[pair_row(0):pair_row(P), [PAIR_I.link_a, PAIR_I.link_b]].tolist()]
    assert checked == np.flatnonzero(whole[link_row_c(P, 0):link_row_c(P, L), LINK_C.world]).tolist()

    qpos = sample_qpos(panda.tree, N_CONFIGS, seed=23)
    calls = [lambda: panda.collision_distance(qpos, return_pair=True),
             lambda: panda.collision_distance(qpos, return_pair=True, world=False),
             lambda: panda.collision_distance(qpos, return_pair=True, self_collision=False)]
    for _, (ds, ws), (dn, wn) in three_ways(calls, monkeypatch):
        assert_like_twins(ds, ws, dn, wn)
