"""One registry of the app's keyboard shortcuts: the GUI's key handler and the F1 help overlay
both read it, so the two cannot disagree."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Keybind:
    """``key``: a key name ("space", "F1", "1", "R", ...), with modifiers as "ctrl+S"; ``action``:
    the controller method (or GUI command) it runs; ``help``: one line for the overlay."""

    key: str
    action: str
    help: str

    @property
    def ctrl(self) -> bool:
        return self.key.startswith("ctrl+")

    @property
    def base_key(self) -> str:
        return self.key.removeprefix("ctrl+")


KEYBINDS: tuple[Keybind, ...] = (
    Keybind("F1", "toggle_help", "show / hide this help"),
    Keybind("space", "toggle_play", "play / pause the motion patterns"),
    Keybind("N", "step_once", "advance one frame (while paused)"),
    Keybind("F", "frame_all", "frame every env in view"),
    Keybind("1", "preset_front", "camera: front"),
    Keybind("2", "preset_side", "camera: side"),
    Keybind("3", "preset_top", "camera: top"),
    Keybind("4", "preset_iso", "camera: iso"),
    Keybind("G", "toggle_follow", "camera follows the selected env"),
    Keybind("M", "toggle_manual", "manual joints mode (sliders drive the selected env)"),
    Keybind("R", "reset_scene", "reset time and robots to the start"),
    Keybind("L", "toggle_gizmo_space", "gizmo handles: local / world axes"),
    Keybind("T", "reset_targets", "reset targets to the robots' current poses"),
    Keybind("P", "screenshot", "save a PNG screenshot of the view"),
    Keybind("ctrl+Z", "undo", "undo the last edit of a target or an obstacle"),
    Keybind("ctrl+Y", "redo", "redo"),
    Keybind("ctrl+S", "save_scene", "save the scene file"),
    Keybind("ctrl+O", "open_scene", "open a scene file"),
)

MOUSE_HELP: tuple[tuple[str, str], ...] = (
    ("left-drag on a gizmo", "move / rotate that target (ctrl: snap 1 cm / 15 deg)"),
    ("left-drag elsewhere", "orbit the camera"),
    ("middle-drag, shift+left-drag", "pan"),
    ("wheel", "zoom"),
    ("click an env", "select it for the readouts and joint sliders"),
    ("ctrl+click a link", "add a target on that link (at its current pose)"),
)


def by_key() -> dict[str, Keybind]:
    """Keybinds indexed by their key string; duplicates are a programming error."""
    out: dict[str, Keybind] = {}
    for bind in KEYBINDS:
        if bind.key in out:
            raise ValueError(f"key '{bind.key}' is bound twice ({out[bind.key].action}, {bind.action})")
        out[bind.key] = bind
    return out


def help_text() -> str:
    """The help overlay's text: every keybind, then the mouse."""
    width = max(len(b.key) for b in KEYBINDS)
    lines = [f"{b.key:<{width}}  {b.help}" for b in KEYBINDS]
    lines.append("")
    lines += [f"{what}: {does}" for what, does in MOUSE_HELP]
    return "\n".join(lines)
