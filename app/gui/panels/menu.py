"""The window's menu bar (File, View, Help), the keys-and-mouse help window and the four file
dialogs."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from ...control import recording
from .. import keybinds
from ..file_dialog import FileDialog


def menu_bar(app) -> None:
    c = app.controller
    with dpg.menu_bar():
        with dpg.menu(label="File"):
            dpg.add_menu_item(label="Open scene...  (ctrl+O)", callback=lambda: app.show_dialog("open_scene_dialog"))
            dpg.add_menu_item(label="Save scene  (ctrl+S)", callback=lambda: app.run_action("save_scene"))
            dpg.add_menu_item(label="Save scene as...", callback=lambda: app.show_dialog("save_dialog"))
            dpg.add_menu_item(label="Open robot file...", callback=lambda: app.show_dialog("open_robot_dialog"))
            dpg.add_menu_item(label="Screenshot  (P)", callback=lambda: app.run_action("screenshot"))
        with dpg.menu(label="View"):
            for name in ("front", "side", "top", "iso"):
                dpg.add_menu_item(label=name, callback=lambda s, a, u: c.preset(u), user_data=name)
            dpg.add_menu_item(label="Frame all  (F)", callback=lambda: c.frame_all())
            dpg.add_menu_item(label="Follow selected env  (G)", callback=lambda: app.run_action("toggle_follow"))
        with dpg.menu(label="Help"):
            dpg.add_menu_item(label="Keys and mouse  (F1)", callback=app.toggle_help)


def help_window(app) -> None:
    with dpg.window(label="IK Studio: keys and mouse (F1)", tag="help_window", show=False, width=560, height=460,
                    pos=(200, 120), on_close=lambda: setattr(app, "show_help", False)):
        dpg.add_text(keybinds.help_text())


def file_dialogs(app, set_record_path) -> dict[str, FileDialog]:
    """The four file dialogs (:mod:`app.gui.file_dialog`), by tag; ``set_record_path(path)``: the
    record dialog's choice."""
    c = app.controller
    return {d.tag: d for d in (
        FileDialog("open_scene_dialog", "Open scene", (".yaml", ".yml"), c.open_scene),
        FileDialog("save_dialog", "Save scene as", (".yaml", ".yml"), c.save_scene, save=True),
        FileDialog("open_robot_dialog", "Open robot file (URDF or MJCF)", (".urdf", ".xml"), c.load_robot),
        FileDialog("record_dialog", "Record video to", recording.VIDEO_SUFFIXES, set_record_path, save=True,
                   action="Choose"))}
