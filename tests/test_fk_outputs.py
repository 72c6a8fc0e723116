"""Large forward_kinematics batches recycle their output arrays only when the caller let go of them
(``RigidEntity._fk_buffers`` reads CPython's reference counts): a result the caller keeps is
never written by a later call, and a recycled one holds the new answer."""

import gc

import numpy as np

import engine
from engine import morphs
from engine.runtime import dispatch


def test_kept_results_are_never_overwritten_and_recycled_ones_are_right():
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    n = dispatch.STATIC_FK_MIN_ROWS
    scene.build(n_envs=n)
    lo, hi = robot.q_limits
    rng = np.random.default_rng(0)
    q1, q2 = (robot.tree.apply_mimic(rng.uniform(lo, hi, (n, robot.n_qs))) for _ in range(2))
    pos1, quat1 = robot.forward_kinematics(q1)
    copy1 = pos1.copy(), quat1.copy()
    pos2, quat2 = robot.forward_kinematics(q2)  # pos1 / quat1 are still held: new arrays
    assert not np.shares_memory(pos1, pos2)
    np.testing.assert_array_equal(pos1, copy1[0])
    np.testing.assert_array_equal(quat1, copy1[1])
    expected = pos2.copy(), quat2.copy()
    addresses = pos2.__array_interface__["data"][0], quat2.__array_interface__["data"][0]
    del pos2, quat2
    gc.collect()
    pos3, quat3 = robot.forward_kinematics(q2)  # the dropped pair may come back: with the same answer
    np.testing.assert_array_equal(pos3, expected[0])
    np.testing.assert_array_equal(quat3, expected[1])
    assert (pos3.__array_interface__["data"][0], quat3.__array_interface__["data"][0]) == addresses, \
        "the dropped outputs were not recycled (CPython's reference counting changed?)"
    np.testing.assert_array_equal(pos1, copy1[0])
