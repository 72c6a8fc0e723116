"""The app's side panels, menu, help overlay and file dialogs (dearpygui widgets -> controller calls).

``refresh(app)`` runs once per frame: it rebuilds the joint and target widgets when the robot or
the target list changed, and otherwise only updates values (never under a widget being edited).
"""

from __future__ import annotations

from pathlib import Path

import dearpygui.dearpygui as dpg
import numpy as np
from pydantic import ValidationError

from engine import assets
from engine.ik.options import SETTINGS
from engine.runtime import backend
from engine.scenefile.errors import one_line

from ..control import recording
from ..control import status as status_mod
from ..control.controller import MAX_ENVS
from ..control.targets import ROT_MODES, rpy_of
from . import collision_panel, keybinds
from .file_dialog import FileDialog

ROT_LABELS = {"full": "full", "align x": "x", "align y": "y", "align z": "z", "free": "free"}  # "align" before x
ROT_HELP = {
    "full": "full orientation: the link's frame matches the target's",
    "align x": "align x: only the direction of the link's x axis matters (spin about it is free)",
    "align y": "align y: only the direction of the link's y axis matters (spin about it is free)",
    "align z": "align z: only the direction of the link's z axis matters (spin about it is free)",
    "free": "free: any orientation (position only)",
}
ACTIVE_RGB = (51, 105, 173, 255)
STATUS_COLORS = {"error": (255, 95, 85, 255), "warning": (240, 180, 70, 255), "info": (200, 200, 200, 255)}
STATUS_LINES = 2
RECORD_FPS = 30.0
READOUT_LINES = 9  # the readouts always have this many lines, so the sections below never move
SIDE_TEXT_WRAP = 300  # px: text in the side panels wraps at this width
CATALOG_ROWS = 5  # robots the catalog list shows at once
CATALOG_ROW_H = 17  # px per catalog row (the default font's 13 px and 4 px of item spacing)
JOINT_ROW_H = 23  # px per joint slider
JOINTS_MAX_H = 260  # the joint sliders scroll inside this height, so the targets stay on screen

# the solver panel's fields: the settings of the engine's table that the panel shows (a new setting
# there appears here by itself)
SOLVER_FIELDS = tuple(setting for setting in SETTINGS if setting.panel)

def _solver_field(app, setting) -> None:
    """The widget of one solver setting (:class:`engine.ik.options.Setting`), tagged
    ``solver_<name>``: a number field, a checkbox or a list; a change is validated like the scene
    file's ``solver:`` section."""
    c = app.controller
    field, tag = setting.name, f"solver_{setting.name}"
    value = getattr(c.spec.solver, field)
    label = f"{setting.label} ({setting.unit})" if setting.unit else setting.label
    change = _guard(app, lambda v, f: c.set_solver_param(f, v))
    if setting.kind == "bool":
        dpg.add_checkbox(label=label, tag=tag, default_value=bool(value), callback=change, user_data=field)
    elif setting.kind == "choice":
        dpg.add_combo(list(setting.choices), label=label, tag=tag, default_value=value, width=120, callback=change,
                      user_data=field)
    elif setting.kind == "int":
        lo, hi = setting.ui_range
        dpg.add_input_int(label=label, tag=tag, default_value=value, min_value=int(lo), max_value=int(hi),
                          min_clamped=True, max_clamped=True, width=120, on_enter=True,
                          callback=_guard(app, lambda v, f: c.set_solver_param(f, int(v))), user_data=field)
    else:
        dpg.add_input_double(label=label, tag=tag, default_value=value, format="%.6g", width=120, on_enter=True,
                             step=0, callback=_guard(app, lambda v, f: c.set_solver_param(f, float(v))),
                             user_data=field)


def _guard(app, fn):
    """A widget callback that shows errors in the app instead of raising; the widget's error stays
    on the status line until the widget is used again successfully."""
    def callback(sender, value, user_data=None):
        key = f"widget {dpg.get_item_alias(sender) or dpg.get_item_label(sender) or sender}"
        try:
            fn(value) if user_data is None else fn(value, user_data)
        except ValidationError as err:
            app.controller.error(one_line(err), key=key)
        except Exception as err:
            app.controller.error(str(err), key=key)
        else:
            app.controller.resolve(key)
    return callback


