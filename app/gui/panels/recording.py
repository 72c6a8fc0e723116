"""The Recording section: where the video goes (beside the scene file by default), its size, whether
the gizmos are drawn in it, Record / Stop, and what was recorded."""

from __future__ import annotations

from pathlib import Path

import dearpygui.dearpygui as dpg

from ...control import recording
from .base import Panel

RECORD_FPS = 30.0
SIDE_TEXT_WRAP = 300  # px: text in the side panels wraps at this width
APP_DIR = Path(__file__).resolve().parents[2]  # scenes that came with the app are recorded to the current folder


def recording_info(c) -> str:
    """The line under the Record button: what is being recorded, or what was last."""
    rec = c.recording
    if rec is not None:
        return (f"recording {rec.size[0]}x{rec.size[1]}: {c.recording_text()} so far, plays in real time "
                f"({rec.fps:g} fps)")
    last = c.last_recording
    if last is not None:
        return f"last: {last['path'].name}, {last['seconds']:.1f} s ({last['frames']} frames at {last['fps']:g} fps)"
    return "videos play in real time"


class RecordingPanel(Panel):
    title = "Recording"

    def widgets(self) -> None:
        self.default_shown: str | None = None  # the default path the box was given last
        with dpg.group(horizontal=True):
            self.path = self.add(dpg.add_input_text(tag="record_path", default_value=str(self.default_path()),
                                                    width=-40))
            self.add(dpg.add_button(label="...", tag="record_browse", width=-1), on_update=lambda _: self.browse())
        with dpg.group(horizontal=True):
            self.size = self.add(dpg.add_combo(list(recording.SIZES), tag="record_size", default_value="1280x720",
                                               width=100))
            dpg.add_text("size   fps 30")
        self.overlay = self.add(dpg.add_checkbox(label="include gizmos and target frames", tag="record_overlay",
                                                 default_value=True))
        self.button = self.add(dpg.add_button(label="Record", tag="record_button", width=-1),
                               on_update=lambda _: self.toggle())
        self.info = self.add(dpg.add_text("", tag="record_info", wrap=SIDE_TEXT_WRAP))

    def default_path(self) -> Path:
        return recording.default_path(self.c.spec.source, APP_DIR)

    def set_path(self, path: str) -> None:
        """The record dialog's choice."""
        self.path.value = path

    def browse(self) -> None:
        """The file dialog for the video, in the folder of the path in the box (beside the scene)."""
        path = Path(self.path.value or self.default_path()).expanduser()
        folder = path.parent if path.parent.is_dir() else Path.cwd()
        self.app.dialogs["record_dialog"].show(folder, path.name)

    def toggle(self) -> None:
        c = self.c
        if c.recording is not None:
            c.stop_recording()
        else:
            c.start_recording(self.path.value, fps=RECORD_FPS, size=recording.SIZES[self.size.value],
                              overlay=self.overlay.value)

    def on_scene(self, robot_changed: bool) -> None:
        """A scene from another file: a path still at the old file's default follows the new file."""
        default = str(self.default_path())
        before = self.default_shown
        if before != default:
            if before is None or self.path.value in (before, ""):
                self.path.value = default
            self.default_shown = default

    def refresh_always(self) -> None:
        self.button.configure(label="Stop recording" if self.c.recording is not None else "Record")
        self.info.value = recording_info(self.c)
