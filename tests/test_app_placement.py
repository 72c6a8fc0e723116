"""Robots placed sensibly (issue 17, item 4): a robot loaded from the catalog stands on the floor,
its envs are spaced by its reach, and the default camera frames every env (no robot clipped at
an edge of the rendered image, and the grid fills the view)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import engine as ik
from app.control import placement
from app.control.controller import AppController

RES = (640, 360)


@pytest.fixture(scope="module", autouse=True)
def engine_cpu():
    ik.init(backend="cpu")


@pytest.fixture
def ctl():
    c = AppController(res=RES)
    yield c
    c.close()


def lowest_point(c, env: int = 0) -> float:
    return float(placement.geometry_points(c.robot.tree, c.view.links_pos[env], c.view.links_quat[env])[:, 2].min())


def magenta_pixels(img: np.ndarray) -> np.ndarray:
    """Magenta pixels: the robots, tinted so (the ground, grid and background are grey-blue)."""
    rgb = img.astype(int)
    return (rgb[..., 0] > rgb[..., 1] + 40) & (rgb[..., 2] > rgb[..., 1] + 40)


def framed(c) -> None:
    """Every env inside the view, none touching an edge, and the grid filling it."""
    assert c._shows_every_env()
    c.visualizer.set_env_tint(None, (1.0, 0.0, 1.0))  # every robot magenta, for the count below
    c.render_requests += 1  # a new image although the app's state did not change
    img = c.wait_frame()
    robot = magenta_pixels(img)
    h, w = robot.shape
    assert robot.sum() > 500
    edge = max(2, int(0.01 * min(w, h)))
    assert not robot[:edge].any() and not robot[-edge:].any() and not robot[:, :edge].any() \
        and not robot[:, -edge:].any(), "a robot touches the edge of the view"
    ys, xs = np.nonzero(robot)
    assert (xs.max() - xs.min()) > 0.55 * w or (ys.max() - ys.min()) > 0.55 * h, "the envs do not fill the view"


def test_talos_from_the_catalog_stands_on_the_floor(ctl):
    ctl.set_n_envs(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the TALOS file's ignored mimic joints
        assert ctl.load_robot("talos"), list(ctl.messages)
    assert ctl.robot.tree.name.startswith("talos")
    base_z = ctl.view.links_pos[:, 0, 2]
    np.testing.assert_allclose(base_z, base_z[0])
    assert base_z[0] > 1.0  # the pelvis is raised, so that ...
    for env in range(4):
        assert -1e-3 < lowest_point(ctl, env) < 0.02  # ... the soles are on the floor
    assert "raised" in ctl.messages[-1][1]
    assert ctl.update() is not None and ctl.last_frame.success.all()  # its target is where its hand is
    framed(ctl)


def test_ur5_envs_are_spaced_by_its_reach(ctl):
    assert ctl.load_robot("ur5"), list(ctl.messages)
    spacing = ctl.spec.envs.env_spacing
    assert spacing[0] == spacing[1] and spacing[0] > 1.0  # the file default of 1 m let arms overlap
    reach = placement.reach(ctl.robot)
    foot = placement.footprint(ctl.robot.tree, ctl.view.links_pos[0], ctl.view.links_quat[0])
    assert reach + foot <= spacing[0]  # an arm reaching toward a neighbour in its default pose stops short
    # at the default pose no two robots' geometry comes within 10 cm of each other horizontally
    pts = [placement.geometry_points(ctl.robot.tree, ctl.view.links_pos[e], ctl.view.links_quat[e])[:, :2]
           + ctl.view.offsets[e, :2] for e in (0, 1)]
    gap = np.linalg.norm(pts[0][::7, None] - pts[1][None, ::7], axis=2).min()
    assert gap > 0.1, gap
    assert lowest_point(ctl) > -1e-3
    framed(ctl)


@pytest.mark.parametrize("n_envs", [16, 64])
def test_the_default_camera_frames_every_env(ctl, n_envs):
    assert ctl.set_n_envs(n_envs)
    ctl.frame_all()
    framed(ctl)


def test_a_file_camera_that_clips_a_robot_is_reframed(tmp_path):
    scene = tmp_path / "clipped.yaml"
    scene.write_text("robot: panda\nenvs: {n_envs: 9}\ntargets:\n  - {link: hand, pos: [0.4, 0, 0.4]}\n"
                     "camera: {pos: [3.0, 1.2, 2.0], lookat: [0.6, 0.6, 0.3], fov: 40}\n")
    c = AppController(scene, res=RES)
    try:
        assert not np.allclose(c.camera.position(), [3.0, 1.2, 2.0], atol=1e-3)  # the file's camera cut envs off
        framed(c)  # so the app framed them all instead
    finally:
        c.close()


def test_a_resized_view_is_framed_again_unless_the_user_moved_the_camera(tmp_path):
    """The app frames every env for the view's shape; the view laid out again narrower (a laptop's
    1366x768 screen leaves it ~520 px wide and taller than wide) would cut envs off at its sides, so
    it frames them again, and a scene file's camera is kept only while it shows every env. A camera
    the user moved is left as it is by a resize."""
    c = AppController(None, res=(1020, 885))
    try:
        framed(c)
        c.resize_view(521, 604)
        framed(c)
        c.camera.orbit(40.0, 0.0)  # the user's own view: a resize leaves it
        moved = c.camera.position()
        c.resize_view(400, 600)
        np.testing.assert_allclose(c.camera.position(), moved)
    finally:
        c.close()
    scene = tmp_path / "wide.yaml"
    scene.write_text("robot: panda\nenvs: {n_envs: 4}\ntargets:\n  - {link: hand, pos: [0.4, 0, 0.4]}\n"
                     "camera: {pos: [4.0, 0.5, 2.0], lookat: [0.0, 0.5, 0.3], fov: 40}\n")
    c = AppController(scene, res=(1020, 885))
    try:
        np.testing.assert_allclose(c.camera.position(), [4.0, 0.5, 2.0], atol=1e-6)  # kept: it shows all 4
        c.resize_view(900, 800)
        np.testing.assert_allclose(c.camera.position(), [4.0, 0.5, 2.0], atol=1e-6)  # still shows them
        c.resize_view(300, 800)
        assert not np.allclose(c.camera.position(), [4.0, 0.5, 2.0], atol=1e-3)
        framed(c)
    finally:
        c.close()


def test_talos_from_the_catalog_in_the_window(launch, display):
    """As a user meets it: the default scene framed, then "talos" typed into the catalog search and
    loaded with the button: it stands on the floor, the spacing field shows its reach-derived
    spacing, and every env is in the view."""
    from _appwindow import assert_whole_in_view, inside_left

    app = launch()
    r = app.wait_report(lambda r: r["images"] >= 2 and any(m[1].startswith("solving") for m in r["messages"]),
                        timeout=240)
    app.xdotool("key", "space")  # paused: the picture holds still
    r = app.wait_report(lambda r: not r["state"]["playing"])
    assert_whole_in_view(app, display, app.wait_frames(3))
    app.click_widget("robot_filter", at=inside_left)
    app.type("zzz")  # matches nothing: nothing is lit, and Load says so instead of loading the Panda again
    app.wait_report(lambda r: r["robot_choice"] == "")
    app.click_widget("robot_load")
    r = app.wait_report(lambda r: any("no catalog robot matches 'zzz'" in m[1] for m in r["messages"]))
    assert r.get("robot", "").startswith("panda") and not any("loaded robot" in m[1] for m in r["messages"])
    app.click_widget("robot_filter", at=inside_left)
    app.select_all()
    app.type("talos")
    r = app.wait_report(lambda r: r["robot_choice"].startswith("talos "))  # the first match is picked
    app.click_widget("robot_load")
    # the window shows the new scene (its first image drawn) once the robot is TALOS and nothing is busy
    r = app.wait_report(lambda r: r.get("robot", "").startswith("talos") and r["state"]["busy"] is None
                        and any("loaded robot talos" in m[1] for m in r["messages"]), timeout=240)
    line = next(m[1] for m in r["messages"] if "loaded robot talos" in m[1])
    assert "base raised 1.08 m to the floor" in line and "envs 1.6 m apart" in line, line
    np.testing.assert_allclose(r["spacing"], [1.6, 1.6], atol=1e-6)  # the field shows the spacing in use
    assert r["state"]["n_envs"] == 16 and len(r["env_px"]) == 16
    r = app.wait_frames(5)
    assert_whole_in_view(app, display, r)
    assert "Traceback" not in app.log(), app.log()
