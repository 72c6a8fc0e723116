"""Planned motion in scene files (``solver: {plan: true}``, issue 31 item 5), judged independently.

The shipped ``panda_clutter_plan`` scene is played frame by frame; the motion between consecutive
frames of every env is judged at mesh level by Pinocchio + coal (tests/_plan_judge.py: 1 mm /
0.005 rad steps where the clearance proves nothing more), each frame's joint step against the
velocity limits Pinocchio reads from the URDF, and an env at rest at its targets by Pinocchio's FK.
Infeasible targets fail with their reason and the env holds; an obstacle put in the way is gone
around; the scene file's switches are validated.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _plan_judge import SegmentJudge
from pinref import PinReference

import engine as gs
from engine import scenefile
from engine.scenefile.errors import SceneFileError

REPO = Path(__file__).resolve().parent.parent
SCENE = REPO / "scenes" / "panda_clutter_plan.yaml"
HAND = "panda_hand"


def _build(spec, n_envs=None):
    gs.init(backend="cpu", precision="32", seed=0)
    return scenefile.build(spec, n_envs=n_envs, debug_frames=False)


def _obstacle_morphs(runner):
    """The obstacles' morphs where they stand now (env 0): a moved obstacle's morph still holds the
    pose it was built at."""
    from dataclasses import replace

    return [replace(entity.morph, pos=np.asarray(entity.get_pos(), float).reshape(-1, 3)[0],
                    quat=np.asarray(entity.get_quat(), float).reshape(-1, 4)[0], euler=None)
            for entity in runner.obstacles]


def _fk_hand(ref, q):
    rots, poss = ref.link_poses(np.asarray(q, float))
    k = ref.tree.link_names().index(HAND)
    return rots[k], poss[k]


def test_the_clutter_scene_moves_along_collision_free_paths_within_the_velocity_limits():
    spec = scenefile.load(SCENE)
    assert spec.solver.plan and not spec.solver.track
    _, runner = _build(spec)
    ref = PinReference(runner.robot.tree)
    vmax = np.asarray(ref.model.velocityLimit, float)  # the URDF's limits, read by Pinocchio
    judge = SegmentJudge(runner.robot, _obstacle_morphs(runner))
    frames = runner.run(200)  # 6.7 s: every env completes a leg, three start the next one
    qs = np.array([f.qpos for f in frames], float)
    dt = runner.dt
    moved = np.zeros(runner.n_envs, int)
    for k in range(1, len(frames)):
        step = np.abs(qs[k] - qs[k - 1])
        assert (step <= vmax * dt * 1.001 + 1e-6).all(), f"frame {k}: a joint moved faster than its limit"
        for e in range(runner.n_envs):
            if np.abs(qs[k, e] - qs[k - 1, e]).max() > 0:
                moved[e] += 1
                assert judge.segment_free(qs[k - 1, e], qs[k, e]), f"env {e} collides between frames {k - 1} and {k}"
    assert (moved > 10).all(), f"every env moves along a path: frames moved {moved}"
    reached = 0
    for f in frames[1:]:
        for e in np.flatnonzero(f.success):
            R, p = _fk_hand(ref, f.qpos[e])
            pos, quat = f.targets[0]
            assert np.linalg.norm(p - pos[e]) < 2e-3, f"frame {f.index}: env {e} at rest off its target"
            R_t = gs.transforms.quat_to_matrix(quat[e] / np.linalg.norm(quat[e]))
            assert np.arccos(np.clip((np.trace(R_t.T @ R) - 1) / 2, -1, 1)) < 1e-2
            reached += 1
    assert reached > 100, f"envs rest at their targets in {reached} env-frames"
    assert all(r == "ok" for r in frames[-1].plan_reason)
    assert all(f.lagging is not None for f in frames)
    paths = [e for f in frames[1:] for e in f.paths]
    assert len(paths) >= 4, "each new target is reached along a path"
    for f in frames[1:]:
        for e, (samples, step) in f.paths.items():
            assert step == pytest.approx(dt)
            np.testing.assert_allclose(samples[0], f.qpos[e], atol=1e-6)  # a path starts where the env stands


def test_a_target_inside_an_obstacle_fails_with_its_reason_and_the_env_holds():
    spec = scenefile.load(SCENE)
    spec.envs.n_envs = 2
    _, runner = _build(spec, 2)
    runner.run(3)
    held = runner.robot.get_qpos().copy()
    crate = spec.obstacles[4].pos
    spec.targets[0].motion = None
    spec.targets[0].pos = tuple(crate)  # the crate's centre: no answer keeps the hand out of it
    runner.retarget()
    frames = runner.run(5)  # the target settles in frame 1; the envs plan in frame 2
    for f in frames[1:]:
        assert list(f.plan_reason) == ["goal_unreachable"] * 2
    for f in frames:
        assert not f.success.any()
        np.testing.assert_array_equal(f.qpos, held)


def test_an_obstacle_put_between_the_hand_and_its_next_target_is_gone_around():
    spec = scenefile.load(SCENE)
    spec.envs.n_envs = 1
    target = spec.targets[0]
    target.motion = None
    target.pos = (0.35, -0.40, 0.35)
    _, runner = _build(spec, 1)
    assert runner.run(2)[-1].success[0]
    start = runner.robot.get_qpos().copy()
    # the ball, moved onto the straight way to the next target (as a user drags it there)
    spec.obstacles[2] = spec.obstacles[2].model_copy(update={"pos": (0.36, -0.14, 0.34)})
    runner.place_obstacles()
    target.pos = (0.35, 0.10, 0.35)
    runner.retarget()
    frames = runner.run(150)
    judge = SegmentJudge(runner.robot, _obstacle_morphs(runner))
    qs = np.concatenate([start[None], np.array([f.qpos for f in frames], float)])
    # the straight way would have hit the ball
    assert not all(judge.segment_free(qs[0, 0] + (qs[-1, 0] - qs[0, 0]) * a, qs[0, 0] + (qs[-1, 0] - qs[0, 0]) * b)
                   for a, b in zip(np.linspace(0, 1, 21)[:-1], np.linspace(0, 1, 21)[1:]))
    for k in range(1, len(qs)):
        assert judge.segment_free(qs[k - 1, 0], qs[k, 0]), f"the arm hits an obstacle between frames {k - 1} and {k}"
    assert frames[-1].success[0], f"the hand reaches its new target: {frames[-1].plan_reason}"


def test_plan_and_track_are_two_choices_and_the_settings_are_checked(tmp_path):
    text = SCENE.read_text()
    both = tmp_path / "both.yaml"
    both.write_text(text.replace("plan: true", "plan: true\n  track: true"))
    with pytest.raises(SceneFileError, match=r"solver\.plan.*choose one"):
        scenefile.load(both)
    velocity = tmp_path / "velocity.yaml"
    velocity.write_text(text.replace("plan: true", "plan: true\n  max_joint_velocity: 1.0"))
    assert scenefile.load(velocity).solver.max_joint_velocity == 1.0
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(text.replace("plan: true", "plan: true\n  plan_max_nodes: 0"))
    with pytest.raises(SceneFileError, match="plan_max_nodes"):
        scenefile.load(nodes)
    alone = tmp_path / "alone.yaml"
    alone.write_text(text.replace("plan: true", "plan: false\n  max_joint_velocity: 1.0"))
    with pytest.raises(SceneFileError, match="plan: true"):
        scenefile.load(alone)


def test_the_same_seed_plays_the_same_motion_and_a_slower_limit_is_kept():
    spec = scenefile.load(SCENE)
    spec.envs.n_envs = 2
    _, a = _build(spec, 2)
    qa = np.array([f.qpos for f in a.run(90)])
    _, b = _build(spec.model_copy(deep=True), 2)
    qb = np.array([f.qpos for f in b.run(90)])
    np.testing.assert_array_equal(qa, qb)
    slow = spec.model_copy(deep=True)
    slow.solver.max_joint_velocity = 0.5
    _, c = _build(slow, 2)
    qc = np.array([f.qpos for f in c.run(90)])
    assert np.abs(np.diff(qc[1:], axis=0)).max() <= 0.5 * c.dt * 1.001 + 1e-6
    assert np.abs(np.diff(qc[1:], axis=0)).max() > 0.4 * c.dt  # it does move, at the slower limit


def test_a_recording_of_planned_motion_draws_the_paths_the_envs_take(tmp_path):
    spec = scenefile.load(SCENE)
    spec.envs.n_envs = 2
    gs.init(backend="cpu", precision="32", seed=0)
    scene, runner = scenefile.build(spec, n_envs=2)
    out = tmp_path / "plan.mp4"
    stats = runner.record(out, n_frames=75, res=(160, 96), progress=False)  # env 1 begins a path at frame 61
    assert stats["frames"] == 75 and out.stat().st_size > 0
    kinds = [h.kind for h in scene.visualizer.debug]
    assert kinds.count("frame") == 1 and kinds.count("path") >= 1, kinds
    drawn = [h for h in scene.visualizer.debug if h.kind == "path"]
    assert {int(h.env_idx[0]) for h in drawn} <= {0, 1}
    scene.destroy()
