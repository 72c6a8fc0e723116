"""The status line under the 3D view: the controller's newest message, wrapped at the view's width
and cut to a few lines (the whole text in its tooltip), coloured by level."""

from __future__ import annotations

import dearpygui.dearpygui as dpg

from ...control import status as status_mod
from ..widgets import Handle, measure

STATUS_COLORS = {"error": (255, 95, 85, 255), "warning": (240, 180, 70, 255), "info": (200, 200, 200, 255)}
STATUS_LINES = 2


class StatusLine:
    """Built inside the view's column (:meth:`build`); :meth:`refresh` every frame. ``level``: the
    level of the message shown ("info" when none)."""

    def __init__(self, app):
        self.app = app
        self.shown: tuple | None = None  # (text shown, level, wrap width) as last set

    def build(self) -> None:
        self.text = Handle(dpg.add_text("", tag="status", wrap=400), self.app.controller)
        with dpg.tooltip(self.text.item, show=False) as tip:
            self.full = Handle(dpg.add_text("", wrap=600), self.app.controller)
        self.tip = Handle(tip, self.app.controller)

    @property
    def level(self) -> str:
        return self.shown[1] if self.shown else "info"

    def refresh(self) -> None:
        level, text = self.app.controller.status() or ("info", "")
        width = max(self.app.view.size[0] - 8, 100)
        shown, cut = status_mod.fit(text, width, STATUS_LINES, measure)
        if (shown, level, width) != self.shown:
            self.shown = (shown, level, width)
            self.text.configure(wrap=width, color=STATUS_COLORS[level])
            self.text.value = shown
            self.full.value = text if cut else ""
            self.tip.configure(show=cut)
