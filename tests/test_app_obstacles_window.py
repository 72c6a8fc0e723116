"""Issue 19 in the real window under Xvfb (driven from outside, see ``_appwindow``): an obstacle is
picked in the Collisions panel and dragged with the real mouse into the arm's path, and the robot
then goes around it (judged by the engine's sphere check, conservative for the meshes, on the qpos
the window reports, with the obstacle where the window put it); the view shows the ball where it
was dragged and the arm moved. Then the sphere toggle draws the spheres, and a bad margin typed
into the solver panel is an error naming the field while the app runs on."""

from __future__ import annotations

import time

import numpy as np
from _appwindow import grab_screen, inside_left
from _clutter import BALL, BALL_START, write_scene

import engine as ik
from engine import scenefile

BALL_RGB = (0.2, 0.3, 0.9)  # the ball's colour in _clutter.SCENE
SPHERE_RGB = (0.2, 0.85, 1.0)  # app.collision_view.SPHERE_RGBA


def _hue_share(img: np.ndarray, rgb, min_chroma: float = 30.0) -> float:
    """Share of pixels of ``rgb``'s hue (colour minus grey within 0.95 cosine of the tint's, and
    at least ``min_chroma`` grey levels of colour)."""
    px = img.astype(float)
    chroma = px - px.mean(axis=-1, keepdims=True)
    tint = np.array(rgb) - np.mean(rgb)
    norm = np.linalg.norm(chroma, axis=-1)
    cos = chroma @ tint / (np.maximum(norm, 1e-9) * np.linalg.norm(tint))
    return float(((cos > 0.95) & (norm > min_chroma)).mean())


def _words(text: str) -> str:
    """``text`` with each run of white space as one space (the readouts fit lines to the panel by
    collapsing spaces)."""
    return " ".join(text.split())


def _disk(img: np.ndarray, c, r: float) -> np.ndarray:
    """The pixels of ``img`` within ``r`` px of ``c`` (x, y), as (N, 3)."""
    yy, xx = np.mgrid[0:img.shape[0], 0:img.shape[1]]
    return img[(xx - c[0]) ** 2 + (yy - c[1]) ** 2 <= r * r][None]


def _collides(spec_path, obstacle_pose, qpos) -> np.ndarray:
    """``in_collision`` of ``qpos`` (n_envs, n_qs) with the ball at ``obstacle_pose`` (pos 3, quat 4)."""
    spec = scenefile.load(spec_path)
    spec.obstacles[BALL] = spec.obstacles[BALL].model_copy(update={"pos": tuple(obstacle_pose[:3])})
    scene, runner = scenefile.build(spec)
    try:
        runner.robot.set_qpos(np.array(qpos))
        return np.asarray(runner.robot.in_collision())
    finally:
        scene.destroy()


