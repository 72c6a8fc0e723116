"""The desktop app: a dearpygui window around :class:`app.control.controller.AppController`.

Thin by design: widgets and input handling only. The 3D view (:mod:`app.gui.view`) is the
visualizer's offscreen image drawn in a drawlist, with the gizmo handles drawn over it; every
action calls the controller, whose engine side runs in its own thread: the window opens at once
(a progress note shows while the scene is built and the kernels compile or load), and a GUI frame
never waits on the solver or the renderer, so no click or key is lost however slow they are.
One viewport per process.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import dearpygui.dearpygui as dpg
import numpy as np

from ..control.controller import AppController
from ..control.image_pacing import ImagePacing
from . import keybinds
from .frame_clock import FrameClock
from .panels import Panels, menu
from .report import write_report
from .view import View

SIDE_W = 330          # width of the left and right panels, px
STATUS_H = 36         # the status line under the view (two lines of text), px
MAX_FPS = 30.0        # the GUI sleeps out the rest of a faster frame (its software GL would take the renderer's CPU)
KERNELS_WAIT_S = 20.0  # the longest the window waits to show for the sim thread's FK compile (cold: ~0.7 s)
STARTING_FPS = 20.0   # ... and slower while the first scene loads and nobody touches it: the CPU goes to loading
KEY_CODES = {"F1": dpg.mvKey_F1, "space": dpg.mvKey_Spacebar, **{k: getattr(dpg, f"mvKey_{k}") for k in
             "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"}}
# widgets that take typed text while active (a slider becomes a text box on ctrl+click)
TEXT_ENTRY_TYPES = frozenset(f"mvAppItemType::mv{t}" for t in (
    "InputText", "InputInt", "InputFloat", "InputDouble", "InputIntMulti", "InputFloatMulti", "InputDoubleMulti",
    "SliderFloat", "SliderInt", "SliderDouble", "DragFloat", "DragInt", "DragDouble", "DragFloatMulti",
    "DragIntMulti", "DragDoubleMulti"))
FILE_DIALOGS = ("open_scene_dialog", "save_dialog", "open_robot_dialog", "record_dialog")


class App:
    """Window, panels, input and the frame loop."""

    def __init__(self, scene_path=None, size: tuple[int, int] | None = None, screenshot_dir: Path | None = None):
        self.t_start = time.perf_counter()
        size = tuple(size) if size is not None else window_size(screen_size())
        self.size = size
        self.controller = AppController(scene_path, res=(size[0] - 2 * SIDE_W - 40, size[1] - 120), threaded=True)
        self.controller.pacing = ImagePacing()  # images spaced while this window's frames are slow
        self.controller.view_laid_out = False  # no image of the view before it has its size (frame)
        self._center_rect: tuple = ()  # the view's panel's size last frame, px (laid out once it stays)
        self.screenshot_dir = Path(screenshot_dir or ".")
        self.show_help = False
        self.n_frames = self.n_images = 0  # GUI frames run, rendered images shown
        self.work_ms = 0.0  # the last frame's time without its closing sleep
        self.t_first_image: float | None = None  # perf_counter() when the first image was shown
        self._frame_times: list[float] = []  # the last frames' start times (GUI frames/s)
        self.clock = FrameClock()  # the longest gaps between frames so far (in the report)
        self._slept = 0.0  # the sleep the last frame asked for
        self._image_times: list[float] = []
        self._buttons = {"left": False, "middle": False}
        self.pointer_events: list[list] = []  # the last presses and releases: [frame, button, "down" or "up", over]
        self._wheel = 0.0
        self._keys: list[tuple[bool, int]] = []  # (pressed, key code) since the last frame, in order
        self._mouse_at: tuple = ()  # the mouse position seen last frame
        self._t_input = -1e9  # perf_counter() of the last key, wheel or mouse motion seen
        self._ctrl = False  # a ctrl key is held, as of the key events seen so far
        self.shortcuts_run: list[str] = []  # the action of every shortcut run, in order (in the report)
        self._item_is_text: dict[int, bool] = {}  # item id -> a text field? (keyboard_owner)
        dpg.create_context()
        dpg.configure_app(manual_callback_management=True)
        dpg.create_viewport(title="IK Studio", width=size[0], height=size[1], x_pos=0, y_pos=0)
        with dpg.handler_registry():
            dpg.add_mouse_wheel_handler(callback=lambda s, a: self._on_wheel(a))
            dpg.add_key_press_handler(callback=lambda s, a: self._keys.append((True, a)))
            dpg.add_key_release_handler(callback=lambda s, a: self._keys.append((False, a)))
        self.panels = Panels(self)
        with dpg.window(tag="main"):
            menu.menu_bar(self)
            with dpg.group(horizontal=True):
                with dpg.child_window(width=SIDE_W, tag="left") as self.left:
                    self.panels.build_left()
                with dpg.child_window(width=-SIDE_W - 8, tag="center", no_scrollbar=True):
                    self.view = View(self, "center")
                    self.panels.status.build()
                with dpg.child_window(width=SIDE_W - 8, tag="right") as self.right:
                    self.panels.build_right()
        for child in (self.left, "center", self.right):
            dpg.bind_item_theme(child, _unfilled_theme())
        menu.help_window(self)
        self.dialogs = menu.file_dialogs(self, self.panels.recording.set_path)
        dpg.set_primary_window("main", True)
        dpg.setup_dearpygui()
        self.controller.wait_kernels(KERNELS_WAIT_S)  # the window's frames never wait on a compile of FK
        dpg.show_viewport()
        self._modules_at_window = set(sys.modules.copy())  # see late_imports
        self._late_imports: tuple = ((-1, None), [])  # (sys.modules' count and last name when found, the names)
        self._kernels_at_window = self.controller.sim.kernels_prepared()  # see late_kernels
        self.t_window = time.perf_counter()
        self.startup_text = ""
        self._startup_said = 0  # startup lines said: robots on screen, then solving

    # -- input -------------------------------------------------------------------------------------
    def _on_wheel(self, delta) -> None:
        if dpg.is_item_hovered(self.view.drawlist):
            self._wheel += float(delta)

    def _poll_mouse(self) -> None:
        c = self.controller
        px, py = self.view.mouse()
        over = dpg.is_item_hovered(self.view.drawlist)
        shift = dpg.is_key_down(dpg.mvKey_LShift) or dpg.is_key_down(dpg.mvKey_RShift)
        ctrl = dpg.is_key_down(dpg.mvKey_LControl) or dpg.is_key_down(dpg.mvKey_RControl)
        for name, code in (("left", dpg.mvMouseButton_Left), ("middle", dpg.mvMouseButton_Middle)):
            down = dpg.is_mouse_button_down(code)
            if down != self._buttons[name] and (over or not down):
                self.pointer_events = [*self.pointer_events[-7:], [self.n_frames, name, "down" if down else "up", over]]
            if down and not self._buttons[name] and over:
                c.pointer_down(name, px, py, shift=shift, ctrl=ctrl)
            elif not down and self._buttons[name]:
                c.pointer_up(px, py)
            self._buttons[name] = down and (self._buttons[name] or over)
        if over or any(self._buttons.values()):
            c.pointer_move(px, py, ctrl=ctrl)
        if self._wheel:
            c.wheel(self._wheel)
            self._wheel = 0.0

    def keyboard_owner(self) -> str | None:
        """Who the keys belong to: the tag (or id) of the text field being edited, the file dialog
        that is open, or None when they are shortcuts. Read at the start of a frame, it describes
        the frame in which the pending keys were pressed."""
        for tag in FILE_DIALOGS:
            if dpg.does_item_exist(tag) and dpg.is_item_shown(tag):
                return tag
        known, now = self._item_is_text, {}  # the overlay's draw items are new every frame: only new
        for item in dpg.get_all_items():      # items are asked their type, and gone ones forgotten
            is_text = known.get(item)
            now[item] = is_text = dpg.get_item_type(item) in TEXT_ENTRY_TYPES if is_text is None else is_text
        self._item_is_text = now
        for item in (i for i, is_text in now.items() if is_text):
            if dpg.is_item_active(item):
                return dpg.get_item_alias(item) or str(item)
        return None

    def _dispatch_keys(self) -> None:
        """Run the shortcuts of the keys pressed since the last frame, unless a text field or a file
        dialog has the keyboard (then the keys are its own); Escape closes an open file dialog.
        Events are taken in order, so ctrl+S counts as such even when ctrl was released before the
        frame that handles it."""
        events, self._keys = self._keys, []
        if not events:
            return
        owner = self.keyboard_owner()
        binds = keybinds.by_key()
        for pressed, code in events:
            if code in (dpg.mvKey_LControl, dpg.mvKey_RControl, dpg.mvKey_ModCtrl):
                self._ctrl = pressed
                continue
            if not pressed:
                continue
            if owner in FILE_DIALOGS and code == dpg.mvKey_Escape:
                self.dialogs[owner].hide()
            if owner is not None:
                continue
            for name, key_code in KEY_CODES.items():
                if key_code == code:
                    bind = binds.get(f"ctrl+{name}" if self._ctrl else name)
                    if bind is not None:
                        self.shortcuts_run.append(bind.action)
                        self.run_action(bind.action)
                        owner = self.keyboard_owner()  # the action may have opened a dialog

    def run_action(self, action: str) -> None:
        """Run a keybind's action (see :mod:`app.gui.keybinds`); errors become messages."""
        c = self.controller
        actions = {
            "toggle_help": self.toggle_help, "toggle_play": c.toggle_play, "step_once": c.step_once,
            "frame_all": c.frame_all, "preset_front": lambda: c.preset("front"),
            "preset_side": lambda: c.preset("side"), "preset_top": lambda: c.preset("top"),
            "preset_iso": lambda: c.preset("iso"), "toggle_follow": lambda: setattr(c, "follow", not c.follow),
            "toggle_manual": c.toggle_manual, "reset_scene": c.reset_scene,
            "toggle_gizmo_space": c.targets.toggle_space, "reset_targets": c.targets.reset_all,
            "screenshot": self.screenshot, "undo": c.history.undo, "redo": c.history.redo,
            "save_scene": lambda: c.save_scene() if c.spec.source else self.show_dialog("save_dialog"),
            "open_scene": lambda: self.show_dialog("open_scene_dialog"),
        }
        try:
            actions[action]()
        except Exception as err:  # any failure of a user action is shown, never fatal
            c.error(f"{action}: {err}", key=f"action {action}")
        else:
            c.resolve(f"action {action}")

    def show_dialog(self, tag: str) -> None:
        """Open one of the file dialogs: on the current scene file's folder (a save: with its name),
        else on the working folder."""
        source = self.controller.spec.source
        folder = Path(source).resolve().parent if source else None
        name = Path(source).name if source and tag == "save_dialog" else None
        self.dialogs[tag].show(folder, name)

    def toggle_help(self) -> None:
        self.show_help = not self.show_help
        dpg.configure_item("help_window", show=self.show_help)

    def screenshot(self, path=None) -> Path:
        """Save the current 3D view as a PNG (default: ikstudio-<time>.png in the screenshot folder)."""
        import imageio.v2 as imageio

        img = self.controller.latest_image
        if img is None:
            raise RuntimeError("nothing rendered yet")
        path = Path(path) if path else self.screenshot_dir / f"ikstudio-{time.strftime('%Y%m%d-%H%M%S')}.png"
        imageio.imwrite(path, img)
        self.controller.info(f"screenshot saved: {path}")
        return path

    # -- the loop ------------------------------------------------------------------------------------
    def frame(self) -> None:
        """One GUI frame: callbacks, input, the sim's newest state and image, redraw. Nothing here
        waits on the solver or the renderer; a frame faster than 1 / MAX_FPS sleeps out the rest
        (1 / STARTING_FPS while the first scene is being built, drawn and first solved, unless the
        user has just used the mouse or the keyboard)."""
        t0 = time.perf_counter()
        self.n_frames += 1
        self.clock.start(self.n_frames, self._slept)
        _keep_last(self._frame_times, t0)
        c = self.controller
        c.adopt()
        mouse = tuple(dpg.get_mouse_pos(local=False))
        if self.n_frames > 3 and (self._keys or self._wheel or mouse != self._mouse_at):  # (the first
            self._t_input = t0  # frames' mouse position is a placeholder until the pointer is read)
        self._mouse_at = mouse
        dpg.run_callbacks(dpg.get_callback_queue())
        self._dispatch_keys()
        w, h = rect = tuple(dpg.get_item_rect_size("center"))
        if rect == self._center_rect and w > 0 and h > 0:  # laid out: the first frames' rects are smaller
            self.view.resize(w - 16, h - STATUS_H - 16)
        self._center_rect = rect
        if c.ready:
            self._poll_mouse()
        c.update()  # the camera and the edits of this frame go to the sim thread
        self._show(c.poll_frame(), t0)
        self.view.draw_overlay()
        self.panels.refresh()
        dpg.render_dearpygui_frame()
        if self._startup_said == 0 and self.t_first_image is not None:
            self._note_startup()  # the robots were just drawn
        if self._startup_said == 1 and c.answers_shown and c.sim.startup_note() is not None:
            self._note_startup()  # the first image with IK answers was just drawn
        c.pacing.frame_drawn(self.starting)
        if self.n_frames % 15 == 0:
            c.pacing.adapt(*self.rates())
        self.work_ms = (time.perf_counter() - t0) * 1e3
        rest = 1.0 / (STARTING_FPS if self.starting else MAX_FPS) - (time.perf_counter() - t0)
        self._slept = max(rest, 0.0)
        if rest > 0:
            time.sleep(rest)

    def _note_startup(self) -> None:
        """Say (stderr and the status line) when the robots reached the screen and, later, when the
        first image with the IK's answers did (each said after the frame that drew it), counted
        from the process's start (the ``ikstudio`` command)."""
        age = process_age()
        since = (f"{age:.1f} s after start" if age is not None
                 else f"{time.perf_counter() - self.t_start:.1f} s after the app began")
        sim = self.controller.sim
        if self._startup_said == 0:
            lead = "" if age is None else f"python and the engine {age - (time.perf_counter() - self.t_start):.1f} s, "
            text = f"robots on screen {since} ({lead}window {self.t_window - self.t_start:.1f} s)"
        else:
            text = f"solving {since}: {sim.startup_note()}"
        self._startup_said += 1
        self.startup_text = text
        print(f"IK Studio: {text}", file=sys.stderr)
        self.controller.info(text)

    @property
    def starting(self) -> bool:
        """The first scene is still loading (built, drawn and solved once; an error or a paused
        scene stops the wait) and the user has not used the mouse or the keyboard for a second."""
        return (self._startup_said < 2 and self.controller.busy is not None
                and time.perf_counter() - self._t_input > 1.0)

    def rates(self) -> tuple[float, float]:
        """(GUI frames/s, images shown/s) over the last two seconds."""
        now = time.perf_counter()
        return tuple(sum(1 for t in times if now - t <= 2.0) / min(2.0, max(now - self.t_start, 1e-3))
                     for times in (self._frame_times, self._image_times))

    def report(self, path: Path) -> None:
        """Write the JSON report an outside test driver reads (see :mod:`app.gui.report`)."""
        write_report(self, path)

    def late_imports(self) -> list[str]:
        """The top-level packages imported since the window's first frame, sorted: each import holds
        the GIL, so a first scene's should come before it (:mod:`app.sim.preload`)."""
        modules = sys.modules.copy()  # (a shallow copy: another thread may import meanwhile)
        key = (len(modules), next(reversed(modules), None))  # a module added since: the count or the last one moved
        if key != self._late_imports[0]:
            names = set(modules) - self._modules_at_window
            self._late_imports = (key, sorted({name.partition(".")[0] for name in names}))
        return list(self._late_imports[1])

    def late_kernels(self) -> list[list]:
        """``[kernel, seconds, thread]`` of each kernel compiled or loaded in this process since the
        window's first frame: each holds the GIL while taichi traces it, so the window's frames
        stop for it. The IK solves, collision checks and their compiles run in the solver's own
        process; the FK and the scene's other kernels here are prepared before the first frame
        (or, where the window stopped waiting for them, :data:`KERNELS_WAIT_S`, they count once
        prepared)."""
        worker = self.controller.worker  # the sim thread: its start-up kernels were ready at this count
        start = 0 if worker is None else worker.kernels_at_ready
        if start is None:  # the window's wait for them timed out (a very busy machine): not done yet
            return []
        late = self.controller.sim.kernels_prepared_since(max(self._kernels_at_window, start))
        return [[p.kernel, round(p.seconds, 3), p.thread] for p in late]

    def _show(self, img: np.ndarray | None, t0: float) -> None:
        """Put a new rendered image (H, W, 3) uint8 (None: none came) on screen at frame time ``t0``."""
        if img is None:
            return
        self.n_images += 1
        _keep_last(self._image_times, t0)
        if self.t_first_image is None:
            self.t_first_image, self._first_image_frame = t0, self.n_frames
        self.view.show_image(img)

    @property
    def frames_shown(self) -> int:
        """GUI frames run since the first image (the robots) reached the screen."""
        return 0 if self.t_first_image is None else self.n_frames - self._first_image_frame + 1

    def run(self, frames: int | None = None, screenshot: Path | None = None, report: Path | None = None) -> None:
        """Run until the window closes, or for ``frames`` frames once the robots are on screen and
        then save the whole window to ``screenshot`` if given. ``report``: a JSON file rewritten
        every frame (see :meth:`report`), for tests that drive the real window from outside."""
        try:
            while dpg.is_dearpygui_running():
                self.frame()
                if report is not None:
                    self.report(report)
                if frames is not None and self.frames_shown >= frames:
                    if screenshot is not None:
                        self._show(self.controller.wait_frame(), time.perf_counter())  # (poll_frame: None now)
                        for _ in range(3):  # let the last image reach the texture
                            self.frame()
                        dpg.output_frame_buffer(file=str(screenshot))
                        for _ in range(3):
                            dpg.render_dearpygui_frame()
                    break
        finally:
            saved = self.controller.finish_recording()  # closed while recording: the video is finished
            if saved is not None:
                print(f"IK Studio: recording saved: {saved}", file=sys.stderr)
            self.controller.close()
            dpg.destroy_context()


