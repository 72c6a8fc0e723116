"""The app's controller without a window: scene lifecycle, per-frame solving, error handling,
save / reopen, recording, manual joints, env picking and the status line. Images are rendered
offscreen (OSMesa) at a small resolution; the target edits are tests/test_app_target_edits.py."""

from __future__ import annotations

import math
import re
import time

import numpy as np
import pytest

# the fixtures ctl, scene_ctl and (autouse) engine_cpu come from _controller: pytest finds them in
# this module's names, and ruff reads each test's argument of that name as a redefinition (F811)
# ruff: noqa: F811
from _controller import (  # noqa: F401
    RES,
    ctl,
    drag,
    engine_cpu,
    hand_pos,
    handle,
)

from app.control.controller import AppController
from engine import scenefile


# -- batch and rendering ---------------------------------------------------------------------------------
def test_64_envs_every_env_solved_each_frame(ctl):
    assert ctl.set_n_envs(64)
    assert ctl.n_envs == 64 and ctl.spec.envs.n_envs == 64
    ctl.speed = 4.0  # the slowest of the 64 circling targets still moves mm per frame
    qs = []
    for _ in range(4):
        time.sleep(0.1)  # frames advance time by the wall clock (at most 0.1 s)
        readout = ctl.update()
        img = ctl.wait_frame()
        assert readout is not None
        frame = ctl.last_frame
        assert frame.success.shape == (64,) and frame.pos_error.shape == (64, 1)
        assert frame.success.all(), f"failed envs: {np.flatnonzero(~frame.success)}"
        qs.append(frame.qpos.copy())
        assert img is not None and img.shape == (RES[1], RES[0], 3) and img.dtype == np.uint8
    assert qs[-1].shape == (64, ctl.robot.n_qs)
    for a, b in zip(qs, qs[1:]):
        moved = np.abs(b - a).max(axis=1)
        assert (moved > 1e-4).all(), f"envs whose qpos did not change between frames: {np.flatnonzero(moved <= 1e-4)}"
    assert ctl.visualizer.camera.res == RES
    assert not [m for m in ctl.messages if m[0] == "error"]


def test_switch_to_ur5_from_the_catalog(ctl):
    old_robot = ctl.robot
    assert ctl.load_robot("ur5"), list(ctl.messages)
    assert ctl.robot is not old_robot
    assert ctl.messages[-1][0] == "info" and "ur5" in ctl.messages[-1][1]
    names = [row[0] for row in ctl.joint_rows()]
    assert names == ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
                     "wrist_2_joint", "wrist_3_joint"]
    assert ctl.n_envs == 16  # envs kept
    assert ctl.spec.robot.fixed is True and not ctl.robot.is_free  # a catalog arm stays on its base
    assert len(ctl.spec.targets) == 1
    target = ctl.spec.targets[0]
    assert target.link in [link.name for link in ctl.robot.tree.links]
    assert target.pos is not None and target.orientation() is not None
    ctl.playing = True
    for _ in range(3):
        ctl.update()
        img = ctl.wait_frame()
    assert ctl.last_frame.success.shape == (16,) and ctl.last_frame.success.all()
    assert img.shape == (RES[1], RES[0], 3)
    pos = hand_pos(ctl, target.link)
    np.testing.assert_allclose(pos, np.tile(target.pos, (16, 1)), atol=2e-3)


@pytest.mark.parametrize("content", ["<robot name='broken'><link name='a'>", "<robot name='b'><joint/></robot>"],
                         ids=["bad-xml", "bad-joint"])
def test_broken_robot_file_keeps_the_scene(ctl, tmp_path, content):
    path = tmp_path / "broken.urdf"
    path.write_text(content)
    robot, scene, n_envs, spec = ctl.robot, ctl.scene, ctl.n_envs, ctl.spec.model_copy(deep=True)
    assert not ctl.load_robot(str(path))
    level, text = ctl.messages[-1]
    assert level == "error" and "broken.urdf" in text, text
    assert ctl.robot is robot and ctl.scene is scene and ctl.n_envs == n_envs
    assert ctl.spec == spec
    ctl.update()
    assert ctl.wait_frame().shape == (RES[1], RES[0], 3)  # still running on the old scene


