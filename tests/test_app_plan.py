"""The app's "plan" switch (issue 31 item 5) on the controller without a window (images offscreen):
each env moves to its new answer along a collision-free path at the robot's velocity limits, the
selected env's path is drawn, and envs whose planning failed are red and counted. The motion is
judged from the robot's qpos read from the engine before and after every frame, with the sphere
check (which contains the meshes) on the configurations and between them."""

from __future__ import annotations

import numpy as np

# ruff: noqa: F811
from _controller import engine_cpu, scene_ctl, tint_share  # noqa: F401

from app.sim.loop import FAIL_TINT
from engine.vis.debug_path import PATH_COLOR

FPS = 30.0
HOME, AWAY = (0.35, -0.40, 0.35), (0.35, 0.10, 0.35)
BALL_BETWEEN = (0.36, -0.14, 0.34)  # on the straight way from HOME's answer to AWAY's

SCENE = f"""\
robot: {{file: panda_urdf, fixed: true}}
record: {{fps: {FPS:g}}}
envs:
  n_envs: 2
solver:
  seed: 0
  kernel: auto
  plan: true
  avoid_collisions: true
  collision_margin: 0.01
targets:
  - link: panda_hand
    pos: [{HOME[0]}, {HOME[1]}, {HOME[2]}]
    rpy: [180, 0, 0]
obstacles:
  - {{kind: box, size: [1.2, 1.4, 0.04], pos: [0.35, 0.0, -0.02]}}
  - {{kind: sphere, size: 0.09, pos: [{BALL_BETWEEN[0]}, {BALL_BETWEEN[1]}, {BALL_BETWEEN[2]}]}}
"""


def _qpos(c) -> np.ndarray:
    return c.robot.get_qpos().reshape(c.n_envs, -1).astype(float)


def _follow(c, frames: int = 300):
    """Solve until the paused sim stops following the last edit; ``(readouts, qpos per solve)``."""
    readouts, qs = [], [_qpos(c)]
    for _ in range(frames):
        readout = c.update()
        if readout is None:
            break
        readouts.append(readout)
        qs.append(_qpos(c))
    return readouts, np.array(qs)


def _collides_between(robot, qa: np.ndarray, qb: np.ndarray, steps: int = 20) -> np.ndarray:
    """(n_envs,) whether some configuration on ``qa -> qb`` (n_envs, n_qs each) collides (spheres)."""
    hit = np.zeros(len(qa), bool)
    for f in np.linspace(0.0, 1.0, steps + 1):
        hit |= np.asarray(robot.in_collision(qa + f * (qb - qa)))
    return hit


def test_plan_and_smooth_are_one_choice_and_keep_the_velocity(scene_ctl):
    c = scene_ctl(SCENE.replace("plan: true", "plan: true\n  max_joint_velocity: 1.0"))
    assert c.spec.solver.plan and not c.spec.solver.track
    assert c.set_smooth(True)
    assert c.spec.solver.track and not c.spec.solver.plan and c.spec.solver.max_joint_velocity == 1.0
    assert c.set_plan(True)
    assert c.spec.solver.plan and not c.spec.solver.track and c.spec.solver.max_joint_velocity == 1.0
    assert c.set_plan(False)
    assert not (c.spec.solver.plan or c.spec.solver.track) and c.spec.solver.max_joint_velocity is None
    assert c.set_plan(True)
    assert c.spec.solver.max_joint_velocity == 1.0


def test_a_moved_target_is_reached_around_the_ball_along_a_drawn_path(scene_ctl):
    c = scene_ctl(SCENE)
    c.playing = False
    c.step_once()
    c.update()  # frame 0 places the robots at their answers
    assert c.last_frame.success.all()
    vmax = np.asarray(c.robot.tree.velocity_limits(), float)
    c.targets.set_pose(0, pos=AWAY)
    readouts, qs = _follow(c)
    assert len(readouts) > 20, "reached in a few frames: the move was not far"
    dt = c.runner.dt  # paused: each solve plays one frame of the path
    steps = np.abs(np.diff(qs, axis=0))
    assert (steps <= vmax * dt * 1.001 + 1e-6).all(), "a joint moved faster than its velocity limit"
    assert max(r.lagging for r in readouts) == 2 and all(r.plan_failed == 0 for r in readouts)
    for k in range(1, len(qs)):
        assert not _collides_between(c.robot, qs[k - 1], qs[k], steps=4).any(), f"collides in frame {k}"
    assert _collides_between(c.robot, qs[0], qs[-1]).all(), "the straight way misses the ball (the control)"
    assert c.last_frame.success.all()
    path = c.view.path
    assert path is not None and len(path) > 20
    np.testing.assert_allclose(path[-1], qs[-1][c.selected_env], atol=1e-5)
    drawn = tint_share(c.wait_frame(), PATH_COLOR)
    assert c.set_plan(False)
    c.update()
    assert c.view.path is None, "the path stays drawn with planning off"
    gone = tint_share(c.wait_frame(), PATH_COLOR)
    assert drawn > 0.0005 and gone < 0.2 * drawn, ("the selected env's path is drawn, then removed", drawn, gone)


def test_an_unreachable_target_is_red_and_counted(scene_ctl):
    c = scene_ctl(SCENE)
    c.playing = False
    c.step_once()
    c.update()
    held = _qpos(c)
    c.targets.set_pose(0, pos=BALL_BETWEEN)  # the ball's centre
    readouts, qs = _follow(c, frames=5)
    assert readouts and readouts[-1].plan_failed == 2 and readouts[-1].failed == 2
    np.testing.assert_array_equal(qs[-1], held)
    assert list(c.last_frame.plan_reason) == ["goal_unreachable"] * 2
    assert np.allclose(c.visualizer.env_tints(), FAIL_TINT)
    assert c.update() is None, "a failed plan is not retried while nothing changes"