def _unfilled_theme() -> int | str:
    """A child window's theme that leaves its background unfilled (alpha 0: imgui skips the fill).
    The main window's fill, the same colour in dearpygui's theme, shows through, so nothing on screen
    changes; under a software GL (llvmpipe: a VM, Xvfb) the three side-by-side fills cost ~12 of a
    bare window's ~29 ms of CPU a frame at 1728 x 972 px (measured)."""
    if not dpg.does_item_exist("unfilled_child"):
        with dpg.theme(tag="unfilled_child"), dpg.theme_component(dpg.mvAll):
            dpg.add_theme_color(dpg.mvThemeCol_ChildBg, (0, 0, 0, 0), category=dpg.mvThemeCat_Core)
    return "unfilled_child"


def screen_size() -> tuple[int, int] | None:
    """The X screen's (width, height) px (Xlib through ctypes: no window needed), or None where
    there is no X display to ask (then :func:`window_size` takes a common laptop's)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("X11")
    if not name or not os.environ.get("DISPLAY"):
        return None
    try:
        x11 = ctypes.CDLL(name)
        x11.XOpenDisplay.restype = ctypes.c_void_p
        x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
        x11.XDefaultScreen.argtypes = x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
        x11.XDisplayWidth.argtypes = x11.XDisplayHeight.argtypes = [ctypes.c_void_p, ctypes.c_int]
        display = x11.XOpenDisplay(None)
        if not display:
            return None
        try:
            screen = x11.XDefaultScreen(display)
            return int(x11.XDisplayWidth(display, screen)), int(x11.XDisplayHeight(display, screen))
        finally:
            x11.XCloseDisplay(display)
    except (OSError, AttributeError):
        return None


def window_size(screen: tuple[int, int] | None) -> tuple[int, int]:
    """The window for a screen: 90 % of it each way (room for a panel or a dock), at least
    1024x640, never larger than the screen; 1366x768's when the screen is unknown."""
    w, h = screen if screen else (1366, 768)
    return min(w, max(1024, int(0.9 * w))), min(h, max(640, int(0.9 * h)))


def process_age() -> float | None:
    """Seconds since this process started (Linux: /proc), or None where that is not known."""
    try:
        start_ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        uptime = float(open("/proc/uptime").read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def _keep_last(times: list[float], t: float, span_s: float = 2.0) -> None:
    times.append(t)
    while times and t - times[0] > span_s:
        times.pop(0)


def run(scene_path=None, frames: int | None = None, screenshot=None, size=None, report=None,
        screenshot_dir=None) -> int:
    """Open the app on ``scene_path`` (default: the seed's 16-env demo) in a window of ``size``
    (width, height) px (default: fitted to the screen, see :func:`window_size`). Returns an exit
    status: 0, or 128 + the signal's number when SIGINT, SIGTERM or SIGHUP closed it (as closing
    the window does: a recording is finished, and taichi writes its kernel cache at exit)."""
    from ..signals import Interrupted, stop_on_signals

    with stop_on_signals():
        app = App(scene_path, size=size, screenshot_dir=screenshot_dir)
        try:
            app.run(frames=frames, screenshot=Path(screenshot) if screenshot else None,
                    report=Path(report) if report else None)
        except Interrupted as stop:
            print(f"IK Studio: stopped by {stop.name}", file=sys.stderr)
            return stop.exit_code
    return 0
