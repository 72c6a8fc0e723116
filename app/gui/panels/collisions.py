"""The Collisions section at the foot of the right panel: show the robot's collision spheres, pick
the obstacle whose gizmo shows (it moves in every env), and type its position."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from .base import Panel

NO_OBSTACLE = "none"  # the obstacle choice that shows no obstacle gizmo


def obstacle_index(choice: str) -> int | None:
    """The obstacle of a choice of the list ("2: box"), None for :data:`NO_OBSTACLE`."""
    return None if choice == NO_OBSTACLE else int(choice.split(":")[0])


class CollisionsPanel(Panel):
    title = "Collisions"

    def widgets(self) -> None:
        c = self.c
        self.spheres = self.add(dpg.add_checkbox(label="show collision spheres", tag="show_spheres",
                                                 default_value=c.show_spheres),
                                on_update=lambda v: c.show_collision_spheres(bool(v)))
        dpg.add_text("move obstacle (every env):")
        self.pick = self.add(dpg.add_radio_button([NO_OBSTACLE], tag="obstacle_pick", default_value=NO_OBSTACLE),
                             on_update=lambda v: c.obstacles.select(obstacle_index(v)))
        self.pos = self.add(dpg.add_input_floatx(label="pos m", tag="obstacle_pos", size=3, width=200, on_enter=True,
                                                 format="%.4f"), on_update=self.set_pos)
        self.shown_for = None  # the obstacles the list was made for

    def set_pos(self, value) -> None:
        ed = self.c.obstacles
        if ed.selected is None:
            raise ValueError("obstacle pos: pick an obstacle first")
        ed.set_pose(ed.selected, pos=list(value)[:3])

    def refresh(self) -> None:
        """The obstacle list of this scene, the selected one's position."""
        ed = self.c.obstacles
        if ed is None:
            return
        items = [NO_OBSTACLE] + ed.names()
        if self.shown_for != (self.c.view.generation, tuple(items)):
            self.shown_for = (self.c.view.generation, tuple(items))
            self.pick.configure(items=items)
        self.pick.value = items[0] if ed.selected is None else items[ed.selected + 1]
        self.pos.configure(enabled=ed.selected is not None)
        if ed.selected is not None:
            self.pos.set_unless_active(list(ed.pose(ed.selected)[0]))
