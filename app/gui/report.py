"""The JSON report the GUI writes every frame for tests that drive the real window from outside:
the 3D view's top-left corner in window pixels, each env's projected centre and each target's
gizmo handles in view pixels, the targets' poses and masks, qpos, which edit the answers shown
follow (``solved.edits``, beside the edit count ``edits``: the obstacles' poses are the edited
ones, the answers come a solve later), the state flags, the shortcuts
run, who has the keyboard, widget rectangles and which of them the mouse is over, the status line,
the messages, and the packages imported and the kernels prepared in its process since the first
frame. Before the scene is ready only the parts that do not need it are there."""

from __future__ import annotations

import json
import os
from pathlib import Path

import dearpygui.dearpygui as dpg
import numpy as np

from ..control import gizmo as gz
from ..control import obstacles
from .widgets import Handle, rect_of


def write_report(app, path: Path) -> None:
    """Write the report to ``path`` atomically (see the module docstring)."""
    c = app.controller
    x0, y0 = dpg.get_item_rect_min(app.view.drawlist)
    cam = c.camera
    panels = app.panels
    widgets, hovered = _widgets(app)
    data = {"view_origin": [x0, y0], "view_size": list(app.view.size), "ready": c.ready,
            "window_size": [dpg.get_viewport_client_width(), dpg.get_viewport_client_height()],
            "frames": app.n_frames, "images": app.n_images, "frames_shown": app.frames_shown,
            "image_sizes": app.view.sizes_shown,
            "image_current": c.sim.image_is_current() and c.latest_image is not None,
            "pointer_events": app.pointer_events,
            "longest_frame_gap": app.clock.report(), "late_imports": app.late_imports(),
            "late_kernels": app.late_kernels(), "kernels_prepared": c.sim.kernels_prepared(),
            "camera": [cam.azimuth_deg, cam.elevation_deg, cam.distance, *np.asarray(cam.target).tolist()],
            "state": {"playing": c.playing, "manual": c.manual, "follow": c.follow,
                      "space": c.targets.space if c.targets is not None else "world",
                      "help": app.show_help, "n_envs": c.n_envs, "selected_env": c.selected_env,
                      "recording": c.recording is not None, "busy": c.busy, "smooth": bool(c.spec.solver.track),
                      "plan": bool(c.spec.solver.plan), "kernel": c.spec.solver.kernel,
                      "kernel_label": dpg.get_item_label("solver_kernel") if dpg.does_item_exist("solver_kernel")
                      else None, "render_size": [cam.width, cam.height]},
            "last_recording": None if c.last_recording is None else {
                k: str(v) if k == "path" else v for k, v in c.last_recording.items()},
            "rates": list(app.rates()), "startup": app.startup_text,
            "shortcuts": list(app.shortcuts_run), "keyboard_owner": app.keyboard_owner(),
            "widgets": widgets, "hovered": hovered, "panels": _panels(app),
            "link_choice": panels.targets.links.value, "record_path": panels.recording.path.value,
            "robot_choice": panels.robot.choice, "robot_choice_rect": panels.robot.choice_rect(),
            "spacing": list(panels.envs.spacing.value)[:2],
            "record_info": panels.recording.info.value, "progress": app.view.progress,
            "dialogs": {tag: d.report() for tag, d in app.dialogs.items() if d.shown},
            "link_filter": panels.targets.link_filter.value, "plot_legend": panels.readouts.legend(),
            "status": [panels.status.level, panels.status.text.value],
            "messages": [list(m) for m in c.messages]}
    if c.ready:
        data.update(_scene(app))
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _scene(app) -> dict:
    """What needs the scene: envs, targets, gizmos, qpos (pixels in the view's, not the camera's)."""
    c = app.controller
    to_view = app.view.to_view  # camera pixels -> view pixels (they differ while a recording letterboxes)
    pix, depth = c.camera.project(c.env_centers())
    handles, gizmos = [], []
    for i, (g, anchor) in enumerate(c.targets.gizmos()):
        centre, anchor_px = to_view(c.camera.project(np.array([g.pos, anchor]))[0])
        radius = 0.0
        for h in gz.handle_geometry(g):
            hp = to_view(c.camera.project(h.points)[0])
            radius = max(radius, float(np.linalg.norm(hp - centre, axis=1).max()))
            handles.append({"target": i, "kind": h.kind, "axis": h.axis, "enabled": h.enabled,
                            "points_px": hp.tolist(), "points": h.points.tolist()})
        gizmos.append({"center_px": centre.tolist(), "anchor_px": anchor_px.tolist(), "radius_px": radius})
    ed = c.targets
    cell = to_view(c.camera.project(app.view.cell_corners(c))[0])
    return {"env_px": to_view(pix).tolist(), "env_depth": depth.tolist(), "handles": handles, "gizmos": gizmos,
            "cell_px": cell.tolist(), "cell_drawn_px": list(app.view.cell_drawn), "robot": c.robot.tree.name,
            "image_rect": _image_rect(c),
            "targets": [ed.target_pose(i)[0].tolist() for i in range(len(ed.targets))],
            "masks": [[list(t.pos_mask), list(t.rot_mask)] for t in ed.targets],
            "links": [t.link for t in ed.targets], "qpos": c.view.qpos.tolist(),
            "solved": {"generation": c.view.generation,
                       "frames": 0 if c.view.frame is None else c.view.frame.index + 1,
                       "edits": c.view.edits},
            "edits": c.edit_count,
            "readouts": app.panels.readouts.text.value, "gizmo_labels": list(app.view.labels),
            "plan_path": None if c.view.path is None else c.view.path.tolist(),
            "plan_path_px": None if c.view.path_points is None else
            to_view(c.camera.project(c.view.path_points)[0]).tolist(),
            "plan_reason": None if c.view.frame is None or c.view.frame.plan_reason is None else
            list(c.view.frame.plan_reason),
            **obstacles.report(c, to_view)}


