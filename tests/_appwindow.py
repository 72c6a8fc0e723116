"""Driving the real dearpygui window under Xvfb from a test: the app runs in a subprocess (one
viewport per process) and writes a JSON report every frame (view origin, env centres and gizmo
handles in pixels, target poses, qpos, widget rectangles, shortcuts run, messages); xdotool moves
the mouse, clicks and types."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _support import require_or_fail

ROOT = Path(__file__).resolve().parent.parent


class AppProcess:
    """``app.gui.run(**kwargs)`` in a subprocess on ``display``; output goes to files in ``folder``."""

    def __init__(self, display: str, folder: Path, **kwargs):
        self.display, self.folder = display, folder
        self.report = folder / "report.json"
        self.late_kernels: list = []  # [kernel, seconds, thread] from the last report (close)
        args = ", ".join(f"{k}={v!r}" for k, v in {**kwargs, "report": str(self.report)}.items())
        code = f"import engine as ik; ik.init(backend='cpu'); from app import gui; raise SystemExit(gui.run({args}))"
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

    def wait_report(self, ok, timeout: float = 240.0) -> dict:
        """Poll the report until ``ok(report)``; fail if the app exits or time runs out."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            r = self.read()
            if r is not None and ok(r):
                return r
            if self.proc.poll() is not None:
                pytest.fail(f"the app exited (rc {self.proc.returncode}) while the test waited:\n{self.log()}")
            time.sleep(0.05)
        pytest.fail(f"timed out after {timeout} s waiting on the app's report (last: {_summary(self.read())}):\n"
                    f"{self.log()}")

    def wait_frames(self, n: int = 2) -> dict:
        """Let the GUI run ``n`` more frames (input is polled once per frame)."""
        start = self.read()["frames"]
        return self.wait_report(lambda r: r["frames"] >= start + n, timeout=60.0)

    def xdotool(self, *args) -> None:
        subprocess.run(["xdotool", *map(str, args)], env=self.env, check=True, timeout=30)

    def click(self, x: float, y: float, frames: int = 2) -> dict:
        """Move the mouse to screen (x, y), let the GUI see it there, click, and wait ``frames`` frames."""
        self.xdotool("mousemove", int(round(x)), int(round(y)))
        self.wait_frames(2)
        self.xdotool("click", 1)
        return self.wait_frames(frames)

    def drag(self, start, delta, steps: int, pause: float | None = None) -> dict:
        """A left-button drag with the real mouse from screen point ``start`` by ``delta`` px, in
        ``steps`` moves, each followed by one GUI frame (``pause`` None) or by ``pause`` s (moves
        may then fall within one frame); returns the report 3 frames after the release."""
        start, delta = np.asarray(start, float), np.asarray(delta, float)
        self.xdotool("mousemove", *np.round(start).astype(int))
        self.wait_frames(2)
        self.xdotool("mousedown", 1)
        self.wait_frames(2)
        for k in range(1, steps + 1):
            self.xdotool("mousemove", *np.round(start + delta * k / steps).astype(int))
            if pause is None:
                self.wait_frames(1)
            else:
                time.sleep(pause)
        if pause is not None:
            self.wait_frames(2)
        self.xdotool("mouseup", 1)
        return self.wait_frames(3)

    def click_widget(self, tag: str, at=None, frames: int = 2) -> dict:
        """Click the widget ``tag`` at ``at(rect)`` (its centre by default) the way a user does: at
        where it is once its rectangle has held still for a few frames, and only once the GUI reports
        the mouse over it (a panel whose text grows moves the widgets below it). While a text field
        has the keyboard, imgui reports no other widget hovered, so then the still rectangle must do."""
        at = at or centre
        self.scroll_into_view(tag)
        for _ in range(5):
            rect = self.steady_rect(tag)
            self.xdotool("mousemove", *at(rect))
            r = self.wait_frames(2)
            if tag in r.get("hovered", []) or r["keyboard_owner"] not in (None, tag):
                self.xdotool("click", 1)
                return self.wait_frames(frames)
            self.xdotool("click", "5")  # not hovered: maybe clipped at the panel's edge; scroll it a notch
        pytest.fail(f"the mouse never got over {tag!r} (last report: {_summary(self.read())})")

    def scroll_into_view(self, tag: str, tries: int = 40) -> dict:
        """Scroll the side panel holding ``tag`` with the mouse wheel until the widget is drawn (a
        user scrolls a panel taller than the window the same way); the left panel is tried first,
        each at mid-height first, then near its bottom (a list in the panel, such as the target
        links, takes the wheel where it lies: in a small window it can fill mid-height)."""
        r = self.wait_frames(1)
        if r["widgets"].get(tag) is not None:
            return r
        ox, oy = r["view_origin"]
        w, h = r["view_size"]
        right_w = r["panels"]["right"]["size"][0]
        spots = [(x, y) for x in (ox / 2, ox + w + right_w / 2) for y in (oy + h / 2, oy + h - 12)]
        for x, y in spots:  # over the left panel, then over the right one
            self.xdotool("mousemove", int(x), int(y))
            for _ in range(tries):
                self.xdotool("click", "5")  # wheel down
                r = self.wait_frames(2)
                if r["widgets"].get(tag) is not None:
                    return r
            for _ in range(tries):  # back to the top before trying the other panel
                self.xdotool("click", "4")
        pytest.fail(f"{tag!r} never came into view by scrolling the side panels (last report: {_summary(r)})")

    def steady_rect(self, tag: str, frames: int = 3, timeout: float = 60.0) -> list[float]:
        """``tag``'s screen rectangle once it has been the same in ``frames`` successive GUI frames."""
        seen: list = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            r = self.wait_frames(1)
            rect = r["widgets"].get(tag)
            seen = seen + [rect] if seen and rect == seen[-1] else [rect]
            if rect is not None and len(seen) >= frames:
                return rect
        pytest.fail(f"{tag!r} did not hold still for {frames} frames in {timeout} s (last: {seen[-1:]})")

    def paste(self, text: str) -> None:
        """Paste ``text`` into the focused field with ctrl+V, as a user pastes a long path: xclip
        owns the clipboard (it serves it from the background until another client takes it).
        Typing is one GUI frame or two per character (imgui spreads key events over frames), which
        for a 250-character path is 40 s at the window's 12 frames/s under Xvfb."""
        require_or_fail(shutil.which("xclip"), "xclip is not installed (apt install xclip)")
        subprocess.run(["xclip", "-selection", "clipboard", "-i"], input=text.encode(), env=self.env, check=True,
                       timeout=30, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ctrl_key("v")

    def select_all(self) -> None:
        """ctrl+A in the focused field."""
        self.ctrl_key("a")

    def ctrl_key(self, key: str) -> None:
        """ctrl+``key`` with ctrl held over several GUI frames (a quick ctrl+key can reach a slow
        frame with ctrl already up)."""
        self.xdotool("keydown", "ctrl")
        self.wait_frames(2)
        self.xdotool("key", key)
        self.wait_frames(2)
        self.xdotool("keyup", "ctrl")
        self.wait_frames(1)

    def type(self, text: str, delay_ms: int = 60) -> None:
        """Type ``text`` with the real keyboard (one key event per character)."""
        self.xdotool("type", "--delay", delay_ms, "--", text)

    def wait_exit(self, timeout: float = 120.0) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the app did not exit within {timeout} s:\n{self.log()}")

    def close(self) -> None:
        last = self.read()
        self.late_kernels = [] if last is None else last.get("late_kernels", [])  # see late_kernel_note
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=120)  # SIGKILL: no work left, but on a loaded machine (load 18
            # seen) freeing ~1.5 GB and its threads took over 10 s
        cache = self.env.get("TI_OFFLINE_CACHE_FILE_PATH")
        if cache and Path(cache).is_relative_to(self.folder):  # the test's own kernel cache: its warm-up goes too
            end_warmups(cache)
        self.out.close()