def test_drag_an_obstacle_into_the_arm_and_the_robot_goes_around_it(launch, display, tmp_path):
    ik.init(backend="cpu")
    path = write_scene(tmp_path)
    app = launch(scene_path=str(path))
    r = app.wait_report(lambda r: r.get("images", 0) >= 3 and "in collision 0.0 %" in _words(r.get("readouts", "")))
    app.xdotool("key", "space")  # pause the clock: from now on only our edits solve
    r = app.wait_frames(3)
    qpos0 = np.array(r["qpos"])
    assert not _collides(path, r["obstacles"][BALL], qpos0).any()
    ox, oy = r["view_origin"]
    w, h = r["view_size"]
    box = (ox, oy, ox + w, oy + h)

    # pick the ball in the Collisions panel (a radio button per obstacle: none, box, sphere)
    x0, y0, x1, y1 = r["widgets"]["obstacle_pick"]
    app.click(x0 + 10, y0 + (BALL + 1.5) * (y1 - y0) / 3)
    r = app.wait_report(lambda r: r["obstacle_selected"] == BALL and r["obstacle_handles"], timeout=30)
    before = grab_screen(display, box)  # (with the ball's gizmo)
    ball0_px = np.array(r["obstacle_px"][BALL])

    # drag its y arrow 0.35 m towards -y: onto the forearm
    arrow = next(h for h in r["obstacle_handles"] if h["kind"] == "axis" and h["axis"] == 1)
    a, b = np.array(arrow["points_px"][0]), np.array(arrow["points_px"][1])
    m_per_px = np.linalg.norm(np.subtract(arrow["points"][1], arrow["points"][0])) / np.linalg.norm(b - a)
    start = np.array([ox, oy]) + a + 0.8 * (b - a)
    shift = -0.35 / m_per_px * (b - a) / np.linalg.norm(b - a)
    r = app.drag(start, shift, steps=12, pause=0.05)
    moved = np.array(r["obstacles"][BALL][:3]) - BALL_START
    assert abs(moved[1] + 0.35) < 0.02 and np.abs(moved[[0, 2]]).max() < 1e-6, moved

    # the robot then goes around it: new answers, collision-free, where the old ones collide. The
    # report's obstacle poses are the edited ones at once; its answers are judged once they follow
    # the last edit (solved.edits): an answer to a drag step before the last one is clear of the
    # ball where that step put it, not necessarily where the drag ended.
    r = app.wait_report(lambda r: r["solved"]["edits"] == r["edits"]
                        and np.abs(np.array(r["qpos"]) - qpos0).max() > 1e-3
                        and r["colliding"] == [False, False], timeout=60)
    pose = r["obstacles"][BALL]
    assert _collides(path, pose, qpos0).all(), "the ball was not dragged into the arm's path (the control)"
    assert not _collides(path, pose, r["qpos"]).any(), "the robot did not go around the ball"
    assert "in collision 0.0 %" in _words(r["readouts"]), r["readouts"]
    assert not [m for m in r["messages"] if m[0] == "error"], r["messages"]

    # what is drawn changed: the ball is where it was dragged, gone from where it was
    x0, y0, x1, y1 = r["widgets"]["obstacle_pick"]
    app.click(x0 + 10, y0 + 0.5 * (y1 - y0) / 3)  # "none": no gizmo over the ball
    r = app.wait_report(lambda r: r["obstacle_selected"] is None, timeout=30)
    # the image shown is of the scene as it stands (the ball where it was dragged, the arm around it)
    # once the window says its newest image shows the state last solved, and draws a frame after it.
    # (Counting frames without a new image once stood for that; but the GUI runs on while the sim
    # waits, for the solver child say, so ten quiet frames did not mean a current image.)
    app.wait_report(lambda r: r["image_current"], timeout=60)
    r = app.wait_frames(3)
    after = grab_screen(display, box)
    ball1_px = np.array(r["obstacle_px"][BALL])
    assert np.linalg.norm(ball1_px - ball0_px) > 30, (ball0_px, ball1_px)
    radius = 0.3 * np.linalg.norm(ball1_px - ball0_px)
    # (the arm that went around the ball may hide part of it from this camera: CI once saw 23 %, a
    # run beside two CPU hogs 11.8 %; the same disk before the drag holds under 5 %)
    assert _hue_share(_disk(after, ball1_px, radius), BALL_RGB) > 0.09
    assert _hue_share(_disk(before, ball1_px, radius), BALL_RGB) < 0.05
    assert _hue_share(_disk(after, ball0_px, radius), BALL_RGB) < 0.05
    assert np.abs(after.astype(int) - before).max(axis=2).mean() > 1.0

    # the sphere toggle (a real click) draws the spheres; a second click hides them
    app.click_widget("show_spheres", at=lambda rect: inside_left(rect, 8))
    r = app.wait_report(lambda r: r["spheres_shown"], timeout=30)
    t0 = time.monotonic()
    while True:  # the sim draws them and the renderer's next image brings them (software GL: seconds)
        shown = grab_screen(display, box)
        if _hue_share(shown, SPHERE_RGB) > _hue_share(after, SPHERE_RGB) + 0.003 or time.monotonic() - t0 > 120:
            break  # (30 s was once too short beside the reference modules on a busy machine)
        app.wait_frames(2)
    assert _hue_share(shown, SPHERE_RGB) > _hue_share(after, SPHERE_RGB) + 0.003
    app.click_widget("show_spheres", at=lambda rect: inside_left(rect, 8))
    r = app.wait_report(lambda r: not r["spheres_shown"], timeout=30)

    # a bad margin typed into the solver panel: an error naming the field; the app runs on
    app.click_widget("solver_collision_margin", at=inside_left)
    app.select_all()
    app.type("-0.5")
    app.xdotool("key", "Return")
    r = app.wait_report(lambda r: "collision_margin" in r["status"][1], timeout=30)
    assert r["status"][0] == "error"
    frames = r["frames"]
    r = app.wait_report(lambda r: r["frames"] > frames + 5, timeout=30)
    app.xdotool("key", "space")  # still alive: play resumes
    r = app.wait_report(lambda r: r["state"]["playing"], timeout=30)
