"""IK with avoidance among obstacles that move between calls, one pose per env, a primitive or a
mesh: the whole path (``set_pos`` -> :func:`engine.collision.world.world_tables` -> the solver's
COLLIDE task), judged at mesh level by coal, with nothing compiled for the move."""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin
import pytest
import trimesh
from _backend import init_engine
from _coal import coal_distance, coal_mesh, coal_shape, coal_tf, pin_coal

import engine as gs
from engine.runtime import launch

N_ENVS = 12
MARGIN = 0.01  # m
TARGET = dict(pos=[0.45, 0.1, 0.45], quat=[0.0, 1.0, 0.0, 0.0])  # the hand, pointing down


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


@pytest.fixture(scope="module")
def post_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("meshes") / "post.stl"
    trimesh.creation.box(extents=(0.08, 0.08, 0.3)).export(path)
    return path


def _count_compiles(monkeypatch) -> list:
    """Every kernel compiled from now on: FastKernel's first launch of a signature, and the
    per-robot solvers' builds."""
    compiled = []
    prepare, get = launch.FastKernel._prepare, launch.CompiledCache.get

    def counted_prepare(self, args):
        compiled.append(self._primal.func.__name__)
        return prepare(self, args)

    def counted_get(self, key, build):
        return get(self, key, lambda: compiled.append(key) or build())

    monkeypatch.setattr(launch.FastKernel, "_prepare", counted_prepare)
    monkeypatch.setattr(launch.CompiledCache, "get", counted_get)
    return compiled


@pytest.mark.parametrize("kind", ["cylinder", "mesh"])
def test_an_obstacle_moved_onto_each_envs_elbow_is_avoided(kind, post_file, monkeypatch):
    scene = gs.Scene(show_FPS=False)
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    far = (3.0, 3.0, 0.15)  # out of reach until it is moved
    morph = gs.morphs.Cylinder(radius=0.04, height=0.3, pos=far, fixed=True) if kind == "cylinder" else \
        gs.morphs.Mesh(file=post_file, pos=far, fixed=True)
    post = scene.add_entity(morph)
    scene.build(n_envs=N_ENVS)
    hand, elbow = panda.get_link("panda_hand"), panda.get_link("panda_link4")

    def solve(seed):
        return panda.inverse_kinematics(link=hand, **TARGET, avoid_collisions=True, collision_margin=MARGIN,
                                        return_info=True, seed=seed, kernel="generic")

    first = solve(0)
    assert first.success.all()
    panda.set_qpos(first.qpos)
    rng = np.random.default_rng(3)
    at_elbow = panda.get_links_pos()[:, elbow.idx_local]
    quat = np.tile([1.0, 0.0, 0.0, 0.0], (N_ENVS, 1))
    post.set_pos(at_elbow + rng.uniform(-0.02, 0.02, (N_ENVS, 3)))
    for seed in (1, 2):  # the avoiding solve (which the answers in the post need) compiled in both launch
        panda.set_qpos(first.qpos)  # modes (engine.runtime.threads) before counting
        solve(seed)
    panda.set_qpos(first.qpos)
    pos = at_elbow + rng.uniform(-0.02, 0.02, (N_ENVS, 3))  # another pose per env
    post.set_pos(pos)
    assert np.all(panda.collision_distance(self_collision=False) < 0)  # every answer is now in the post
    compiled = _count_compiles(monkeypatch)

    second = solve(3)  # from the colliding answers: the elbow has to swing out of the post
    assert compiled == []  # the moved obstacle reached the solver as data
    assert second.success.mean() >= 0.9, second.success
    ok = second.success
    assert np.all(second.min_distance[ok] >= MARGIN - 1e-5)
    np.testing.assert_allclose(panda.collision_distance(second.qpos)[ok], second.min_distance[ok], atol=1e-5)

    ref, geom = pin_coal(panda.tree)
    data, gdata = ref.model.createData(), pin.GeometryData(geom)
    shape = coal_shape(morph) if kind == "cylinder" else coal_mesh(post_file, 1.0)
    for e in np.flatnonzero(ok):  # each env judged against its own pose of the post
        pin.framesForwardKinematics(ref.model, data, ref.pin_q(second.qpos[e]))
        pin.updateGeometryPlacements(ref.model, data, geom, gdata)
        gap = min(coal_distance(obj.geometry, coal.Transform3s(gdata.oMg[g].rotation, gdata.oMg[g].translation), shape,
                            coal_tf(pos[e], quat[e])) for g, obj in enumerate(geom.geometryObjects))
        assert gap > 0.0, (e, gap)
    scene.destroy()