def menu_bar(app) -> None:
    c = app.controller
    with dpg.menu_bar():
        with dpg.menu(label="File"):
            dpg.add_menu_item(label="Open scene...  (ctrl+O)", callback=lambda: app.show_dialog("open_scene_dialog"))
            dpg.add_menu_item(label="Save scene  (ctrl+S)", callback=lambda: app.run_action("save_scene"))
            dpg.add_menu_item(label="Save scene as...", callback=lambda: app.show_dialog("save_dialog"))
            dpg.add_menu_item(label="Open robot file...", callback=lambda: app.show_dialog("open_robot_dialog"))
            dpg.add_menu_item(label="Screenshot  (P)", callback=lambda: app.run_action("screenshot"))
        with dpg.menu(label="View"):
            for name in ("front", "side", "top", "iso"):
                dpg.add_menu_item(label=name, callback=lambda s, a, u: c.preset(u), user_data=name)
            dpg.add_menu_item(label="Frame all  (F)", callback=lambda: c.frame_all())
            dpg.add_menu_item(label="Follow selected env  (G)", callback=lambda: app.run_action("toggle_follow"))
        with dpg.menu(label="Help"):
            dpg.add_menu_item(label="Keys and mouse  (F1)", callback=app.toggle_help)


def left_panel(app) -> None:
    c = app.controller
    with dpg.collapsing_header(label="Robot", default_open=True):
        dpg.add_text("", tag="robot_name")
        dpg.add_input_text(hint="search the catalog", tag="robot_filter", width=-1,
                           callback=lambda s, a: _filter_catalog(app, a))
        dpg.add_child_window(tag="robot_list", height=CATALOG_ROWS * CATALOG_ROW_H + 8, width=-1, border=True)
        _filter_catalog(app, "")
        dpg.add_button(label="Load selected robot", tag="robot_load", width=-1,
                       callback=lambda: c.load_robot(app.robot_choice.split("  ")[0]))
    with dpg.collapsing_header(label="Environments", default_open=True):
        dpg.add_input_int(label="n_envs", tag="n_envs", default_value=c.n_envs, min_value=1, max_value=MAX_ENVS,
                          min_clamped=True, max_clamped=True, on_enter=True, width=120,
                          callback=_guard(app, c.set_n_envs))
        dpg.add_input_floatx(label="spacing", tag="spacing", size=2, width=160, on_enter=True,
                             default_value=list(c.spec.envs.env_spacing),
                             callback=_guard(app, lambda v: c.set_env_spacing(v[:2])))
        with dpg.group(horizontal=True):
            dpg.add_button(label="Play/Pause", callback=lambda: c.toggle_play())
            dpg.add_button(label="Step", callback=lambda: c.step_once())
            dpg.add_button(label="Reset", callback=lambda: c.reset_scene())
        dpg.add_slider_float(label="speed", default_value=1.0, min_value=0.0, max_value=4.0, width=160,
                             callback=_guard(app, lambda v: setattr(c, "speed", float(v))))
        dpg.add_checkbox(label="manual joints (M)", tag="manual",
                         callback=_guard(app, lambda v: setattr(c, "manual", v)))
    with dpg.collapsing_header(label="Solver", default_open=True):
        with dpg.group(horizontal=True):  # the switches on one row: the panel's lower sections stay on screen
            dpg.add_checkbox(label="smooth", tag="solver_track", default_value=bool(c.spec.solver.track),
                             callback=_guard(app, lambda v: c.set_smooth(bool(v))))  # within velocity limits
            for setting in SOLVER_FIELDS:
                if setting.kind == "bool":
                    _solver_field(app, setting)
        for setting in SOLVER_FIELDS:
            if setting.kind != "bool":
                _solver_field(app, setting)
        collision_panel.solver_rows(app, _guard)
    with dpg.collapsing_header(label="Readouts", default_open=True):
        dpg.add_text("\n".join([" "] * READOUT_LINES), tag="readouts")  # as tall as the filled readouts
        with dpg.plot(height=80, width=-1, tag="plot"):  # short: the Recording section below stays on screen
            dpg.add_plot_legend(tag="plot_legend", outside=True, location=dpg.mvPlot_Location_North,
                                horizontal=True)  # above the plot, off its data
            dpg.add_plot_axis(dpg.mvXAxis, label="s", tag="plot_x")
            with dpg.plot_axis(dpg.mvYAxis, label="ms / %", tag="plot_y"):
                dpg.add_line_series([], [], label="IK ms", tag="series_ik")
                dpg.add_line_series([], [], label="% converged", tag="series_conv")
    with dpg.collapsing_header(label="Recording", default_open=True):
        with dpg.group(horizontal=True):
            dpg.add_input_text(tag="record_path", default_value=str(_record_default(app)), width=-40)
            dpg.add_button(label="...", tag="record_browse", width=-1, callback=lambda: _browse_record(app))
        with dpg.group(horizontal=True):
            dpg.add_combo(list(recording.SIZES), tag="record_size", default_value="1280x720", width=100)
            dpg.add_text("size   fps 30")
        dpg.add_checkbox(label="include gizmos and target frames", tag="record_overlay", default_value=True)
        dpg.add_button(label="Record", tag="record_button", width=-1, callback=lambda: _toggle_record(app))
        dpg.add_text("", tag="record_info", wrap=SIDE_TEXT_WRAP)


