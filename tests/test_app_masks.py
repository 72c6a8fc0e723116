"""Masks and the status line in the real window (issue 17, item 6): the rotation mode is one choice
(full / align x / align y / align z / free) that goes from any mode to any other with no error on
the way, the position checkboxes stay, and an error shows in a status line that fits the view and
clears once its cause is gone."""

from __future__ import annotations

import numpy as np
from _appwindow import grab_screen, inside_left

ACTIVE = np.array([51, 105, 173])  # the lit choice (app.gui.panels.targets.ACTIVE_RGB)
MODES = {"full": [True, True, True], "align_x": [True, False, False], "align_y": [False, True, False],
         "align_z": [False, False, True], "free": [False, False, False]}


def lit(display, rect) -> bool:
    """The button's face has the active colour."""
    x0, y0, x1, y1 = (int(round(v)) for v in rect)
    px = grab_screen(display, (x0 + 2, y0 + 2, x1 - 2, y1 - 2)).reshape(-1, 3)
    return (np.abs(px - ACTIVE).sum(axis=1) < 30).mean() > 0.3


def rings(r) -> list[bool]:
    return [h["enabled"] for h in sorted((h for h in r["handles"] if h["target"] == 0 and h["kind"] == "ring"),
                                         key=lambda h: h["axis"])]


def test_rotation_mode_is_one_choice(launch, display):
    app = launch()
    app.wait_report(lambda r: r["images"] >= 2 and "t0_rot_full" in r["widgets"], timeout=180)
    app.xdotool("key", "space")
    r = app.wait_report(lambda r: not r["state"]["playing"])
    assert r["masks"][0][1] == MODES["align_z"]  # the default scene: only the hand's z direction
    assert lit(display, r["widgets"]["t0_rot_align_z"]) and not lit(display, r["widgets"]["t0_rot_full"])
    for mode in ("full", "align_x", "free", "align_y", "align_z", "full", "free", "align_z"):
        app.click_widget(f"t0_rot_{mode}")
        r = app.wait_report(lambda r, m=mode: r["masks"][0][1] == MODES[m] and f"t0_rot_{m}" in r["widgets"])
        r = app.wait_frames(3)
        assert r["status"][0] != "error", (mode, r["status"])
        for other in MODES:
            assert lit(display, r["widgets"][f"t0_rot_{other}"]) == (other == mode), (mode, other)
        # rings: all on for full, all off for free; aligning an axis frees the spin about it
        want = {"full": [True] * 3, "free": [False] * 3}.get(mode, [mode != f"align_{a}" for a in "xyz"])
        assert rings(r) == want, (mode, rings(r))
    assert not [m for m in r["messages"] if m[0] == "error"], r["messages"]
    # the position checkboxes are still there
    app.click_widget("t0_pos_mask2", at=lambda rect: inside_left(rect, 8))
    r = app.wait_report(lambda r: r["masks"][0][0] == [True, True, False])


def status_pixels(display, r) -> np.ndarray:
    return grab_screen(display, [int(round(v)) for v in r["widgets"]["status"]])


def test_errors_fit_the_status_line_and_clear_when_fixed(launch, display, tmp_path):
    app = launch()
    r = app.wait_report(lambda r: r["images"] >= 2 and "solver_damping" in r["widgets"], timeout=180)

    def enter(tag, text):
        app.click_widget(tag, at=inside_left)
        app.select_all()
        app.paste(text) if len(text) > 20 else app.type(text, delay_ms=5)  # a user pastes a long path
        app.xdotool("key", "Return")

    enter("solver_damping", "-1")
    r = app.wait_report(lambda r: r["status"][0] == "error")
    assert "damping" in r["status"][1]
    red = status_pixels(display, r)
    assert ((red[..., 0] > 200) & (red[..., 1] < 130)).sum() > 30, "the error is not drawn in red"

    # a long error (a path of 200 characters under tmp_path) is cut to the status line's two lines,
    # inside the view
    long_dir = tmp_path / ("x" * 100) / ("y" * 100)
    enter("record_path", str(long_dir / "clip.mp4"))
    app.click_widget("record_button")
    r = app.wait_report(lambda r: "does not exist" in r["status"][1] or r["status"][1].endswith("..."))
    x0, y0, x1, y1 = r["widgets"]["status"]
    (ox, oy), (w, h) = r["view_origin"], r["view_size"]
    assert ox - 1 <= x0 and x1 <= ox + w + 1 and y0 >= oy + h, (r["widgets"]["status"], r["view_origin"], w)
    assert y1 - y0 <= 40 and y1 <= r["window_size"][1], "more than two lines, or below the window"
    assert r["status"][1].endswith("...")
    assert not r["state"]["recording"]

    # each cause gone: a valid path records, a valid damping is taken; the status line empties
    enter("record_path", str(tmp_path / "clip.mp4"))
    app.click_widget("record_button")
    r = app.wait_report(lambda r: r["state"]["recording"])
    app.click_widget("record_button")
    r = app.wait_report(lambda r: not r["state"]["recording"] and "damping" in r["status"][1])
    enter("solver_damping", "0.02")
    r = app.wait_report(lambda r: r["status"][0] != "error" or not r["status"][1])
    app.wait_report(lambda r: not r["status"][1], timeout=30)  # the info notes fade too
    assert not (status_pixels(display, app.read())[..., 0] > 200).any()
