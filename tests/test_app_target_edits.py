"""Editing targets through the controller without a window: gizmo drags through the pointer API,
masks, groups, targets added on a link, spread patterns and rotation modes, each judged by what
the solver then does (the FK of its answers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

# the fixtures ctl, scene_ctl and (autouse) engine_cpu come from _controller: pytest finds them in
# this module's names, and ruff reads each test's argument of that name as a redefinition (F811)
# ruff: noqa: F811
from _controller import (  # noqa: F401
    FINGERS_SCENE,
    PANDA_POSE_SCENE,
    conj,
    ctl,
    drag,
    engine_cpu,
    hand_pos,
    handle,
    link_quat,
    picked,
    pixel,
    quat_angle_axis,
    scene_ctl,
    settle,
    solve_now,
)

from app.control import gizmo as gz
from engine.transforms import quat_mul


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
    after_frame = settle(ctl)  # smooth: followed over a few frames
    assert ctl.runner.t == t  # paused: same time, only the edit re-solved
    assert after_frame.success.all()
    moved = hand_pos(ctl) - hands_before
    assert moved[:, 0].mean() > 0.09
    np.testing.assert_allclose(moved, np.tile([0.1, 0.0, 0.0], (16, 1)), atol=2e-3)

    # one undo step restores the pose before the drag; redo re-applies it
    assert ctl.history.undo()
    np.testing.assert_allclose(ctl.spec.targets[0].pos, pos0, atol=1e-12)
    assert ctl.history.redo()
    np.testing.assert_allclose(ctl.spec.targets[0].pos, pos1, atol=1e-12)
    assert ctl.history.undo() and not ctl.history.undo()  # the drag was one step, nothing before it


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
    assert ctl.history.undo()
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
    undo_depth = len(c.history)
    with pytest.raises(ValueError, match="rot_mask") as err:
        c.targets.set_mask(0, "rot_mask", 0, False)  # [F, T, T]: two axes
    assert "two true axes" in str(err.value)
    assert c.spec == before and c.spec.targets[0].rot_mask == (True, True, True)
    assert len(c.history) == undo_depth
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
    c.history.undo()
    assert ed.spread_of(0) == (0.05, 0.05, 0.0)


def test_spread_refused_for_a_target_with_another_pattern(ctl):
    with pytest.raises(ValueError, match="circle"):
        ctl.targets.set_spread(0, (0.1, 0.1, 0.0))


# -- rotation modes ---------------------------------------------------------------------------------------
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
    assert c.history.undo() and c.targets.rot_mode(0) == "free"


