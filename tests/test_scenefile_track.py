"""Scene files' velocity-limited tracking (``solver: {track: true, max_joint_velocity: ...}``).

The keys are checked (errors name them), saved back as written, and reach the IK call from frame 1
on (frame 0 places the robot with the full restart search); a tracked scene's joints never move
more than the velocity limit allows per frame, judged from the qpos the runner applies; every
shipped scene tracks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from engine import scenefile
from engine.scenefile import SceneFileError, smoothness

REPO = Path(__file__).resolve().parent.parent
UR5 = (REPO / "scenes" / "ur5_figure8.yaml").read_text()


def test_every_shipped_scene_tracks_or_plans():
    """Every shipped scene moves smoothly: velocity-limited tracking, or (one scene) planned paths."""
    planned = []
    for path in sorted((REPO / "scenes").glob("*.yaml")):
        solver = scenefile.load(path).solver
        assert solver.track or solver.plan, path.name
        if solver.plan:
            planned.append(path.name)
    assert planned == ["panda_clutter_plan.yaml"]


def _with(text: str, solver: str) -> str:
    return text.replace("solver:\n  seed: 0\n", f"solver:\n  seed: 0\n{solver}")


@pytest.mark.parametrize("solver, expected", [
    ("  max_joint_velocity: 2.0\n", r"solver\.max_joint_velocity: .*add track: true"),
    ("  max_joint_velocity: -1\n", r"solver\.max_joint_velocity: expected a positive number"),
    ("  max_joint_velocity: fast\n", r"solver\.max_joint_velocity: expected \"file\", a positive number"),
    ("  track: maybe\n", r"solver\.track"),
])
def test_bad_tracking_keys_are_named(tmp_path, solver, expected):
    text = _with(UR5.replace("  track: true", "  track: false"), solver)
    path = tmp_path / "x.yaml"
    path.write_text(text)
    with pytest.raises(SceneFileError, match=expected):
        scenefile.load(path)


def test_tracking_keys_round_trip(tmp_path):
    spec = scenefile.loads(_with(UR5, "  max_joint_velocity: [1.0, 1.0, 1.5, 2.0, 2.0, 2.0]\n"),
                           base_dir=REPO / "scenes")
    assert spec.solver.max_joint_velocity == (1.0, 1.0, 1.5, 2.0, 2.0, 2.0)
    assert spec.solver.samples() == 1  # tracking, max_samples not given: no restarts
    saved = yaml.safe_load(scenefile.dumps(spec))
    assert saved["solver"]["track"] is True
    assert saved["solver"]["max_joint_velocity"] == [1.0, 1.0, 1.5, 2.0, 2.0, 2.0]
    assert "max_samples" not in saved["solver"]
    assert scenefile.loads(_with(UR5, "  max_samples: 4\n"), base_dir=REPO / "scenes").solver.samples() == 4


def test_tracked_scene_moves_within_the_velocity_limit(monkeypatch):
    """The UR5 scene with a low limit: frame 0 is placed by the full search, every later frame moves
    each joint at most v / fps, and the IK calls get track, the velocity and the frame's dt."""
    v = 0.6  # rad/s: the figure eight outruns it
    spec = scenefile.loads(_with(UR5, f"  max_joint_velocity: {v}\n"), base_dir=REPO / "scenes")
    scene, runner = scenefile.build(spec, n_envs=4, debug_frames=False)
    calls = []
    original = runner.robot.inverse_kinematics_multilink

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(runner.robot, "inverse_kinematics_multilink", spy)
    frames = runner.run(40)
    assert calls[0]["track"] is False and calls[0]["max_samples"] == 50
    assert all(c["track"] is True and c["max_joint_velocity"] == v and c["max_samples"] == 1 for c in calls[1:])
    assert calls[1]["dt"] == pytest.approx(1.0 / spec.fps)
    qs = np.array([f.qpos for f in frames])
    moved = np.abs(np.diff(qs, axis=0))
    assert moved.max() <= v / spec.fps + 2e-6, moved.max()
    assert moved.max() >= v / spec.fps - 2e-6, "the limit never bound: the test means nothing"
    assert not all(f.success.all() for f in frames[1:]), "the target never lagged"
    scene.destroy()


def test_uneven_frames_give_the_joints_the_time_the_targets_moved():
    """The app steps by wall time, so frames come uneven. The robot holds the answer of the frame
    solved last, and the targets moved over the time since then, so that time (the previous step's
    dt) bounds the joints, not the coming one. Bounding by the coming dt made the default scene
    lag in about half its envs in the app. Here dt alternates 50 ms and 5 ms: the joints move at most
    v times the elapsed time, the bound does bind, and no env of the default scene lags."""
    spec = scenefile.load(REPO / "scenes" / "batched_panda.yaml")
    scene, runner = scenefile.build(spec, n_envs=4, debug_frames=False)
    bounds = smoothness.per_frame_bound(runner.robot.tree, spec.solver.max_joint_velocity, 1.0)
    scalar = smoothness.scalar_qs(runner.robot.tree)
    dts = [0.05 if k % 2 == 0 else 0.005 for k in range(60)]
    frames = [runner.step(dt) for dt in dts]
    assert not any(f.lagging.any() for f in frames[1:]), [f.index for f in frames if f.lagging.any()]
    assert all(f.success.all() for f in frames)
    qs = np.array([f.qpos for f in frames])[:, :, scalar]
    ratio = np.abs(np.diff(qs, axis=0)) / (np.array(dts[:-1])[:, None, None] * bounds[scalar])  # vs the elapsed
    assert ratio.max() <= 1.0 + 1e-4, ratio.max()
    # and the coming dt would not have been enough: after a 50 ms interval some joint moved more than v * 5 ms
    fast = np.abs(np.diff(qs, axis=0))[0::2] / (0.005 * bounds[scalar])
    assert fast.max() > 1.0, fast.max()
    scene.destroy()


def test_a_frame_says_when_it_compiled_or_loaded_a_kernel():
    """Frame 0 (the full search) prepares the solver after an init (compiled, or loaded from taichi's
    cache: ~1.2 s for the generic solver): its ik_ms is no speed readout, and it says so (the app
    keeps it off its plot). Frame 1, the tracked solve, runs the same compiled solver (the velocity
    box is a run-time flag), and neither it nor the frames after prepare anything."""
    import engine as ik
    from engine.runtime import launch

    ik.destroy()  # a new taichi program (init alone keeps the one running): every kernel is prepared again
    ik.init(backend="cpu")
    spec = scenefile.load("scenes/batched_panda.yaml")
    spec.envs.n_envs = 2
    _, runner = scenefile.build(spec, debug_frames=False)
    before = launch.kernels_prepared()
    frames = [runner.step(1 / 30) for _ in range(4)]
    assert [f.kernels_prepared for f in frames] == [True, False, False, False]
    assert launch.kernels_prepared() > before
    assert max(f.ik_ms for f in frames[1:]) < frames[0].ik_ms
