"""Which link pairs count in the self-collision checks: adjacency, the SRDF, MoveIt-style sampling
(seeded, cached), user edits; and the batched checks' shapes and argument errors."""

from __future__ import annotations

import numpy as np
import pytest
from _backend import init_engine

import engine as gs
from engine.collision.gjk import TOLERANCE
from engine.collision.robot import adjacent

SAMPLED_URDF = """<robot name="s">
  <link name="base"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
  <link name="l1"/>
  <link name="l2"><collision><geometry><sphere radius="0.1"/></geometry></collision></link>
  <link name="l3"><collision><origin xyz="0 0 2"/><geometry><sphere radius="0.05"/></geometry></collision></link>
  <link name="l4"><collision><origin xyz="0 0 0.3"/><geometry><sphere radius="0.1"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j3" type="revolute"><parent link="l2"/><child link="l3"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j4" type="revolute"><parent link="base"/><child link="l4"/><origin xyz="0.35 0 0"/>
    <axis xyz="0 1 0"/><limit lower="-3.1" upper="3.1" effort="1" velocity="1"/></joint>
</robot>"""


@pytest.fixture(scope="module", autouse=True)
def f32(backend):
    init_engine(precision="32")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path / "cache"))


def _robot(file, n_envs=None, **kw):
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.URDF(file=str(file), fixed=True, **kw))
    scene.build(**({} if n_envs is None else {"n_envs": n_envs}))
    return robot


def test_sampled_pairs_without_srdf(tmp_path):
    urdf = tmp_path / "s.urdf"
    urdf.write_text(SAMPLED_URDF)
    robot = _robot(urdf, n_envs=3)
    model = robot.collision_model(spheres_per_link=1, samples=300)
    names = robot.tree.link_names()
    reasons = {(names[a], names[b]): r for (a, b), r in model.excluded.items()}
    assert model.srdf is None
    assert reasons[("base", "l2")] == "always"
    assert reasons[("base", "l3")] == "never" and reasons[("l3", "l4")] == "never"
    assert reasons[("base", "l4")] == "adjacent" and reasons[("l2", "l3")] == "adjacent"
    assert robot.collision_pairs() == [("l2", "l4")]
    assert len(list((tmp_path / "cache" / "collision").glob("pairs_*.npz"))) == 1
    again = _robot(urdf).collision_model(spheres_per_link=1, samples=300)  # from the cache
    assert again.excluded == model.excluded

    # l4 swings about y through x = 0.35: q = -pi/2 turns its sphere to x = 0.05, where it meets l2
    q = np.zeros((3, 4))
    q[1, 3] = -np.pi / 2
    q[2, 3] = np.pi / 2
    d, pairs = robot.collision_distance(q, return_pair=True)
    assert d.shape == (3,) and pairs == [("l2", "l4")] * 3
    np.testing.assert_allclose(d, [np.hypot(0.35, 0.3) - 0.2, 0.05 - 0.2, 0.65 - 0.2], atol=1e-5)
    np.testing.assert_array_equal(robot.in_collision(q), [False, True, False])
    np.testing.assert_array_equal(robot.in_collision(q, margin=0.3), [True, True, False])

    robot.remove_collision_pair("l4", "l2")
    assert robot.collision_pairs() == [] and np.all(np.isinf(robot.collision_distance(q)))
    robot.add_collision_pair(robot.get_link("base"), "l2")
    assert robot.collision_pairs() == [("base", "l2")]
    assert robot.in_collision(q).all()
    with pytest.raises(gs.IKStudioError, match="link_b: no link named 'nope'"):
        robot.add_collision_pair("l2", "nope")
    with pytest.raises(ValueError, match="l1.*no collision geometry"):
        robot.add_collision_pair("l1", "l2")
    with pytest.raises(ValueError, match="link_b: the same link"):
        robot.remove_collision_pair("l2", "l2")


def test_panda_srdf_pairs():
    robot = _robot("erd:panda")
    model = robot.collision_model()
    assert model.srdf is not None and model.srdf.name == "panda.srdf"
    pairs = set(robot.collision_pairs())
    assert ("panda_link0", "panda_hand") in pairs and ("panda_link5", "panda_leftfinger") in pairs
    assert not any({"panda_link3", "panda_hand"} == set(p) for p in pairs)  # the SRDF: "Never"
    assert set(model.excluded.values()) <= {"adjacent", "srdf"}
    names = robot.tree.link_names()
    near = adjacent(robot.tree)
    assert near[names.index("panda_link7"), names.index("panda_hand")]  # through the fixed panda_link8
    d = robot.collision_distance()
    assert np.ndim(d) == 0 and np.isfinite(d)
    assert isinstance(robot.in_collision(), (bool, np.bool_))


def test_check_arguments():
    robot = _robot("erd:panda", n_envs=2)
    with pytest.raises(ValueError, match="qpos"):
        robot.collision_distance(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="margin"):
        robot.in_collision(margin=-1.0)
    with pytest.raises(ValueError, match="spheres_per_link"):
        robot.collision_model(spheres_per_link=0)
    assert robot.collision_distance(np.zeros((1, robot.n_qs)), envs_idx=[1]).shape == (1,)
    assert robot.in_collision().shape == (2,)


def test_kernel_matches_numpy():
    from engine.collision.robot import sample_qpos

    robot = _robot("erd:panda", n_envs=64)
    model = robot.collision_model()
    qpos = sample_qpos(robot.tree, 64, seed=11)
    pose = robot.configuration.fk_poses(qpos)
    d_kernel, w_kernel = robot.collision_distance(qpos, return_pair=True, world=False)
    d_numpy, w_numpy = model.distance_numpy(pose)
    np.testing.assert_allclose(d_kernel, d_numpy, atol=TOLERANCE)  # near contact: GJK bounds, each within it
    same = np.abs(d_kernel - d_numpy) < 1e-9
    pairs = model.pairs
    assert all(w == pairs[k] or not ok for w, k, ok in zip(w_kernel, w_numpy, same))


def test_mjcf_without_srdf_default_pose_is_free():
    scene = gs.Scene()
    robot = scene.add_entity(gs.morphs.MJCF(file="dual_arm"))
    scene.build()
    model = robot.collision_model(samples=300)
    assert model.srdf is None
    reasons = set(model.excluded.values())
    assert {"adjacent", "never", "default"} <= reasons  # MoveIt's rules: the home pose is collision-free
    assert not robot.in_collision()
    names = robot.tree.link_names()
    assert any(names[a].startswith("left") and names[b].startswith("right") for a, b in model._pairs)
