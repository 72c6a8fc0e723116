"""The interactive viewer: a window showing what the visualizer's camera sees, with an orbit camera.

``gs.Scene(show_viewer=True)`` opens it at ``scene.build()`` (through the visualizer seam:
:meth:`engine.vis.Visualizer.open_viewer`). The window is a tkinter window in its own thread; it
draws no GL itself: every image is rendered offscreen by the visualizer's render thread (so it
looks exactly like ``scene.visualizer.update()`` and recordings) and shown as a picture. It
redraws after every ``scene.step()``, ``scene.reset()`` and ``scene.visualizer.update()``, and
while the camera is dragged. ``ViewerOptions.refresh_rate`` (Hz) is how often the window looks
for a new image; ``max_FPS`` caps ``scene.step()`` while the window is open (Genesis' behaviour).

Mouse: left-drag orbits about the look-at point, right- or middle-drag (or shift + left-drag) pans,
the wheel zooms. Closing the window leaves the scene running headless.

With no display (``DISPLAY`` unset) or no tkinter, :func:`open_viewer` warns once per process and
returns None: the scene runs headless.
"""

from __future__ import annotations

import gc
import os
import threading
import time
import warnings

import numpy as np

from .camera import Camera

_WARNED = {"headless": False}
ORBIT_RAD_PER_PX = 0.006
ZOOM_PER_STEP = 0.9


# -- camera moves (plain numpy; the window calls them) ---------------------------------------------
def orbit(camera: Camera, dx: float, dy: float) -> None:
    """Turn the camera about its look-at point: ``dx`` px of drag to the right turns it left about
    ``camera.up``, ``dy`` px down tilts it up; it never passes over the pole."""
    up = camera.up
    offset = camera.pos - camera.lookat
    dist = float(np.linalg.norm(offset))
    axis = offset / dist
    yaw, pitch = -dx * ORBIT_RAD_PER_PX, dy * ORBIT_RAD_PER_PX
    elevation = np.arcsin(np.clip(np.dot(axis, up), -1.0, 1.0))
    pitch = float(np.clip(elevation + pitch, -1.5, 1.5) - elevation)
    axis = _rotate(axis, up, yaw)
    right = np.cross(up, axis)
    if np.linalg.norm(right) > 1e-9:
        axis = _rotate(axis, right / np.linalg.norm(right), -pitch)
    camera.look_at(camera.lookat + axis * dist, camera.lookat)


def pan(camera: Camera, dx: float, dy: float) -> None:
    """Slide the camera and its look-at point with the drag (``dx``, ``dy`` px, y down)."""
    pose = camera.pose
    dist = float(np.linalg.norm(camera.pos - camera.lookat))
    metres_per_px = 2 * dist * np.tan(np.deg2rad(camera.fov) / 2) / camera.res[1]
    shift = (-dx * pose[:3, 0] + dy * pose[:3, 1]) * metres_per_px
    camera.look_at(camera.pos + shift, camera.lookat + shift)


def zoom(camera: Camera, steps: float) -> None:
    """Move toward the look-at point (``steps`` > 0) or away from it, by 10 % a step."""
    offset = (camera.pos - camera.lookat) * ZOOM_PER_STEP ** float(steps)
    if np.linalg.norm(offset) > 1e-3:
        camera.look_at(camera.lookat + offset, camera.lookat)


def _rotate(v: np.ndarray, axis: np.ndarray, angle: float) -> np.ndarray:
    """``v`` rotated by ``angle`` rad about unit ``axis`` (Rodrigues)."""
    c, s = np.cos(angle), np.sin(angle)
    return v * c + np.cross(axis, v) * s + axis * np.dot(axis, v) * (1 - c)


