"""The Robot section: the robot loaded, a searchable list of the catalog, and "Load selected robot"."""

from __future__ import annotations

from pathlib import Path

import dearpygui.dearpygui as dpg

from engine import assets

from ..widgets import Handle, rect_of
from .base import Panel

CATALOG_ROWS = 5  # robots the catalog list shows at once
CATALOG_ROW_H = 17  # px per catalog row (the default font's 13 px and 4 px of item spacing)


def catalog(filter_text: str = "") -> list[str]:
    """The catalog's entries ("name  (family, format)") that have every word of ``filter_text``."""
    words = filter_text.lower().split()
    items = [f"{e.name}  ({e.family}, {e.format})" for e in assets.list_robots()]
    return [item for item in items if all(w in item.lower() for w in words)]


def catalog_item(robot_file, scene_file=None) -> str | None:
    """The catalog list's entry of a scene's robot (a catalog name, or a robot file that the
    catalog holds, relative to the scene file's folder or absolute), or None if it has none."""
    text = str(robot_file)
    candidates = [text]
    if scene_file is not None and not Path(text).is_absolute():
        candidates.append(str(Path(scene_file).resolve().parent / text))
    for cand in candidates:
        try:
            name = assets.resolve(cand).name
        except (KeyError, OSError, ValueError):
            continue
        return next((item for item in catalog() if item.split("  ")[0] == name), None)
    return None


class RobotPanel(Panel):
    """``choice``: the catalog entry lit (what "Load selected robot" loads); ``rows``: the entries
    the list shows, each a selectable item."""

    title = "Robot"

    def widgets(self) -> None:
        self.choice = ""
        self.rows: dict[str, int | str] = {}
        self.name = self.add(dpg.add_text("", tag="robot_name"))
        self.filter = self.add(dpg.add_input_text(hint="search the catalog", tag="robot_filter", width=-1),
                               on_update=self.show_matches)
        self.list = self.add(dpg.add_child_window(tag="robot_list", height=CATALOG_ROWS * CATALOG_ROW_H + 8,
                                                  width=-1, border=True))
        self.show_matches("")
        self.add(dpg.add_button(label="Load selected robot", tag="robot_load", width=-1), on_update=self.load)

    def load(self, _=None) -> None:
        """Load the lit entry; with none (the search matches nothing) say so and load nothing."""
        if not self.choice:
            self.c.error(f"no catalog robot matches {self.filter.value!r}: nothing loaded")
            return
        self.c.load_robot(self.choice.split("  ")[0])

    def show_matches(self, filter_text: str) -> None:
        """Show the catalog entries matching the search box; the first is picked when the one
        picked before is filtered out, none when nothing matches (so "Load selected robot" loads
        what the list shows, or nothing)."""
        items = catalog(filter_text)
        dpg.delete_item(self.list.item, children_only=True)
        self.rows = {item: dpg.add_selectable(label=item, parent=self.list.item, user_data=item,
                                              callback=lambda s, a, u: self.pick(u))
                     for item in items}
        self.pick(self.choice if self.choice in items else items[0] if items else "")

    def pick(self, item: str, scroll: bool = False) -> None:
        """Light the catalog entry ``item`` (alone); ``scroll``: bring it into the list's view."""
        self.choice = item
        for name, row in self.rows.items():
            dpg.set_value(row, name == item)
        if scroll and item in self.rows:
            index = list(self.rows).index(item)
            dpg.set_y_scroll(self.list.item, max(0.0, (index - CATALOG_ROWS // 2) * CATALOG_ROW_H))

    def choice_rect(self) -> list[float] | None:
        """The lit entry's screen rectangle while the list's view shows it, else None."""
        row = self.rows.get(self.choice)
        return None if row is None else rect_of(Handle(row, self.c).state(), drawn=True)

    def on_scene(self, robot_changed: bool) -> None:
        """A new robot: the catalog lights it (the search cleared if it hid it)."""
        if not robot_changed:
            return
        item = catalog_item(self.c.spec.robot.file, self.c.spec.source)
        if item is not None:
            if item not in self.rows:
                self.filter.value = ""
                self.show_matches("")
            self.pick(item, scroll=True)

    def refresh(self) -> None:
        robot = self.c.robot
        self.name.value = f"{robot.tree.name}: {robot.n_links} links, {robot.n_dofs} dofs"
