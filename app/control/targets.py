"""Interactive IK targets: add, remove, reset, numeric pose entry, masks, groups and gizmo drags,
each one step of the scene's undo history (:mod:`app.control.history`). Plain logic over the scene spec's
``targets`` (no GUI import).

A target is a :class:`engine.scenefile.TargetSpec`; editing one replaces it by a validated copy, so
a bad value raises before anything changes. Edits hold the controller's ``edit_lock`` (the sim
copies the targets under it) and are counted (``controller.edited()``); link poses come from the
controller's snapshot (``controller.view``), never from the engine. Its gizmo sits at the target's
base pose in the selected env's cell; motion patterns (circles, offsets, ...) move the per-env
targets around that base. Gizmo handles are drawn by the GUI over the 3D view; they never enter
the simulation state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine import scenefile
from engine.transforms import quat_to_matrix

from . import gizmo as gz

ROT_MODES = {  # the rotation constraints the engine has, as rot_mask values
    "full": (True, True, True), "align x": (True, False, False), "align y": (False, True, False),
    "align z": (False, False, True), "free": (False, False, False)}
GIZMO_PX = 80.0  # gizmo arrow length on screen, px: the gizmo keeps its size as the camera zooms
GIZMO_MIN_PX = 36.0  # ... down to this when gizmos crowd one another
GIZMO_MARGIN_PX = 8.0  # the least gap between two gizmos' discs


@dataclass
class DragEvent:
    """What the controller is told about a gizmo drag: ``kind`` "start" | "move" | "end"."""

    kind: str
    target: int
    pos: np.ndarray
    quat: np.ndarray


class TargetEditor:
    """Edits ``controller.spec.targets`` and keeps the runner in step (``runner.retarget()``)."""

    def __init__(self, controller):
        self.c = controller
        self.selected: int | None = 0 if controller.spec.targets else None
        self.space = "world"
        self.hover: gz.HitResult | None = None
        self._hover_target: int | None = None
        self.events: list[DragEvent] = []
        self._drag: tuple[int, gz.DragState] | None = None
        self._drag_shift = np.zeros(3)
        self._drag_snapshot = None  # the history step a drag pushes when it ends

    # -- state -------------------------------------------------------------------------------------
    @property
    def targets(self) -> list:
        return self.c.spec.targets

    def keep_selection(self) -> None:
        """After the targets changed under it: the selection stays on an existing target."""
        if self.selected is not None and self.selected >= len(self.targets):
            self.selected = len(self.targets) - 1 if self.targets else None

    def _changed(self) -> None:
        self.keep_selection()
        self.c.edited()

    def _edit(self, fn) -> None:
        """Run an edit as one history step (the snapshot taken first); an edit that raises changes nothing."""
        snap = self.c.history.snapshot()
        with self.c.edit_lock:
            fn()
        self.c.history.push(snap)
        self._changed()

    def _replace(self, i: int, **updates) -> None:
        data = {**self.targets[i].model_dump(), **updates}
        self.targets[i] = scenefile.TargetSpec.model_validate(data)

    # -- poses ---------------------------------------------------------------------------------------
    def link_pose(self, link_name: str, env: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """A link's current (pos, quat) in env ``env`` (default: the selected env), env-local."""
        view = self.c.view
        env = self.c.selected_env if env is None else env
        idx = view.robot.get_link(link_name).idx_local
        return view.links_pos[env, idx], view.links_quat[env, idx]

    def target_pose(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Target ``i``'s base pose (pos, quat); the link's current pose stands in for what is free."""
        t = self.targets[i]
        link_pos, link_quat = self.link_pose(t.link)
        pos = link_pos if t.pos is None else np.array(t.pos, float)
        quat = t.orientation()
        return pos, (link_quat if quat is None else quat)

    def add_target(self, link_name: str) -> int:
        """A full-pose target for ``link_name`` at its current pose; returns its index."""
        self.c.robot.get_link(link_name)  # raises KeyError listing the links
        pos, quat = self.link_pose(link_name)

        def add():
            self.targets.append(scenefile.TargetSpec(link=link_name, pos=_tuple(pos), quat=_tuple(quat)))

        self._edit(add)
        self.selected = len(self.targets) - 1
        return self.selected

    def remove_target(self, i: int) -> None:
        self._check(i)
        self._edit(lambda: self.targets.pop(i))

    def reset_target(self, i: int) -> None:
        """Move target ``i`` to its link's current pose in the selected env."""
        self._check(i)
        pos, quat = self.link_pose(self.targets[i].link)
        self._edit(lambda: self._replace(i, pos=_tuple(pos), quat=_tuple(quat), rpy=None))

    def reset_all(self) -> None:
        """Every target to its link's current pose (the key for an unreachable drag)."""
        def reset():
            for i, t in enumerate(self.targets):
                pos, quat = self.link_pose(t.link)
                self._replace(i, pos=_tuple(pos) if t.pos is not None else None,
                              quat=_tuple(quat) if t.orientation() is not None else None, rpy=None)

        self._edit(reset)

    def set_pose(self, i: int, pos=None, quat=None, rpy_deg=None) -> None:
        """Numeric entry: any of ``pos`` (3,) m, ``quat`` (4,) wxyz, ``rpy_deg`` (3,) degrees."""
        self._check(i)
        updates = {}
        if pos is not None:
            updates["pos"] = _tuple(pos)
        if quat is not None:
            updates.update(quat=_tuple(quat), rpy=None)
        if rpy_deg is not None:
            updates.update(rpy=_tuple(rpy_deg), quat=None)
        self._edit(lambda: self._replace(i, **updates))

    def set_mask(self, i: int, which: str, axis: int, value: bool) -> None:
        """Toggle one component of ``pos_mask`` / ``rot_mask``; every target of the group follows
        (the engine shares masks within one solve). Two True in ``rot_mask`` is refused: pick a
        rotation mode (:meth:`set_rot_mode`) instead."""
        self._check(i)
        if which not in ("pos_mask", "rot_mask"):
            raise ValueError(f"which: expected 'pos_mask' or 'rot_mask', got {which!r}")
        mask = list(getattr(self.targets[i], which))
        mask[int(axis)] = bool(value)
        if which == "rot_mask" and sum(mask) == 2:
            raise ValueError(f"rot_mask: {list(mask)} has two true axes, and aligning two axes fixes the third: "
                             "use a rotation mode (full, align x / y / z, or free)")
        members = self.group_members(i)
        self._edit(lambda: [self._replace(j, **{which: tuple(mask)}) for j in members])

    def rot_mode(self, i: int) -> str:
        """Target ``i``'s rotation mode: one of :data:`ROT_MODES` ("free" without an orientation)."""
        if not _has_orientation(self.targets[i]):
            return "free"
        mask = tuple(self.targets[i].rot_mask)
        return next(name for name, m in ROT_MODES.items() if m == mask)

    def set_rot_mode(self, i: int, mode: str) -> None:
        """Set target ``i``'s rotation mode (and its group's): "full" orientation, "align x" / "align
        y" / "align z" (only the direction of that axis of the link), or "free" (any orientation).
        The target keeps its orientation, so going back to "full" restores it."""
        self._check(i)
        if mode not in ROT_MODES:
            raise ValueError(f"mode: expected one of {list(ROT_MODES)}, got {mode!r}")
        members = self.group_members(i)

        def apply():
            for j in members:
                updates = {"rot_mask": ROT_MODES[mode]}
                if mode != "free" and not _has_orientation(self.targets[j]):  # it needs one: the link's now
                    updates["quat"] = _tuple(self.link_pose(self.targets[j].link)[1])
                self._replace(j, **updates)

        self._edit(apply)

    def set_group(self, i: int, group: str | None) -> None:
        """Solve target ``i`` with the targets of ``group`` (None: on its own); it takes the group's masks."""
        self._check(i)
        group = group or None
        updates: dict = {"group": group}
        for j, t in enumerate(self.targets):
            if group is not None and j != i and t.group == group:
                updates.update(pos_mask=t.pos_mask, rot_mask=t.rot_mask)
                break
        self._edit(lambda: self._replace(i, **updates))

    def set_spread(self, i: int, extent) -> None:
        """Spread target ``i`` over the envs: a grid of per-env offsets filling the box
        ``[-extent, extent]`` (3,) m around the gizmo's pose; all zeros makes it shared again. A
        target moved by another pattern (circle, figure eight, keyframes) keeps that pattern."""
        self._check(i)
        extent = tuple(float(x) for x in np.asarray(extent, float).reshape(3))
        motion = self.targets[i].motion
        if motion is not None and motion.type != "offset":
            raise ValueError(f"spread: target {i} already moves with a {motion.type} pattern")
        if self.targets[i].pos is None:
            raise ValueError(f"spread: target {i} has no position to spread")
        new = None if not any(extent) else {"type": "offset", "grid": extent}
        self._edit(lambda: self._replace(i, motion=new))

    def spread_of(self, i: int) -> tuple[float, float, float]:
        """The grid half-extents of target ``i``'s spread (zeros when shared by every env)."""
        motion = self.targets[i].motion
        if motion is not None and motion.type == "offset" and motion.grid is not None:
            return tuple(motion.grid)
        return (0.0, 0.0, 0.0)

    def group_members(self, i: int) -> list[int]:
        g = self.targets[i].group
        return [i] if g is None else [j for j, t in enumerate(self.targets) if t.group == g]

    def _check(self, i: int) -> None:
        if not 0 <= int(i) < len(self.targets):
            raise IndexError(f"target: expected 0 to {len(self.targets) - 1}, got {i}")

    # -- gizmos --------------------------------------------------------------------------------------
    def gizmos(self) -> list[tuple[gz.Gizmo, np.ndarray]]:
        """Every target's gizmo with its anchor (the target's world position), in the selected env's
        cell: GIZMO_PX long on screen at any distance or env count; gizmos that would overlap are
        made smaller and pushed apart on screen (:func:`app.control.gizmo.layout`; the one being dragged
        keeps its place), each then drawn with a leader line back to its anchor."""
        c = self.c
        cam = c.camera
        env_offset = c.view.offsets[c.selected_env]
        poses = [self.target_pose(i) for i in range(len(self.targets))]
        anchors = np.array([pos + env_offset for pos, _ in poses]).reshape(-1, 3)
        shift = np.zeros_like(anchors)  # world offsets of the gizmos from their anchors
        dragged = self._drag[0] if self._drag is not None else None
        if dragged is not None:
            shift[dragged] = self._drag_shift
        pix, depth = cam.project(anchors + shift)
        seen = np.flatnonzero(np.all(np.isfinite(pix), axis=1) & (depth > cam.near))
        sizes_px = np.full(len(anchors), GIZMO_PX)
        if len(seen) > 1:
            fixed = int(np.flatnonzero(seen == dragged)[0]) if dragged in seen else None
            sizes, off = gz.layout(pix[seen], GIZMO_PX, GIZMO_MIN_PX, GIZMO_MARGIN_PX, fixed=fixed)
            pose = cam.pose()
            for k, i in enumerate(seen):
                sizes_px[i] = sizes[k]
                if i != dragged:
                    shift[i] = (off[k, 0] * pose[:3, 0] - off[k, 1] * pose[:3, 1]) * cam.meters_per_pixel(depth[i])
        out = []
        for i, (t, (_, quat)) in enumerate(zip(self.targets, poses)):
            rot_mask = t.rot_mask if t.orientation() is not None else (False, False, False)
            pos_mask = t.pos_mask if t.pos is not None else (False, False, False)
            world = anchors[i] + shift[i]
            d = float(np.dot(world - cam.position(), cam.forward()))
            size = sizes_px[i] * cam.meters_per_pixel(max(d, cam.near))
            out.append((gz.Gizmo(pos=world, quat=quat, size_m=size, space=self.space, pos_mask=pos_mask,
                                 rot_mask=rot_mask), anchors[i]))
        return out

    def gizmo(self, i: int) -> gz.Gizmo:
        """Target ``i``'s gizmo (see :meth:`gizmos`)."""
        self._check(i)
        return self.gizmos()[i][0]

    def handles(self) -> list[tuple[int, gz.Handle]]:
        """Every target's handles, for drawing: ``(target index, handle)``."""
        return [(i, h) for i, (g, _) in enumerate(self.gizmos()) for h in gz.handle_geometry(g)]

    def pick(self, px: float, py: float) -> tuple[int, gz.HitResult] | None:
        """The nearest enabled handle under pixel (px, py) over all targets (selected target first)."""
        gizmos = self.gizmos()
        order = list(range(len(gizmos)))
        if self.selected is not None and self.selected < len(order):
            order.insert(0, order.pop(self.selected))
        best = None
        for i in order:
            hit = gz.pick(gizmos[i][0], self.c.camera, px, py)
            if hit is not None and (best is None or hit.distance_px < best[1].distance_px - 0.5):
                best = (i, hit)
        return best

    def hover_at(self, px: float, py: float) -> None:
        found = self.pick(px, py)
        self.hover = None if found is None else found[1]
        self._hover_target = None if found is None else found[0]

    def clear_hover(self) -> None:
        """No handle of any target is under the cursor (or another gizmo's is nearer)."""
        self.hover = self._hover_target = None

    @property
    def hover_target(self) -> int | None:
        """The target whose handle is hovered, or None."""
        return self._hover_target if self.hover is not None else None

    def begin_drag(self, px: float, py: float) -> bool:
        """Grab the handle under the cursor; False when there is none (the camera orbits instead)."""
        found = self.pick(px, py)
        if found is None:
            return False
        i, hit = found
        self._drag_snapshot = self.c.history.snapshot()
        gizmo, anchor = self.gizmos()[i]
        self._drag_shift = gizmo.pos - anchor  # the gizmo stays this far from its target while dragged
        self._drag = (i, gz.begin_drag(gizmo, self.c.camera, hit, px, py))
        self.selected = i
        pos, quat = self.target_pose(i)
        self.events.append(DragEvent("start", i, pos, quat))
        return True

    @property
    def dragging(self) -> bool:
        return self._drag is not None

    def drag_to(self, px: float, py: float, snap: bool = False) -> None:
        """Move the grabbed target so that the grabbed point follows the mouse ray."""
        if self._drag is None:
            return
        i, state = self._drag
        world_pos, quat = gz.drag_to(state, self.c.camera, px, py, snap=snap)
        pos = world_pos - self._drag_shift - self.c.view.offsets[self.c.selected_env]
        t = self.targets[i]
        updates = {"pos": _tuple(pos)} if t.pos is not None else {}
        if t.orientation() is not None:
            updates.update(quat=_tuple(quat), rpy=None)
        with self.c.edit_lock:
            self._replace(i, **updates)
        self._changed()
        self.events.append(DragEvent("move", i, pos, quat))

    def end_drag(self) -> None:
        """Finish the drag: the final pose stays, and one undo step restores the pose before it."""
        if self._drag is None:
            return
        i, _ = self._drag
        self._drag = None
        self.c.history.push(self._drag_snapshot)
        pos, quat = self.target_pose(i)
        self.events.append(DragEvent("end", i, pos, quat))

    def toggle_space(self) -> None:
        self.space = "local" if self.space == "world" else "world"


def _has_orientation(t) -> bool:
    """The target constrains an orientation: its own, or its keyframes'."""
    motion = t.motion
    keyed = motion is not None and motion.type == "keyframes" and motion.poses[0].orientation() is not None
    return t.orientation() is not None or keyed


def _tuple(values) -> tuple[float, ...]:
    return tuple(float(x) for x in np.asarray(values, float))


def rpy_of(quat) -> np.ndarray:
    """Roll, pitch, yaw in degrees (x-y-z extrinsic) of a wxyz quaternion, for numeric display."""
    m = quat_to_matrix(np.asarray(quat, float))
    pitch = np.arcsin(np.clip(-m[2, 0], -1.0, 1.0))
    roll = np.arctan2(m[2, 1], m[2, 2])
    yaw = np.arctan2(m[1, 0], m[0, 0])
    return np.degrees([roll, pitch, yaw])

