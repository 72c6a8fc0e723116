"""The app's "smooth" switch, worst-step readout and lagging tint (issue 30), on the controller
without a window (images offscreen). The joint steps are judged from the robot's qpos before and
after each frame, read from the engine, not from the readout being tested."""

from __future__ import annotations

import numpy as np
import pytest

# ruff: noqa: F811
from _controller import RES, engine_cpu, scene_ctl, tint_share  # noqa: F401

from app.sim import collision_view
from app.sim.loop import FAIL_TINT

V, FPS = 0.5, 30.0  # rad/s; frames/s (the runner's dt when stepping)
BOUND = V / FPS  # rad per frame
SLACK = 2e-6  # float32 answers
HOME, JUMP = (0.45, 0.1, 0.4), (0.45, -0.25, 0.4)

SCENE = f"""\
robot: panda
record: {{fps: {FPS:g}}}
envs:
  n_envs: 4
solver:
  seed: 0
  kernel: auto
  track: true
  max_joint_velocity: {V}
targets:
  - link: hand
    pos: [{HOME[0]}, {HOME[1]}, {HOME[2]}]
    quat: [0.0, 1.0, 0.0, 0.0]
"""


def _step(c):
    """One frame stepped (paused: the runner's dt); ``(readout, qpos before, qpos after)``."""
    before = c.robot.get_qpos().reshape(c.n_envs, -1).astype(float)
    c.step_once()
    readout = c.update()
    after = c.robot.get_qpos().reshape(c.n_envs, -1).astype(float)
    return readout, before, after


def test_smooth_tracking_in_the_app_lags_amber_within_the_limit(scene_ctl):
    c = scene_ctl(SCENE)
    c.playing = False
    _step(c)  # frame 0 places the robots (the full search)
    assert c.last_frame.success.all()
    assert c.spec.solver.track, "the scene's smooth switch starts on"
    c.targets.set_pose(0, pos=JUMP)  # ~0.6 rad of the base joint away: dozens of frames at 0.0167 rad
    lagged, frames = [], 0
    while frames < 150:
        readout, before, after = _step(c)
        frames += 1
        moved = np.abs(after - before)[:, :7].max(axis=1)  # the arm's hinges (the fingers do not move)
        assert moved.max() <= BOUND + SLACK, (frames, moved)
        assert readout.worst_step == pytest.approx(moved.max(), abs=1e-6)
        frame = c.last_frame
        if frame.success.all():
            break
        lagged.append(readout.lagging)
        if frames == 3:  # well on the way: every env lags, none counts as failed
            assert readout.lagging == 4 and readout.failed == 0, readout
            assert np.allclose(c.visualizer.env_tints(), collision_view.LAG_TINT)
            assert c.status()[0] == "warning" and "4 of 4 envs lag behind" in c.status()[1], c.status()
            img = c.wait_frame()
            amber, red = tint_share(img, collision_view.LAG_TINT), tint_share(img, FAIL_TINT)
            assert amber > 0.002 and red < 0.2 * amber, (amber, red)  # amber robots; red: the frames' x axes
    assert frames >= 20, "the target was reached within a few frames: the jump was not far"
    assert frame.success.all(), f"the target was not reached in {frames} frames"
    assert max(lagged) == 4
    assert readout.lagging == 0 and np.isnan(c.visualizer.env_tints()).all()


def test_the_smooth_switch_off_jumps_and_on_brings_the_velocity_back(scene_ctl):
    c = scene_ctl(SCENE)
    c.playing = False
    _step(c)
    assert c.set_smooth(False)
    assert not c.spec.solver.track and c.spec.solver.max_joint_velocity is None
    c.targets.set_pose(0, pos=JUMP)
    readout, before, after = _step(c)
    moved = np.abs(after - before)[:, :7].max(axis=1)
    assert c.last_frame.success.all() and (moved > 10 * BOUND).all(), moved  # one frame: a jump
    assert readout.lagging == 0 and readout.worst_step == pytest.approx(moved.max(), abs=1e-6)
    assert c.set_smooth(True)
    assert c.spec.solver.track and c.spec.solver.max_joint_velocity == V
    c.targets.set_pose(0, pos=HOME)
    readout, before, after = _step(c)
    assert np.abs(after - before).max() <= BOUND + SLACK and readout.lagging == 4


def test_an_edit_while_paused_is_followed_all_the_way(scene_ctl):
    """Paused, a target moved once: the sim goes on solving, without advancing time and without
    another edit, each solve within the velocity limit, until the robots reach it (a single solve
    per edit used to leave them lagging half-way for as long as the scene stayed paused)."""
    c = scene_ctl(SCENE)
    c.playing = False
    _step(c)
    t = c.runner.t
    c.targets.set_pose(0, pos=JUMP)
    solves = 0
    for _ in range(200):
        before = c.robot.get_qpos().reshape(c.n_envs, -1).astype(float)
        readout = c.update()
        after = c.robot.get_qpos().reshape(c.n_envs, -1).astype(float)
        if readout is None:
            break
        solves += 1
        assert np.abs(after - before)[:, :7].max() <= BOUND + SLACK
    assert solves >= 20, "reached in a few solves: the jump was not far, or the sim stopped following"
    assert c.last_frame.success.all() and not c.last_frame.lagging.any()
    assert c.runner.t == t, "paused: time does not advance"
    assert c.update() is None, "once there, a paused sim solves nothing more"
