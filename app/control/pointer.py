"""The mouse over the 3D view: grab and drag gizmo handles (a selected obstacle's first, then the
targets'), orbit / pan / zoom the camera, click an
env to select it, ctrl+click a link to add a target there. A mixin of
:class:`app.control.controller.AppController`; it reads link poses from the controller's snapshot
(``view``), never from the engine, so it runs at the GUI's frame rate whatever the solver costs.
"""

from __future__ import annotations

import numpy as np


class PointerMixin:
    """Pointer handling for the controller (``self.camera``, ``self.targets``, ``self.view``)."""

    _pointer: dict | None

    def env_at_pixel(self, px: float, py: float, radius_px: float = 80.0) -> int | None:
        """The env whose robot projects nearest to pixel (px, py), within ``radius_px``."""
        pix, depth = self.camera.project(self.env_centers())
        dist = np.linalg.norm(pix - np.array([px, py]), axis=1)
        dist[~np.isfinite(dist) | (depth <= 0)] = np.inf
        best = int(np.argmin(dist))
        return best if dist[best] <= radius_px else None

    def link_at_pixel(self, px: float, py: float, radius_px: float = 30.0) -> tuple[int, str] | None:
        """``(env, link name)`` of the link origin that projects nearest to pixel (px, py), within
        ``radius_px``; nearer to the camera wins among links equally near on screen."""
        pos = self.view.links_pos + self.view.offsets[:, None]
        pix, depth = self.camera.project(pos)
        dist = np.linalg.norm(pix - np.array([px, py]), axis=-1)
        dist[~np.isfinite(dist) | (depth <= 0)] = np.inf
        score = dist + 1e-3 * np.where(np.isfinite(depth), depth, 0.0)
        env, link = np.unravel_index(int(np.argmin(score)), score.shape)
        if dist[env, link] > radius_px:
            return None
        return int(env), self.robot.links[int(link)].name

    def gizmo_under(self, px: float, py: float) -> tuple[object, float, str] | None:
        """``(editor, pixel distance, name)`` of the gizmo handle nearest to pixel (px, py) over the
        selected obstacle's gizmo and every target's (the obstacle's on a tie), or None: hover and
        grab both go to this one, so overlapping gizmos never light or move together. ``name``: the
        target's link, or the obstacle's name."""
        best = None
        for editor in (self.obstacles, self.targets):
            if editor is None:
                continue
            found = editor.pick(px, py)
            if found is None:
                continue
            if editor is self.targets:
                i, hit = found
                name = self.targets.targets[i].link
            else:
                hit, name = found, editor.names()[editor.selected]
            if best is None or hit.distance_px < best[1] - 0.5:
                best = (editor, hit.distance_px, name)
        return best

    def pointer_down(self, button: str, px: float, py: float, shift: bool = False, ctrl: bool = False) -> str:
        """A button went down at pixel (px, py): grab a gizmo handle, else orbit (left), pan
        (middle, or shift + left); ctrl + left picks a link (a click adds a target to it). Returns
        the mode: "gizmo", "orbit", "pan" or "pick"."""
        grabbed = None
        if button == "left" and not shift:
            nearest = self.gizmo_under(px, py)
            if nearest is not None and nearest[0].begin_drag(px, py):
                grabbed = nearest[0]
        if grabbed is not None:
            mode = "gizmo"
        elif button == "left" and ctrl:
            mode = "pick"
        elif button == "middle" or (button == "left" and shift):
            mode = "pan"
        else:
            mode = "orbit"
        self._pointer = {"button": button, "mode": mode, "start": (px, py), "last": (px, py), "moved": False,
                         "editor": grabbed}
        return mode

    def pointer_move(self, px: float, py: float, ctrl: bool = False) -> None:
        """The mouse moved: drag what was grabbed (``ctrl`` snaps gizmo drags), or hover-highlight."""
        p = self._pointer
        if p is None:
            nearest = self.gizmo_under(px, py)
            for editor in (self.obstacles, self.targets):
                if editor is None:
                    continue
                if nearest is not None and editor is nearest[0]:
                    editor.hover_at(px, py)
                else:
                    editor.clear_hover()
            return
        dx, dy = px - p["last"][0], py - p["last"][1]
        p["last"], p["ctrl"] = (px, py), ctrl
        if abs(px - p["start"][0]) + abs(py - p["start"][1]) > 3:
            p["moved"] = True
        if p["mode"] == "gizmo":
            p["editor"].drag_to(px, py, snap=ctrl)
        elif p["mode"] == "pan":
            self.camera.pan(dx, dy)
        elif p["mode"] == "orbit":
            self.camera.orbit(dx, dy)

    def pointer_up(self, px: float, py: float) -> None:
        """The button came up: end a gizmo drag, or select the env under a click that did not move."""
        p = self._pointer
        if p is None:
            return
        if (px, py) != p["last"]:  # the button came up after a move no frame saw: apply it first
            self.pointer_move(px, py, ctrl=p.get("ctrl", False))
        self._pointer = None
        if p["mode"] == "gizmo":
            p["editor"].end_drag()
        elif p["mode"] == "pick" and not p["moved"]:
            found = self.link_at_pixel(px, py)
            if found is None:
                self.info("no link under the cursor (ctrl+click near a link's origin to add a target)")
            else:
                env, name = found
                self.select_env(env)
                self.targets.add_target(name)
                self.info(f"target added on link '{name}'")
        elif not p["moved"] and p["button"] == "left":
            env = self.env_at_pixel(px, py)
            if env is not None:
                self.select_env(env)

    def wheel(self, steps: float) -> None:
        self.camera.zoom(steps)
