"""Every file in scenes/ loads, builds, steps and records; the runner follows the seed's demos."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine import scenefile
from engine.scenefile import patterns

REPO = Path(__file__).resolve().parent.parent
SCENES = sorted((REPO / "scenes").glob("*.yaml"))


def test_scene_folder_has_the_required_scenes():
    names = {p.name for p in SCENES}
    assert {"batched_panda.yaml", "multilink_panda.yaml", "dual_arm_multilink.yaml", "panda_256.yaml",
            "ur5_figure8.yaml", "talos_hands.yaml", "solo12_feet.yaml"} <= names
    robots = {scenefile.load(p, check=False).robot.file for p in SCENES}
    assert {"panda", "dual_arm", "ur5", "talos", "solo12"} <= robots
    assert any(scenefile.load(p, check=False).envs.n_envs == 256 for p in SCENES)


@pytest.mark.parametrize("path", SCENES, ids=[p.stem for p in SCENES])
def test_scene_builds_and_steps_without_nan(path):
    spec = scenefile.load(path)
    scene, runner = scenefile.build(spec, debug_frames=False)
    assert scene.n_envs == spec.envs.n_envs
    n_targets = len(spec.targets)
    for _ in range(10):
        frame = runner.step()
        assert frame.qpos.shape == (spec.envs.n_envs, runner.robot.n_qs)
        assert np.all(np.isfinite(frame.qpos))
        assert frame.pos_error.shape == frame.rot_error.shape == (spec.envs.n_envs, n_targets)
        assert np.all(np.isfinite(frame.pos_error)) and np.all(np.isfinite(frame.rot_error))
        for pos, quat in frame.targets:
            assert pos is None or np.all(np.isfinite(pos))
            assert quat is None or np.all(np.isfinite(quat))
    assert frame.index == 9 and frame.t == pytest.approx(9 / spec.fps)
    assert runner.t == pytest.approx(10 / spec.fps)
    assert frame.success_rate >= 0.9, f"{path.name}: IK success {frame.success_rate:.2f} on frame 10"
    scene.destroy()


def test_every_scene_records_ten_frames(tmp_path):
    for path in SCENES:
        spec = scenefile.load(path)
        scene, runner = scenefile.build(spec)
        out = tmp_path / f"{path.stem}.mp4"
        stats = runner.record(out, n_frames=10, res=(128, 96), progress=False)
        assert stats["frames"] == 10 and stats["fps"] > 0
        assert out.stat().st_size > 0, path.name
        assert len(scene.visualizer.debug) == len(spec.targets)  # one target frame per target, all envs
        scene.destroy()


# -- the seed's demos -------------------------------------------------------------------------------


def test_default_scene_is_the_seeds_batched_demo():
    spec = scenefile.load(REPO / "scenes" / "batched_panda.yaml")
    assert spec.robot.file == "panda" and spec.envs.n_envs == 16
    (target,) = spec.targets
    assert target.link == "hand" and target.rot_mask == (False, False, True)
    assert np.allclose(target.orientation(), [0, 1, 0, 0])
    motion = target.motion
    assert motion.type == "circle" and motion.radius == 0.1 and target.pos == (0.4, -0.2, 0.25)
    # seed: angle = i / 360 * pi * speed at step i, speed ~ U(-10, 10); at fps steps per second:
    assert motion.speed == pytest.approx((-10 * np.pi / 360 * spec.fps, 10 * np.pi / 360 * spec.fps))


def test_batched_runner_matches_the_seeds_formula():
    spec = scenefile.load(REPO / "scenes" / "batched_panda.yaml")
    scene, runner = scenefile.build(spec, debug_frames=False)
    omega = runner._tracks[0].omega
    lo, hi = spec.targets[0].motion.speed
    assert omega.shape == (16,) and np.all((omega >= lo) & (omega <= hi)) and np.ptp(omega) > 1.0
    angular_speed = omega * 360 / (np.pi * spec.fps)  # the seed's per-env speed in U(-10, 10)
    center, r = np.array([0.4, -0.2, 0.25]), 0.1
    for i in (0, 1, 7, 100):
        seed_pos = np.zeros((16, 3))
        seed_pos[:, 0] = center[0] + np.cos(i / 360 * np.pi * angular_speed) * r
        seed_pos[:, 1] = center[1] + np.sin(i / 360 * np.pi * angular_speed) * r
        seed_pos[:, 2] = center[2]
        pos, quat = runner.targets_at(i / spec.fps)[0]
        assert np.allclose(pos, seed_pos)
        assert np.allclose(quat, np.tile([0, 1, 0, 0], (16, 1)))
    # seeded: a second build draws the same speeds
    _, again = scenefile.build(spec, debug_frames=False)
    assert np.array_equal(again._tracks[0].omega, omega)
    scene.destroy()


def spy_multilink(robot, monkeypatch) -> list[dict]:
    """The keyword arguments of every ``robot.inverse_kinematics_multilink`` call from now on."""
    calls = []
    original = robot.inverse_kinematics_multilink

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(robot, "inverse_kinematics_multilink", spy)
    return calls


def test_multilink_scene_solves_both_fingers_in_one_call(monkeypatch):
    spec = scenefile.load(REPO / "scenes" / "multilink_panda.yaml")
    assert spec.groups() == [("fingers", [0, 1])]
    scene, runner = scenefile.build(spec, debug_frames=False)
    calls = spy_multilink(runner.robot, monkeypatch)
    frame = runner.step()
    assert len(calls) == 1
    assert [link.name for link in calls[0]["links"]] == ["left_finger", "right_finger"]
    assert tuple(calls[0]["rot_mask"]) == (False, False, True)
    left, right = runner.targets_at(0.0)
    assert np.allclose(right[0] - left[0], [0.0, 0.03, 0.0])  # the seed's right = left + (0, 0.03, 0)
    assert frame.success.all()
    scene.destroy()


@pytest.mark.parametrize("setting", [None, "per_robot"])
def test_solver_kernel_reaches_the_ik_call(setting, monkeypatch):
    """Scenes default to the generic solver (no per-robot compile in the app); ``solver: kernel:``
    picks another, and the runner passes it to the IK call."""
    text = (REPO / "scenes" / "multilink_panda.yaml").read_text()
    if setting is not None:
        text = text.replace("solver:\n  seed: 0\n", f"solver:\n  seed: 0\n  kernel: {setting}\n")
    spec = scenefile.loads(text, base_dir=REPO / "scenes")
    assert spec.solver.kernel == (setting or "generic")
    scene, runner = scenefile.build(spec, debug_frames=False)
    calls = spy_multilink(runner.robot, monkeypatch)
    frame = runner.step()
    assert [c["kernel"] for c in calls] == [setting or "generic"]
    assert frame.success.all()
    scene.destroy()


def test_step_warm_starts_and_applies_qpos():
    spec = scenefile.load(REPO / "scenes" / "batched_panda.yaml")
    scene, runner = scenefile.build(spec, debug_frames=False)
    q0 = runner.robot.get_qpos().copy()
    frame = runner.step()
    assert not np.allclose(frame.qpos, q0)
    assert np.allclose(runner.robot.get_qpos(), frame.qpos)
    assert frame.ik_ms > 0 and len(frame.group_ms) == 1
    hand = runner.robot.get_link("hand")
    pos = runner.robot.get_links_pos()[:, hand.idx_local]
    assert np.allclose(pos[frame.success], frame.targets[0][0][frame.success], atol=2e-3)
    # warm start: the next frame starts from this answer and needs few iterations
    second = runner.step(dt=0.0)
    assert second.t == frame.t + runner.dt and runner.t == second.t
    runner.reset()
    assert runner.t == 0.0 and runner.frame_index == 0
    assert np.allclose(runner.robot.get_qpos(), q0)
    scene.destroy()


def test_n_envs_override_and_debug_frames():
    spec = scenefile.load(REPO / "scenes" / "dual_arm_multilink.yaml")
    scene, runner = scenefile.build(spec, n_envs=2)
    assert scene.n_envs == 2 and runner.n_envs == 2
    runner.step()
    assert not scene.has_visualizer  # headless: target frames are drawn only into a visualizer the scene has
    debug = scene.visualizer.debug  # made now (as the app and record() do)
    runner.step()
    assert len(debug) == 2  # one frame handle per target, batched over the envs
    runner.step()
    assert len(debug) == 2  # moved, not redrawn
    runner.clear_debug_frames()
    assert len(debug) == 0
    scene.destroy()


# -- motion patterns --------------------------------------------------------------------------------


def test_circle_and_figure8_patterns():
    omega = np.array([1.0, -2.0, 0.0])
    pos = patterns.circle(0.7, np.array([1.0, 2.0, 3.0]), 0.5, omega, plane="yz")
    assert pos.shape == (3, 3)
    assert np.allclose(pos[:, 0], 1.0)
    assert np.allclose(np.linalg.norm(pos[:, 1:] - [2.0, 3.0], axis=1), 0.5)
    assert np.allclose(pos[2], [1.0, 2.5, 3.0])  # zero speed stays at the start
    p8 = patterns.figure8(0.0, np.zeros(3), 0.2, 4.0, np.linspace(0, 2 * np.pi, 200))  # a whole lap
    assert np.allclose(p8[:, 2], 0.0)
    assert np.max(np.abs(p8[:, 0])) == pytest.approx(0.2, abs=1e-3)
    assert np.max(np.abs(p8[:, 1])) == pytest.approx(0.1, abs=1e-3)
    assert np.allclose(patterns.figure8(4.0, np.zeros(3), 0.2, 4.0, np.zeros(1)), 0.0, atol=1e-12)


def test_speeds_and_offsets():
    s = patterns.uniform_speeds(-1.0, 2.0, 1000, seed=5)
    assert s.min() >= -1.0 and s.max() <= 2.0 and np.array_equal(s, patterns.uniform_speeds(-1.0, 2.0, 1000, 5))
    assert np.all(patterns.uniform_speeds(3.0, 3.0, 4, None) == 3.0)
    with pytest.raises(ValueError):
        patterns.uniform_speeds(2.0, 1.0, 3, 0)
    grid = patterns.offsets_grid(9, np.array([0.1, 0.0, 0.2]))
    assert grid.shape == (9, 3) and np.allclose(grid[:, 1], 0.0)
    assert len({tuple(p) for p in grid.round(9)}) == 9
    assert np.allclose(grid.min(axis=0), [-0.1, 0.0, -0.2]) and np.allclose(grid.max(axis=0), [0.1, 0.0, 0.2])
    assert patterns.offsets_grid(7, np.array([0.1, 0.1, 0.1])).shape == (7, 3)
    rand = patterns.offsets_random(100, np.array([0.1, 0.2, 0.0]), seed=1)
    assert np.all(np.abs(rand) <= [0.1, 0.2, 0.0])


def test_rpy_and_slerp():
    from scipy.spatial.transform import Rotation

    for rpy in ([0, 0, 0], [180, 0, 0], [10, 20, 30], [-45, 80, 170]):
        xyzw = Rotation.from_euler("xyz", rpy, degrees=True).as_quat()
        q = patterns.rpy_to_quat(rpy)
        assert abs(abs(np.dot(q, np.roll(xyzw, 1))) - 1.0) < 1e-12
    a = np.array([[1.0, 0, 0, 0]])
    b = np.array([[np.cos(np.pi / 4), 0, 0, np.sin(np.pi / 4)]])  # 90 deg about z
    assert np.allclose(patterns.slerp(a, b, np.array([0.0])), a)
    assert np.allclose(patterns.slerp(a, b, np.array([1.0])), b)
    mid = patterns.slerp(a, b, np.array([0.5]))
    assert np.allclose(mid, [[np.cos(np.pi / 8), 0, 0, np.sin(np.pi / 8)]])
    assert np.allclose(patterns.slerp(a, -b, np.array([0.5])), mid)  # shortest arc


def test_keyframes_interpolate_loop_and_hold():
    times = np.array([0.0, 1.0, 3.0])
    poss = np.array([[0.0, 0, 0], [1.0, 0, 0], [1.0, 2.0, 0]])
    pos, quat = patterns.keyframes(np.array([0.5, 2.0, 5.0, -1.0]), times, poss, None, loop=False)
    assert quat is None
    assert np.allclose(pos, [[0.5, 0, 0], [1.0, 1.0, 0], [1.0, 2.0, 0], [0, 0, 0]])
    pos, _ = patterns.keyframes(np.array([3.5, 6.0]), times, poss, None, loop=True)
    assert np.allclose(pos, [[0.5, 0, 0], [0, 0, 0]])


def test_runner_keyframes_with_stagger():
    spec = scenefile.SceneSpec.model_validate({
        "robot": "panda", "envs": {"n_envs": 3}, "record": {"fps": 10},
        "targets": [{"link": "hand", "rot_mask": [False, False, True], "motion": {
            "type": "keyframes", "times": [0, 1], "stagger": 0.5,
            "poses": [{"pos": [0.5, 0.0, 0.3], "rpy": [180, 0, 0]}, {"pos": [0.5, 0.2, 0.3], "rpy": [180, 0, 90]}]}}]})
    scene, runner = scenefile.build(spec, debug_frames=False)
    pos, quat = runner.targets_at(1.0)[0]
    assert np.allclose(pos[:, 1], [0.2, 0.1, 0.0])
    assert np.allclose(np.linalg.norm(quat, axis=1), 1.0)
    frames = runner.run(3)
    assert [f.index for f in frames] == [0, 1, 2]
    assert runner.t == pytest.approx(0.3)
    scene.destroy()
