"""The Environments section: how many envs and how far apart, play / step / reset, the playback
speed and the manual-joints switch."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from ...control.controller import MAX_ENVS
from .base import Panel


class EnvsPanel(Panel):
    title = "Environments"

    def widgets(self) -> None:
        c = self.c
        self.n_envs = self.add(dpg.add_input_int(label="n_envs", tag="n_envs", default_value=c.n_envs, min_value=1,
                                                 max_value=MAX_ENVS, min_clamped=True, max_clamped=True,
                                                 on_enter=True, width=120), on_update=c.set_n_envs)
        self.spacing = self.add(dpg.add_input_floatx(label="spacing", tag="spacing", size=2, width=160,
                                                     on_enter=True, default_value=list(c.spec.envs.env_spacing)),
                                on_update=lambda v: c.set_env_spacing(v[:2]))
        with dpg.group(horizontal=True):
            dpg.add_button(label="Play/Pause", callback=lambda: c.toggle_play())
            dpg.add_button(label="Step", callback=lambda: c.step_once())
            dpg.add_button(label="Reset", callback=lambda: c.reset_scene())
        self.add(dpg.add_slider_float(label="speed", tag="speed", default_value=1.0, min_value=0.0, max_value=4.0,
                                      width=160), on_update=lambda v: setattr(c, "speed", float(v)))
        self.manual = self.add(dpg.add_checkbox(label="manual joints (M)", tag="manual"),
                               on_update=lambda v: setattr(c, "manual", v))

    def on_scene(self, robot_changed: bool) -> None:
        self.n_envs.set_unless_active(self.c.n_envs)
        self.spacing.set_unless_active(list(self.c.spec.envs.env_spacing))  # a new robot's comes from its reach

    def refresh(self) -> None:
        self.manual.set_unless_active(self.c.manual)