def late_kernel_note(apps) -> str | None:
    """What the closed ``apps`` (AppProcess) compiled or loaded in the window's own process after
    its first frame, as the last report said, or None if nothing: every IK solve and collision check
    runs in the solver's process, and the window's FK is prepared before its first frame, because
    taichi holds the GIL while it traces a kernel and the window stands still meanwhile (issue 27)."""
    late = [k for app in apps for k in app.late_kernels]
    if not late:
        return None
    return ("kernels were prepared in the window's process after its first frame (the GUI stood still "
            "meanwhile; prepare them before the first frame or in the solver's process): "
            + "; ".join(f"{name} ({seconds} s, thread {thread})" for name, seconds, thread in late))


def end_warmups(cache_dir) -> int:
    """Kill the generic solver's warm-up children (``--warm-generic``: they outlive the app on
    purpose) that fill taichi's cache folder ``cache_dir``, a test's own; returns how many."""
    want, ended = f"TI_OFFLINE_CACHE_FILE_PATH={cache_dir}".encode(), 0
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
            if b"--warm-generic" in (proc / "cmdline").read_bytes() and want in environ:
                os.kill(int(proc.name), 9)
                ended += 1
        except (OSError, ValueError):
            continue
    return ended


def _summary(r: dict | None) -> str:
    """The parts of a report that say what the GUI was doing, for a failure message."""
    if r is None:
        return "no report"
    keys = ("frames", "images", "state", "keyboard_owner", "hovered", "status", "record_info", "readouts")
    return json.dumps({k: r.get(k) for k in keys})


def robot_pixels(rgb: np.ndarray) -> np.ndarray:
    """Bright, neutral pixels: the robots' white shells. The background (41, 43, 48), the ground
    (74, 77, 83) and its grid lines (at most ~(163, 169, 182), bluish) are neither; gizmo handles
    and target frames are saturated colours."""
    rgb = rgb.astype(int)
    return (rgb.min(axis=2) > 190) & (rgb.max(axis=2) - rgb.min(axis=2) < 25)


def assert_whole_in_view(app, display: str, r: dict, edge: int = 3) -> None:
    """The robots on screen in the window's 3D view (report ``r``) are there, and none is cut off:
    no robot pixel within ``edge`` px of the view's edges."""
    (ox, oy), (w, h) = r["view_origin"], r["view_size"]
    robot = robot_pixels(grab_screen(display, (int(ox), int(oy), int(ox) + w, int(oy) + h)))
    assert robot.sum() > 2000, "no robots in the view"
    assert not (robot[:edge].any() or robot[-edge:].any() or robot[:, :edge].any() or robot[:, -edge:].any()), \
        "a robot is cut off at an edge of the view"


def grab_screen(display: str, box) -> np.ndarray:
    """(H, W, 3) pixels of the X screen inside ``box`` (x0, y0, x1, y1)."""
    from PIL import ImageGrab

    return np.asarray(ImageGrab.grab(bbox=tuple(box), xdisplay=display).convert("RGB")).astype(int)


def centre(rect) -> tuple[int, int]:
    """Integer screen centre of a report rectangle [x0, y0, x1, y1]."""
    return int(round((rect[0] + rect[2]) / 2)), int(round((rect[1] + rect[3]) / 2))


def inside_left(rect, dx: float = 12.0) -> tuple[int, int]:
    """A point ``dx`` px inside the left edge of a rectangle, half-way down: in a field's first box,
    clear of its +/- buttons and its label."""
    return int(round(rect[0] + dx)), int(round((rect[1] + rect[3]) / 2))
