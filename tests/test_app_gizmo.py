"""Gizmos in the real window (issue 17, item 7): drawn on the selected env (seen in the window's
pixels: what the window shows over the rendered image), the same size on screen at 16, 64 and 256
envs, never overlapping when two targets sit close on one env (and still dragged by the amount
the mouse moves), a searchable link picker, and joint sliders that scroll in their own panel."""

from __future__ import annotations

import imageio.v2 as imageio
import numpy as np
from _appwindow import ROOT, grab_screen, inside_left

from app.control.targets import GIZMO_PX


def overlay_mask(app, display, tmp_path) -> tuple[np.ndarray, dict]:
    """Pixels of the view where the window differs from the rendered image: what is drawn over it."""
    for old in tmp_path.glob("ikstudio-*.png"):
        old.unlink()
    saved = sum("screenshot saved" in m[1] for m in app.read()["messages"])
    app.xdotool("key", "p")  # P saves the rendered image itself
    r = app.wait_report(lambda r: sum("screenshot saved" in m[1] for m in r["messages"]) > saved, timeout=30)
    (png,) = tmp_path.glob("ikstudio-*.png")
    render = imageio.imread(png)[..., :3].astype(int)
    (ox, oy), (w, h) = r["view_origin"], r["view_size"]
    assert render.shape[:2] == (h, w)
    shown = grab_screen(display, (int(ox), int(oy), int(ox) + w, int(oy) + h))
    return np.abs(shown - render).max(axis=2) > 40, r


def test_the_gizmo_is_drawn_on_the_selected_env(launch, display, tmp_path):
    app = launch(screenshot_dir=str(tmp_path))
    app.wait_report(lambda r: r["images"] >= 2, timeout=180)
    app.xdotool("key", "space")  # paused: the rendered image stays the one on screen
    r = app.wait_report(lambda r: not r["state"]["playing"])
    app.wait_frames(5)
    # the env selected at start is the one nearest the camera (in front), not the back one
    assert r["state"]["selected_env"] == int(np.argmin(r["env_depth"]))
    for _ in range(2):
        mask, r = overlay_mask(app, display, tmp_path)
        sel = r["state"]["selected_env"]
        env_px = np.array(r["env_px"])
        yy, xx = np.nonzero(mask)
        assert len(xx) > 500, "nothing drawn over the view"
        anchor = np.array(r["gizmos"][0]["anchor_px"])
        # everything drawn over the image is the selected env's gizmo and its cell's outline ...
        lo, hi = np.min(r["cell_px"], axis=0) - 6, np.max(r["cell_px"], axis=0) + 6
        in_cell = (xx >= lo[0]) & (xx <= hi[0]) & (yy >= lo[1]) & (yy <= hi[1])
        d_gizmo = np.hypot(xx - anchor[0], yy - anchor[1])
        in_label = np.zeros(len(xx), bool)  # the gizmo's name, above its handles
        for lab in r["gizmo_labels"]:
            lx, ly = lab["px"]
            in_label |= (xx >= lx - 2) & (xx <= lx + 9 * len(lab["text"])) & (yy >= ly - 2) & (yy <= ly + 20)
        assert np.mean((d_gizmo < 1.2 * GIZMO_PX) | in_cell | in_label) > 0.98
        # ... and its gizmo is there: around the target of that env
        assert (d_gizmo < 1.2 * GIZMO_PX).sum() > 300
        far = [k for k in range(len(env_px)) if np.linalg.norm(env_px[k] - env_px[sel]) > 250]
        assert far, "no env far from the selected one"
        for k in far:
            assert (np.hypot(xx - env_px[k, 0], yy - env_px[k, 1]) < 40).sum() < 20, f"drawn over env {k}"
        # select the env farthest from this one with a click (where no gizmo is), and look again
        target = max(far, key=lambda k: np.linalg.norm(env_px[k] - env_px[sel]))
        ox, oy = r["view_origin"]
        app.click(ox + env_px[target, 0], oy + env_px[target, 1], frames=4)
        r = app.wait_report(lambda r, t=target: r["state"]["selected_env"] == t)
        app.wait_frames(3)
    assert "Traceback" not in app.log(), app.log()


def ring_radius_px(r) -> float:
    rings = [h for h in r["handles"] if h["target"] == 0 and h["kind"] == "ring"]
    centre_px = np.array(r["gizmos"][0]["center_px"])
    return max(float(np.linalg.norm(np.array(h["points_px"]) - centre_px, axis=1).max()) for h in rings)