def _new_scene(app) -> None:
    """A scene was installed: when its robot is another one, the link search starts empty and the
    catalog shows the robot loaded; when its file is another one, a record path still at the old
    file's default follows the new file."""
    c = app.controller
    robot = (c.robot.tree.name, str(c.spec.robot.file))
    if getattr(app, "_robot_shown", None) != robot:
        app._robot_shown = robot
        dpg.set_value("add_link_filter", "")
        item = catalog_item(c.spec.robot.file, c.spec.source)
        if item is not None:
            if item not in app.catalog_rows:
                dpg.set_value("robot_filter", "")
                _filter_catalog(app, "")
            _pick_robot(app, item, scroll=True)
    default = str(_record_default(app))
    before = getattr(app, "_record_default_shown", None)
    if before != default:
        if before is None or dpg.get_value("record_path") in (before, ""):
            dpg.set_value("record_path", default)
        app._record_default_shown = default


def catalog_item(robot_file, scene_file=None) -> str | None:
    """The catalog list's entry of a scene's robot (a catalog name, or a robot file that the
    catalog holds, relative to the scene file's folder or absolute), or None if it has none."""
    text = str(robot_file)
    candidates = [text]
    if scene_file is not None and not Path(text).is_absolute():
        candidates.append(str(Path(scene_file).resolve().parent / text))
    for cand in candidates:
        try:
            name = assets.resolve(cand).name
        except (KeyError, OSError, ValueError):
            continue
        return next((item for item in _catalog("") if item.split("  ")[0] == name), None)
    return None


def _filter_catalog(app, filter_text: str) -> None:
    """Show the catalog entries matching the search box; the first is picked when the one picked
    before is filtered out (so "Load selected robot" loads what the list shows)."""
    items = _catalog(filter_text)
    dpg.delete_item("robot_list", children_only=True)
    app.catalog_rows = {item: dpg.add_selectable(label=item, parent="robot_list", user_data=item,
                                                 callback=lambda s, a, u: _pick_robot(app, u))
                        for item in items}
    choice = getattr(app, "robot_choice", "")
    _pick_robot(app, choice if choice in items or not items else items[0])


