"""No input is lost however slow the solver or renderer (issue 17, item 2): with 256 Panda envs
playing (a few images per second on 2 cores) every click of the real window registers at once:
Record and Stop, env picks in the view, the n_envs box. The GUI thread never waits on the
engine, so its frame rate stays up while images arrive at the renderer's rate."""

from __future__ import annotations

import time

import imageio.v2 as imageio
import numpy as np
from _appwindow import ROOT, inside_left

SCENE = ROOT / "scenes" / "panda_256.yaml"


def test_clicks_register_while_256_envs_play(launch, tmp_path):
    app = launch(scene_path=str(SCENE), screenshot_dir=str(tmp_path))
    r = app.wait_report(lambda r: r["images"] >= 3 and r["state"]["n_envs"] == 256, timeout=300)
    assert r["state"]["playing"]

    # Record, then Stop: one click each, while the 256 envs play
    video = tmp_path / "rec.mp4"
    app.click_widget("record_path", at=inside_left)
    app.select_all()
    app.paste(str(video))  # as a user pastes a path (typing it costs a GUI frame or two per character)
    app.xdotool("key", "Return")
    r = app.wait_report(lambda r: r["keyboard_owner"] is None)
    r = app.click_widget("record_button", frames=1)
    r = app.wait_report(lambda r: r["state"]["recording"], timeout=5)
    images = r["images"]
    r = app.wait_report(lambda r: r["images"] >= images + 3, timeout=60)
    r = app.click_widget("record_button", frames=1)
    r = app.wait_report(lambda r: not r["state"]["recording"], timeout=5)
    r = app.wait_report(lambda r: any("recording saved" in m[1] for m in r["messages"]), timeout=60)
    assert r["state"]["playing"], "the scene was paused"
    reader = imageio.get_reader(str(video))
    try:
        n_frames = sum(1 for _ in reader)
    finally:
        reader.close()
    assert n_frames >= 3

    # single clicks on envs in the view select them, each at once. An env's centre on screen is the
    # mean of its robot's link origins, which move as the scene plays: the env to select is the
    # nearest to the click on a frame between the move and the click's effect, so the pixels are
    # read again around each click (a list read once goes stale under load)
    w, h = r["view_size"]

    def clear_of_gizmo(now: dict, k: int) -> bool:
        """Env ``k``'s centre is away from the gizmo handles as drawn now: the gizmo follows the
        selected env's target, which moves as the scene plays, so a click there could grab it."""
        gizmo = np.array([p for hd in now["handles"] for p in hd["points_px"]])
        far = len(gizmo) == 0 or np.linalg.norm(gizmo - np.array(now["env_px"][k]), axis=1).min() > 60
        return far and k != now["state"]["selected_env"]

    def near(report: dict, point, slack_px: float = 8.0) -> set[int]:
        """The envs within ``slack_px`` of the nearest to ``point`` on the frame of ``report``: the
        envs move between the frames the test samples and the frame the click lands on"""
        d = np.linalg.norm(np.array(report["env_px"]) - point, axis=1)
        return set(np.flatnonzero(d <= d.min() + slack_px).tolist())

    env_px = np.array(r["env_px"])
    inside = [k for k, p in enumerate(env_px) if 40 < p[0] < w - 40 and 40 < p[1] < h - 40]
    spread = [inside[i] for i in np.linspace(0, len(inside) - 1, 25).astype(int)]
    picks = 0
    for k in spread:
        if picks == 5:
            break
        before = app.read()
        if not clear_of_gizmo(before, k):
            continue
        picks += 1
        ox, oy = before["view_origin"]
        point = np.round(before["env_px"][k])  # the pixel the mouse lands on (view pixels)
        app.xdotool("mousemove", int(ox + point[0]), int(oy + point[1]))
        moved = app.wait_frames(2)
        app.xdotool("click", 1)
        # the GUI sees the press and the release (one frame apart, or more on a busy machine)
        r = app.wait_report(lambda r, after=moved["frames"]: any(e[1:3] == ["left", "up"] and e[0] > after
                                                                 for e in r["pointer_events"]), timeout=30)
        r = app.wait_frames(1)
        # envs are ~10 px apart at 256: one of the nearest on the frames around the click (CI saw env
        # 42 aimed at and 31 taken as the arms moved); and a click that was lost keeps the old choice
        candidates = near(before, point) | near(moved, point) | near(r, point)
        got, old = r["state"]["selected_env"], before["state"]["selected_env"]
        nearest = near(before, point, 0.0) | near(moved, point, 0.0) | near(r, point, 0.0)
        assert got in candidates and (got != old or old in nearest), (
            k, candidates, got, old, r["pointer_events"], r["hovered"], r["keyboard_owner"], r["frames"],
            moved["frames"])
    assert picks == 5, f"only {picks} envs away from the gizmo to click"

    # the n_envs box: click, type, Enter
    app.click_widget("n_envs", at=inside_left)
    app.select_all()
    app.type("64")
    app.xdotool("key", "Return")
    r = app.wait_report(lambda r: r["state"]["n_envs"] == 64, timeout=120)
    gui_fps, _ = r["rates"]
    print(f"\nGUI {gui_fps:.1f} frames/s while 256 envs played")
    assert not [m for m in r["messages"] if m[0] == "error"], r["messages"]
    assert "Traceback" not in app.log(), app.log()


def test_the_panels_hold_still_from_the_first_frame_to_the_first_solve(launch, tmp_path):
    """The readouts have as many lines before the first solve as after, so the Recording section
    under them stays where it was drawn first: a click aimed at Record as the first answers arrive
    lands on Record."""
    scene = tmp_path / "scene.yaml"
    scene.write_text("robot: panda\nenvs: {n_envs: 4}\ntargets:\n  - {link: hand, pos: [0.45, 0.1, 0.4]}\n")
    app = launch(scene_path=str(scene))
    rects, readouts = set(), set()
    app.wait_report(lambda r: "record_button" in r["widgets"], timeout=120)
    r = app.wait_frames(3)  # the panels' first layout pass (scroll bars settle)
    deadline = time.monotonic() + 240
    while not (r["images"] >= 2 and "converged 100.0 %" in r.get("readouts", "")):
        assert time.monotonic() < deadline, f"no converged answers within 240 s:\n{app.log()}"
        rects.add(tuple(r["widgets"]["record_button"]) + tuple(r["widgets"]["record_browse"]))
        readouts.add(r.get("readouts", ""))
        r = app.wait_frames(1)
    rects.add(tuple(r["widgets"]["record_button"]) + tuple(r["widgets"]["record_browse"]))
    assert len(readouts) >= 2, "the test saw no frame before the first solve"
    assert len(rects) == 1, f"Record and '...' moved: {sorted(rects)}"
