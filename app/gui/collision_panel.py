"""The app's collision widgets (dearpygui -> controller calls): the solver panel's avoidance switch
and margin (one row), and a Collisions section at the foot of the right panel (the sphere toggle,
the obstacle whose gizmo shows, its position typed in). :mod:`app.gui.panels` calls
:func:`solver_rows`, :func:`section`, :func:`refresh` and :func:`readout_lines`; errors go to the
status line through the panels' guard.
"""

from __future__ import annotations

import math

import dearpygui.dearpygui as dpg

NO_OBSTACLE = "none"  # the obstacle choice that shows no obstacle gizmo
WIDGETS = ("solver_avoid_collisions", "solver_collision_margin", "show_spheres", "obstacle_pick", "obstacle_pos")


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


def solver_rows(app, guard) -> None:
    """Inside the Solver section: the avoidance switch and the margin (m)."""
    c = app.controller
    with dpg.group(horizontal=True):  # one row: the panel's lower sections stay on screen
        dpg.add_checkbox(label="avoid collisions", tag="solver_avoid_collisions",
                         default_value=bool(c.spec.solver.avoid_collisions),
                         callback=guard(app, lambda v: c.set_solver_param("avoid_collisions", bool(v))))
        dpg.add_input_double(label="margin m", tag="solver_collision_margin", format="%.4g", width=70, step=0,
                             on_enter=True, default_value=float(c.spec.solver.collision_margin),
                             callback=guard(app, lambda v: set_margin(c, v)))


def section(app, guard) -> None:
    """The Collisions section: show the spheres; pick the obstacle to move (its gizmo in the view)."""
    c = app.controller
    with dpg.collapsing_header(label="Collisions", default_open=True):
        dpg.add_checkbox(label="show collision spheres", tag="show_spheres", default_value=c.show_spheres,
                         callback=guard(app, lambda v: c.show_collision_spheres(bool(v))))
        dpg.add_text("move obstacle (every env):")
        dpg.add_radio_button([NO_OBSTACLE], tag="obstacle_pick", default_value=NO_OBSTACLE,
                             callback=guard(app, lambda v: c.obstacles.select(_index(v))))
        dpg.add_input_floatx(label="pos m", tag="obstacle_pos", size=3, width=200, on_enter=True, format="%.4f",
                             callback=guard(app, lambda v: _set_pos(c, v)))


def _index(choice: str) -> int | None:
    return None if choice == NO_OBSTACLE else int(choice.split(":")[0])


def _set_pos(c, value) -> None:
    ed = c.obstacles
    if ed.selected is None:
        raise ValueError("obstacle pos: pick an obstacle first")
    ed.set_pose(ed.selected, pos=list(value)[:3])


def refresh(app, set_unless_active) -> None:
    """Per frame: the obstacle list of this scene, the selected one's position, the switches."""
    c = app.controller
    ed = c.obstacles
    if ed is None:
        return
    items = [NO_OBSTACLE] + ed.names()
    if getattr(app, "_obstacles_for", None) != (c.view.generation, tuple(items)):
        app._obstacles_for = (c.view.generation, tuple(items))
        dpg.configure_item("obstacle_pick", items=items)
        set_unless_active("solver_avoid_collisions", bool(c.spec.solver.avoid_collisions))
        set_unless_active("solver_collision_margin", float(c.spec.solver.collision_margin))
    dpg.set_value("obstacle_pick", items[0] if ed.selected is None else items[ed.selected + 1])
    dpg.configure_item("obstacle_pos", enabled=ed.selected is not None)
    if ed.selected is not None:
        set_unless_active("obstacle_pos", list(ed.pose(ed.selected)[0]))


def readout_lines(c) -> list[str]:
    """The two collision lines of the readouts: % of envs whose current answer collides, and why
    nothing is checked when nothing is (each short enough for the side panel)."""
    colliding = c.view.colliding
    if colliding is None:
        return ["in collision: not checked", "  (no obstacles, avoidance off)"]
    return [f"in collision {100.0 * colliding.mean():5.1f} %", f"  ({int(colliding.sum())} of {colliding.size} envs)"]