# -- the window -------------------------------------------------------------------------------------
def display_problem() -> str | None:
    """Why no window can open here (None: it can be tried)."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        return "there is no display (DISPLAY is not set)"
    try:
        import tkinter  # noqa: F401
    except ImportError as err:
        return f"tkinter is not available ({err})"
    return None


def open_viewer(visualizer, options, title: str = "IK Studio viewer"):
    """A :class:`Viewer` on ``visualizer`` with ``options`` (:class:`engine.options.ViewerOptions`),
    or None after one warning (per process) when no window can open here."""
    problem = display_problem()
    viewer = None
    if problem is None:
        try:
            viewer = Viewer(visualizer, options.refresh_rate, options.max_FPS, title, auto_res=options.res is None)
        except Exception as err:  # tkinter.TclError: the display is set but cannot be opened
            problem = f"the window could not open ({type(err).__name__}: {err})"
    if viewer is None and not _WARNED["headless"]:
        _WARNED["headless"] = True
        warnings.warn(f"show_viewer=True: {problem}; running headless (renders and recordings still work)",
                      RuntimeWarning, stacklevel=5)  # the caller of scene.build()
    return viewer


class Viewer:
    """A window on ``visualizer``'s camera. ``refresh_rate`` Hz; ``max_fps`` caps :meth:`step_wait`;
    ``auto_res``: size the camera to a 4:3 window of about two thirds of the screen's height (at
    most 1280x960), as Genesis does without ``ViewerOptions.res``."""

    def __init__(self, visualizer, refresh_rate: int = 60, max_fps: int | None = 60, title: str = "IK Studio viewer",
                 auto_res: bool = False):
        self._vis = visualizer
        self._auto_res = auto_res
        self.refresh_ms = max(1, int(round(1000 / refresh_rate)))
        self.max_fps = max_fps
        self.title = title
        self._image: np.ndarray | None = None  # the newest image, waiting to be shown
        self._image_seq = 0  # the refresh request that image answers (0: none)
        self._lock = threading.Lock()
        self._asked = 1  # refresh requests so far (the window's first picture is one)
        self._shown_seq = 0  # the newest refresh request whose picture the window shows
        self._dirty = True  # a redraw was asked for
        self._in_flight = False
        self._closing = False
        self._closed = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._last_step = 0.0
        self.shown = 0  # images shown so far
        self.window_id: int | None = None  # the X window id of the picture (for tests and tools)
        self._thread = threading.Thread(target=self._run, name="ikstudio-viewer", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise self._error

    @property
    def is_open(self) -> bool:
        """False once the window is closed (by the user or :meth:`close`)."""
        return not self._closed.is_set()

    # -- called from any thread ------------------------------------------------------------------
    def show(self, image: np.ndarray) -> None:
        """Show ``image`` (H, W, 3) uint8 at the window's next refresh."""
        with self._lock:
            self._image = image

    def request_refresh(self) -> int:
        """Render the scene as it is now and show it (soon; never blocks). Returns the request's
        number, for :meth:`wait_shown`."""
        with self._lock:
            self._asked += 1
            self._dirty = True
            return self._asked

    def wait_shown(self, timeout: float = 30.0) -> bool:
        """Block until the window shows the scene as it is now (a fresh picture); False on timeout
        or when the window closes first."""
        seq = self.request_refresh()
        end = time.perf_counter() + timeout
        while self._shown_seq < seq:
            if not self.is_open or time.perf_counter() > end:
                return False
            time.sleep(0.01)
        return True

    def step_wait(self) -> None:
        """Sleep as long as ``max_fps`` asks since the previous call (the simulation follows the viewer)."""
        if self.max_fps and self.is_open:
            wait = self._last_step + 1.0 / self.max_fps - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
        self._last_step = time.perf_counter()

    def close(self, timeout: float = 10.0) -> None:
        """Close the window and stop its thread. Idempotent."""
        self._closing = True
        if threading.get_ident() != self._thread.ident:
            self._thread.join(timeout)

    # -- the window's thread ---------------------------------------------------------------------
    def _run(self) -> None:
        try:
            import tkinter as tk

            root = tk.Tk()
        except BaseException as err:  # no display, no tkinter
            self._error = err
            self._closed.set()
            self._ready.set()
            return
        try:
            self._build(root, tk)
            self._ready.set()
            root.mainloop()
        except BaseException as err:  # a Tk error while building: the caller is told
            if not self._ready.is_set():
                self._error = err
        finally:
            # every Tk object dies in this thread: a Tcl interpreter freed by another thread aborts
            # the process ("Tcl_AsyncDelete: async handler deleted by the wrong thread")
            self._photo = self._label = self._root = None
            try:
                root.destroy()
            except Exception:  # already destroyed by the window manager
                pass
            del root
            gc.collect()
            self._closed.set()
            self._ready.set()

    def _build(self, root, tk) -> None:
        camera = self._vis.camera
        if self._auto_res:
            h = min(960, int(root.winfo_screenheight() * 2 / 3)) // 6 * 6
            camera.res = (h * 4 // 3, h)
        w, h = camera.res
        root.title(self.title)
        root.resizable(False, False)
        self._photo = tk.PhotoImage(width=w, height=h)
        self._label = tk.Label(root, image=self._photo, bd=0, highlightthickness=0, background="black")
        self._label.pack()
        self._root = root
        self._drag = None
        label = self._label
        for button in (1, 2, 3):
            label.bind(f"<ButtonPress-{button}>", lambda e, b=button: self._press(e, b))
            label.bind(f"<B{button}-Motion>", self._motion)
            label.bind(f"<ButtonRelease-{button}>", lambda e: setattr(self, "_drag", None))
        label.bind("<MouseWheel>", lambda e: self._zoom(1 if e.delta > 0 else -1))
        label.bind("<Button-4>", lambda e: self._zoom(1))
        label.bind("<Button-5>", lambda e: self._zoom(-1))
        root.protocol("WM_DELETE_WINDOW", lambda: setattr(self, "_closing", True))
        root.update_idletasks()
        self.window_id = int(label.winfo_id())
        root.after(self.refresh_ms, self._poll)

    def _press(self, event, button: int) -> None:
        shift = bool(event.state & 0x1)
        self._drag = ("pan" if button in (2, 3) or shift else "orbit", event.x, event.y)

    def _motion(self, event) -> None:
        if self._drag is None:
            return
        mode, x, y = self._drag
        (orbit if mode == "orbit" else pan)(self._vis.camera, event.x - x, event.y - y)
        self._drag = (mode, event.x, event.y)
        self._dirty = True

    def _zoom(self, steps: int) -> None:
        zoom(self._vis.camera, steps)
        self._dirty = True

    def _poll(self) -> None:
        if self._closing:
            self._root.quit()
            return
        with self._lock:
            image, seq, self._image, self._image_seq = self._image, self._image_seq, None, 0
            start = self._dirty and not self._in_flight
            if start:
                self._dirty, self._in_flight, asked = False, True, self._asked
        if image is not None:
            self._put(image)
            self._shown_seq = max(self._shown_seq, seq)
        if start:
            try:
                future = self._vis.request_frame(record=False)
                future.add_done_callback(lambda f, asked=asked: self._frame_done(f, asked))
            except Exception:  # the visualizer closed, or the scene is gone: keep the last picture
                self._in_flight = False
        self._root.after(self.refresh_ms, self._poll)

    def _frame_done(self, future, asked: int) -> None:
        """The render thread finished a frame this window asked for (request number ``asked``)."""
        with self._lock:
            self._in_flight = False
            if future.exception() is None:
                self._image, self._image_seq = future.result(), asked

    def _put(self, image: np.ndarray) -> None:
        import tkinter as tk

        h, w = image.shape[:2]
        photo = tk.PhotoImage(data=b"P6 %d %d 255\n" % (w, h) + np.ascontiguousarray(image[..., :3]).tobytes(),
                              format="PPM")
        self._label.configure(image=photo)
        self._photo = photo
        self.shown += 1