def test_malformed_scene_file_and_bad_env_counts_refused(ctl, tmp_path):
    scene, spec = ctl.scene, ctl.spec.model_copy(deep=True)
    bad = tmp_path / "bad.yaml"
    bad.write_text("robot: panda\ntargets: [\n  - link: hand\n")
    assert not ctl.open_scene(bad)
    level, text = ctl.messages[-1]
    assert level == "error" and "bad.yaml" in text, text
    assert ctl.scene is scene and ctl.spec == spec

    invalid = tmp_path / "invalid.yaml"
    invalid.write_text("robot: panda\nenvs:\n  n_envs: -3\n")
    assert not ctl.open_scene(invalid)
    level, text = ctl.messages[-1]
    assert level == "error" and "invalid.yaml" in text and "n_envs" in text, text
    assert ctl.scene is scene

    for n in (0, 5000):
        assert not ctl.set_n_envs(n)
        level, text = ctl.messages[-1]
        assert level == "error" and "n_envs" in text and str(n) in text, text
        assert ctl.scene is scene and ctl.n_envs == 16
    ctl.update()
    ctl.wait_frame()
    assert ctl.last_frame.success.shape == (16,)



# -- save / reopen, recording, manual joints, env picks ---------------------------------------------------
def _close(a, b, loc="spec") -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), (loc, a.keys(), b.keys())
        for k in a:
            _close(a[k], b[k], f"{loc}.{k}")
    elif isinstance(a, list | tuple) and isinstance(b, list | tuple):
        assert len(a) == len(b), (loc, a, b)
        for k, (x, y) in enumerate(zip(a, b, strict=True)):
            _close(x, y, f"{loc}[{k}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9), (loc, a, b)  # a saved file drops float noise
    else:
        assert a == b, (loc, a, b)


def assert_same_spec(a, b) -> None:
    """Two specs equal but for float noise below float32 precision (what a saved file leaves out)."""
    _close(a.model_dump(), b.model_dump())


def test_save_then_reopen_restores_everything(ctl, tmp_path):
    # edits: a target moved by a drag and numerically, masks, a second target in a group, solver, envs, camera
    h = handle(ctl, "axis", 1)
    grab = h.points[0] + 0.95 * (h.points[1] - h.points[0])
    drag(ctl, grab, grab + np.array([0.0, 0.05, 0.0]))
    ctl.targets.set_mask(0, "pos_mask", 2, False)
    i = ctl.targets.add_target("link7")
    ctl.targets.set_pose(i, pos=(0.3, 0.05, 0.6))
    ctl.targets.set_group(0, "arm")
    ctl.targets.set_group(i, "arm")
    assert ctl.spec.targets[i].pos_mask == (True, True, False)  # a group shares its masks
    assert ctl.set_solver_param("damping", 0.02) and ctl.set_solver_param("max_samples", 20)
    assert not ctl.set_solver_param("damping", -1.0) and ctl.messages[-1][0] == "error"
    # one line naming the field, what it got and what it expects: no pydantic report
    assert ctl.messages[-1][1] == "solver: damping: expected a positive number, got -1.0", ctl.messages[-1]
    assert ctl.spec.solver.damping == 0.02
    assert ctl.set_n_envs(9)
    ctl.camera.orbit(40.0, -15.0)
    ctl.wheel(-1)  # out: the 9 envs (framed anew at the new count) stay in view, so a reopen keeps this camera
    ctl.update()
    assert ctl.last_frame.success.shape == (9,)

    path = tmp_path / "s.yaml"
    assert ctl.save_scene(path), list(ctl.messages)
    assert ctl.messages[-1] == ("info", f"saved {path}")
    loaded = scenefile.load(path)
    assert_same_spec(loaded, ctl.spec)
    assert "null" not in path.read_text() and not re.search(r"\d\.\d{12,}", path.read_text()), path.read_text()

    fresh = AppController(path, res=RES)
    try:
        assert_same_spec(fresh.spec, ctl.spec)
        assert [(t.pos_mask, t.rot_mask, t.group) for t in fresh.spec.targets] == \
            [(t.pos_mask, t.rot_mask, t.group) for t in ctl.spec.targets]
        assert fresh.runner.groups == [("arm", [0, 1])]
        assert fresh.spec.solver.damping == 0.02 and fresh.spec.solver.max_samples == 20
        assert fresh.n_envs == 9
        np.testing.assert_allclose(fresh.camera.position(), ctl.camera.position(), atol=1e-3)
        np.testing.assert_allclose(fresh.camera.target, ctl.camera.target, atol=1e-3)
        assert fresh.camera.fov_deg == ctl.camera.fov_deg
        fresh.update()
        assert fresh.last_frame.success.shape == (9,)
    finally:
        fresh.close()


def test_recording_writes_a_playable_video(ctl, tmp_path):
    import imageio.v2 as imageio

    ctl.update()
    ctl.wait_frame()  # nothing pending when the recording starts
    path = tmp_path / "rec.mp4"
    vis = ctl.visualizer
    vis.start_recording(path, fps=30)
    assert vis.is_recording
    for _ in range(10):
        ctl.update()
        ctl.wait_frame()
    assert vis.stop_recording() == path and not vis.is_recording
    assert path.stat().st_size > 1000
    reader = imageio.get_reader(str(path))
    try:
        frames = [np.asarray(f) for f in reader]
    finally:
        reader.close()
    assert len(frames) == 10
    assert all(f.shape == (RES[1], RES[0], 3) for f in frames)
    assert max(float(f.std()) for f in frames) > 5.0  # real pictures, not blank frames


def test_manual_mode_drives_only_the_selected_env(ctl):
    ctl.update()
    ctl.select_env(3)
    rows = ctl.joint_rows()
    name, qi, lo, hi, value = rows[3]
    assert name == "joint4" and lo < value < hi
    q0 = ctl.robot.get_qpos().reshape(16, -1).copy()
    new = 0.5 * (lo + hi)
    ctl.set_joint(qi, new)
    assert ctl.manual
    q1 = ctl.robot.get_qpos().reshape(16, -1)
    changed = np.argwhere(np.abs(q1 - q0) > 1e-9)
    assert changed.tolist() == [[3, qi]]
    assert abs(q1[3, qi] - new) < 1e-5
    assert abs(ctl.joint_rows()[3][4] - new) < 1e-5
    frame = ctl.last_frame
    time.sleep(0.02)
    assert ctl.update() is None  # manual mode: nothing solved, time stands still
    assert ctl.last_frame is frame
    np.testing.assert_array_equal(ctl.robot.get_qpos().reshape(16, -1), q1)
    assert ctl.wait_frame().shape == (RES[1], RES[0], 3)  # still rendering


def test_click_on_an_env_selects_it(ctl):
    pix, depth = ctl.camera.project(ctl.env_centers())
    inside = [k for k in range(16) if depth[k] > 0 and 0 <= pix[k, 0] < RES[0] and 0 <= pix[k, 1] < RES[1]]
    assert len(inside) >= 8
    selected = []
    for k in reversed(inside):  # the gizmo sits in the selected env's cell: click where it is not
        if k == ctl.selected_env or ctl.targets.pick(*pix[k]) is not None:
            continue
        assert ctl.env_at_pixel(*pix[k]) == k
        assert ctl.pointer_down("left", *pix[k]) == "orbit"
        ctl.pointer_up(*pix[k])
        assert ctl.selected_env == k
        selected.append(k)
        if len(selected) == 3:
            break
    assert len(selected) == 3
    # a drag that moves is an orbit, not a click: the selection stays
    k = next(k for k in inside if k != ctl.selected_env and ctl.targets.pick(*pix[k]) is None)
    az = ctl.camera.azimuth_deg
    assert ctl.pointer_down("left", *pix[k]) == "orbit"
    ctl.pointer_move(pix[k][0] + 20, pix[k][1])
    ctl.pointer_up(pix[k][0] + 20, pix[k][1])
    assert ctl.selected_env == selected[-1] and ctl.camera.azimuth_deg != az



# -- the status line --------------------------------------------------------------------------------------
def test_an_error_stays_on_the_status_line_until_its_cause_is_gone(ctl):
    assert ctl.status() is None or ctl.status()[0] != "error"
    assert not ctl.set_solver_param("damping", -1.0)
    assert ctl.status() == ("error", "solver: damping: expected a positive number, got -1.0")
    assert not ctl.set_solver_param("pos_tol", 0.0)
    assert ctl.status()[0] == "error" and "pos_tol" in ctl.status()[1]  # the newest problem shows
    assert ctl.set_solver_param("pos_tol", 1e-3)
    assert "damping" in ctl.status()[1]  # pos_tol fixed: the damping problem is still there
    assert ctl.set_solver_param("damping", 0.02)
    assert ctl.status() is None or ctl.status()[0] != "error"


def test_status_text_is_cut_to_its_lines():
    from app.control.status import fit

    def measure(text, wrap):  # 10 px per character, wrapped at ``wrap`` px, 15 px lines
        per_line = max(int(wrap // 10), 1) if wrap else 10**9
        return (min(len(text), per_line) * 10, 15 * -(-len(text) // per_line))

    assert fit("short", 200, 2, measure) == ("short", False)
    shown, cut = fit("x" * 100, 200, 2, measure)
    assert cut and shown.endswith("...") and measure(shown, 200)[1] <= 30 and len(shown) == 40
    assert fit("two\nlines", 200, 2, measure) == ("two lines", False)
