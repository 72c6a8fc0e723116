"""The sphere checks against a mesh-level reference: Pinocchio + coal on example-robot-data's Panda
URDF (its collision meshes, the SRDF's pairs removed). The spheres contain the meshes, so a
configuration the spheres call collision-free is collision-free at mesh level, and the sphere
distance is a lower bound of the mesh distance."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from _backend import init_engine
from _coal import pin_coal

import engine as gs
from engine.collision.robot import sample_qpos

N_CONFIGS = 300


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


@pytest.fixture(scope="module")
def panda(f32):
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.build(n_envs=N_CONFIGS)
    return robot


def _link_of(ref, geom, index):
    return ref.model.frames[geom.geometryObjects[index].parentFrame].name


@pytest.mark.parametrize("spheres_per_link", [8, 16])
def test_spheres_are_conservative_against_coal(panda, spheres_per_link):
    panda.collision_model(spheres_per_link=spheres_per_link)
    ref, geom = pin_coal(panda.tree)
    ours = {frozenset(p) for p in panda.collision_pairs()}
    theirs = {frozenset((_link_of(ref, geom, cp.first), _link_of(ref, geom, cp.second))) for cp in geom.collisionPairs}
    assert ours == theirs  # adjacency + the SRDF select the same link pairs as Pinocchio does

    qpos = sample_qpos(panda.tree, N_CONFIGS, seed=3)
    dist = panda.collision_distance(qpos)
    free = ~panda.in_collision(qpos)
    data, gdata = ref.model.createData(), pin.GeometryData(geom)
    mesh_dist, mesh_hit = np.empty(N_CONFIGS), np.zeros(N_CONFIGS, bool)
    for i, q in enumerate(qpos):
        pq = ref.pin_q(q)
        pin.computeDistances(ref.model, data, geom, gdata, pq)
        mesh_dist[i] = min(r.min_distance for r in gdata.distanceResults)
        pin.computeCollisions(ref.model, data, geom, gdata, pq, False)
        mesh_hit[i] = any(r.isCollision() for r in gdata.collisionResults)
    assert free.sum() >= N_CONFIGS // 5, f"only {free.sum()} of {N_CONFIGS} configurations are sphere-free"
    assert not np.any(free & mesh_hit), np.flatnonzero(free & mesh_hit)
    # coal's distance between meshes (float64) and ours between spheres (float32 FK)
    assert np.all(dist <= np.maximum(mesh_dist, 0.0) + 1e-5), np.max(dist - mesh_dist)
    print(f"{spheres_per_link} spheres/link: {free.sum()} of {N_CONFIGS} sphere-free, mesh-free "
          f"{(~mesh_hit).sum()}; mean gap mesh - sphere distance {np.mean(mesh_dist[free] - dist[free]):.4f} m")
