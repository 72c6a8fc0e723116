"""The Readouts section: frame rates, where the solver runs, the last solve's timings, convergence,
worst errors, joint steps and collisions, as a fixed number of lines (so the sections below never
move under the mouse), and a plot of IK time and convergence over the last seconds."""

from __future__ import annotations

import dearpygui.dearpygui as dpg
import numpy as np

from engine.runtime import backend

from ...control import status as status_mod
from ..widgets import measure
from .base import Panel

READOUT_LINES = 9  # the readouts always have this many lines
STEP_SPAN_S = 2.0  # the worst-step readout is the largest joint step of the frames solved in the last 2 s
PLOT_HEIGHT_PX = 80  # the plot's whole height: legend above, the data area, no x tick labels
PANEL_PAD_PX = 36  # the side panel's scrollbar and padding: a readout line fits in the panel's width less this


def collision_lines(c) -> list[str]:
    """The two collision lines: % of envs whose current answer collides, and why nothing is
    checked when nothing is (each short enough for the side panel)."""
    colliding = c.view.colliding
    if colliding is None:
        return ["in collision: not checked", "  (no obstacles, avoidance off)"]
    return [f"in collision {100.0 * colliding.mean():5.1f} %", f"  ({int(colliding.sum())} of {colliding.size} envs)"]


def step_line(step: float, m) -> str:
    """The worst joint step of the last 2 s and, tracking, the lagging envs; planning, the envs
    moving along paths and those whose planning failed (short: it shares the panel's width)."""
    if m.plan_failed is None:
        return f"worst step {step:6.4f} rad (last 2 s)   lagging {m.lagging}"
    return f"worst step {step:6.4f} rad   moving {m.lagging}   no path {m.plan_failed}"


def paced(c) -> bool:
    """The window asks for an image only every few frames (app.control.image_pacing)."""
    return c.pacing is not None and c.pacing.frames_per_image > 1


def solve_lines(c, gui_fps: float, images_per_s: float) -> list[str]:
    """The readout lines before the collision ones (as many before the first solve as after)."""
    m = c.metrics.last
    state = "manual" if c.manual else ("playing" if c.playing else "paused")
    lines = [f"GUI {gui_fps:3.0f} fps  images {images_per_s:4.1f}/s  solves {c.metrics.fps:3.0f}/s",
             f"{state}   envs {c.n_envs}" + ("   images paced" if paced(c) else ""),
             f"backend {backend.current().describe()}"]
    if m is not None:
        lines += [f"IK {m.ik_ms:6.2f} ms   render {c.render_ms:6.1f} ms",
                  f"converged {m.converged:5.1f} %   failed {m.failed}",
                  f"worst pos {1e3 * m.worst_pos:7.3f} mm   rot {np.degrees(m.worst_rot):6.3f} deg",
                  step_line(c.metrics.recent_max("worst_step", STEP_SPAN_S), m)]
    else:
        lines += ["IK     -- ms   render     -- ms", "converged    -- %   failed --",
                  "worst pos     -- mm   rot    -- deg", "worst step     -- rad (last 2 s)   lagging --"]
    return lines


class ReadoutsPanel(Panel):
    title = "Readouts"

    def widgets(self) -> None:
        self.text = self.add(dpg.add_text("\n".join([" "] * READOUT_LINES), tag="readouts"))  # as tall as filled
        # short, so that the Recording section stays on screen: no axis labels (the legend gives the
        # units) and no x tick labels (the last 5 s, newest right), less padding; with them the data
        # area had 9 px rows left at 1100x880. No inputs: the mouse wheel scrolls the panel, it does
        # not zoom the plot (a readout; a wheel over it stopped the panel scrolling)
        with dpg.plot(height=PLOT_HEIGHT_PX, width=-1, tag="plot", no_inputs=True, no_menus=True) as plot:
            dpg.add_plot_legend(tag="plot_legend", outside=True, location=dpg.mvPlot_Location_North,
                                horizontal=True)  # above the plot, off its data
            self.x_axis = dpg.add_plot_axis(dpg.mvXAxis, tag="plot_x", no_tick_labels=True)
            with dpg.plot_axis(dpg.mvYAxis, tag="plot_y") as y_axis:
                self.ik_series = dpg.add_line_series([], [], label="IK ms", tag="series_ik")  # x: s before now
                self.conv_series = dpg.add_line_series([], [], label="% converged", tag="series_conv")
        self.y_axis = y_axis
        with dpg.theme() as compact:
            with dpg.theme_component(dpg.mvPlot):
                dpg.add_theme_style(dpg.mvPlotStyleVar_PlotPadding, 4, 2, category=dpg.mvThemeCat_Plots)
                dpg.add_theme_style(dpg.mvPlotStyleVar_LegendPadding, 2, 1, category=dpg.mvThemeCat_Plots)
        dpg.bind_item_theme(plot, compact)
        self.plot = self.add(plot)

    def legend(self) -> dict:
        """Where the plot's legend is (for the report): ``{"outside": bool, "location": int}``."""
        return {k: dpg.get_item_configuration("plot_legend")[k] for k in ("outside", "location")}

    def refresh(self) -> None:
        c = self.c
        lines = solve_lines(c, *self.app.rates()) + collision_lines(c)
        width = max(dpg.get_item_rect_size(self.app.left)[0] - PANEL_PAD_PX, 100)
        lines = [status_mod.fit(line, width, 1, measure)[0] for line in lines]
        self.text.value = "\n".join(lines + [""] * (READOUT_LINES - len(lines)))
        xs, ik_ms = c.metrics.series("ik_ms")
        dpg.set_value(self.ik_series, [xs, ik_ms])
        xs, converged = c.metrics.series("converged")
        dpg.set_value(self.conv_series, [xs, converged])
        if xs:
            dpg.set_axis_limits(self.x_axis, min(xs), 0.0)
            dpg.set_axis_limits(self.y_axis, 0.0, max(105.0, max(ik_ms or [0]) * 1.1))
