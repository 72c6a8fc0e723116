"""The app's controller without a window: scene lifecycle, per-frame solving, error handling, gizmo
drags through the pointer API, masks, groups, save / reopen, recording, manual joints and env
picking. Images are rendered offscreen (OSMesa) at a small resolution."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

import engine as ik
from app import gizmo as gz
from app.controller import AppController
from engine import scenefile
from engine.transforms import quat_mul

RES = (320, 180)

PANDA_POSE_SCENE = """\
robot: panda
envs:
  n_envs: 4
solver:
  seed: 0
targets:
  - link: hand
    pos: [0.45, 0.1, 0.4]
    quat: [0.0, 1.0, 0.0, 0.0]
"""

FINGERS_SCENE = """\
robot: panda
envs:
  n_envs: 4
solver:
  seed: 0
targets:
  - link: left_finger
    pos: [0.3, -0.04, 0.53]
    quat: [0.0, 1.0, 0.0, 0.0]
  - link: right_finger
    pos: [0.3, 0.04, 0.53]
    quat: [0.0, 1.0, 0.0, 0.0]
"""


@pytest.fixture(scope="module", autouse=True)
def engine_cpu():
    ik.init(backend="cpu")


@pytest.fixture
def ctl():
    """The default scene (the seed's 16 Pandas, a circling hand target), small offscreen view."""
    c = AppController(res=RES)
    yield c
    c.close()


@pytest.fixture
def scene_ctl(tmp_path):
    """A controller on a scene file written from text into tmp_path."""
    made = []

    def make(text: str, name: str = "scene.yaml") -> AppController:
        path = tmp_path / name
        path.write_text(text)
        c = AppController(path, res=RES)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


# -- helpers ------------------------------------------------------------------------------------------
def hand_pos(c: AppController, link: str = "hand") -> np.ndarray:
    """(n_envs, 3) env-local position of ``link``."""
    idx = c.robot.get_link(link).idx_local
    return c.robot.get_links_pos().reshape(c.n_envs, -1, 3)[:, idx].astype(float)


def link_quat(c: AppController, link: str) -> np.ndarray:
    idx = c.robot.get_link(link).idx_local
    return c.robot.get_links_quat().reshape(c.n_envs, -1, 4)[:, idx].astype(float)


def handle(c: AppController, kind: str, axis: int, target: int = 0) -> gz.Handle:
    return next(h for h in gz.handle_geometry(c.targets.gizmo(target)) if h.kind == kind and h.axis == axis)


def pixel(c: AppController, point) -> np.ndarray:
    px, depth = c.camera.project(np.asarray(point, float))
    assert depth > 0 and np.all(np.isfinite(px)), f"{point} is not in front of the camera"
    return px


def drag(c: AppController, start3d, end3d, steps: int = 5, ctrl: bool = False, via=None) -> None:
    """A left-button drag through the pointer API from the pixel of ``start3d`` to that of ``end3d``
    (``via``: world points to pass through, default a straight line in pixels)."""
    a, b = pixel(c, start3d), pixel(c, end3d)
    assert c.pointer_down("left", *a) == "gizmo"
    path = [pixel(c, p) for p in via] if via is not None else [a + (b - a) * k / steps for k in range(1, steps + 1)]
    for p in path:
        c.pointer_move(*p, ctrl=ctrl)
    c.pointer_move(*b, ctrl=ctrl)
    c.pointer_up(*b)


def picked(c: AppController, point) -> tuple[int, gz.Handle] | None:
    found = c.targets.pick(*pixel(c, point))
    return None if found is None else (found[0], found[1].handle)


def solve_now(c: AppController, frames: int = 1):
    """Solve the current targets without advancing time (paused + an edit pending)."""
    c.playing = False
    for _ in range(frames):
        c.dirty = True
        c.update()
    return c.last_frame


def quat_angle_axis(q) -> tuple[float, np.ndarray]:
    q = np.asarray(q, float) / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    s = np.linalg.norm(q[1:])
    return 2.0 * math.atan2(s, q[0]), q[1:] / max(s, 1e-12)


def conj(q) -> np.ndarray:
    return np.array([q[0], -q[1], -q[2], -q[3]], float)


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


# -- gizmo drags ----------------------------------------------------------------------------------------
def test_axis_drag_moves_target_along_x_and_robots_follow(ctl):
    before_frame = solve_now(ctl, frames=2)
    assert before_frame.success.all()
    t = ctl.runner.t
    targets_before = ctl.runner.targets_at(t)[0][0].copy()
    hands_before = hand_pos(ctl)
    pos0 = np.array(ctl.spec.targets[0].pos)
    quat0 = ctl.spec.targets[0].orientation()

    h = handle(ctl, "axis", 0)
    assert h.enabled
    grab = h.points[0] + 0.95 * (h.points[1] - h.points[0])
    hit = picked(ctl, grab)
    assert hit is not None and hit[0] == 0 and (hit[1].kind, hit[1].axis) == ("axis", 0)
    ctl.targets.events.clear()
    drag(ctl, grab, grab + np.array([0.1, 0.0, 0.0]))

    pos1 = np.array(ctl.spec.targets[0].pos)
    np.testing.assert_allclose(pos1 - pos0, [0.1, 0.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(ctl.spec.targets[0].orientation(), quat0, atol=1e-12)
    kinds = [e.kind for e in ctl.targets.events]
    assert kinds[0] == "start" and kinds[-1] == "end" and set(kinds[1:-1]) == {"move"} and len(kinds) >= 3
    assert all(e.target == 0 for e in ctl.targets.events)
    np.testing.assert_allclose(ctl.targets.events[-1].pos, pos1, atol=1e-12)

    # the runner's per-env targets (the circle around pos) moved by exactly 0.1 m along x
    np.testing.assert_allclose(ctl.runner.targets_at(t)[0][0] - targets_before,
                               np.tile([0.1, 0.0, 0.0], (16, 1)), atol=1e-6)
    assert ctl.dirty
    after_frame = solve_now(ctl, frames=2)
    assert ctl.runner.t == t  # paused: same time, only the edit re-solved
    assert after_frame.success.all()
    moved = hand_pos(ctl) - hands_before
    assert moved[:, 0].mean() > 0.09
    np.testing.assert_allclose(moved, np.tile([0.1, 0.0, 0.0], (16, 1)), atol=2e-3)

    # one undo step restores the pose before the drag; redo re-applies it
    assert ctl.targets.undo()
    np.testing.assert_allclose(ctl.spec.targets[0].pos, pos0, atol=1e-12)
    assert ctl.targets.redo()
    np.testing.assert_allclose(ctl.spec.targets[0].pos, pos1, atol=1e-12)
    assert ctl.targets.undo() and not ctl.targets.undo()  # the drag was one step, nothing before it


def test_release_after_an_unseen_move_applies_it(ctl):
    """The button can come up in the same GUI frame as the last motion: the release position counts."""
    pos0 = np.array(ctl.spec.targets[0].pos)
    h = handle(ctl, "axis", 0)
    grab = h.points[0] + 0.95 * (h.points[1] - h.points[0])
    a, b = pixel(ctl, grab), pixel(ctl, grab + np.array([0.1, 0.0, 0.0]))
    assert ctl.pointer_down("left", *a) == "gizmo"
    ctl.pointer_up(*b)
    np.testing.assert_allclose(np.array(ctl.spec.targets[0].pos) - pos0, [0.1, 0.0, 0.0], atol=1e-6)
    assert not ctl.targets.dragging


def test_plane_drag_stays_in_its_plane(ctl):
    pos0 = np.array(ctl.spec.targets[0].pos)
    h = handle(ctl, "plane", 2)  # the xy square
    assert h.enabled
    hit = picked(ctl, h.center)
    assert hit is not None and (hit[1].kind, hit[1].axis) == ("plane", 2)
    drag(ctl, h.center, h.center + np.array([0.05, -0.03, 0.0]))
    pos1 = np.array(ctl.spec.targets[0].pos)
    np.testing.assert_allclose(pos1 - pos0, [0.05, -0.03, 0.0], atol=1e-6)
    assert pos1[2] == pos0[2]


def test_ring_drag_rotates_by_the_swept_angle(ctl):
    pos0, quat0 = np.array(ctl.spec.targets[0].pos), ctl.spec.targets[0].orientation()
    h = handle(ctl, "ring", 0)  # rot_mask [F, F, T]: the rings about x and y are on, z is off
    assert h.enabled and not handle(ctl, "ring", 2).enabled
    u, v = np.eye(3)[1], np.eye(3)[2]  # world space: the ring about x lies in the yz plane

    def ring_point(deg):
        a = math.radians(deg)
        return h.center + h.radius * (math.cos(a) * u + math.sin(a) * v)

    start = next(d for d in range(0, 360, 15) if (p := picked(ctl, ring_point(d))) is not None
                 and (p[1].kind, p[1].axis) == ("ring", 0) and picked(ctl, ring_point(d + 30)) is not None)
    drag(ctl, ring_point(start), ring_point(start + 30), via=[ring_point(start + k * 5) for k in range(1, 7)])
    quat1 = ctl.spec.targets[0].orientation()
    angle, axis = quat_angle_axis(quat_mul(quat1, conj(quat0)))
    assert abs(math.degrees(angle) - 30.0) < 0.5, math.degrees(angle)
    np.testing.assert_allclose(axis, [1.0, 0.0, 0.0], atol=1e-3)
    np.testing.assert_allclose(ctl.spec.targets[0].pos, pos0, atol=1e-12)  # a rotation does not move it
    assert ctl.targets.undo()
    np.testing.assert_allclose(ctl.spec.targets[0].orientation(), quat0, atol=1e-12)


def test_ctrl_snaps_to_whole_centimetres(ctl):
    pos0 = np.array(ctl.spec.targets[0].pos)
    h = handle(ctl, "axis", 0)
    grab = h.points[0] + 0.95 * (h.points[1] - h.points[0])
    drag(ctl, grab, grab + np.array([0.0537, 0.0, 0.0]), ctrl=True)
    d = np.array(ctl.spec.targets[0].pos) - pos0
    np.testing.assert_allclose(d, [0.05, 0.0, 0.0], atol=1e-9)
    assert abs(d[0] / 0.01 - round(d[0] / 0.01)) < 1e-6


# -- masks and groups -------------------------------------------------------------------------------------
def test_pos_mask_changes_what_the_solver_enforces(scene_ctl):
    c = scene_ctl(PANDA_POSE_SCENE)
    assert solve_now(c, 2).success.all()
    assert all(h.enabled for h in gz.handle_geometry(c.targets.gizmo(0)))

    c.targets.set_mask(0, "pos_mask", 2, False)
    assert c.spec.targets[0].pos_mask == (True, True, False)
    assert not handle(c, "axis", 2).enabled
    assert handle(c, "axis", 0).enabled and handle(c, "axis", 1).enabled
    assert not handle(c, "plane", 0).enabled and not handle(c, "plane", 1).enabled  # yz, zx include z
    assert handle(c, "plane", 2).enabled
    assert all(handle(c, "ring", k).enabled for k in range(3))
    dimmed = handle(c, "axis", 2).display_color()
    assert dimmed != gz.AXIS_COLORS[2]

    c.targets.set_pose(0, pos=(0.45, 0.1, 3.0))  # z far out of reach, but z is free now
    frame = solve_now(c, 2)
    assert frame.success.all(), frame.pos_error
    np.testing.assert_allclose(hand_pos(c)[:, :2], np.tile([0.45, 0.1], (4, 1)), atol=1e-3)
    assert (hand_pos(c)[:, 2] < 1.5).all()
    for q in link_quat(c, "hand"):  # the orientation is still enforced
        assert math.degrees(quat_angle_axis(quat_mul(q, conj([0.0, 1.0, 0.0, 0.0])))[0]) < 1.0

    c.targets.set_mask(0, "pos_mask", 2, True)
    assert handle(c, "axis", 2).enabled
    frame = solve_now(c, 1)
    assert not frame.success.any()
    assert (frame.pos_error[:, 0] > 1.0).all()


def test_two_true_rot_mask_refused(scene_ctl):
    c = scene_ctl(PANDA_POSE_SCENE)
    before = c.spec.model_copy(deep=True)
    undo_depth = len(c.targets._undo)
    with pytest.raises(ValueError, match="rot_mask") as err:
        c.targets.set_mask(0, "rot_mask", 0, False)  # [F, T, T]: two axes
    assert "two true axes" in str(err.value)
    assert c.spec == before and c.spec.targets[0].rot_mask == (True, True, True)
    assert len(c.targets._undo) == undo_depth
    c.targets.set_mask(0, "pos_mask", 0, False)  # the editor still works after the refusal
    assert c.spec.targets[0].pos_mask == (False, True, True)


def test_fingertip_group_solves_together(scene_ctl):
    c = scene_ctl(FINGERS_SCENE)
    assert c.runner.groups == [(None, [0]), (None, [1])]
    # targets from FK of a reachable configuration (joint limits respected, fingers half open)
    q = c.robot.tree.default_qpos.copy()
    q[:7] += [0.3, 0.2, -0.2, 0.3, 0.1, -0.2, 0.4]
    q[7:] = 0.02
    links_pos, links_quat = c.robot.forward_kinematics(np.tile(q, (c.n_envs, 1)))
    for i, name in enumerate(("left_finger", "right_finger")):
        idx = c.robot.get_link(name).idx_local
        c.targets.set_pose(i, pos=links_pos[0, idx], quat=links_quat[0, idx])
    c.targets.set_group(0, "fingers")
    c.targets.set_group(1, "fingers")
    assert c.runner.groups == [("fingers", [0, 1])]
    assert [t.group for t in c.spec.targets] == ["fingers", "fingers"]
    frame = solve_now(c, 3)
    assert frame.success.shape == (4,) and frame.success.all(), (frame.pos_error, frame.rot_error)
    assert frame.pos_error.shape == (4, 2) and (frame.pos_error < 1e-3).all()
    for i, name in enumerate(("left_finger", "right_finger")):
        np.testing.assert_allclose(hand_pos(c, name), np.tile(c.spec.targets[i].pos, (4, 1)), atol=1e-3)


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
    ctl.wheel(2)
    ctl.update()
    assert ctl.last_frame.success.shape == (9,)

    path = tmp_path / "s.yaml"
    assert ctl.save_scene(path), list(ctl.messages)
    assert ctl.messages[-1] == ("info", f"saved {path}")
    loaded = scenefile.load(path)
    assert loaded == ctl.spec

    fresh = AppController(path, res=RES)
    try:
        assert fresh.spec == ctl.spec
        assert fresh.spec.targets == ctl.spec.targets
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


def test_ctrl_click_on_a_link_adds_a_target_there(scene_ctl):
    c = scene_ctl(PANDA_POSE_SCENE)
    c.update()
    c.playing = False
    c.select_env(0)
    c.camera.frame_points(c.robot.get_links_pos().reshape(4, -1, 3)[0] + c.scene.envs_offset()[0])
    link = c.robot.get_link("link4")
    env = 2
    world = c.robot.get_links_pos().reshape(4, -1, 3)[env, link.idx_local] + c.scene.envs_offset()[env]
    px, py = c.camera.project(world[None])[0][0]
    assert c.link_at_pixel(px, py) is not None
    n_before = len(c.targets.targets)
    assert c.pointer_down("left", px, py, ctrl=True) == "pick"
    c.pointer_up(px, py)
    found_env, name = c.link_at_pixel(px, py)
    assert len(c.targets.targets) == n_before + 1
    added = c.targets.targets[-1]
    assert added.link == name and c.selected_env == found_env
    # the new target sits at that link's current pose in that env
    pos = c.robot.get_links_pos().reshape(4, -1, 3)[found_env, c.robot.get_link(name).idx_local]
    np.testing.assert_allclose(added.pos, pos, atol=1e-6)
    # ctrl + click on empty space adds nothing and says so
    c.pointer_down("left", 2, 2, ctrl=True)
    c.pointer_up(2, 2)
    assert len(c.targets.targets) == n_before + 1 and c.messages[-1][0] == "info"


def test_spread_gives_each_env_its_own_offset_around_the_gizmo(scene_ctl):
    c = scene_ctl(PANDA_POSE_SCENE)
    c.playing = False
    ed = c.targets
    ed.set_spread(0, (0.05, 0.05, 0.0))
    c.update()
    pos = c.last_frame.targets[0][0]  # (4, 3): one target per env
    base = np.array(ed.targets[0].pos)
    np.testing.assert_allclose(pos.mean(axis=0), base, atol=1e-9)  # a 2 x 2 grid centred on the gizmo
    assert len({tuple(p) for p in pos.round(6)}) == 4 and np.allclose(pos[:, 2], base[2])
    assert c.last_frame.success.all()
    # the gizmo moves the whole spread
    ed.set_pose(0, pos=base + [0.02, 0.0, 0.0])
    c.dirty = True
    c.update()
    np.testing.assert_allclose(c.last_frame.targets[0][0] - pos, np.tile([0.02, 0, 0], (4, 1)), atol=1e-9)
    ed.set_spread(0, (0, 0, 0))  # shared by every env again
    assert ed.targets[0].motion is None and ed.spread_of(0) == (0.0, 0.0, 0.0)
    ed.undo()
    assert ed.spread_of(0) == (0.05, 0.05, 0.0)


def test_spread_refused_for_a_target_with_another_pattern(ctl):
    with pytest.raises(ValueError, match="circle"):
        ctl.targets.set_spread(0, (0.1, 0.1, 0.0))


# -- rotation modes and the status line ---------------------------------------------------------------
def test_rotation_modes_from_any_to_any(scene_ctl):
    c = scene_ctl(FINGERS_SCENE)
    c.targets.set_group(0, "fingers")
    c.targets.set_group(1, "fingers")
    quat = c.spec.targets[0].orientation()
    for mode in ("align z", "full", "free", "align x", "full", "align y", "free", "full"):
        c.targets.set_rot_mode(0, mode)
        assert c.targets.rot_mode(0) == c.targets.rot_mode(1) == mode  # the group follows
        np.testing.assert_allclose(c.spec.targets[0].orientation(), quat)  # kept for the way back
        assert solve_now(c).pos_error.shape == (4, 2)
    assert not [m for m in c.messages if m[0] == "error"], list(c.messages)
    with pytest.raises(ValueError, match="mode"):
        c.targets.set_rot_mode(0, "align xy")
    assert c.targets.undo() and c.targets.rot_mode(0) == "free"


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
    from app.status import fit

    def measure(text, wrap):  # 10 px per character, wrapped at ``wrap`` px, 15 px lines
        per_line = max(int(wrap // 10), 1) if wrap else 10**9
        return (min(len(text), per_line) * 10, 15 * -(-len(text) // per_line))

    assert fit("short", 200, 2, measure) == ("short", False)
    shown, cut = fit("x" * 100, 200, 2, measure)
    assert cut and shown.endswith("...") and measure(shown, 200)[1] <= 30 and len(shown) == 40
    assert fit("two\nlines", 200, 2, measure) == ("two lines", False)
