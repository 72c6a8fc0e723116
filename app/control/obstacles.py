"""The scene's obstacles in the GUI: pick one, move it with the same gizmo as targets, or type its
pose. Plain logic over the scene spec's ``obstacles`` (no GUI import, no engine call).

An obstacle is an entry of ``controller.spec.obstacles`` (a scene-file obstacle spec: ``kind``,
``size``, ``pos`` m, ``quat`` wxyz or ``rpy`` degrees, ``color``). A scene file gives each obstacle
one pose, shared by every env, so moving one moves it in **every** env: that is what a saved
scene keeps and what a user who moves "the table" expects. Its gizmo is drawn in the selected
env's cell, like a target's. An edit replaces the obstacle by a validated copy under the
controller's ``edit_lock`` and counts as an edit (``controller.edited()``); the sim copies the
obstacles into the runner's spec, puts the bodies there (``Runner.place_obstacles``: ``set_pos``
/ ``set_quat`` in every env, nothing recompiled) and solves again, so the robots go around an
obstacle on the next frames. Each move (a typed pose, or a whole drag) is one step of the scene's
undo history (:mod:`app.control.history`), shared with the targets' edits.
"""

from __future__ import annotations

import numpy as np

from . import gizmo as gz
from .targets import GIZMO_PX, DragEvent


