"""The 3D view of the window: the renderer's latest image as a texture in a drawlist, the gizmo
handles drawn over it at the GUI's frame rate (they follow the mouse whatever the renderer's
rate), a recording mark, and a progress note while the scene is being built."""

from __future__ import annotations

import time

import dearpygui.dearpygui as dpg
import numpy as np

from ..control import gizmo as gz

LEADER_RGBA = (235, 235, 235, 200)  # the line from a gizmo pushed aside back to its target
CELL_RGBA = (255, 214, 90, 150)  # the outline of the selected env's cell
OBSTACLE_RGBA = (255, 255, 255, 120)  # the square at the centre of the selected obstacle's gizmo
OBSTACLE_MARK = np.array([[-5.0, -5.0], [5.0, -5.0], [5.0, 5.0], [-5.0, 5.0]])  # px around the centre
LABEL_RGBA = (235, 235, 235, 230)  # a gizmo's name (its target's link, or the obstacle's)
LABEL_HOVER_RGBA = (255, 225, 90, 255)  # ... of the gizmo under the cursor
LABEL_PX = 15  # label text height, px
PROGRESS_PX = 18  # the progress note's text height, px
FONT_PX = 13  # dearpygui's default font size, px (what get_text_size measures with)


class View:
    """The drawlist of the 3D view inside ``parent``; ``app.controller`` provides what it draws."""

    def __init__(self, app, parent):
        self.app = app
        self.size = (640, 360)
        self.upload_ms = 0.0  # time of the last texture upload
        self._buf = None
        self.sizes_shown: list[tuple[int, int]] = []  # (width, height) px of the images shown: an entry per change
        self.textures = dpg.add_texture_registry()  # one for every image: a new registry per image piled up
        self.tex = dpg.add_static_texture(*self.size, np.zeros(self.size[0] * self.size[1] * 4, np.float32),
                                          parent=self.textures)
        self.drawlist = dpg.add_drawlist(*self.size, parent=parent)
        self.image = dpg.draw_image(self.tex, (0, 0), self.size, parent=self.drawlist)
        self.overlay = dpg.add_draw_layer(parent=self.drawlist)
        self.labels: list[dict] = []  # the gizmos' names drawn this frame: text, top-left view px, hovered
        self.cell_drawn: list = []  # the selected env's outline as drawn this frame (clipped), view px
        self.progress: dict | None = None  # the progress note's box and text rectangles, view px, while shown
        self.marks = dpg.add_draw_layer(parent=self.drawlist)

    def resize(self, width: int, height: int) -> None:
        width, height = max(int(width), 64), max(int(height), 64)
        if (width, height) == self.size and self.app.controller.view_laid_out:
            return
        self.size = (width, height)
        dpg.configure_item(self.drawlist, width=width, height=height)
        self.app.controller.resize_view(width, height)

    def show_image(self, img: np.ndarray) -> None:
        """Upload an (H, W, 3) uint8 frame as a new static texture, in place of the last one.

        Not a dynamic texture: dearpygui (2.x) uploads it to the GL again at every GUI frame,
        changed or not; under a software GL (Mesa's llvmpipe: Xvfb, a VM) that upload was a third
        of a GUI frame's CPU (~14 of 39 ms at 1500 x 900 px on 2 cores, measured). Not a raw
        texture written in place either, though a new image cost ~4 ms that way against ~25 ms
        here (1020 x 885 px): dearpygui 2.3.1 showed a new raw texture's first frames black or
        stale, and a bare script using one crashed in 2 of 5 runs (docs/design.md, "The GUI")."""
        h, w = img.shape[:2]
        t0 = time.perf_counter()
        if not self.sizes_shown or self.sizes_shown[-1] != (w, h):
            self.sizes_shown = [*self.sizes_shown[-31:], (w, h)]  # the last 32
        if self._buf is None or self._buf.shape != (h, w, 4):
            self._buf = np.ones((h, w, 4), np.float32)  # alpha stays 1
        np.multiply(img, np.float32(1.0 / 255.0), out=self._buf[..., :3])
        old = self.tex
        self.tex = dpg.add_static_texture(w, h, self._buf.ravel(), parent=self.textures)
        dpg.configure_item(self.image, texture_tag=self.tex)
        dpg.delete_item(old)
        scale, x0, y0 = self.app.controller.view_transform()
        if (w, h) != (self.app.controller.camera.width, self.app.controller.camera.height):
            scale, x0, y0 = min(self.size[0] / w, self.size[1] / h), 0.0, 0.0  # an image of the size before
        dpg.configure_item(self.image, pmin=(x0, y0), pmax=(x0 + scale * w, y0 + scale * h))
        self.upload_ms = (time.perf_counter() - t0) * 1e3

    def mouse(self) -> tuple[float, float]:
        """Mouse position in camera pixels (x right, y down): the view's, but while a recording
        letterboxes the image in the view."""
        mx, my = dpg.get_mouse_pos(local=False)
        x0, y0 = dpg.get_item_rect_min(self.drawlist)
        scale, ox, oy = self.app.controller.view_transform()
        return (mx - x0 - ox) / scale, (my - y0 - oy) / scale

    def to_view(self, pix) -> np.ndarray:
        """Camera pixels (..., 2) -> view pixels."""
        scale, ox, oy = self.app.controller.view_transform()
        return np.asarray(pix, float) * scale + [ox, oy]

    def draw_overlay(self) -> None:
        """Gizmo handles of every target; the hovered one highlighted; masked-out ones dimmed. Then
        the recording mark, or the progress note while the scene is being built."""
        c = self.app.controller
        dpg.delete_item(self.overlay, children_only=True)
        dpg.delete_item(self.marks, children_only=True)
        if c.ready:
            self._draw_gizmos(c)
        if c.recording is not None:
            dpg.draw_circle((18, 18), 8, color=(255, 40, 40, 255), fill=(255, 40, 40, 255), parent=self.marks)
            dpg.draw_text((32, 9), f"REC {c.recording_text()}", color=(255, 80, 80, 255), size=16,
                          parent=self.marks)
        busy = c.busy if c.ready else (c.busy or "starting")
        self.progress = None
        if busy:
            self._draw_progress(busy)

    def _draw_gizmos(self, c) -> None:
        """The gizmos (and leader lines), drawn over the view; the same primitives in camera pixels
        go to ``c.overlay_prims`` for a recording that includes them."""
        self._draw_selected_cell(c)
        hover = c.targets.hover.handle if c.targets.hover is not None else None
        prims, labels = [], []
        for i, (gizmo, anchor) in enumerate(c.targets.gizmos()):
            if np.linalg.norm(gizmo.pos - anchor) > 1e-9:  # pushed aside: a leader line to its target
                (a, b), depth = c.camera.project(np.array([anchor, gizmo.pos]))
                if np.all(np.isfinite([a, b])) and np.all(depth > 0):
                    prims += [("line", [a, b], LEADER_RGBA, 1.5), ("circle", a, 3, LEADER_RGBA)]
            own = _gizmo_prims(c.camera, gizmo, hover if c.targets.hover_target == i else None,
                               mark=i == c.targets.selected)
            prims += own
            labels.append(_label(own, c.targets.targets[i].link, c.targets.hover_target == i))
        obstacle = c.obstacles.gizmo() if c.obstacles is not None else None
        if obstacle is not None:  # the selected obstacle's: the same handles, a square mark at its centre
            hover = c.obstacles.hover.handle if c.obstacles.hover is not None else None
            own = _gizmo_prims(c.camera, obstacle, hover)
            prims += own
            (centre,), depth = c.camera.project(obstacle.pos[None])
            if np.all(np.isfinite(centre)) and depth[0] > 0:
                prims.append(("polygon", centre + OBSTACLE_MARK, OBSTACLE_RGBA, (255, 255, 255, 255)))
            labels.append(_label(own, "obstacle " + c.obstacles.names()[c.obstacles.selected], hover is not None))
        prims += [p for p in labels if p is not None]
        self.labels = [{"text": p[2], "px": list(self.to_view(p[1])), "hovered": p[3] == LABEL_HOVER_RGBA}
                       for p in labels if p is not None]  # in the window's report
        c.overlay_prims = prims
        scale, ox, oy = c.view_transform()
        for p in prims:
            pts = (np.asarray(p[1], float) * scale + [ox, oy]).tolist()
            if p[0] == "arrow":
                dpg.draw_arrow(pts[1], pts[0], color=p[2], thickness=p[3], size=8, parent=self.overlay)
            elif p[0] == "line":
                dpg.draw_polyline(pts, color=p[2], thickness=p[3], parent=self.overlay)
            elif p[0] == "polygon":
                dpg.draw_polygon(pts + [pts[0]], color=p[3], fill=p[2], thickness=1.0, parent=self.overlay)
            elif p[0] == "text":
                dpg.draw_text(pts, p[2], color=p[3], size=p[4], parent=self.overlay)
            else:
                dpg.draw_circle(pts, p[2] * scale, color=p[3], fill=p[3], parent=self.overlay)

    @staticmethod
    def cell_corners(c) -> np.ndarray:
        """(4, 3) world corners of the selected env's cell outline on the ground."""
        half = 0.47 * np.asarray(c.spec.envs.env_spacing, float)
        x, y = c.view.offsets[c.selected_env][:2]
        return np.array([[x - half[0], y - half[1], 0.0], [x + half[0], y - half[1], 0.0],
                         [x + half[0], y + half[1], 0.0], [x - half[0], y + half[1], 0.0]])

    def _draw_selected_cell(self, c) -> None:
        """The selected env's cell outlined on the ground: where the gizmos are, and whose joints show.
        Clipped to the image: while a recording letterboxes it, nothing is drawn on the bars."""
        pix, depth = c.camera.project(self.cell_corners(c))
        self.cell_drawn = []
        if np.all(np.isfinite(pix)) and np.all(depth > 0):
            inside = clip_polygon(pix, c.camera.width, c.camera.height)
            if len(inside) >= 2:
                self.cell_drawn = self.to_view(inside).tolist()
                dpg.draw_polyline(self.cell_drawn, closed=True, color=CELL_RGBA, thickness=2.0, parent=self.overlay)

    def _draw_progress(self, text: str) -> None:
        """A bar that sweeps while the sim thread works (its length is not a fraction: how long a
        build or a kernel compile takes is not known in advance), with what it is doing: the text
        wrapped to the view's width, the box around it sized to hold it (``self.progress`` keeps
        both rectangles for the window's report)."""
        w, h = self.size
        lines = _wrap(text, 0.8 * w - 32, _progress_text_size)
        sizes = [_progress_text_size(line) for line in lines]
        text_w = max(s[0] for s in sizes)
        text_h = sum(s[1] for s in sizes)
        bar_w = max(0.5 * w, text_w)
        x0, x1 = 0.5 * (w - bar_w), 0.5 * (w + bar_w)
        y = 0.5 * (h + text_h)
        box = (x0 - 16, y - text_h - 16, x1 + 16, y + 28)
        dpg.draw_rectangle(box[:2], box[2:], color=(0, 0, 0, 0), fill=(30, 32, 36, 230), rounding=6,
                           parent=self.marks)
        top = y - text_h - 8
        for line, size in zip(lines, sizes, strict=True):
            dpg.draw_text((x0, top), line, color=(230, 230, 230, 255), size=PROGRESS_PX, parent=self.marks)
            top += size[1]
        self.progress = {"box": list(box), "text": [x0, y - text_h - 8, x0 + text_w, y - 8], "lines": lines}
        dpg.draw_rectangle((x0, y), (x1, y + 10), color=(90, 95, 105, 255), parent=self.marks)
        phase = (time.perf_counter() * 0.6) % 1.0
        a = x0 + (x1 - x0) * max(0.0, phase * 1.3 - 0.3)
        b = x0 + (x1 - x0) * min(1.0, phase * 1.3)
        dpg.draw_rectangle((a, y + 1), (b, y + 9), color=(0, 0, 0, 0), fill=(90, 160, 255, 255), parent=self.marks)


