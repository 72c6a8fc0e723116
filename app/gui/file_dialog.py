"""The app's file dialogs: a dearpygui window listing a folder, ours instead of dearpygui's own.

dearpygui's ``file_dialog`` (ImGuiFileDialog) skipped symbolic links to folders (the repository's
``scenes/`` and ``assets/``), opened nothing on a double-click, had a blank title bar, buttons
drawn with icon glyphs its font lacks ("+ R E") and sizes in French units ("o", "Ko"). This one
lists folders first (links followed), then the files with the dialog's extensions, with sizes in
B / KB / MB and their dates; a click picks an entry, a double-click opens it (a folder: goes in),
and the buttons say what they do. Keys typed while it is open are its own (the window's tag is one
of ``app.gui.window.FILE_DIALOGS``); Escape closes it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import dearpygui.dearpygui as dpg

DOUBLE_CLICK_S = 0.6  # two clicks on one entry within this long, or ...
DOUBLE_CLICK_FRAMES = 4  # ... within this many GUI frames (a slow frame's clicks reach the next ones), open it
MAX_ENTRIES = 400  # a folder with more lists its first ones (folders first)


def human_size(n_bytes: int) -> str:
    """``n_bytes`` as "512 B", "3.4 KB", "12.0 MB", "1.2 GB" (powers of 1024)."""
    size = float(n_bytes)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GB"


def list_folder(folder: Path, exts: tuple[str, ...]) -> list[dict]:
    """The entries of ``folder`` a dialog shows: ``{"name", "kind" ("folder" | "file"), "size",
    "modified"}``; folders first (links to folders too), then files whose suffix is in ``exts``
    (any file when ``exts`` is empty); hidden names (".git") left out; each group sorted by name."""
    folders, files = [], []
    try:
        names = sorted(os.listdir(folder), key=str.lower)
    except OSError:
        return []
    for name in names:
        if name.startswith("."):
            continue
        path = folder / name
        try:
            st = path.stat()  # follows links: a link to a folder is a folder
        except OSError:
            continue  # a dangling link
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(st.st_mtime))
        if path.is_dir():
            folders.append({"name": name + "/", "kind": "folder", "size": "", "modified": when})
        elif not exts or path.suffix.lower() in exts:
            files.append({"name": name, "kind": "file", "size": human_size(st.st_size), "modified": when})
    return (folders + files)[:MAX_ENTRIES]


class FileDialog:
    """A window (tag ``tag``, titled ``title``) to pick a file with one of ``exts`` (lowercase,
    with the dot); ``on_choose(path: str)`` gets the file chosen. ``save``: the name may be new
    (the button says "Save", and ``exts[0]`` is added to a name without a suffix)."""

    def __init__(self, tag: str, title: str, exts, on_choose, save: bool = False, action: str | None = None):
        self.tag, self.title, self.exts, self.save = tag, title, tuple(e.lower() for e in exts), save
        self.on_choose = on_choose
        self.folder = Path.cwd()
        self.entries: list[dict] = []
        self._rows: list[int] = []
        self._last_click: tuple[str, float, int] | None = None  # (entry, time, GUI frame)
        with dpg.window(tag=tag, label=title, show=False, width=720, height=460, pos=(140, 90), no_collapse=True,
                        on_close=self.hide):
            with dpg.group(horizontal=True):
                dpg.add_button(label="Up one folder", tag=f"{tag}_up", callback=lambda: self.go(self.folder.parent))
                dpg.add_input_text(tag=f"{tag}_folder", width=-1, on_enter=True,
                                   callback=lambda s, a: self.go(Path(a).expanduser()))
            with dpg.child_window(tag=f"{tag}_list", height=-62, border=True):
                pass
            with dpg.group(horizontal=True):
                dpg.add_text("file name")
                dpg.add_input_text(tag=f"{tag}_name", width=-1, on_enter=True, callback=lambda: self.accept())
            with dpg.group(horizontal=True):
                dpg.add_text("shows " + (" ".join(self.exts) if self.exts else "every file") + " files and folders",
                             tag=f"{tag}_filter")
                dpg.add_button(label=action or ("Save" if save else "Open"), tag=f"{tag}_ok", width=90,
                               callback=lambda: self.accept())
                dpg.add_button(label="Cancel", tag=f"{tag}_cancel", width=90, callback=self.hide)

    # -- showing ------------------------------------------------------------------------------------
    def show(self, folder=None, filename: str | None = None) -> None:
        """Open the dialog on ``folder`` (default: the last one, else the working folder), with
        ``filename`` in the name field."""
        self.go(Path(folder) if folder is not None else self.folder)
        if filename is not None:
            dpg.set_value(f"{self.tag}_name", filename)
        dpg.show_item(self.tag)
        dpg.focus_item(self.tag)

    def hide(self) -> None:
        dpg.hide_item(self.tag)

    @property
    def shown(self) -> bool:
        return dpg.is_item_shown(self.tag)

    def go(self, folder: Path) -> None:
        """List ``folder`` (a missing one: its nearest existing parent)."""
        folder = Path(folder).expanduser().absolute()
        while not folder.is_dir() and folder.parent != folder:
            folder = folder.parent
        self.folder = folder
        self.entries = list_folder(folder, self.exts)
        self._last_click = None
        dpg.set_value(f"{self.tag}_folder", str(folder))
        dpg.delete_item(f"{self.tag}_list", children_only=True)
        with dpg.table(parent=f"{self.tag}_list", header_row=True, borders_innerV=True, resizable=False,
                       policy=dpg.mvTable_SizingStretchProp):
            dpg.add_table_column(label="name", init_width_or_weight=5.0)
            dpg.add_table_column(label="size", init_width_or_weight=1.2)
            dpg.add_table_column(label="modified", init_width_or_weight=2.2)
            self._rows = []
            for entry in self.entries:
                with dpg.table_row():
                    self._rows.append(dpg.add_selectable(label=entry["name"], span_columns=True, user_data=entry,
                                                         callback=lambda s, a, u: self.click(u)))
                    dpg.add_text(entry["size"])
                    dpg.add_text(entry["modified"])

    # -- choosing -----------------------------------------------------------------------------------
    def click(self, entry: dict) -> None:
        """One click on an entry: picked (a file's name goes to the name field); the second click
        on it within DOUBLE_CLICK_S, or DOUBLE_CLICK_FRAMES frames, opens it."""
        now, frame = time.monotonic(), dpg.get_frame_count()
        last = self._last_click
        double = last is not None and last[0] == entry["name"] and (
            now - last[1] <= DOUBLE_CLICK_S or frame - last[2] <= DOUBLE_CLICK_FRAMES)
        self._last_click = None if double else (entry["name"], now, frame)
        for row in self._rows:  # one row lit: the one picked
            dpg.set_value(row, dpg.get_item_user_data(row) is entry)
        if entry["kind"] == "file":
            dpg.set_value(f"{self.tag}_name", entry["name"])
        if double:
            self.open(entry)

    def open(self, entry: dict) -> None:
        """Open an entry: go into a folder, choose a file."""
        if entry["kind"] == "folder":
            self.go(self.folder / entry["name"].rstrip("/"))
        else:
            self.choose(self.folder / entry["name"])

    def accept(self) -> None:
        """The Open / Save button (or Enter in the name field): the name typed, in the folder shown."""
        name = dpg.get_value(f"{self.tag}_name").strip()
        if not name:
            return
        path = (self.folder / Path(name).expanduser())
        if path.is_dir():
            self.go(path)
            return
        if self.save and not path.suffix and self.exts:
            path = path.with_suffix(self.exts[0])
        self.choose(path)

    def choose(self, path: Path) -> None:
        self.hide()
        self.on_choose(str(path))

    def report(self) -> dict:
        """The dialog's state for the window's JSON report: title, folder, entries (with their
        screen rectangles once drawn) and the labels of its buttons."""
        entries = []
        for entry, row in zip(self.entries, self._rows, strict=True):
            state = dpg.get_item_state(row)
            rect = [*state["rect_min"], *state["rect_max"]] if state.get("visible") and "rect_min" in state else None
            entries.append({**entry, "rect": rect})
        buttons = [dpg.get_item_label(f"{self.tag}_{b}") for b in ("up", "ok", "cancel")]
        (x, y), (w, h) = dpg.get_item_pos(self.tag), dpg.get_item_rect_size(self.tag)
        return {"shown": self.shown, "title": dpg.get_item_label(self.tag), "folder": str(self.folder),
                "entries": entries, "buttons": buttons, "rect": [x, y, x + w, y + h]}
