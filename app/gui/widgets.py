"""Typed handles on dearpygui items, in the style of viser's GUI handles: a panel keeps one
:class:`Handle` per widget it reads or writes, and its code reads ``handle.value`` and sets
``handle.on_update(fn)``; no string tag is spelled twice. A handle's ``name`` is its item's alias,
the name the window's JSON report (:mod:`app.gui.report`) and the window tests use for it.

Errors in a widget's callback never escape into dearpygui: they go to the app's status line, keyed
by the widget, and stay there until the same widget is used again successfully.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import dearpygui.dearpygui as dpg
from pydantic import ValidationError

from engine.scenefile.errors import one_line


class Messages(Protocol):
    """Where a callback's errors go (the controller's status line)."""

    def error(self, text: str, key: str | None = None) -> None: ...
    def resolve(self, key: str) -> None: ...


def guarded(messages: Messages, name: str, fn: Callable[..., Any]) -> Callable:
    """A dearpygui callback running ``fn(value)`` (or ``fn(value, user_data)`` when the item has
    user data): a ValidationError or any other exception becomes an error on the status line under
    the key ``"widget NAME"``, and a success clears that key's error."""
    key = f"widget {name}"

    def callback(sender, value, user_data=None):
        try:
            fn(value) if user_data is None else fn(value, user_data)
        except ValidationError as err:
            messages.error(one_line(err), key=key)
        except Exception as err:
            messages.error(str(err), key=key)
        else:
            messages.resolve(key)
    return callback


class Handle:
    """One dearpygui item: its value, its options, its callback and where it is on screen.

    ``item``: the item's id or alias, as ``dpg.add_*`` returned it; ``messages``: where the
    callback's errors go."""

    def __init__(self, item: int | str, messages: Messages):
        self.item = item
        self.messages = messages

    @property
    def name(self) -> str:
        """The item's alias (its tag), or its id as text for an item without one."""
        return dpg.get_item_alias(self.item) or str(self.item)

    @property
    def value(self) -> Any:
        return dpg.get_value(self.item)

    @value.setter
    def value(self, value: Any) -> None:
        dpg.set_value(self.item, value)

    def set_unless_active(self, value: Any) -> None:
        """Show ``value`` unless the user is editing the widget right now (never type under them)."""
        if dpg.does_item_exist(self.item) and not dpg.is_item_active(self.item):
            dpg.set_value(self.item, value)

    def on_update(self, fn: Callable[..., Any]) -> Handle:
        """Run ``fn(value)`` (``fn(value, user_data)`` with user data) when the user changes the
        widget, its errors going to the status line (:func:`guarded`)."""
        dpg.configure_item(self.item, callback=guarded(self.messages, self.name, fn))
        return self

    def configure(self, **options: Any) -> None:
        dpg.configure_item(self.item, **options)

    @property
    def exists(self) -> bool:
        return dpg.does_item_exist(self.item)

    def state(self) -> dict:
        """dearpygui's state of the item (rect, visible, hovered, ...); empty once it is gone."""
        return dpg.get_item_state(self.item) if self.exists else {}


def rect_of(state: dict, drawn: bool = False) -> list[float] | None:
    """An item's screen rectangle ``[x0, y0, x1, y1]`` (px) from its dearpygui ``state``, unless it
    is hidden; ``drawn``: only while it is drawn (a row scrolled out of its list's view has none)."""
    shown = state.get("visible", not drawn)
    return [*state["rect_min"], *state["rect_max"]] if shown and "rect_min" in state else None


def measure(text: str, wrap: float) -> tuple[float, float]:
    """The size in px of ``text`` drawn in the default font, wrapped at ``wrap`` px (0: unwrapped)."""
    return dpg.get_text_size(text, wrap_width=wrap) if wrap else dpg.get_text_size(text)