def _pick_robot(app, item: str, scroll: bool = False) -> None:
    """Light the catalog entry ``item`` (alone); ``scroll``: bring it into the list's view."""
    app.robot_choice = item
    for name, row in app.catalog_rows.items():
        dpg.set_value(row, name == item)
    if scroll and item in app.catalog_rows:
        index = list(app.catalog_rows).index(item)
        dpg.set_y_scroll("robot_list", max(0.0, (index - CATALOG_ROWS // 2) * CATALOG_ROW_H))


def _catalog(filter_text: str) -> list[str]:
    words = filter_text.lower().split()
    items = [f"{e.name}  ({e.family}, {e.format})" for e in assets.list_robots()]
    return [item for item in items if all(w in item.lower() for w in words)]


def _record_default(app):
    return recording.default_path(app.controller.spec.source, Path(__file__).resolve().parents[1])


def _browse_record(app) -> None:
    """The file dialog for the video, in the folder of the path in the box (beside the scene)."""
    path = Path(dpg.get_value("record_path") or _record_default(app)).expanduser()
    folder = path.parent if path.parent.is_dir() else Path.cwd()
    app.dialogs["record_dialog"].show(folder, path.name)


def _toggle_record(app) -> None:
    c = app.controller
    if c.recording is not None:
        c.stop_recording()
    else:
        c.start_recording(dpg.get_value("record_path"), fps=RECORD_FPS,
                          size=recording.SIZES[dpg.get_value("record_size")],
                          overlay=dpg.get_value("record_overlay"))


def _recording_info(c) -> str:
    rec = c.recording
    if rec is not None:
        return (f"recording {rec.size[0]}x{rec.size[1]}: {c.recording_text()} so far, plays in real time "
                f"({rec.fps:g} fps)")
    last = c.last_recording
    if last is not None:
        return f"last: {last['path'].name}, {last['seconds']:.1f} s ({last['frames']} frames at {last['fps']:g} fps)"
    return "videos play in real time"


def right_panel(app) -> None:
    with dpg.collapsing_header(label="Selected env", default_open=True):
        dpg.add_input_int(label="env", tag="selected_env", width=120, on_enter=True,
                          callback=_guard(app, lambda v: app.controller.select_env(int(v))))
        dpg.add_child_window(tag="joints", height=JOINTS_MAX_H, border=False)  # scrolls on its own
    with dpg.collapsing_header(label="Targets", default_open=True):
        dpg.add_input_text(hint="search links", tag="add_link_filter", width=-1,
                           callback=lambda s, a: _filter_links(app))
        dpg.add_listbox([], tag="add_link", num_items=4, width=-1)
        dpg.add_button(label="Add target on the selected link", tag="add_target", width=-1,
                       callback=lambda: _add_target(app))
        with dpg.group(horizontal=True):  # two rows: one is wider than the panel once its scrollbar shows
            dpg.add_button(label="Undo", callback=lambda: app.run_action("undo"))
            dpg.add_button(label="Redo", callback=lambda: app.run_action("redo"))
            dpg.add_button(label="Reset all (T)", callback=lambda: app.run_action("reset_targets"))
        dpg.add_button(label="Local/World (L)", tag="toggle_space",
                       callback=lambda: app.run_action("toggle_gizmo_space"))
        dpg.add_group(tag="targets")
    collision_panel.section(app, _guard)


def _add_target(app) -> None:
    link = dpg.get_value("add_link")
    if not link:
        app.controller.error("add target: pick a link first")
        return
    try:
        app.controller.targets.add_target(link)
    except Exception as err:
        app.controller.error(f"add target: {err}")


def _build_joints(app) -> None:
    c = app.controller
    dpg.delete_item("joints", children_only=True)
    rows = c.joint_rows()
    for name, qi, lo, hi, value in rows:
        dpg.add_slider_float(label=name, tag=f"joint_{qi}", parent="joints", min_value=lo, max_value=hi,
                             default_value=value, width=170,
                             callback=_guard(app, lambda v, q: c.set_joint(q, v)), user_data=qi)
    dpg.configure_item("joints", height=min(JOINT_ROW_H * len(rows) + 6, JOINTS_MAX_H))
    _filter_links(app)


def _filter_links(app) -> None:
    """The links whose name has every word of the search box (TALOS has 60)."""
    if not app.controller.ready:
        return
    words = dpg.get_value("add_link_filter").lower().split()
    names = [link.name for link in app.controller.robot.links]
    items = [n for n in names if all(w in n.lower() for w in words)]
    dpg.configure_item("add_link", items=items)
    if items and dpg.get_value("add_link") not in items:
        dpg.set_value("add_link", items[0])


def _build_targets(app) -> None:
    ed = app.controller.targets
    dpg.delete_item("targets", children_only=True)
    for i, t in enumerate(ed.targets):
        with dpg.tree_node(label=f"{i}: {t.link}" + (f"  [{t.group}]" if t.group else ""), parent="targets",
                           default_open=True):
            with dpg.group(horizontal=True):
                dpg.add_text("pos")
                for k, axis in enumerate("xyz"):
                    dpg.add_checkbox(label=axis, tag=f"t{i}_pos_mask{k}", default_value=t.pos_mask[k],
                                     callback=_guard(app, lambda v, u: ed.set_mask(u[0], "pos_mask", u[1], v)),
                                     user_data=(i, k))
            _rot_mode_row(app, i)
            dpg.add_input_floatx(label="pos m", tag=f"t{i}_pos", size=3, width=200, on_enter=True, format="%.4f",
                                 callback=_guard(app, lambda v, u: ed.set_pose(u, pos=v[:3])), user_data=i)
            dpg.add_input_floatx(label="rpy deg", tag=f"t{i}_rpy", size=3, width=200, on_enter=True, format="%.2f",
                                 callback=_guard(app, lambda v, u: ed.set_pose(u, rpy_deg=v[:3])), user_data=i)
            dpg.add_input_floatx(label="quat", tag=f"t{i}_quat", size=4, width=200, on_enter=True, format="%.4f",
                                 callback=_guard(app, lambda v, u: ed.set_pose(u, quat=v[:4])), user_data=i)
            dpg.add_input_floatx(label="spread m", tag=f"t{i}_spread", size=3, width=200, on_enter=True,
                                 format="%.3f", default_value=list(ed.spread_of(i)),
                                 callback=_guard(app, lambda v, u: ed.set_spread(u, v[:3])), user_data=i)
            with dpg.group(horizontal=True):
                dpg.add_input_text(hint="group", tag=f"t{i}_group", default_value=t.group or "", width=90,
                                   on_enter=True, callback=_guard(app, lambda v, u: ed.set_group(u, v.strip())),
                                   user_data=i)
                dpg.add_button(label="select", callback=_guard(app, lambda v, u: setattr(ed, "selected", u)),
                               user_data=i)
                dpg.add_button(label="reset", callback=_guard(app, lambda v, u: ed.reset_target(u)), user_data=i)
                dpg.add_button(label="remove", callback=_guard(app, lambda v, u: ed.remove_target(u)), user_data=i)


def _rot_mode_row(app, i: int) -> None:
    """The rotation mode of target ``i`` as one choice: a row of buttons, the current one lit."""
    ed = app.controller.targets
    current = ed.rot_mode(i)
    with dpg.group(horizontal=True):
        dpg.add_text("rot")
        for mode in ROT_MODES:
            if mode == "align x":
                dpg.add_text("align")
            label = ROT_LABELS[mode]
            button = dpg.add_button(label=label, tag=f"t{i}_rot_{mode.replace(' ', '_')}", user_data=(i, mode),
                                    callback=_guard(app, lambda v, u: ed.set_rot_mode(*u)))
            if mode == current:
                dpg.bind_item_theme(button, _active_theme())
            with dpg.tooltip(button):
                dpg.add_text(ROT_HELP[mode])


def _active_theme():
    if not dpg.does_item_exist("active_choice"):
        with dpg.theme(tag="active_choice"), dpg.theme_component(dpg.mvButton):
            dpg.add_theme_color(dpg.mvThemeCol_Button, ACTIVE_RGB)
            dpg.add_theme_color(dpg.mvThemeCol_ButtonHovered, ACTIVE_RGB)
    return "active_choice"


def _set_unless_active(tag, value) -> None:
    if dpg.does_item_exist(tag) and not dpg.is_item_active(tag):
        dpg.set_value(tag, value)


def refresh(app) -> None:
    """Per-frame update of every value the panels show."""
    c = app.controller
    _show_status(app)
    dpg.configure_item("record_button", label="Stop recording" if c.recording is not None else "Record")
    dpg.set_value("record_info", _recording_info(c))
    if not c.ready:
        return
    shape = c.view.generation
    if getattr(app, "_joints_for", None) != shape:
        app._joints_for = shape
        _new_scene(app)
        _build_joints(app)
        _set_unless_active("n_envs", c.n_envs)
        _set_unless_active("spacing", list(c.spec.envs.env_spacing))  # a new robot's comes from its reach
        _set_unless_active("solver_track", bool(c.spec.solver.track))
    targets_key = tuple((t.link, t.group, t.pos_mask, t.rot_mask, t.orientation() is None)
                        for t in c.targets.targets)
    if getattr(app, "_targets_for", None) != (shape, targets_key):
        app._targets_for = (shape, targets_key)
        _build_targets(app)
    dpg.set_value("robot_name", f"{c.robot.tree.name}: {c.robot.n_links} links, {c.robot.n_dofs} dofs")
    _set_unless_active("selected_env", c.selected_env)
    _set_unless_active("manual", c.manual)
    for _name, qi, _lo, _hi, value in c.joint_rows():
        _set_unless_active(f"joint_{qi}", value)
    for i in range(len(c.targets.targets)):
        pos, quat = c.targets.target_pose(i)
        _set_unless_active(f"t{i}_pos", list(pos))
        _set_unless_active(f"t{i}_quat", list(quat))
        _set_unless_active(f"t{i}_rpy", list(rpy_of(quat)))
    m = c.metrics.last
    state = "manual" if c.manual else ("playing" if c.playing else "paused")
    gui_fps, images = app.rates()
    lines = [f"GUI {gui_fps:3.0f} fps  images {images:4.1f}/s  solves {c.metrics.fps:3.0f}/s",
             f"{state}   envs {c.n_envs}", _backend_line()]
    if m is not None:
        lines += [f"IK {m.ik_ms:6.2f} ms   render {c.render_ms:6.1f} ms",
                  f"converged {m.converged:5.1f} %   failed {m.failed}",
                  f"worst pos {1e3 * m.worst_pos:7.3f} mm   rot {np.degrees(m.worst_rot):6.3f} deg",
                  f"worst step {m.worst_step:6.4f} rad/frame   lagging {m.lagging}"]
    else:  # as many lines before the first solve as after: the sections below never move under the mouse
        lines += ["IK     -- ms   render     -- ms", "converged    -- %   failed --",
                  "worst pos     -- mm   rot    -- deg", "worst step     -- rad/frame   lagging --"]
    lines += collision_panel.readout_lines(c)
    width = max(dpg.get_item_rect_size("left")[0] - 36, 100)  # inside the panel, its scrollbar and padding
    lines = [status_mod.fit(line, width, 1, _measure)[0] for line in lines]
    collision_panel.refresh(app, _set_unless_active)
    dpg.set_value("readouts", "\n".join(lines + [""] * (READOUT_LINES - len(lines))))
    xs, ys = c.metrics.series("ik_ms")
    dpg.set_value("series_ik", [xs, ys])
    xs, ys = c.metrics.series("converged")
    dpg.set_value("series_conv", [xs, ys])
    if xs:
        dpg.set_axis_limits("plot_x", min(xs), 0.0)
        dpg.set_axis_limits("plot_y", 0.0, max(105.0, max(c.metrics.series("ik_ms")[1] or [0]) * 1.1))


def _show_status(app) -> None:
    """The status line under the view: wrapped at the view's width and cut to STATUS_LINES lines
    (the whole text in its tooltip), empty when there is nothing to say."""
    level, text = app.controller.status() or ("info", "")
    width = max(app.view.size[0] - 8, 100)
    shown, cut = status_mod.fit(text, width, STATUS_LINES, _measure)
    if (shown, level, width) != getattr(app, "_status_shown", None):
        app._status_shown = (shown, level, width)
        dpg.configure_item("status", wrap=width, color=STATUS_COLORS[level])
        dpg.set_value("status", shown)
        dpg.set_value("status_full", text if cut else "")
        dpg.configure_item("status_tip", show=cut)


def _measure(text: str, wrap: float):
    return dpg.get_text_size(text, wrap_width=wrap) if wrap else dpg.get_text_size(text)


def help_window(app) -> None:
    with dpg.window(label="IK Studio: keys and mouse (F1)", tag="help_window", show=False, width=560, height=460,
                    pos=(200, 120), on_close=lambda: setattr(app, "show_help", False)):
        dpg.add_text(keybinds.help_text())


def file_dialogs(app) -> None:
    """The four file dialogs (:mod:`app.gui.file_dialog`), as ``app.dialogs[tag]``."""
    c = app.controller

    def set_record_path(path: str) -> None:
        dpg.set_value("record_path", path)

    app.dialogs = {d.tag: d for d in (
        FileDialog("open_scene_dialog", "Open scene", (".yaml", ".yml"), c.open_scene),
        FileDialog("save_dialog", "Save scene as", (".yaml", ".yml"), c.save_scene, save=True),
        FileDialog("open_robot_dialog", "Open robot file (URDF or MJCF)", (".urdf", ".xml"), c.load_robot),
        FileDialog("record_dialog", "Record video to", recording.VIDEO_SUFFIXES, set_record_path, save=True,
                   action="Choose"))}


def _backend_line() -> str:
    """Where the solver runs: "backend cpu: AMD EPYC" (software Vulkan devices say so)."""
    return f"backend {backend.current().describe()}"
