"""Shared helpers of the kinematics tests: a test model, random configurations, rotation angles.

Imported the same way everywhere: ``from _robots import random_qpos, rotation_angle``.
"""

from __future__ import annotations

import numpy as np

from engine.transforms import quat_conj, quat_mul, quat_to_matrix

TEST_MJCF = """
<mujoco model="kinematics_test">
  <compiler angle="radian"/>
  <worldbody>
    <body name="base" pos="0.1 -0.2 0.5" quat="0.9 0.1 -0.3 0.2">
      <freejoint name="root"/>
      <geom type="box" size="0.1 0.1 0.05"/>
      <body name="ball_link" pos="0.05 0.02 0.12" quat="0.7 0.2 0.1 -0.4">
        <joint name="ball" type="ball" pos="0.01 -0.03 0.02"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.2" size="0.02"/>
        <body name="two_hinge" pos="0 0.03 0.2" euler="0.3 -0.2 0.5">
          <joint name="hinge_a" type="hinge" axis="0 0 1" pos="0.02 0 0" range="-2 2"/>
          <joint name="hinge_b" type="hinge" axis="1 1 0" pos="0 0.04 -0.01"/>
          <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.02"/>
          <body name="offset_hinge" pos="0.2 0 0" quat="0.5 0.5 -0.5 0.5">
            <joint name="hinge_offset" type="hinge" axis="0 1 0" pos="0.07 -0.05 0.03" range="-1.5 1.5"/>
            <geom type="sphere" size="0.03"/>
            <body name="slider" pos="0 0 0.15" euler="0.1 0.2 0.3">
              <joint name="slide" type="slide" axis="0.3 -0.2 1" pos="0.5 0.5 0.5" range="-0.1 0.25"/>
              <geom type="box" size="0.02 0.02 0.05"/>
              <body name="ref_hinge" pos="0.03 0 0.1">
                <joint name="hinge_ref" type="hinge" axis="1 0 0" ref="0.4" pos="0 0.01 0" range="-1 2"/>
                <geom type="sphere" size="0.02"/>
                <body name="tip" pos="0 0 0.08" quat="0.8 0 0.6 0">
                  <geom type="sphere" size="0.01"/>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>
      <body name="side" pos="-0.1 0.1 0" euler="0 0.4 0">
        <joint name="side_hinge" type="hinge" axis="0 -1 0" ref="-0.3"/>
        <geom type="sphere" size="0.02"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def random_unit_quat(rng: np.random.Generator, n: int) -> np.ndarray:
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)




def random_qpos(robot, rng: np.random.Generator, n: int) -> np.ndarray:
    """``(n, n_qs)``: 1-dof joints within limits ([-pi, pi] when unlimited), random unit quaternions
    for ball / free joints, free positions in [-1, 1]."""
    q = np.zeros((n, robot.n_qs))
    for joint in robot.tree.joints:
        s = joint.q_start
        if joint.type == "free":
            q[:, s:s + 3] = rng.uniform(-1, 1, (n, 3))
            q[:, s + 3:s + 7] = random_unit_quat(rng, n)
        elif joint.type == "ball":
            q[:, s:s + 4] = random_unit_quat(rng, n)
        elif joint.n_qs == 1:
            lo, hi = joint.lower, joint.upper
            if not (np.isfinite(lo) and np.isfinite(hi)):
                lo, hi = -np.pi, np.pi
            q[:, s] = rng.uniform(lo, hi, n)
    return q




def rotation_angle(qa, qb):
    """Angle (rad) of the rotation between unit quaternions ``(..., 4)``."""
    d = quat_mul(qa, quat_conj(qb))
    return 2.0 * np.arctan2(np.linalg.norm(d[..., 1:], axis=-1), np.abs(d[..., 0]))




def axis_angle(qa, qb, axis: int):
    """Angle (rad) between local axis ``axis`` of the frames ``qa`` and ``qb`` ``(..., 4)``."""
    a = quat_to_matrix(qa)[..., axis]
    b = quat_to_matrix(qb)[..., axis]
    return np.arccos(np.clip(np.sum(a * b, axis=-1), -1.0, 1.0))


def built_panda(n_envs: int):
    """A scene with example-robot-data's Panda (URDF, fixed base) built with ``n_envs`` envs;
    yields the robot and destroys the scene after (for module fixtures: ``yield from``)."""
    import engine as gs

    scene = gs.Scene(show_FPS=False)
    robot = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.build(n_envs=n_envs)
    try:
        yield robot
    finally:
        scene.destroy()