def clip_polygon(points, width: float, height: float) -> np.ndarray:
    """The closed polygon ``points`` (N, 2) clipped to the rectangle [0, width] x [0, height]
    (Sutherland-Hodgman: one pass per edge of the rectangle); (M, 2), M = 0 when nothing is left."""
    poly = [np.asarray(p, float) for p in points]
    edges = ((0, 0.0, False), (0, float(width), True), (1, 0.0, False), (1, float(height), True))
    for axis, bound, keep_below in edges:
        out = []
        for i, cur in enumerate(poly):
            prev = poly[i - 1]
            cur_in = cur[axis] <= bound if keep_below else cur[axis] >= bound
            prev_in = prev[axis] <= bound if keep_below else prev[axis] >= bound
            if cur_in != prev_in:
                t = (bound - prev[axis]) / (cur[axis] - prev[axis])
                out.append(prev + t * (cur - prev))
            if cur_in:
                out.append(cur)
        poly = out
        if not poly:
            break
    return np.array(poly).reshape(-1, 2)


def _progress_text_size(text: str) -> tuple[float, float]:
    """(width, height) px of ``text`` drawn at PROGRESS_PX (the default font's size scaled)."""
    size = dpg.get_text_size(text) or (7.0 * len(text), 13.0)
    scale = PROGRESS_PX / FONT_PX
    return size[0] * scale, size[1] * scale


