"""The real dearpygui window under Xvfb, driven from outside (see ``_appwindow``): the default scene
on screen, a gizmo drag with the real mouse, screenshots and the help window."""

from __future__ import annotations

import signal

import imageio.v2 as imageio
import numpy as np
from _appwindow import grab_screen, robot_pixels


def test_the_window_fits_the_screen(display, monkeypatch):
    from app.gui import window as gui

    assert gui.window_size((1920, 1080)) == (1728, 972)
    assert gui.window_size((1366, 768)) == (1229, 691)
    assert gui.window_size((1024, 600)) == (1024, 600)  # never larger than the screen
    assert gui.window_size(None) == (1229, 691)
    monkeypatch.setenv("DISPLAY", display)
    w, h = gui.screen_size()  # the tests' X screen (Xvfb's 1920x1080 unless a display was given)
    assert w >= 640 and h >= 480


def test_late_imports_names_each_package_imported_after_the_window_even_when_one_left(monkeypatch):
    """The report's ``late_imports`` is recomputed only when ``sys.modules`` changed (it is read
    every frame); a module removed and another added in its place between two reads still shows."""
    import sys
    import types
    from types import SimpleNamespace

    from app.gui import window as gui

    app = SimpleNamespace(_modules_at_window=set(sys.modules.copy()), _late_imports=((-1, None), []))
    late = lambda: gui.App.late_imports(app)  # noqa: E731
    assert late() == []
    monkeypatch.setitem(sys.modules, "ikstudio_probe_a", types.ModuleType("ikstudio_probe_a"))
    assert late() == ["ikstudio_probe_a"]
    monkeypatch.delitem(sys.modules, "ikstudio_probe_a")
    monkeypatch.setitem(sys.modules, "ikstudio_probe_b.sub", types.ModuleType("ikstudio_probe_b.sub"))
    assert late() == ["ikstudio_probe_b"]  # the same count as before: the last name tells


def test_default_scene_shows_16_robot_cells(launch, tmp_path, display, monkeypatch):
    from app.gui import window as gui

    monkeypatch.setenv("DISPLAY", display)
    screen = gui.screen_size()
    shot = tmp_path / "window.png"
    app = launch(frames=40, screenshot=str(shot))
    assert app.wait_exit() == 0, app.log()
    assert "Traceback" not in app.log(), app.log()
    r = app.read()
    assert r["frames_shown"] == 40 and r["images"] >= 1
    assert r["image_sizes"] == [r["view_size"]]  # never an image of the view before its layout, scaled up
    assert not [m for m in r["messages"] if m[0] == "error"]
    img = imageio.imread(shot)[..., :3]
    assert img.shape[:2] == tuple(r["window_size"][::-1]) == gui.window_size(screen)[::-1]  # fitted
    (ox, oy), (w, h) = r["view_origin"], r["view_size"]
    view = img[oy:oy + h, ox:ox + w]
    assert view.shape[:2] == (h, w)
    robot = robot_pixels(view)
    centres = np.array(r["env_px"])
    assert centres.shape == (16, 2)
    yy, xx = np.mgrid[0:h, 0:w]
    dist = np.linalg.norm(centres[:, None] - centres[None], axis=2) + np.eye(16) * 1e9
    counts = []
    for k, (px, py) in enumerate(centres):
        assert -5 <= px < w + 5 and -5 <= py < h + 5, f"env {k} is centred off the view at {(px, py)}"
        # robot pixels near the centre; the disks are disjoint, so 16 of them means 16 robot cells
        radius = float(np.clip(0.45 * dist[k].min(), 25.0, 60.0))
        counts.append(int((robot & ((xx - px) ** 2 + (yy - py) ** 2 <= radius**2)).sum()))
    assert min(counts) >= 20, f"robot pixels near each env centre: {counts}"
    # control: away from every robot (over 150 px from all centres) there are next to none
    far = np.min((xx[None] - centres[:, 0, None, None]) ** 2 + (yy[None] - centres[:, 1, None, None]) ** 2,
                 axis=0) > 150**2
    assert far.sum() > 10000 and robot[far].mean() < 1e-3
    # and the view is not blank: the ground and grid are there too
    assert (np.abs(view.astype(int) - [41, 43, 48]).sum(axis=2) > 20).mean() > 0.3