def test_the_gizmo_keeps_its_size_on_screen_at_any_env_count(launch):
    app = launch()
    r = app.wait_report(lambda r: r["images"] >= 2 and r["state"]["n_envs"] == 16, timeout=180)
    sizes = {16: ring_radius_px(r)}
    for n in (64, 256):
        app.click_widget("n_envs", at=inside_left)
        app.select_all()
        app.type(str(n))
        app.xdotool("key", "Return")
        r = app.wait_report(lambda r, n=n: r["state"]["n_envs"] == n and r["images"] > 0, timeout=180)
        r = app.wait_frames(3)
        sizes[n] = ring_radius_px(r)
    # the ring's radius is 0.8 of the arrow length: GIZMO_PX on screen, whatever the camera distance
    for size in sizes.values():
        assert abs(size - 0.8 * GIZMO_PX) < 0.08 * GIZMO_PX, sizes


FINGERS = """\
robot: panda
envs: {n_envs: 4}
solver: {seed: 0}
targets:
  - {link: left_finger, pos: [0.3, -0.04, 0.53], quat: [0.0, 1.0, 0.0, 0.0]}
  - {link: right_finger, pos: [0.3, 0.04, 0.53], quat: [0.0, 1.0, 0.0, 0.0]}
"""


def discs_apart(r) -> None:
    g = r["gizmos"]
    for i in range(len(g)):
        for j in range(i + 1, len(g)):
            d = np.linalg.norm(np.subtract(g[i]["center_px"], g[j]["center_px"]))
            assert d >= g[i]["radius_px"] + g[j]["radius_px"], (i, j, d, g[i]["radius_px"], g[j]["radius_px"])


def test_gizmos_of_one_env_never_overlap_and_the_link_picker_searches(launch, tmp_path):
    scene = tmp_path / "fingers.yaml"
    scene.write_text(FINGERS)
    app = launch(scene_path=str(scene))
    r = app.wait_report(lambda r: r["images"] >= 2 and len(r["gizmos"]) == 2, timeout=180)
    app.xdotool("key", "space")
    r = app.wait_report(lambda r: not r["state"]["playing"])
    # the two fingertip targets are 8 cm apart: their gizmos shrink and move apart on screen
    discs_apart(r)
    assert np.linalg.norm(np.subtract(*[g["anchor_px"] for g in r["gizmos"]])) < 80
    # the link search: "hand" leaves one link to pick; a third target comes on it
    app.click_widget("add_link_filter", at=inside_left)
    app.type("han")
    app.xdotool("key", "Return")
    r = app.wait_report(lambda r: r["link_choice"] == "hand")
    app.click_widget("add_target")
    r = app.wait_report(lambda r: r["links"] == ["left_finger", "right_finger", "hand"])
    r = app.wait_frames(3)
    discs_apart(r)
    # a gizmo pushed aside still drags its target by what the mouse moves: 5 cm along x
    before = np.array(r["targets"][0])
    h = next(h for h in r["handles"] if h["target"] == 0 and h["kind"] == "axis" and h["axis"] == 0)
    a, b = np.array(h["points_px"][0]), np.array(h["points_px"][1])
    per_m = (b - a) / np.linalg.norm(np.subtract(h["points"][1], h["points"][0]))
    ox, oy = r["view_origin"]
    start = np.array([ox, oy]) + a + 0.8 * (b - a)
    r = app.drag(start, 0.05 * per_m, steps=5)
    moved = np.array(r["targets"][0]) - before
    assert abs(moved[0] - 0.05) < 0.01 and np.abs(moved[1:]).max() < 1e-6, moved
    discs_apart(r)


def test_joint_sliders_scroll_in_their_panel(launch):
    app = launch(scene_path=str(ROOT / "scenes" / "talos_hands.yaml"))
    r = app.wait_report(lambda r: r["images"] >= 1 and "t1_pos" in r["widgets"], timeout=240)
    joints = r["panels"]["joints"]
    assert joints["size"][1] <= 270, "32 joint sliders took the panel's height"
    assert joints["scroll_max"] > 300, "the sliders do not scroll in their panel"
    # the targets panel is on screen below them: the link picker and both targets' fields
    for tag in ("add_link_filter", "t0_pos", "t1_pos"):
        assert r["widgets"][tag][3] < r["window_size"][1], (tag, r["widgets"][tag])