def _wrap(text: str, width: float, measure) -> list[str]:
    """``text`` broken at spaces into lines no wider than ``width`` px (a single word wider than
    that is cut into pieces that fit)."""
    lines: list[str] = []
    for word in text.split():
        while measure(word)[0] > width and len(word) > 1:  # a long path: cut it
            cut = max(1, int(len(word) * width / measure(word)[0]))
            head, word = word[:cut], word[cut:]
            if lines and measure(lines[-1] + " " + head)[0] <= width:
                lines[-1] += " " + head
            else:
                lines.append(head)
        if lines and measure(lines[-1] + " " + word)[0] <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def _gizmo_prims(camera, gizmo, hover, mark: bool = False) -> list:
    """The drawing primitives (camera pixels) of one gizmo's handles: arrows, plane squares, rings;
    the hovered handle highlighted, disabled ones dimmed; ``mark``: a dot on the x arrow's base."""
    prims = []
    for handle in gz.handle_geometry(gizmo):
        pix, depth = camera.project(handle.points)
        if not np.all(np.isfinite(pix)) or np.any(depth <= 0):
            continue
        rgb = handle.display_color(hovered=handle is hover or _same(handle, hover))
        color = tuple(int(255 * x) for x in rgb) + (255 if handle.enabled else 110,)
        width = 3.0 if handle.enabled else 1.5
        if handle.kind == "axis":
            prims.append(("arrow", pix, color, width))
        elif handle.kind == "plane":
            prims.append(("polygon", pix, color[:3] + (90 if handle.enabled else 30,), color))
        else:
            prims.append(("line", np.vstack([pix, pix[:1]]), color, width))
        if mark and handle.kind == "axis" and handle.axis == 0:
            prims.append(("circle", pix[0], 4, (255, 255, 255, 255)))
    return prims


def _label(prims, text: str, hovered: bool):
    """A ("text", top-left, text, rgba, height) primitive naming a gizmo, just above its drawn
    handles (camera pixels), or None when none of them is in view."""
    pts = [np.asarray(p[1], float).reshape(-1, 2) for p in prims if p[0] in ("arrow", "line", "polygon")]
    if not pts:
        return None
    pts = np.concatenate(pts)
    x = float(np.mean(pts[:, 0])) - 3.5 * len(text)  # about centred (label glyphs are ~7 px wide)
    y = float(pts[:, 1].min()) - LABEL_PX - 4
    return ("text", [x, y], text, LABEL_HOVER_RGBA if hovered else LABEL_RGBA, LABEL_PX)


def _same(a, b) -> bool:
    return b is not None and a.kind == b.kind and a.axis == b.axis and np.allclose(a.center, b.center)
