"""app.control.camera_math.OrbitCamera against known geometry (plain numpy, no GL)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.control.camera_math import ELEVATION_LIMIT_DEG, OrbitCamera


def make_cam(**kw) -> OrbitCamera:
    args = dict(target=(0.3, -0.2, 0.5), distance=1.5, azimuth_deg=30.0, elevation_deg=25.0)
    args.update(kw)
    return OrbitCamera(**args)


CAMS = [
    make_cam(),
    make_cam(azimuth_deg=-140.0, elevation_deg=-60.0, fov_deg=70.0, width=640, height=480),
    make_cam(azimuth_deg=10.0, elevation_deg=90.0, width=400, height=900),
]


@pytest.mark.parametrize("cam", CAMS)
def test_pose_is_rigid_and_view_is_its_inverse(cam):
    T = cam.pose()
    R = T[:3, :3]
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) == pytest.approx(1.0)
    np.testing.assert_allclose(T[:3, 3], cam.position())
    np.testing.assert_allclose(cam.view_matrix() @ T, np.eye(4), atol=1e-12)
    # the camera looks down its local -z at the target
    np.testing.assert_allclose(-R[:, 2], (cam.target - cam.position()) / cam.distance, atol=1e-12)
    assert np.linalg.norm(cam.position() - cam.target) == pytest.approx(cam.distance)


@pytest.mark.parametrize("cam", CAMS)
def test_target_projects_to_image_centre(cam):
    px, depth = cam.project(cam.target[None])
    np.testing.assert_allclose(px[0], [cam.width / 2, cam.height / 2], atol=1e-9)
    assert depth[0] == pytest.approx(cam.distance)


@pytest.mark.parametrize("cam", CAMS)
def test_project_ray_round_trip(cam):
    rng = np.random.default_rng(0)
    pix = rng.uniform([0, 0], [cam.width, cam.height], size=(50, 2))
    for (px, py), t in zip(pix, rng.uniform(0.1, 20.0, 50)):
        o, d = cam.ray(px, py)
        assert np.linalg.norm(d) == pytest.approx(1.0)
        np.testing.assert_allclose(o, cam.position())
        back, depth = cam.project((o + t * d)[None])
        np.testing.assert_allclose(back[0], [px, py], atol=1e-7)
        assert depth[0] > 0
    # and the other way: points -> pixels -> rays through the points
    pts = cam.target + rng.normal(scale=0.3, size=(50, 3))
    px, depth = cam.project(pts)
    assert np.all(depth > 0)
    for p, (x, y) in zip(pts, px):
        o, d = cam.ray(x, y)
        np.testing.assert_allclose(d, (p - o) / np.linalg.norm(p - o), atol=1e-9)


@pytest.mark.parametrize("cam", CAMS)
def test_projection_matrix_matches_project(cam):
    rng = np.random.default_rng(1)
    pts = cam.target + rng.normal(scale=0.3, size=(20, 3))
    clip = (cam.projection_matrix() @ cam.view_matrix() @ np.c_[pts, np.ones(len(pts))].T).T
    ndc = clip[:, :3] / clip[:, 3:]
    px = np.c_[(ndc[:, 0] + 1) * 0.5 * cam.width, (1 - ndc[:, 1]) * 0.5 * cam.height]
    np.testing.assert_allclose(px, cam.project(pts)[0], atol=1e-7)
    assert np.allclose(clip[:, 3], cam.project(pts)[1])  # w = depth


def test_projection_matrix_matches_pyrender():
    import pyrender

    cam = make_cam(width=800, height=600, fov_deg=50.0, near=0.05, far=30.0)
    ref = pyrender.PerspectiveCamera(yfov=math.radians(50.0), znear=0.05, zfar=30.0)
    np.testing.assert_allclose(cam.projection_matrix(), ref.get_projection_matrix(800, 600), atol=1e-12)


def test_points_behind_camera_are_flagged():
    cam = make_cam()
    behind = cam.position() + 0.5 * (cam.position() - cam.target)
    px, depth = cam.project(np.stack([behind, cam.target]))
    assert np.all(np.isnan(px[0])) and depth[0] < 0
    assert np.all(np.isfinite(px[1])) and depth[1] > 0


def test_orbit_full_turn_is_identity_and_elevation_is_clamped():
    cam = make_cam()
    pose = cam.pose()
    steps = 360.0 / cam.orbit_deg_per_px
    cam.orbit(steps / 4, 0)
    assert not np.allclose(cam.pose(), pose)
    for _ in range(3):
        cam.orbit(steps / 4, 0)
    np.testing.assert_allclose(cam.pose(), pose, atol=1e-9)
    cam.orbit(0, 10_000)
    assert cam.elevation_deg == ELEVATION_LIMIT_DEG
    cam.orbit(0, -100_000)
    assert cam.elevation_deg == -ELEVATION_LIMIT_DEG
    np.testing.assert_allclose(cam.target, [0.3, -0.2, 0.5])  # orbit never moves the target


def test_orbit_directions():
    cam = make_cam(azimuth_deg=0.0, elevation_deg=0.0)
    cam.orbit(10, 0)  # drag right: the camera swings to -y (the scene turns with the mouse)
    assert cam.position()[1] < cam.target[1]
    cam.orbit(0, 10)  # drag down: the camera rises
    assert cam.position()[2] > cam.target[2]


@pytest.mark.parametrize("cam", CAMS[:2])
@pytest.mark.parametrize("delta", [(37.0, -12.0), (-250.0, 80.5), (0.0, 300.0)])
def test_pan_keeps_grabbed_point_under_cursor(cam, delta):
    cam = cam.copy()
    px, py = 400.0, 300.0
    o, d = cam.ray(px, py)
    grabbed = o + d * (cam.distance / float(np.dot(d, cam.forward())))  # at the target's depth
    assert cam.project(grabbed[None])[1][0] == pytest.approx(cam.distance)
    cam.pan(*delta)
    np.testing.assert_allclose(cam.project(grabbed[None])[0][0], [px + delta[0], py + delta[1]], atol=1e-7)


def test_pan_keeps_view_direction():
    cam = make_cam()
    fwd, dist = cam.forward(), cam.distance
    cam.pan(120, -40)
    np.testing.assert_allclose(cam.forward(), fwd, atol=1e-12)
    assert cam.distance == dist


def test_zoom_is_multiplicative_and_clamped():
    cam = make_cam(distance=2.0)
    cam.zoom(1)
    assert cam.distance == pytest.approx(2.0 / cam.zoom_factor)
    cam.zoom(-3)
    assert cam.distance == pytest.approx(2.0 * cam.zoom_factor**2)
    cam.zoom(1000)
    assert cam.distance == cam.min_distance
    cam.zoom(-1000)
    assert cam.distance == cam.max_distance


@pytest.mark.parametrize("size", [(1280, 720), (400, 900)])
@pytest.mark.parametrize("view", [(30.0, 25.0), (-100.0, -40.0), (0.0, 90.0)])
def test_frame_points_puts_all_points_in_view(size, view):
    rng = np.random.default_rng(2)
    pts = rng.normal(scale=[2.0, 0.5, 0.3], size=(300, 3)) + [5.0, -3.0, 1.0]
    cam = OrbitCamera(target=(0, 0, 0), distance=0.5, azimuth_deg=view[0], elevation_deg=view[1],
                      width=size[0], height=size[1], far=5.0)
    cam.frame_points(pts)
    px, depth = cam.project(pts)
    assert np.all(depth > cam.near) and np.all(depth < cam.far)
    assert np.all(px >= 0) and np.all(px[:, 0] <= cam.width) and np.all(px[:, 1] <= cam.height)
    np.testing.assert_allclose(cam.target, 0.5 * (pts.min(0) + pts.max(0)))


@pytest.mark.parametrize("size", [(1280, 720), (400, 900)])
def test_frame_points_is_a_tight_fit_for_a_sphere(size):
    rng = np.random.default_rng(3)
    dirs = rng.normal(size=(2000, 3))
    pts = 0.7 * dirs / np.linalg.norm(dirs, axis=1, keepdims=True) + [0.0, 1.0, 2.0]
    pts = np.vstack([pts, [0.0, 1.0, 2.0] + 0.7 * np.eye(3), [0.0, 1.0, 2.0] - 0.7 * np.eye(3)])
    cam = OrbitCamera(target=(0, 0, 0), distance=9.0, azimuth_deg=20, elevation_deg=30, width=size[0], height=size[1])
    cam.frame_points(pts, margin=1.1)
    px, _ = cam.project(pts)
    off = np.abs(px - [cam.width / 2, cam.height / 2]) / [cam.width / 2, cam.height / 2]
    # the sphere's silhouette fills the narrower image direction up to about 1 / margin
    narrow = int(np.argmin(size))
    assert 0.8 < off[:, narrow].max() < 0.95
    assert np.all(off <= 1.0)


def test_frame_single_point():
    cam = make_cam()
    cam.frame_points([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(cam.target, [1, 2, 3])
    assert cam.distance > 0 and np.isfinite(cam.distance)
    with pytest.raises(ValueError, match="points"):
        cam.frame_points(np.zeros((0, 3)))


@pytest.mark.parametrize("name, forward, right", [
    ("front", (-1, 0, 0), (0, 1, 0)),
    ("side", (0, 1, 0), (1, 0, 0)),
    ("top", (0, 0, -1), (1, 0, 0)),
    ("iso", -np.ones(3) / math.sqrt(3), (-1 / math.sqrt(2), 1 / math.sqrt(2), 0)),
])
def test_presets_look_along_expected_axes(name, forward, right):
    cam = make_cam()
    cam.preset(name)
    np.testing.assert_allclose(cam.forward(), forward, atol=1e-12)
    np.testing.assert_allclose(cam.pose()[:3, 0], right, atol=1e-12)
    if name != "top":
        assert cam.pose()[2, 1] > 0  # world up is up in the image
    else:
        np.testing.assert_allclose(cam.pose()[:3, 1], [0, 1, 0], atol=1e-12)
    np.testing.assert_allclose(cam.target, [0.3, -0.2, 0.5])
    with pytest.raises(ValueError, match="name"):
        cam.preset("bottom")


def test_resize_keeps_centre_and_vertical_fov():
    cam = make_cam()
    p = cam.target + np.array([0.0, 0.0, 0.1])
    y0 = cam.project(p[None])[0][0, 1] - cam.height / 2
    cam.resize(640, 360)
    np.testing.assert_allclose(cam.project(cam.target[None])[0][0], [320, 180])
    assert cam.project(p[None])[0][0, 1] - 180 == pytest.approx(y0 / 2)
    for bad in [(0, 10), (10.5, 10), (-1, 5)]:
        with pytest.raises(ValueError, match="width"):
            cam.resize(*bad)


def test_invalid_construction():
    with pytest.raises(ValueError, match="distance"):
        make_cam(distance=0.0)
    with pytest.raises(ValueError, match="fov_deg"):
        make_cam(fov_deg=180.0)
    with pytest.raises(ValueError, match="near"):
        make_cam(near=1.0, far=0.5)


@pytest.mark.parametrize("view", [(1280, 720), (640, 640), (400, 900)])
def test_frame_box_fits_every_corner_tightly_and_centred(view):
    cam = OrbitCamera(target=np.zeros(3), distance=3.0, azimuth_deg=30.0, elevation_deg=30.0,
                      width=view[0], height=view[1])
    lo, hi = np.array([-6.0, -5.0, 0.0]), np.array([6.5, 5.0, 1.2])  # a wide flat grid of envs
    cam.frame_box(lo, hi, margin_px=20)
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    pix, depth = cam.project(corners)
    assert np.all(depth > 0)
    assert pix.min() >= 20 - 0.5 and np.all(pix <= np.array(view) - 20 + 0.5)
    span = pix.max(axis=0) - pix.min(axis=0)
    # tight: the box touches the margin on one axis at least
    assert np.any(np.abs(span - (np.array(view) - 40)) < 3.0), span
    centre = 0.5 * (pix.min(axis=0) + pix.max(axis=0))
    np.testing.assert_allclose(centre, np.array(view) / 2, atol=2.0)
    assert (cam.azimuth_deg, cam.elevation_deg) == (30.0, 30.0)
