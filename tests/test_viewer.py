"""The interactive viewer (``gs.Scene(show_viewer=True)``), under Xvfb.

A window titled "IK Studio viewer" opens at ``scene.build()``; the X server's own pixels (a
screenshot of the window, read back with xwininfo and Pillow) show the robot where the camera
projects its links, and equal the visualizer's offscreen render; they change after
``scene.step()`` moves the robot and after a mouse drag orbits the camera; closing the window
leaves the scene running. With no display the scene warns once and runs headless. The camera
moves (orbit, pan, zoom) are checked in plain numpy.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _support import skip_or_fail

from engine.vis import Camera
from engine.vis import viewer as viewer_mod

REPO = Path(__file__).resolve().parent.parent

WINDOW = r"""
import json, subprocess, sys, time
import numpy as np
from PIL import ImageGrab
import engine as gs

def wait(pred, timeout=20.0):
    end = time.time() + timeout
    while not pred():
        if time.time() > end:
            raise SystemExit("timed out waiting for the viewer")
        time.sleep(0.05)

def window_geometry():
    out = subprocess.run(["xdotool", "search", "--name", "IK Studio viewer"], capture_output=True, text=True)
    wid = out.stdout.split()[0]
    info = subprocess.run(["xwininfo", "-id", wid], capture_output=True, text=True).stdout
    field = lambda key: int(info.split(key)[1].split()[0])
    return wid, field("Absolute upper-left X:"), field("Absolute upper-left Y:"), field("Width:"), field("Height:")

def screenshot():
    wid, x, y, w, h = window_geometry()
    return np.asarray(ImageGrab.grab(bbox=(x, y, x + w, y + h), xdisplay=sys.argv[1]))[..., :3]

def settle(viewer, vis):
    # wait for the window to show the scene as it is now; the screenshot and the offscreen render
    assert viewer.wait_shown()
    time.sleep(0.2)  # the X server has drawn it
    return screenshot(), vis.render()

gs.init(backend=gs.cpu)
scene = gs.Scene(viewer_options=gs.options.ViewerOptions(camera_pos=(1.6, -1.6, 1.2), camera_lookat=(0.0, 0.0, 0.4),
                                                         res=(400, 300), max_FPS=50),
                 show_viewer=True)
robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
scene.build()
vis = scene.visualizer
viewer = vis.viewer
assert viewer is not None and viewer.is_open
shot, render = settle(viewer, vis)
wid, _, _, w, h = window_geometry()
links = vis.camera.project(robot.get_links_pos()).round().astype(int).tolist()
empty = gs.Scene(viewer_options=scene.viewer_options)  # the same view without the robot
empty.build()
background = empty.visualizer.render()

t0 = time.perf_counter()
target = robot.get_dofs_position()
target[0] += 1.2
robot.control_dofs_position(target)
shown = viewer.shown
for _ in range(25):
    scene.step()
seconds = time.perf_counter() - t0
wait(lambda: viewer.shown > shown + 5)  # the steps alone redrew the window, several times
moved_shot, moved_render = settle(viewer, vis)
moved_links = vis.camera.project(robot.get_links_pos()).round().astype(int).tolist()

camera_before = vis.camera.pos.tolist()
subprocess.run(["xdotool", "mousemove", "--window", wid, "200", "150", "mousedown", "1", "mousemove", "--window", wid,
                "260", "150", "mousemove", "--window", wid, "320", "160", "mouseup", "1"], check=True)
wait(lambda: not np.allclose(vis.camera.pos, camera_before))
orbit_shot, _ = settle(viewer, vis)

subprocess.run(["xdotool", "windowclose", wid], check=False)
wait(lambda: not viewer.is_open)
scene.step()  # headless from here on
after = vis.render()
np.savez(sys.argv[2], shot=shot, render=render, moved_shot=moved_shot, moved_render=moved_render,
         orbit_shot=orbit_shot, background=background)
print(json.dumps({"size": [w, h], "links": links, "moved_links": moved_links, "bg": list(vis.bg_color)[:3],
                  "seconds_for_25_steps": seconds, "camera": [camera_before, vis.camera.pos.tolist()],
                  "open_after_close": viewer.is_open, "after_shape": list(after.shape)}))
"""

HEADLESS = r"""
import json, warnings
import engine as gs

gs.init(backend=gs.cpu)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    reports = []
    for _ in range(2):
        scene = gs.Scene(show_viewer=True)
        robot = scene.add_entity(gs.morphs.MJCF(file="panda"))
        scene.build()
        scene.step()
        reports.append(scene.visualizer.viewer is None)
messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
print(json.dumps({"headless": reports, "warnings": messages, "where": [w.filename for w in caught]}))
"""


def _run(script: str, *args, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, cwd=REPO, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _env(**extra) -> dict:
    env = {**os.environ, **extra, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return env


def test_show_viewer_opens_a_window_that_shows_the_robot_and_follows_the_scene(xvfb_display, tmp_path):
    for tool in ("xdotool", "xwininfo"):
        if shutil.which(tool) is None:
            skip_or_fail(f"{tool} is not installed (see .ci/run)")
    report = _run(WINDOW, xvfb_display, str(tmp_path / "shots.npz"), env=_env(DISPLAY=xvfb_display))
    shots = np.load(tmp_path / "shots.npz")
    shot, render = shots["shot"].astype(int), shots["render"].astype(int)
    assert report["size"] == [400, 300] and shot.shape == (300, 400, 3)
    # the window shows exactly the offscreen render of the scene ...
    assert np.abs(shot - render).max() <= 2
    # ... and that is the robot: where the camera projects its links, the window differs from the same
    # view of an empty scene; elsewhere (the sky) it does not
    empty = shots["background"].astype(int)
    for x, y in report["links"][1:]:
        patch = np.abs(shot[y - 3:y + 4, x - 3:x + 4] - empty[y - 3:y + 4, x - 3:x + 4]).sum(axis=2)
        assert patch.max() > 60, (x, y, patch.max())
    changed = np.abs(shot - empty).sum(axis=2) > 30
    assert 0.02 < changed.mean() < 0.5
    assert np.abs(shot[:8, :8] - np.array(report["bg"]) * 255).max() <= 3
    # a step that moves the robot redraws the window
    moved = shots["moved_shot"].astype(int)
    assert np.abs(moved - shots["moved_render"].astype(int)).max() <= 2
    assert np.abs(moved - shot).sum(axis=2).astype(bool).mean() > 0.01
    assert report["moved_links"] != report["links"]
    assert report["seconds_for_25_steps"] >= 24 / 50 * 0.95  # max_FPS=50 paces scene.step()
    # dragging with the left button orbits the camera, and the window follows
    before, after = report["camera"]
    assert not np.allclose(before, after) and np.isclose(np.linalg.norm(np.subtract(before, [0, 0, 0.4])),
                                                        np.linalg.norm(np.subtract(after, [0, 0, 0.4])))
    assert np.abs(shots["orbit_shot"].astype(int) - moved).sum(axis=2).astype(bool).mean() > 0.01
    # closing the window leaves the scene running headless
    assert report["open_after_close"] is False and report["after_shape"] == [300, 400, 3]


def test_without_a_display_the_scene_warns_once_and_runs_headless():
    env = _env()
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    report = _run(HEADLESS, env=env)
    assert report["headless"] == [True, True]
    assert len(report["warnings"]) == 1 and "running headless" in report["warnings"][0], report["warnings"]
    assert "no display" in report["warnings"][0]
    assert report["where"] == ["<string>"]  # the warning points at the script's own scene.build() line


# -- the camera moves ------------------------------------------------------------------------------------
def test_orbit_keeps_the_distance_and_the_look_at_point():
    cam = Camera(pos=(2.0, 0.0, 1.0), lookat=(0.0, 0.0, 0.5))
    d0 = np.linalg.norm(cam.pos - cam.lookat)
    viewer_mod.orbit(cam, 100, 0)  # drag right: the camera turns about the up axis
    assert np.allclose(cam.lookat, (0, 0, 0.5)) and np.linalg.norm(cam.pos - cam.lookat) == pytest.approx(d0)
    assert cam.pos[2] == pytest.approx(1.0) and cam.pos[1] < 0  # turned left about z, same height
    for _ in range(50):
        viewer_mod.orbit(cam, 0, 400)  # far past the pole: stops short of it
    up = np.dot((cam.pos - cam.lookat) / d0, cam.up)
    assert 0.99 < up < 1.0


def test_pan_moves_both_points_and_zoom_moves_toward_the_look_at_point():
    cam = Camera(pos=(2.0, 0.0, 0.5), lookat=(0.0, 0.0, 0.5), res=(400, 300))
    viewer_mod.pan(cam, 50, 0)  # drag right: the scene follows the mouse, the camera goes left (-y here... +y)
    assert np.allclose(cam.pos - cam.lookat, (2.0, 0.0, 0.0)) and cam.lookat[1] != 0 and cam.lookat[2] == 0.5
    viewer_mod.zoom(cam, 1)
    assert np.linalg.norm(cam.pos - cam.lookat) == pytest.approx(2.0 * viewer_mod.ZOOM_PER_STEP)
    viewer_mod.zoom(cam, -2)
    assert np.linalg.norm(cam.pos - cam.lookat) == pytest.approx(2.0 / viewer_mod.ZOOM_PER_STEP)
