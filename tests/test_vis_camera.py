"""engine.vis.Camera: pose, projection to pixels and framing, in plain numpy (no GL)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.vis import Camera


def cams():
    return [Camera(), Camera(pos=(0.3, -2.0, 0.8), lookat=(0.1, 0.2, 0.3), fov=60, res=(640, 480)),
            Camera(pos=(0.0, 0.0, 3.0), lookat=(0.0, 0.0, 0.0), fov=30, res=(300, 500))]  # looking straight down


@pytest.mark.parametrize("cam", cams())
def test_pose_is_rigid_and_looks_at_the_target(cam):
    T = cam.pose
    np.testing.assert_allclose(T[:3, :3].T @ T[:3, :3], np.eye(3), atol=1e-12)
    assert np.linalg.det(T[:3, :3]) == pytest.approx(1.0)
    forward = -T[:3, 2]
    to_target = cam.lookat - cam.pos
    np.testing.assert_allclose(forward, to_target / np.linalg.norm(to_target), atol=1e-12)
    np.testing.assert_allclose(cam.view_matrix @ T, np.eye(4), atol=1e-12)


@pytest.mark.parametrize("cam", cams())
def test_target_projects_to_the_image_centre_and_matches_the_gl_matrices(cam):
    w, h = cam.res
    np.testing.assert_allclose(cam.project(cam.lookat), (w / 2, h / 2), atol=1e-9)
    rng = np.random.default_rng(0)
    pts = cam.lookat + rng.uniform(-0.5, 0.5, (50, 3))
    px, depth = cam.project(pts, return_depth=True)
    clip = (cam.projection_matrix @ cam.view_matrix @ np.c_[pts, np.ones(50)].T).T
    ndc = clip[:, :3] / clip[:, 3:]
    np.testing.assert_allclose(px[:, 0], (ndc[:, 0] + 1) / 2 * w, atol=1e-6)
    np.testing.assert_allclose(px[:, 1], (1 - ndc[:, 1]) / 2 * h, atol=1e-6)
    np.testing.assert_allclose(depth, clip[:, 3], atol=1e-9)


def test_image_axes_and_field_of_view():
    cam = Camera(pos=(2.0, 0.0, 0.0), lookat=(0.0, 0.0, 0.0), up=(0, 0, 1), fov=90, res=(200, 100))
    # camera looks along -x: world +z is up in the image (smaller y), world +y is to the right
    up, right = cam.project([[0, 0, 0.5], [0, 0.5, 0]])
    assert up[1] < 50 and up[0] == pytest.approx(100)
    assert right[0] > 100 and right[1] == pytest.approx(50)
    # fov 90: a point at 45 degrees above the axis lands on the top edge
    np.testing.assert_allclose(cam.project([0, 0, 2.0]), (100, 0), atol=1e-9)


def test_points_behind_the_camera_are_nan():
    cam = Camera(pos=(1, 0, 0), lookat=(0, 0, 0))
    px = cam.project([[2.0, 0, 0], [0, 0, 0]])
    assert np.all(np.isnan(px[0])) and np.all(np.isfinite(px[1]))
    assert cam.project(np.zeros((2, 5, 3))).shape == (2, 5, 2)


def test_frame_bounds_fits_every_corner():
    cam = Camera(res=(1280, 720), fov=40)
    lo, hi = np.array([-2.0, -1.5, 0.0]), np.array([2.0, 1.5, 1.2])
    cam.frame_bounds(lo, hi, direction=(1, 0.5, 0.6), margin=0.05)
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    px = cam.project(corners)
    assert np.all(px >= (0.05 * 1280 - 1, 0.05 * 720 - 1)) and np.all(px <= (0.95 * 1280 + 1, 0.95 * 720 + 1))
    # tight: some corner touches the margin
    gap = np.minimum(px - (64, 36), (1216, 684) - px).min()
    assert gap < 5


def test_look_at_and_copy():
    cam = Camera()
    same = cam.look_at((1, 2, 3), (0, 0, 0))
    assert same is cam
    np.testing.assert_array_equal(cam.pos, (1, 2, 3))
    other = cam.copy()
    other.look_at((5, 5, 5), (0, 0, 1))
    np.testing.assert_array_equal(cam.pos, (1, 2, 3))


@pytest.mark.parametrize("kwargs, match", [
    (dict(fov=0), "fov"), (dict(fov=180), "fov"), (dict(res=(10,)), "res"), (dict(res=(10.5, 4)), "res"),
    (dict(pos=(0, 0)), "pos"), (dict(up=(0, 0, 0)), "up"), (dict(zfar=0.01), "zfar"),
    (dict(pos=(0, 0, 0), lookat=(0, 0, 0)), "target"),
])
def test_bad_camera_arguments_are_named(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        Camera(**kwargs)


def test_bad_project_input():
    with pytest.raises(ValueError, match="points_world"):
        Camera().project([1.0, 2.0])
