"""The real dearpygui window under Xvfb, driven from outside: the app runs in a subprocess (one
viewport per process) and writes a JSON report every frame (view origin, env centres and gizmo
handles in pixels, target poses, qpos, messages); xdotool moves the mouse and presses keys."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import imageio.v2 as imageio
import numpy as np
import pytest
from _support import require_or_fail

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def display(xvfb_display):
    require_or_fail(shutil.which("xdotool"), "xdotool is not installed (apt install xdotool)")
    return xvfb_display


class AppProcess:
    """``app.gui.run(**kwargs)`` in a subprocess on ``display``; output goes to files in ``folder``."""

    def __init__(self, display: str, folder: Path, **kwargs):
        self.display, self.folder = display, folder
        self.report = folder / "report.json"
        args = ", ".join(f"{k}={v!r}" for k, v in {**kwargs, "report": str(self.report)}.items())
        code = f"import engine as ik; ik.init(backend='cpu'); from app import gui; gui.run({args})"
        self.env = dict(os.environ, DISPLAY=display, PYOPENGL_PLATFORM=os.environ.get("PYOPENGL_PLATFORM", "osmesa"))
        self.out = open(folder / "app.log", "w")  # closed in close()
        self.proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=self.env, stdout=self.out,
                                     stderr=subprocess.STDOUT)

    def log(self) -> str:
        self.out.flush()
        return (self.folder / "app.log").read_text()[-4000:]

    def read(self) -> dict | None:
        try:
            return json.loads(self.report.read_text())
        except (OSError, ValueError):
            return None

    def wait_report(self, ok, timeout: float = 120.0) -> dict:
        """Poll the report until ``ok(report)``; fail if the app exits or time runs out."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            r = self.read()
            if r is not None and ok(r):
                return r
            if self.proc.poll() is not None:
                pytest.fail(f"the app exited (rc {self.proc.returncode}) while the test waited:\n{self.log()}")
            time.sleep(0.05)
        pytest.fail(f"timed out after {timeout} s waiting on the app's report:\n{self.log()}")

    def wait_frames(self, n: int = 2) -> dict:
        """Let the GUI run ``n`` more frames (input is polled once per frame)."""
        start = self.read()["frames"]
        return self.wait_report(lambda r: r["frames"] >= start + n, timeout=60.0)

    def xdotool(self, *args) -> None:
        subprocess.run(["xdotool", *map(str, args)], env=self.env, check=True, timeout=10)

    def wait_exit(self, timeout: float = 120.0) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the app did not exit within {timeout} s:\n{self.log()}")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.out.close()


@pytest.fixture
def launch(display, tmp_path):
    started = []

    def start(**kwargs) -> AppProcess:
        app = AppProcess(display, tmp_path, **kwargs)
        started.append(app)
        return app

    yield start
    for app in started:
        app.close()


def robot_pixels(rgb: np.ndarray) -> np.ndarray:
    """Bright, neutral pixels: the robots' white shells. The background (41, 43, 48), the ground
    (74, 77, 83) and its grid lines (at most ~(163, 169, 182), bluish) are neither; gizmo handles
    and target frames are saturated colours."""
    rgb = rgb.astype(int)
    return (rgb.min(axis=2) > 190) & (rgb.max(axis=2) - rgb.min(axis=2) < 25)


def test_default_scene_shows_16_robot_cells(launch, tmp_path):
    shot = tmp_path / "window.png"
    app = launch(frames=40, screenshot=str(shot))
    assert app.wait_exit() == 0, app.log()
    assert "Traceback" not in app.log(), app.log()
    r = app.read()
    assert r["frames"] == 40 and r["images"] >= 1
    assert not [m for m in r["messages"] if m[0] == "error"]
    img = imageio.imread(shot)[..., :3]
    assert img.shape[:2] == (900, 1600)
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


def grab_screen(display: str, box) -> np.ndarray:
    """(H, W, 3) pixels of the X screen inside ``box`` (x0, y0, x1, y1)."""
    from PIL import ImageGrab

    return np.asarray(ImageGrab.grab(bbox=tuple(box), xdisplay=display).convert("RGB")).astype(int)


def test_drag_a_gizmo_with_the_real_mouse(launch, tmp_path, display):
    app = launch(frames=200, screenshot_dir=str(tmp_path))
    r = app.wait_report(lambda r: r["images"] >= 3)
    app.xdotool("key", "space")  # pause the motion: from now on only our edits move the robots
    r = app.wait_frames(3)
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

    app.xdotool("mousemove", *np.round(start).astype(int))
    app.wait_frames(2)
    app.xdotool("mousedown", 1)
    app.wait_frames(2)
    for k in range(1, 11):
        app.xdotool("mousemove", *np.round(start + offset * k / 10).astype(int))
        time.sleep(0.05)
    app.wait_frames(2)
    app.xdotool("mouseup", 1)
    r = app.wait_frames(3)

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
    app.wait_frames(3)
    hidden = grab_screen(display, box)
    assert np.abs(shown - before).mean() > 10, "F1 did not open the help window"
    assert np.abs(hidden - before).mean() < 2, "F1 did not close the help window"

    assert app.wait_exit() == 0, app.log()
    assert "Traceback" not in app.log(), app.log()
