"""The Targets section: search the robot's links and add a target on one, undo / redo / reset, the
gizmos' Local/World frame, and per target its masks, rotation mode, pose (position, roll-pitch-yaw,
quaternion), spread over the envs and group, with select / reset / remove."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from ...control.targets import ROT_MODES, rpy_of
from ..widgets import Handle
from .base import Panel

ROT_LABELS = {"full": "full", "align x": "x", "align y": "y", "align z": "z", "free": "free"}  # "align" before x
ROT_HELP = {
    "full": "full orientation: the link's frame matches the target's",
    "align x": "align x: only the direction of the link's x axis matters (spin about it is free)",
    "align y": "align y: only the direction of the link's y axis matters (spin about it is free)",
    "align z": "align z: only the direction of the link's z axis matters (spin about it is free)",
    "free": "free: any orientation (position only)",
}
ACTIVE_RGB = (51, 105, 173, 255)  # the lit choice of a row of buttons


def active_theme() -> str:
    """The theme of a lit choice button (made once)."""
    if not dpg.does_item_exist("active_choice"):
        with dpg.theme(tag="active_choice"), dpg.theme_component(dpg.mvButton):
            dpg.add_theme_color(dpg.mvThemeCol_Button, ACTIVE_RGB)
            dpg.add_theme_color(dpg.mvThemeCol_ButtonHovered, ACTIVE_RGB)
    return "active_choice"


class TargetsPanel(Panel):
    title = "Targets"

    def widgets(self) -> None:
        app = self.app
        self.link_filter = self.add(dpg.add_input_text(hint="search links", tag="add_link_filter", width=-1),
                                    on_update=lambda _: self.show_links())
        self.links = self.add(dpg.add_listbox([], tag="add_link", num_items=4, width=-1))
        self.add(dpg.add_button(label="Add target on the selected link", tag="add_target", width=-1),
                 on_update=lambda _: self.add_target())
        with dpg.group(horizontal=True):  # two rows: one is wider than the panel once its scrollbar shows
            dpg.add_button(label="Undo", callback=lambda: app.run_action("undo"))
            dpg.add_button(label="Redo", callback=lambda: app.run_action("redo"))
            dpg.add_button(label="Reset all (T)", callback=lambda: app.run_action("reset_targets"))
        self.space = self.add(dpg.add_button(label="Local/World (L)", tag="toggle_space",
                                             callback=lambda: app.run_action("toggle_gizmo_space")))
        self.list = dpg.add_group(tag="targets")
        self.rows: dict[str, Handle] = {}  # the per-target widgets, by name ("t0_pos", ...)
        self.shown_for = None  # the targets the rows were built for

    def reported(self) -> dict[str, Handle]:
        return {**self.handles, **self.rows}

    def add_target(self) -> None:
        link = self.links.value
        if not link:
            raise ValueError("add target: pick a link first")
        try:
            self.c.targets.add_target(link)
        except Exception as err:
            raise ValueError(f"add target: {err}") from err

    def show_links(self) -> None:
        """The links whose name has every word of the search box (TALOS has 60)."""
        if not self.c.ready:
            return
        words = self.link_filter.value.lower().split()
        items = [link.name for link in self.c.robot.links if all(w in link.name.lower() for w in words)]
        self.links.configure(items=items)
        if items and self.links.value not in items:
            self.links.value = items[0]

    def on_scene(self, robot_changed: bool) -> None:
        if robot_changed:
            self.link_filter.value = ""  # another robot's links: start with all of them
        self.show_links()

    def refresh(self) -> None:
        c = self.c
        key = (c.view.generation, tuple((t.link, t.group, t.pos_mask, t.rot_mask, t.orientation() is None)
                                        for t in c.targets.targets))
        if key != self.shown_for:
            self.shown_for = key
            self.build_rows()
        for i in range(len(c.targets.targets)):
            pos, quat = c.targets.target_pose(i)
            self.rows[f"t{i}_pos"].set_unless_active(list(pos))
            self.rows[f"t{i}_quat"].set_unless_active(list(quat))
            self.rows[f"t{i}_rpy"].set_unless_active(list(rpy_of(quat)))

    def row(self, item) -> Handle:
        handle = Handle(item, self.c)
        self.rows[handle.name] = handle
        return handle

    def build_rows(self) -> None:
        """The widgets of every target, made again (the list, a mask or a group changed)."""
        ed = self.c.targets
        dpg.delete_item(self.list, children_only=True)
        self.rows = {}
        for i, t in enumerate(ed.targets):
            with dpg.tree_node(label=f"{i}: {t.link}" + (f"  [{t.group}]" if t.group else ""), parent=self.list,
                               default_open=True):
                with dpg.group(horizontal=True):
                    dpg.add_text("pos")
                    for k, axis in enumerate("xyz"):
                        self.row(dpg.add_checkbox(label=axis, tag=f"t{i}_pos_mask{k}", default_value=t.pos_mask[k],
                                                  user_data=(i, k))).on_update(
                            lambda v, u: ed.set_mask(u[0], "pos_mask", u[1], v))
                self.rot_mode_row(i)
                self.row(dpg.add_input_floatx(label="pos m", tag=f"t{i}_pos", size=3, width=200, on_enter=True,
                                              format="%.4f", user_data=i)).on_update(
                    lambda v, u: ed.set_pose(u, pos=v[:3]))
                self.row(dpg.add_input_floatx(label="rpy deg", tag=f"t{i}_rpy", size=3, width=200, on_enter=True,
                                              format="%.2f", user_data=i)).on_update(
                    lambda v, u: ed.set_pose(u, rpy_deg=v[:3]))
                self.row(dpg.add_input_floatx(label="quat", tag=f"t{i}_quat", size=4, width=200, on_enter=True,
                                              format="%.4f", user_data=i)).on_update(
                    lambda v, u: ed.set_pose(u, quat=v[:4]))
                self.row(dpg.add_input_floatx(label="spread m", tag=f"t{i}_spread", size=3, width=200, on_enter=True,
                                              format="%.3f", default_value=list(ed.spread_of(i)),
                                              user_data=i)).on_update(lambda v, u: ed.set_spread(u, v[:3]))
                with dpg.group(horizontal=True):
                    self.row(dpg.add_input_text(hint="group", tag=f"t{i}_group", default_value=t.group or "",
                                                width=90, on_enter=True, user_data=i)).on_update(
                        lambda v, u: ed.set_group(u, v.strip()))
                    for label, action in (("select", lambda v, u: setattr(ed, "selected", u)),
                                          ("reset", lambda v, u: ed.reset_target(u)),
                                          ("remove", lambda v, u: ed.remove_target(u))):
                        Handle(dpg.add_button(label=label, user_data=i), self.c).on_update(action)

    def rot_mode_row(self, i: int) -> None:
        """The rotation mode of target ``i`` as one choice: a row of buttons, the current one lit."""
        ed = self.c.targets
        current = ed.rot_mode(i)
        with dpg.group(horizontal=True):
            dpg.add_text("rot")
            for mode in ROT_MODES:
                if mode == "align x":
                    dpg.add_text("align")
                button = self.row(dpg.add_button(label=ROT_LABELS[mode], tag=f"t{i}_rot_{mode.replace(' ', '_')}",
                                                 user_data=(i, mode))).on_update(lambda v, u: ed.set_rot_mode(*u))
                if mode == current:
                    dpg.bind_item_theme(button.item, active_theme())
                with dpg.tooltip(button.item):
                    dpg.add_text(ROT_HELP[mode])
