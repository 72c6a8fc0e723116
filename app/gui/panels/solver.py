"""The Solver section: the motion switches (smooth tracking, planned paths), the solver settings
of the engine's table that the panel shows (:data:`engine.ik.options.SETTINGS`, those marked
``panel``: a new one appears here by itself), and collision avoidance with its margin. A change is
validated like the scene file's ``solver:`` section; a bad value stays on the status line and the
solver keeps the old one."""

from __future__ import annotations

import math

import dearpygui.dearpygui as dpg

from engine.ik.options import SETTINGS

from .base import Panel

SOLVER_FIELDS = tuple(setting for setting in SETTINGS if setting.panel)


def set_margin(c, value) -> bool:
    """The margin field's callback: ``value`` m, finite and >= 0 (the scene file's rule), else an
    error naming ``collision_margin`` on the status line (the solver keeps the old margin)."""
    try:
        margin = float(value)
    except (TypeError, ValueError):
        margin = math.nan
    if not math.isfinite(margin):
        c.error(f"solver: collision_margin: expected a finite number of metres >= 0, got {value!r}",
                key="solver collision_margin")
        return False
    return c.set_solver_param("collision_margin", margin)


class SolverPanel(Panel):
    title = "Solver"

    def widgets(self) -> None:
        c = self.c
        with dpg.group(horizontal=True):  # the switches on one row: the panel's lower sections stay on screen
            self.track = self.add(dpg.add_checkbox(label="smooth", tag="solver_track",
                                                   default_value=bool(c.spec.solver.track)),
                                  on_update=lambda v: c.set_smooth(bool(v)))  # within velocity limits
            self.plan = self.add(dpg.add_checkbox(label="plan", tag="solver_plan",
                                                  default_value=bool(c.spec.solver.plan)),
                                 on_update=lambda v: c.set_plan(bool(v)))  # along collision-free paths
            for setting in SOLVER_FIELDS:
                if setting.kind == "bool":
                    self.field(setting)
        for setting in SOLVER_FIELDS:
            if setting.kind != "bool":
                self.field(setting)
        with dpg.group(horizontal=True):  # one row: the panel's lower sections stay on screen
            self.avoid = self.add(dpg.add_checkbox(label="avoid collisions", tag="solver_avoid_collisions",
                                                   default_value=bool(c.spec.solver.avoid_collisions)),
                                  on_update=lambda v: c.set_solver_param("avoid_collisions", bool(v)))
            self.margin = self.add(dpg.add_input_double(label="margin m", tag="solver_collision_margin",
                                                        format="%.4g", width=70, step=0, on_enter=True,
                                                        default_value=float(c.spec.solver.collision_margin)),
                                   on_update=lambda v: set_margin(c, v))

    def field(self, setting) -> None:
        """The widget of one solver setting (:class:`engine.ik.options.Setting`), named
        ``solver_<name>``: a number field, a checkbox or a list."""
        c = self.c
        name, tag = setting.name, f"solver_{setting.name}"
        value = getattr(c.spec.solver, name)
        label = f"{setting.label} ({setting.unit})" if setting.unit else setting.label
        if setting.kind == "bool":
            item, cast = dpg.add_checkbox(label=label, tag=tag, default_value=bool(value)), bool
        elif setting.kind == "choice":
            item, cast = dpg.add_combo(list(setting.choices), label=label, tag=tag, default_value=value,
                                       width=120), str
        elif setting.kind == "int":
            lo, hi = setting.ui_range
            item, cast = dpg.add_input_int(label=label, tag=tag, default_value=value, min_value=int(lo),
                                           max_value=int(hi), min_clamped=True, max_clamped=True, width=120,
                                           on_enter=True), int
        else:
            item, cast = dpg.add_input_double(label=label, tag=tag, default_value=value, format="%.6g", width=120,
                                              on_enter=True, step=0), float
        self.add(item, on_update=lambda v: c.set_solver_param(name, cast(v)))
        if name == "kernel":
            with dpg.tooltip(item):
                dpg.add_text("On a fresh machine the generic solver is compiled in the background (a one-off);\n"
                             "until then, and in scenes opened before it is done, the per-robot one answers\n"
                             "('auto': the same algorithm and tolerances).")

    def on_scene(self, robot_changed: bool) -> None:
        self.refresh()
        self.avoid.set_unless_active(bool(self.c.spec.solver.avoid_collisions))
        self.margin.set_unless_active(float(self.c.spec.solver.collision_margin))

    def refresh(self) -> None:
        """The two motion switches follow the spec (one turns the other off); the kernel's label says
        when another solver answers than the one chosen (the generic one is compiled in the
        background on a fresh machine: until then the per-robot one answers)."""
        self.track.set_unless_active(bool(self.c.spec.solver.track))
        self.plan.set_unless_active(bool(self.c.spec.solver.plan))
        label = kernel_label(self.c.spec.solver.kernel, self.c.view.kernel)
        if dpg.does_item_exist("solver_kernel") and dpg.get_item_label("solver_kernel") != label:
            dpg.configure_item("solver_kernel", label=label)


def kernel_label(chosen: str, answering: str | None) -> str:
    """The kernel field's label: "kernel", or which solver answers meanwhile."""
    if answering is None or answering == chosen:
        return "kernel"
    return f"kernel ({answering} answers)"
