"""Issue 27's polish list in the real window under Xvfb (driven from outside, see ``_appwindow``):
what each item looked like is in the issue; each check reads the window's report (measured by
dearpygui: item rectangles, values) or grabs the screen's pixels.

One app per test, several items per app (a window test costs a start-up)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
from _appwindow import assert_whole_in_view, centre, grab_screen, inside_left

ROOT = Path(__file__).resolve().parent.parent
LABEL_RGB = np.array([235, 235, 235])  # app.view.LABEL_RGBA
LABEL_HOVER_RGB = np.array([255, 225, 90])  # app.view.LABEL_HOVER_RGBA
CELL_RGB = np.array([255, 214, 90])  # app.view.CELL_RGBA

DUAL = """\
robot: dual_arm
envs: {n_envs: 4, env_spacing: [1.5, 1.5]}
solver: {seed: 0}
targets:
  - {link: left_hand, group: hands, pos: [0.45, 0.25, 0.5], quat: [0.0, 1.0, 0.0, 0.0]}
  - {link: right_hand, group: hands, pos: [0.45, -0.25, 0.5], quat: [0.0, 1.0, 0.0, 0.0]}
"""

PANDA = """\
robot:
  file: {robot}
envs: {{n_envs: 4}}
solver: {{seed: 0}}
targets:
  - {{link: hand, pos: [0.45, 0.1, 0.4], quat: [0.0, 1.0, 0.0, 0.0]}}
