"""What every section of the side panels is: a :class:`Panel` builds its widgets once, inside its
own collapsing header, and refreshes them from the controller's state every GUI frame."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import dearpygui.dearpygui as dpg

from ..widgets import Handle


class Panel:
    """One section of a side panel.

    Subclasses set ``title`` and write :meth:`widgets` (called once, inside the section's header)
    and, as they need, :meth:`on_scene` (a scene was installed), :meth:`refresh` (every frame once
    a scene is ready) and :meth:`refresh_always` (every frame, before that too). ``app`` is the
    window (:class:`app.gui.window.App`): the panel reads its controller and opens its dialogs."""

    title = ""

    def __init__(self, app):
        self.app = app
        self.c = app.controller
        self.handles: dict[str, Handle] = {}  # the widgets the report shows, by name

    def build(self) -> None:
        with dpg.collapsing_header(label=self.title, default_open=True):
            self.widgets()

    def widgets(self) -> None:
        raise NotImplementedError

    def add(self, item: int | str, on_update: Callable[..., Any] | None = None) -> Handle:
        """Keep a handle on ``item`` (listed in the report under its alias); ``on_update``: its
        callback, errors going to the status line."""
        handle = Handle(item, self.c)
        if on_update is not None:
            handle.on_update(on_update)
        self.handles[handle.name] = handle
        return handle

    def reported(self) -> dict[str, Handle]:
        """The widgets whose screen rectangles the window's report lists, by name."""
        return self.handles

    def on_scene(self, robot_changed: bool) -> None:
        """A scene was installed (a new robot when ``robot_changed``, else new envs or targets)."""

    def refresh(self) -> None:
        """Every GUI frame once the scene is ready: show the controller's state (never under a
        widget being edited)."""

    def refresh_always(self) -> None:
        """Every GUI frame, before the scene is ready too."""