def _widgets(app) -> tuple[dict, list]:
    """The screen rectangles of the panels' widgets and the side panels (by name), and the names
    of those the mouse is over."""
    out, hovered = {}, []
    side = {name: Handle(item, app.controller) for name, item in (("left", app.left), ("right", app.right))}
    reported = {**app.panels.reported(), **side}
    for name, handle in reported.items():
        state = handle.state()  # one read per widget per frame: the rect and the hover come from it
        rect = rect_of(state)
        if rect is not None:
            out[name] = rect
        if state.get("hovered"):
            hovered.append(name)
    return out, hovered


def _image_rect(c) -> list:
    """Where the rendered image lies in the view, view px [x0, y0, x1, y1] (letterboxed while a
    recording's size differs from the view's)."""
    scale, ox, oy = c.view_transform()
    return [ox, oy, ox + scale * c.camera.width, oy + scale * c.camera.height]


def _panels(app) -> dict:
    """The side panels' and the joint sliders' boxes: size, window px [x0, y0, x1, y1], how far each
    scrolls, inner width (px), and the right edge of the readouts and of the Local/World button
    inside their panel."""
    out = {}
    for name, item in (("left", app.left), ("right", app.right), ("joints", app.panels.joints.box.item)):
        state = dpg.get_item_state(item)
        x0, y0 = state["pos"] if "pos" in state else dpg.get_item_pos(item)
        out[name] = {"size": state["rect_size"], "scroll_max": dpg.get_y_scroll_max(item),
                     "box": [x0, y0, x0 + state["rect_size"][0], y0 + state["rect_size"][1]],
                     "content_w": state.get("content_region_avail", [0, 0])[0]}
    for handle, panel in ((app.panels.readouts.text, "left"), (app.panels.targets.space, "right")):
        state = handle.state()
        if "pos" in state:
            out[panel].setdefault("right_edges", {})[handle.name] = state["pos"][0] + state["rect_size"][0]
    return out
