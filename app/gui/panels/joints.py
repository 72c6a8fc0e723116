"""The Selected env section: which env the sliders show, and one slider per joint (they move the
joint in manual mode). The sliders scroll inside a fixed height, so the targets below stay on screen."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from ..widgets import Handle
from .base import Panel

JOINT_ROW_H = 23  # px per joint slider
JOINTS_MAX_H = 260  # the joint sliders scroll inside this height


class JointsPanel(Panel):
    title = "Selected env"

    def widgets(self) -> None:
        c = self.c
        self.env = self.add(dpg.add_input_int(label="env", tag="selected_env", width=120, on_enter=True),
                            on_update=lambda v: c.select_env(int(v)))
        self.box = self.add(dpg.add_child_window(tag="joints", height=JOINTS_MAX_H, border=False))
        self.sliders: dict[int, Handle] = {}  # qpos index -> its slider

    def on_scene(self, robot_changed: bool) -> None:
        """A slider per joint of the robot now loaded."""
        dpg.delete_item(self.box.item, children_only=True)
        rows = self.c.joint_rows()
        self.sliders = {}
        for name, qi, lo, hi, value in rows:
            item = dpg.add_slider_float(label=name, tag=f"joint_{qi}", parent=self.box.item, min_value=lo,
                                        max_value=hi, default_value=value, width=170, user_data=qi)
            self.sliders[qi] = Handle(item, self.c).on_update(lambda v, q: self.c.set_joint(q, v))  # not reported
        self.box.configure(height=min(JOINT_ROW_H * len(rows) + 6, JOINTS_MAX_H))

    def refresh(self) -> None:
        self.env.set_unless_active(self.c.selected_env)
        for _name, qi, _lo, _hi, value in self.c.joint_rows():
            if qi in self.sliders:
                self.sliders[qi].set_unless_active(value)