"""


def press_ctrl(app, key: str) -> None:
    """ctrl+``key`` with ctrl held over several GUI frames (a quick one can reach a slow frame with
    ctrl already up)."""
    app.xdotool("keydown", "ctrl")
    app.wait_frames(2)
    app.xdotool("key", key)
    app.wait_frames(2)
    app.xdotool("keyup", "ctrl")


def inside(rect, outer, slack: float = 1.0) -> bool:
    return (rect[0] >= outer[0] - slack and rect[1] >= outer[1] - slack and rect[2] <= outer[2] + slack
            and rect[3] <= outer[3] + slack)


def near(img: np.ndarray, rgb, tol: int = 30) -> np.ndarray:
    return np.abs(img - np.asarray(rgb)).max(axis=-1) <= tol


def test_panels_labels_catalog_and_recording(launch, display, tmp_path):
    scene = tmp_path / "two_hands.yaml"
    scene.write_text(DUAL)
    app = launch(scene_path=str(scene))
    r = app.wait_report(lambda r: r.get("ready") and r["images"] >= 2 and "IK " in r.get("readouts", "")
                        and "-- ms" not in r["readouts"], timeout=240)
    r = app.wait_frames(3)
    w = r["widgets"]

    # the readouts fit the left panel: every line whole, the collision line's reason too
    assert "in collision: not checked" in r["readouts"] and "(no obstacles, avoidance off)" in r["readouts"]
    assert "..." not in r["readouts"], r["readouts"]
    left = r["panels"]["left"]  # the panel's inside: window padding (8 px) + its content width
    assert left["right_edges"]["readouts"] <= 8 + left["content_w"] + 1, left

    # the plot's legend sits outside its data area (above it): the series are not covered
    assert r["plot_legend"]["outside"], r["plot_legend"]

    # two targets: "Local/World (L)" is whole inside the right panel (its scrollbar shows)
    right = r["panels"]["right"]
    assert right["scroll_max"] > 0
    assert right["right_edges"]["toggle_space"] <= 8 + right["content_w"] + 1, right

    # each gizmo is labelled with its target's link, drawn in the view
    labels = {lab["text"]: lab for lab in r["gizmo_labels"]}
    assert set(labels) == {"left_hand", "right_hand"}, r["gizmo_labels"]
    ox, oy = r["view_origin"]
    for lab in labels.values():
        x, y = lab["px"]
        img = grab_screen(display, (int(ox + x), int(oy + y), int(ox + x + 9 * len(lab["text"])), int(oy + y + 18)))
        text = near(img, LABEL_RGB, 50) | near(img, LABEL_HOVER_RGB, 50)
        assert text.sum() > 3 * len(lab["text"]), f"no label text drawn for {lab['text']}"

    # hovering a handle lights that gizmo's label alone, in the hover colour
    handle = next(h for h in r["handles"] if h["target"] == 1 and h["kind"] == "axis" and h["enabled"])
    tip = np.asarray(handle["points_px"][-1]) * 0.7 + np.asarray(handle["points_px"][0]) * 0.3
    app.xdotool("mousemove", int(ox + 5), int(oy + 5))
    app.wait_report(lambda r: not any(lab["hovered"] for lab in r["gizmo_labels"]), timeout=30)
    app.xdotool("mousemove", int(ox + tip[0]), int(oy + tip[1]))
    r = app.wait_report(lambda r: any(lab["hovered"] for lab in r["gizmo_labels"]), timeout=30)
    hovered = [lab["text"] for lab in r["gizmo_labels"] if lab["hovered"]]
    assert hovered == ["right_hand"], r["gizmo_labels"]
    app.xdotool("mousemove", int(ox + 5), int(oy + 5))

    # the catalog shows the robot loaded, lit and scrolled into its list
    assert r["robot_choice"].startswith("dual_arm "), r["robot_choice"]
    lit = r["robot_choice_rect"]  # None unless drawn in the list's view
    assert lit is not None and w["robot_filter"][3] <= lit[1] and lit[3] <= w["robot_load"][1], \
        (lit, w["robot_filter"], w["robot_load"])

    # the record path is named after the scene; recording letterboxes the image in the view, and the
    # selected env's outline stays on the image (nothing yellow on the bars)
    assert Path(r["record_path"]).name == "two_hands.mp4", r["record_path"]
    app.click_widget("record_button")
    r = app.wait_report(lambda r: r["state"]["recording"] and r["state"]["render_size"] == [1280, 720])
    r = app.wait_frames(4)
    x0, y0, x1, y1 = r["image_rect"]
    vw, vh = r["view_size"]
    assert x0 > 4 or y0 > 4, f"the view {vw}x{vh} is not letterboxed: {r['image_rect']}"
    for p in r["cell_drawn_px"]:
        assert x0 - 1 <= p[0] <= x1 + 1 and y0 - 1 <= p[1] <= y1 + 1, (p, r["image_rect"])
    bars = [(0, 0, vw, y0 - 1), (0, y1 + 1, vw, vh)] if y0 > 4 else [(0, 0, x0 - 1, vh), (x1 + 1, 0, vw, vh)]
    for bx0, by0, bx1, by1 in bars:
        if bx1 - bx0 < 2 or by1 - by0 < 2:
            continue
        img = grab_screen(display, (int(ox + bx0), int(oy + by0), int(ox + bx1), int(oy + by1)))
        assert near(img, CELL_RGB, 20).sum() == 0, "the selected env's outline is drawn on the letterbox bars"
    app.click_widget("record_button")
    app.wait_report(lambda r: not r["state"]["recording"])


def test_file_dialog_scene_switch_and_save(launch, display, tmp_path):
    (tmp_path / "scenes").symlink_to(ROOT / "scenes")  # the repository's links, as a folder may hold them
    (tmp_path / "assets").symlink_to(ROOT / "assets")
    # the second scene's robot by a long path: the progress note's text is long
    deep = tmp_path / ("a_folder_with_a_rather_long_name_for_the_robot_files_" * 2)
    deep.mkdir()
    (deep / "panda").symlink_to(ROOT / "assets" / "panda")
    (tmp_path / "other.yaml").write_text(PANDA.format(robot=deep / "panda" / "panda.xml"))
    scene = tmp_path / "two_hands.yaml"
    scene.write_text(DUAL)
    app = launch(scene_path=str(scene))
    r = app.wait_report(lambda r: r.get("ready") and r["images"] >= 2, timeout=240)

    # a link search that matches nothing on the next scene's robot
    app.click_widget("add_link_filter", at=inside_left)
    app.type("left_link3")
    r = app.wait_report(lambda r: r["link_filter"] == "left_link3")
    app.xdotool("key", "Return")

    # ctrl+O: a titled dialog on the scene's folder, links to folders listed, sizes in B/KB, plain buttons
    app.xdotool("mousemove", 5, 5)
    press_ctrl(app, "o")
    r = app.wait_report(lambda r: "open_scene_dialog" in r.get("dialogs", {}) and all(
        e["rect"] for e in r["dialogs"]["open_scene_dialog"]["entries"]), timeout=30)
    dialog = r["dialogs"]["open_scene_dialog"]
    assert dialog["title"] == "Open scene" and Path(dialog["folder"]) == tmp_path, dialog
    assert dialog["buttons"] == ["Up one folder", "Open", "Cancel"], dialog["buttons"]
    names = {e["name"]: e for e in dialog["entries"]}
    assert {"scenes/", "assets/", "other.yaml", "two_hands.yaml"} <= set(names), sorted(names)
    assert re.fullmatch(r"\d+ B|\d+\.\d KB", names["other.yaml"]["size"]), names["other.yaml"]
    # the title bar shows its title: light text pixels on it
    dx0, dy0, dx1, _ = dialog["rect"]
    bar = grab_screen(display, (int(dx0) + 4, int(dy0) + 2, int(dx0) + 160, int(dy0) + 17))
    assert (bar.min(axis=-1) > 180).sum() > 40, "the dialog's title bar is blank"

    # a double-click on a file opens it; the note shown while it loads fits in its box
    x, y = centre(names["other.yaml"]["rect"])
    app.xdotool("mousemove", x, y)
    app.wait_frames(2)
    app.xdotool("click", "--repeat", "2", "--delay", "120", 1)
    notes = []
    t0 = time.monotonic()
    while time.monotonic() - t0 < 240:
        r = app.read() or {}
        if r.get("progress"):
            notes.append(r["progress"])
        if r.get("ready") and r.get("robot") == "panda" and not r["state"]["busy"] and r["images"] > 0:
            break
        time.sleep(0.03)
    assert r.get("robot") == "panda", "the double-click did not open other.yaml"
    assert "open_scene_dialog" not in r.get("dialogs", {})
    assert notes, "no progress note was seen while the scene loaded"
    for note in notes:
        assert inside(note["text"], note["box"]), note
        assert note["text"][2] - note["text"][0] <= r["view_size"][0], note
    r = app.wait_frames(3)

    # another robot: the link search starts empty and lists its links; the catalog lights it;
    # the record path follows the scene's name
    assert r["link_filter"] == "" and r["link_choice"], (r["link_filter"], r["link_choice"])
    assert r["robot_choice"].startswith("panda "), r["robot_choice"]
    assert Path(r["record_path"]).name == "other.mp4", r["record_path"]

    # 4 -> 64 -> 4 envs: back at 4 the camera frames the 4 envs again (not the 64's wide view)
    distances = {4: r["camera"][2]}
    for n in (64, 4):
        app.click_widget("n_envs", at=inside_left)
        app.select_all()
        app.type(str(n))
        app.xdotool("key", "Return")
        r = app.wait_report(lambda r, n=n: r["state"]["n_envs"] == n and r["images"] > 0 and not r["state"]["busy"],
                            timeout=240)
        r = app.wait_frames(3)
        distances.setdefault(n, r["camera"][2])
        distances["last"] = r["camera"][2]
    assert distances[64] > 1.5 * distances[4], distances
    assert distances["last"] < 0.7 * distances[64], f"back at 4 envs the camera kept the 64 envs' framing: {distances}"

    # ctrl+S saves the scene: no float noise, no nulls
    app.xdotool("mousemove", 5, 5)
    press_ctrl(app, "s")
    app.wait_report(lambda r: any("saved" in m[1] for m in r["messages"]), timeout=30)
    text = (tmp_path / "other.yaml").read_text()
    assert "null" not in text, text
    noisy = re.findall(r"\d+\.\d{10,}", text)
    assert not noisy, f"float noise in the saved scene: {noisy}\n{text}"


PLOT_BG = np.array([37, 37, 38])  # the plot's data area (ImPlot's PlotBg in the app's theme)


def test_the_plot_has_a_data_area_in_a_small_window(launch, display):
    """At 1100x880 the plot of IK time and convergence had no height left for its data (legend above,
    axis label and ticks below, in 80 px: 9 rows): now at least 25 rows of its data area show, with the
    series drawn in them, in the same 80 px (the Recording section below stays on screen)."""
    app = launch(size=(1100, 880))
    r = app.wait_report(lambda r: r.get("solved", {}).get("frames", 0) >= 30, timeout=240)
    assert "plot" in r["widgets"], sorted(r["widgets"])
    x0, y0, x1, y1 = r["widgets"]["plot"]
    assert y1 <= 880, r["widgets"]["plot"]  # on screen (the side panel scrolled to it if need be)
    img = grab_screen(display, (x0, y0, x1, y1))
    bg = (np.abs(img - PLOT_BG).sum(axis=2) <= 3)
    rows = bg.mean(axis=1) > 0.7  # rows mostly of the data area's background (the legend's are half of it)
    assert rows.sum() >= 25, rows.sum()
    first, last = np.flatnonzero(rows)[[0, -1]]
    inside = img[max(first - 2, 0):last + 3]  # the data area and its edges (100 % converged runs along the top)
    coloured = (inside.max(axis=2) - inside.min(axis=2)) > 60  # the series' blue and orange, not greys
    assert coloured.sum() > 20, coloured.sum()


def test_a_laptop_screens_window_shows_every_robot_whole(launch, display):
    """The window fitted to a 1366x768 laptop screen (1229x691): its view, ~520 px wide and taller than
    wide, shows every env of the default scene whole (it was framed for the view as first laid out,
    and cut robots off at its sides)."""
    app = launch(size=(1229, 691))
    app.wait_report(lambda r: r["images"] >= 2 and any(m[1].startswith("solving") for m in r["messages"]),
                    timeout=240)
    app.xdotool("key", "space")  # paused: the picture holds still
    app.wait_report(lambda r: not r["state"]["playing"])
    r = app.wait_frames(3)
    assert r["view_size"][0] < r["view_size"][1], r["view_size"]
    assert_whole_in_view(app, display, r)

    # every panel ends inside the window, so the last row of a panel that scrolls is in the
    # mouse's reach: the Recording section's "..." at its panel's end opens the file dialog
    height = r["window_size"][1]
    for name in ("left", "right"):
        assert r["panels"][name]["box"][3] <= height, (name, r["panels"][name], r["window_size"])
    r = app.scroll_into_view("record_browse")
    x = sum(r["widgets"]["record_browse"][::2]) / 2
    panel = next(r["panels"][name]["box"] for name in ("left", "right")
                 if r["panels"][name]["box"][0] <= x <= r["panels"][name]["box"][2])
    app.xdotool("mousemove", int((panel[0] + panel[2]) / 2), int(panel[3] - 20))
    for _ in range(15):  # on to the panel's very end
        app.xdotool("click", "5")
    r = app.wait_frames(3)
    button = r["widgets"]["record_browse"]
    assert button[3] <= min(height, panel[3]), (button, panel, r["window_size"])
    app.click_widget("record_browse")
    r = app.wait_report(lambda r: bool(r["dialogs"]), timeout=30)