class ObstacleEditor:
    """Moves ``controller.spec.obstacles``; ``selected``: the obstacle whose gizmo shows (None: no
    obstacle gizmo, only the targets')."""

    def __init__(self, controller):
        self.c = controller
        self.selected: int | None = None
        self.hover: gz.HitResult | None = None
        self.events: list[DragEvent] = []  # DragEvent.target is the obstacle's index here
        self._drag: tuple[int, gz.DragState] | None = None
        self._drag_snapshot = None  # the history step a drag pushes when it ends

    @property
    def obstacles(self) -> list:
        return self.c.spec.obstacles

    def names(self) -> list[str]:
        """One label per obstacle: "0: box 1.2 x 1.4 x 0.04" (sizes in m)."""
        out = []
        for i, o in enumerate(self.obstacles):
            size = getattr(o, "size", None)
            dims = "" if size is None else " " + " x ".join(f"{s:g}" for s in np.atleast_1d(size))
            out.append(f"{i}: {o.kind}{dims}")
        return out

    def _check(self, i) -> int:
        if not isinstance(i, (int, np.integer)) or not 0 <= int(i) < len(self.obstacles):
            n = len(self.obstacles)
            raise IndexError(f"obstacle: expected 0 to {n - 1}, got {i!r}" if n else "obstacle: this scene has none")
        return int(i)

    def keep_selection(self) -> None:
        """After the obstacles changed under it: the selection stays on an existing obstacle."""
        if self.selected is not None and self.selected >= len(self.obstacles):
            self.selected = None

    def select(self, i: int | None) -> None:
        """Show obstacle ``i``'s gizmo (None: none)."""
        self.end_drag()
        self.selected = None if i is None else self._check(i)

    def pose(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Obstacle ``i``'s (pos (3,) m, quat (4,) wxyz), env-local, as every env has it."""
        o = self.obstacles[self._check(i)]
        return np.array(o.pos, float), np.asarray(o.orientation(), float)

    def set_pose(self, i: int, pos=None, quat=None) -> None:
        """Move obstacle ``i`` to ``pos`` (3,) m and / or ``quat`` (4,) wxyz in every env; a bad
        value raises (naming the field) before anything changes."""
        i = self._check(i)
        old = self.obstacles[i]
        data = old.model_dump()
        if pos is not None:
            data["pos"] = tuple(float(x) for x in np.asarray(pos, float).reshape(-1))
        if quat is not None:
            data.update(quat=tuple(float(x) for x in np.asarray(quat, float).reshape(-1)), rpy=None)
        new = type(old).model_validate(data)
        snap = None if self._drag is not None else self.c.history.snapshot()  # a drag is one step, pushed at its end
        with self.c.edit_lock:
            self.obstacles[i] = new
        if snap is not None:
            self.c.history.push(snap)
        self.c.edited()

    # -- the gizmo ----------------------------------------------------------------------------------
    def gizmo(self) -> gz.Gizmo | None:
        """The selected obstacle's gizmo in the selected env's cell, GIZMO_PX long on screen
        (every handle enabled: an obstacle has no masks), or None."""
        if self.selected is None or self.selected >= len(self.obstacles) or self.c.view is None:
            return None
        c = self.c
        pos, quat = self.pose(self.selected)
        world = pos + c.view.offsets[c.selected_env]
        cam = c.camera
        d = float(np.dot(world - cam.position(), cam.forward()))
        size = GIZMO_PX * cam.meters_per_pixel(max(d, cam.near))
        return gz.Gizmo(pos=world, quat=quat, size_m=size, space=c.targets.space if c.targets else "world")

    def pick(self, px: float, py: float) -> gz.HitResult | None:
        g = self.gizmo()
        return None if g is None else gz.pick(g, self.c.camera, px, py)

    def hover_at(self, px: float, py: float) -> None:
        self.hover = self.pick(px, py)

    def clear_hover(self) -> None:
        """No handle of its gizmo is under the cursor (or a target's is nearer)."""
        self.hover = None

    @property
    def dragging(self) -> bool:
        return self._drag is not None

    def begin_drag(self, px: float, py: float) -> bool:
        """Grab the selected obstacle's handle under the cursor; False when there is none."""
        hit = self.pick(px, py)
        if hit is None:
            return False
        i = self.selected
        self._drag_snapshot = self.c.history.snapshot()
        self._drag = (i, gz.begin_drag(self.gizmo(), self.c.camera, hit, px, py))
        pos, quat = self.pose(i)
        self.events.append(DragEvent("start", i, pos, quat))
        return True

    def drag_to(self, px: float, py: float, snap: bool = False) -> None:
        """Move the grabbed obstacle (in every env) so that the grabbed point follows the mouse ray."""
        if self._drag is None:
            return
        i, state = self._drag
        world_pos, quat = gz.drag_to(state, self.c.camera, px, py, snap=snap)
        pos = world_pos - self.c.view.offsets[self.c.selected_env]
        self.set_pose(i, pos=pos, quat=quat)
        self.events.append(DragEvent("move", i, pos, quat))

    def end_drag(self) -> None:
        if self._drag is None:
            return
        i, _ = self._drag
        self._drag = None
        self.c.history.push(self._drag_snapshot)
        pos, quat = self.pose(i)
        self.events.append(DragEvent("end", i, pos, quat))


def report(c, to_view) -> dict:
    """The obstacles' part of the window's JSON report (see :mod:`app.gui.report`): their poses (pos,
    quat), their centres in the selected env in view pixels, the selected one, its gizmo handles
    in view pixels (``to_view``: camera pixels -> view pixels), which envs collide and whether
    the spheres are shown."""
    ed = c.obstacles
    handles = []
    g = ed.gizmo() if ed is not None else None
    if g is not None:
        for h in gz.handle_geometry(g):
            handles.append({"kind": h.kind, "axis": h.axis, "enabled": h.enabled,
                            "points_px": to_view(c.camera.project(h.points)[0]).tolist(), "points": h.points.tolist()})
    colliding = c.view.colliding if c.view is not None else None
    poses = [np.concatenate(ed.pose(i)) for i in range(len(ed.obstacles))] if ed is not None else []
    centres = [p[:3] + c.view.offsets[c.selected_env] for p in poses]
    return {"obstacles": [p.tolist() for p in poses],
            "obstacle_px": to_view(c.camera.project(np.array(centres).reshape(-1, 3))[0]).tolist(),
            "obstacle_selected": None if ed is None else ed.selected, "obstacle_handles": handles,
            "colliding": None if colliding is None else colliding.tolist(),
            "spheres_shown": bool(c.show_spheres)}
