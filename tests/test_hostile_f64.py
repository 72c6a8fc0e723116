"""Float64 has its own overflow: a quaternion whose squared norm is beyond float64 (1e160 squared)
is still the rotation it names, and IK reports success only where the answer meets it."""

from __future__ import annotations

import numpy as np

import engine


def test_a_quaternion_whose_square_overflows_float64_is_still_a_rotation():
    engine.init(backend="cpu", precision="64")
    try:
        scene = engine.Scene()
        robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
        scene.build(n_envs=4)
        pos = np.tile([0.4, 0.1, 0.3], (4, 1))
        huge = robot.inverse_kinematics(link="hand", pos=pos, quat=[0, 1e160, 0, 0], seed=0, return_info=True)
        unit = robot.inverse_kinematics(link="hand", pos=pos, quat=[0, 1, 0, 0], seed=0, return_info=True)
        np.testing.assert_array_equal(huge.qpos, unit.qpos)
        res = robot.inverse_kinematics(link="hand", pos=pos, quat=[0, 1e160, 0, 0], rot_mask=[False, False, True],
                                       seed=0, return_info=True)
        _, quat = robot.forward_kinematics(res.qpos)
        hand = robot.get_link("hand").idx_local
        z = 1 - 2 * (quat[:, hand, 1] ** 2 + quat[:, hand, 2] ** 2)
        assert res.success.all() and np.all(z < -0.999)
    finally:
        engine.init(backend="cpu")