def test_drag_a_gizmo_with_the_real_mouse(launch, tmp_path, display):
    app = launch(screenshot_dir=str(tmp_path))  # (no frame budget: a busy machine's test outlived 200 frames)
    r = app.wait_report(lambda r: r["images"] >= 3 and r["solved"]["frames"] >= 2)  # playing
    app.xdotool("key", "space")  # pause the motion: from now on only our edits move the robots
    r = app.wait_report(lambda r: not r["state"]["playing"])
    paused_at = r["solved"]["frames"]
    r = app.wait_frames(10)
    assert r["solved"]["frames"] <= paused_at + 1, "space did not pause the scene"  # (one may have been in flight)
    qpos0 = np.array(r["qpos"])
    target0 = np.array(r["targets"][0])
    r = app.wait_frames(3)
    np.testing.assert_array_equal(r["qpos"], qpos0, err_msg="space did not pause the scene")

    ox, oy = r["view_origin"]
    h = next(h for h in r["handles"] if h["target"] == 0 and h["kind"] == "axis" and h["axis"] == 0)
    assert h["enabled"]
    a, b = np.array(h["points_px"][0]), np.array(h["points_px"][1])
    p0, p1 = np.array(h["points"][0]), np.array(h["points"][1])
    np.testing.assert_allclose(p1 - p0, [np.linalg.norm(p1 - p0), 0, 0], atol=1e-9)  # world x
    grab = a + 0.9 * (b - a)
    m_per_px = np.linalg.norm(p1 - p0) / np.linalg.norm(b - a)
    offset = 0.1 / m_per_px * (b - a) / np.linalg.norm(b - a)
    start = np.array([ox, oy]) + grab

    r = app.drag(start, offset, steps=10, pause=0.05)

    moved = np.array(r["targets"][0]) - target0
    assert abs(moved[0] - 0.1) < 0.02, moved
    assert np.abs(moved[1:]).max() < 1e-9, moved
    qpos1 = np.array(r["qpos"])
    assert np.abs(qpos1 - qpos0).max(axis=1).min() > 1e-3, "every env's robot follows the target"
    assert not [m for m in r["messages"] if m[0] == "error"], r["messages"]

    # P saves the 3D view as a PNG into the screenshot folder
    app.xdotool("key", "p")
    r = app.wait_report(lambda r: any("screenshot saved" in m[1] for m in r["messages"]), timeout=30)
    pngs = list(tmp_path.glob("ikstudio-*.png"))
    assert len(pngs) == 1
    png = imageio.imread(pngs[0])
    w, h_ = r["view_size"]
    assert png.shape == (h_, w, 3) and png.std() > 5

    # F1 shows the help window over the panels and the view, and hides it again
    box = (210, 130, 750, 570)  # inside the help window (pos (200, 120), 560 x 460)
    before = grab_screen(display, box)
    app.xdotool("key", "F1")
    app.wait_frames(3)
    shown = grab_screen(display, box)
    app.xdotool("key", "F1")
    r = app.wait_frames(3)
    hidden = grab_screen(display, box)
    opened, left = np.abs(shown - before).mean(), np.abs(hidden - before).mean()
    assert opened > 10, "F1 did not open the help window"
    # the robots play on behind it, so the panels and the view change a little between the grabs
    assert not r["state"]["help"] and left < 0.4 * opened, f"F1 did not close the help window ({left} vs {opened})"

    app.proc.send_signal(signal.SIGINT)  # as Ctrl+C in its terminal: it closes as the window's close does
    assert app.wait_exit() == 128 + signal.SIGINT, app.log()
    assert "Traceback" not in app.log(), app.log()
