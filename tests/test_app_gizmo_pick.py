"""Overlapping gizmos: hover and grab go to one handle, the nearest to the cursor over every
target's gizmo and the selected obstacle's, and the window names it (the label of the gizmo under
the cursor lights up; tests/test_app_polish.py checks the labels in the real window).

Before, hovering lit handles on both an obstacle's gizmo and a target's when they overlapped, and
a press grabbed the obstacle's whenever it had any handle under the cursor, even a farther one."""

from __future__ import annotations

import numpy as np
from _clutter import BALL, write_scene
from _controller import RES, engine_cpu, pixel  # noqa: F401 (engine_cpu: the module's CPU engine)

from app.control import gizmo as gz
from app.control.controller import AppController


def _ring_point(g: gz.Gizmo, axis: int) -> np.ndarray:
    """A world point on ``g``'s ring about ``axis`` (its first sample)."""
    return next(h for h in gz.handle_geometry(g) if h.kind == "ring" and h.axis == axis).points[0]


def test_the_nearest_gizmo_wins_hover_and_grab(tmp_path):
    c = AppController(write_scene(tmp_path), res=RES)
    try:
        c.obstacles.select(BALL)
        target = c.targets.gizmo(0)
        # the ball's gizmo right on the target's: their handles overlap on screen
        c.obstacles.set_pose(BALL, pos=target.pos - c.view.offsets[c.selected_env] + [0.0, 0.0, 0.004])
        ball = c.obstacles.gizmo()
        assert np.linalg.norm(pixel(c, ball.pos) - pixel(c, target.pos)) < 6.0
        for point in (_ring_point(c.targets.gizmo(0), 2), _ring_point(ball, 2)):
            px = pixel(c, point)
            t_hit, o_hit = c.targets.pick(*px), c.obstacles.pick(*px)
            assert t_hit is not None and o_hit is not None, "both gizmos have a handle under the cursor"
            nearest = "target" if t_hit[1].distance_px < o_hit.distance_px - 0.5 else "obstacle"
            editor, _, name = c.gizmo_under(*px)
            assert (editor is c.targets) == (nearest == "target")
            assert name == ("panda_hand" if nearest == "target" else c.obstacles.names()[BALL])
            c.pointer_move(*px)
            lit = [e for e in (c.targets, c.obstacles) if e.hover is not None]
            assert lit == [editor], f"hover lit {len(lit)} gizmos"
            before = (c.targets.target_pose(0)[1].copy(), c.obstacles.pose(BALL)[0].copy())
            assert c.pointer_down("left", *px) == "gizmo"
            c.pointer_move(px[0] + 25, px[1] + 10)
            c.pointer_up(px[0] + 25, px[1] + 10)
            after = (c.targets.target_pose(0)[1], c.obstacles.pose(BALL)[0])
            moved_target = not np.allclose(before[0], after[0])
            moved_ball = not np.allclose(before[1], after[1])
            assert (moved_target, moved_ball) == (editor is c.targets, editor is c.obstacles), \
                f"the press grabbed the wrong gizmo (the nearest was the {nearest}'s)"
            c.history.undo()
    finally:
        c.close()
