"""The capsule obstacle (engine.morphs.Capsule, a row of engine.obstacle_kinds), judged by coal.

* Distances: a free ball among capsules posed per env; the kernel's distances
  (``collision_distance``) and the numpy twin (``collision_world.signed_distance``) equal coal's
  exact capsule-sphere distance env by env, and are negative where coal finds contact.
* IK with avoidance: a capsule moved onto each env's elbow between two solves; the answers clear
  it at mesh level (the Panda's collision meshes against coal's capsule), nothing compiled again.
* Scene files: ``kind: capsule`` with ``size: [radius, length]`` builds the same body; a wrong
  size is an error naming it.
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import pytest
from _backend import init_engine
from _coal import coal_distance, coal_shape, coal_tf, pin_coal
from test_collision_obstacles import _random_quats
from test_ik_obstacles import MARGIN, TARGET, _count_compiles

import engine as gs
from engine.collision.world import scene_obstacles, signed_distance
from engine.errors import InvalidValueError

N_ENVS = 24
BALL = 0.05


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


def test_capsule_distances_equal_coals_per_env():
    caps = [gs.morphs.Capsule(pos=(0.5, 0.0, 0.3), radius=0.08, length=0.4, fixed=True),
            gs.morphs.Capsule(pos=(-0.4, 0.3, 0.2), radius=0.15, length=0.1, euler=(40, 10, 0), fixed=True)]
    scene = gs.Scene(show_FPS=False)
    ball = scene.add_entity(gs.morphs.Sphere(radius=BALL))
    bodies = [scene.add_entity(m) for m in caps]
    scene.build(n_envs=N_ENVS)
    obstacles = scene_obstacles(scene, ball)
    assert [o.kind for o in obstacles] == ["capsule", "capsule"]
    np.testing.assert_allclose(obstacles[0].size, [0.08, 0.2])  # radius, half length

    rng = np.random.default_rng(0)
    pos = np.array([m.pos for m in caps]) + rng.uniform(-0.2, 0.2, (N_ENVS, 2, 3))
    quat = np.stack([_random_quats(rng, N_ENVS) for _ in caps], axis=1)
    for k, body in enumerate(bodies):
        body.set_pos(pos[:, k])
        body.set_quat(quat[:, k])
    centers = rng.uniform(-0.7, 0.7, (N_ENVS, 3)) * [1, 1, 0.5] + [0, 0, 0.3]
    centers[:4] = pos[:4, 0]  # four balls inside the first capsule
    q = np.zeros((N_ENVS, 7))
    q[:, :3], q[:, 3] = centers, 1.0

    shapes = [coal_shape(m) for m in caps]
    ball_shape = coal.Sphere(BALL)
    ref = np.array([min(coal_distance(ball_shape, coal_tf(centers[e], [1, 0, 0, 0]), s, coal_tf(pos[e, o], quat[e, o]))
                        for o, s in enumerate(shapes)) for e in range(N_ENVS)])
    twin = np.min([signed_distance("capsule", o.size, np.concatenate([pos[:, k], quat[:, k]], axis=1),
                                   centers[:, None]).ravel() - BALL for k, o in enumerate(obstacles)], axis=0)
    ours = ball.collision_distance(q)
    clear = ref > 1e-4
    assert 4 <= (~clear).sum() and clear.sum() > N_ENVS // 2
    np.testing.assert_allclose(ours[clear], ref[clear], atol=2e-5)
    np.testing.assert_allclose(twin[clear], ref[clear], atol=1e-9)
    assert np.all(ours[~clear] < 0) and np.all(twin[~clear] < 0)  # coal says contact: both inside
    np.testing.assert_allclose(ours, twin, atol=2e-5)
    scene.destroy()


def test_ik_avoids_a_capsule_moved_onto_each_elbow(monkeypatch):
    scene = gs.Scene(show_FPS=False)
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    morph = gs.morphs.Capsule(radius=0.04, length=0.25, pos=(3.0, 3.0, 0.15), fixed=True)
    post = scene.add_entity(morph)
    n = 12
    scene.build(n_envs=n)
    hand, elbow = panda.get_link("panda_hand"), panda.get_link("panda_link4")

    def solve(seed):
        return panda.inverse_kinematics(link=hand, **TARGET, avoid_collisions=True, collision_margin=MARGIN,
                                        return_info=True, seed=seed, kernel="generic")

    first = solve(0)
    assert first.success.all()
    panda.set_qpos(first.qpos)
    rng = np.random.default_rng(3)
    at_elbow = panda.get_links_pos()[:, elbow.idx_local]
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
    post.set_pos(at_elbow + rng.uniform(-0.02, 0.02, (n, 3)))
    for seed in (1, 2):  # the avoiding solve compiled in both launch modes before counting
        panda.set_qpos(first.qpos)
        solve(seed)
    panda.set_qpos(first.qpos)
    pos = at_elbow + rng.uniform(-0.02, 0.02, (n, 3))  # another pose per env
    post.set_pos(pos)
    assert np.all(panda.collision_distance(self_collision=False) < 0)  # every answer is now in the capsule
    compiled = _count_compiles(monkeypatch)

    second = solve(3)
    assert compiled == []  # the capsule reached the solver as data
    assert second.success.mean() >= 0.9, second.success
    ok = second.success
    assert np.all(second.min_distance[ok] >= MARGIN - 1e-5)

    ref, geom = pin_coal(panda.tree)
    data, gdata = ref.model.createData(), pin.GeometryData(geom)
    capsule = coal_shape(morph)
    for e in np.flatnonzero(ok):  # each env judged against its own pose of the capsule, at mesh level
        pin.framesForwardKinematics(ref.model, data, ref.pin_q(second.qpos[e]))
        pin.updateGeometryPlacements(ref.model, data, geom, gdata)
        gap = min(coal_distance(obj.geometry, coal.Transform3s(gdata.oMg[g].rotation, gdata.oMg[g].translation),
                                capsule, coal_tf(pos[e], quat[e])) for g, obj in enumerate(geom.geometryObjects))
        assert gap > 0.0, (e, gap)
    scene.destroy()


def test_scene_file_capsules_and_bad_sizes():
    from engine.scenefile import loads
    from engine.scenefile.obstacles import obstacle_morph

    text = """
robot: panda_urdf
targets:
  - link: panda_hand
    pos: [0.5, 0.0, 0.4]
obstacles:
  - kind: capsule
    size: [0.05, 0.3]
    pos: [0.4, 0.0, 0.2]
"""
    spec = loads(text)
    morph = obstacle_morph(spec, spec.obstacles[0])
    assert isinstance(morph, gs.morphs.Capsule) and morph.fixed
    assert (morph.radius, morph.length) == (0.05, 0.3)
    np.testing.assert_allclose(morph.pos, [0.4, 0.0, 0.2])
    with pytest.raises(ValueError, match="size"):
        loads(text.replace("[0.05, 0.3]", "[0.05]"))
    with pytest.raises(InvalidValueError, match="radius"):
        gs.morphs.Capsule(radius=-1.0, length=0.2)
    with pytest.raises(InvalidValueError, match="length"):
        gs.morphs.Capsule(radius=0.1, length=0.0)
