"""The checks' exact search in launches under a software Vulkan device's loop limit
(engine.collision.launches), for a robot one pair of which is alone far over it: UR5, whose
forearm against its base (64 x 32 pieces) is ~1.6M loop iterations at worst. That pair runs in
launches of some of its pieces each; every piece pair is in exactly one, each launch is under
the limit, and the least over them is the one launch's distance and pair on the CPU, to the bit,
and the numpy twins' on every backend."""

from __future__ import annotations

import numpy as np
import pytest
from _backend import init_engine
from _twins import assert_like_twins, three_ways

import engine as gs
from engine.collision import checks, launches
from engine.collision import world as collision_world
from engine.collision.robot import sample_qpos
from engine.kernels.tables import AVOID_HEAD, LINK_C, PAIR_I, link_row_c, pair_row
from engine.runtime import dispatch
from engine.runtime import state as runtime_state

N = 48


@pytest.fixture(scope="module")
def ur5(backend):
    init_engine(precision="32")
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.URDF(file="erd:ur5", fixed=True))
    scene.add_entity(gs.morphs.Box(pos=(0.35, 0.1, 0.25), size=(0.2, 0.3, 0.3), fixed=True))
    scene.build(n_envs=N)
    yield robot
    scene.destroy()


def _piece_pairs(part: np.ndarray) -> set:
    """(pair's links, piece a, piece b) of every self pair's piece pairs in one launch's ``coll_i``,
    and (link, piece, -1) of every link's pieces checked against the obstacles."""
    P, L = int(part[0, AVOID_HEAD.n_pairs]), int(part[0, AVOID_HEAD.n_links])
    links = part[link_row_c(P, 0):link_row_c(P, L)]
    out = set()
    for a, b in part[pair_row(0):pair_row(P), [PAIR_I.link_a, PAIR_I.link_b]].tolist():
        out |= {(a, b, i, j) for i in range(*links[a, [LINK_C.p0, LINK_C.p1]])
                for j in range(*links[b, [LINK_C.p0, LINK_C.p1]])}
    for l in np.flatnonzero(links[:, LINK_C.world]).tolist():
        out |= {(l, -1, i, -1) for i in range(*links[l, [LINK_C.p0, LINK_C.p1]])}
    return out


def test_a_pair_over_the_limit_runs_in_launches_of_its_pieces(ur5, monkeypatch):
    limit = dispatch.SOFTWARE_LOOP_LIMIT
    tables = checks.AvoidTables(N, ur5.configuration.dtype)
    tables.update(ur5, np.arange(N))
    per_pair, _, base = launches.item_loops(tables.coll_i)
    assert per_pair.max() > 20 * limit, per_pair.max()  # the case: one pair alone far over the limit
    parts = launches.split(tables.coll_i, limit)
    assert parts is not None and len(parts) > 40
    seen = []
    for part in parts:
        assert checks.loop_count(part) <= limit
        seen += list(_piece_pairs(part))
    assert len(seen) == len(set(seen)) and set(seen) == _piece_pairs(tables.coll_i)  # each piece pair once

    qpos = sample_qpos(ur5.tree, N, seed=31)
    calls = [lambda: ur5.collision_distance(qpos, return_pair=True),
             lambda: ur5.collision_distance(qpos, return_pair=True, world=False)]
    for _, (ds, ws), (dn, wn) in three_ways(calls, monkeypatch):
        assert 0.1 < np.mean(np.asarray(ds) > 0) < 1.0  # some in contact, some clear: a test of both
        assert_like_twins(ds, ws, dn, wn)

def test_few_rows_take_the_numpy_twins_where_the_launches_cost_more(ur5, monkeypatch):
    """UR5's checks take ~135 launches (~1.5 ms each on lavapipe); for one row the numpy twins are
    cheaper (launches.LAUNCHES_PER_ROW), and give the same distances as the launches do for many."""
    monkeypatch.setattr(runtime_state.STATE, "software", True)
    qpos = sample_qpos(ur5.tree, N, seed=32)
    many = ur5.collision_distance(qpos)
    twins = []
    real = collision_world.world_distance_numpy
    monkeypatch.setattr(collision_world, "world_distance_numpy", lambda *a: twins.append(1) or real(*a))
    one = ur5.collision_distance(qpos[:1], envs_idx=np.array([0]))
    assert twins
    assert abs(float(one[0]) - float(many[0])) <= 5e-4
