"""app.control.gizmo: handle geometry, picking and drags against known geometry (plain numpy, no GL)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.control.camera_math import OrbitCamera
from app.control.gizmo import (
    RING_RADIUS,
    SNAP_POS_M,
    Gizmo,
    HitResult,
    begin_drag,
    drag_to,
    handle_geometry,
    layout,
    pick,
)
from engine.transforms import quat_conj, quat_from_axis_angle, quat_mul, quat_to_matrix, quat_to_rotvec

POS = np.array([0.4, -0.1, 0.6])
Q_ROT = quat_from_axis_angle(np.array([1.0, 2.0, 3.0]) / math.sqrt(14.0), 0.7)  # a generic orientation
E = np.eye(3)


def cam_for(pos=POS, az=35.0, el=25.0, dist=1.2) -> OrbitCamera:
    return OrbitCamera(target=pos, distance=dist, azimuth_deg=az, elevation_deg=el)


def px_of(cam, p):
    xy, depth = cam.project(np.asarray(p, float)[None])
    assert depth[0] > 0
    return float(xy[0, 0]), float(xy[0, 1])


def find(handles, kind, axis):
    return next(h for h in handles if h.kind == kind and h.axis == axis)


def _dist_to_outline(c, pts2, closed):
    """Pixel distance from c to a projected polyline (vectorised)."""
    a, b = (pts2, np.roll(pts2, -1, axis=0)) if closed else (pts2[:-1], pts2[1:])
    e = b - a
    u = np.clip(np.einsum("ij,ij->i", c - a, e) / np.maximum(np.einsum("ij,ij->i", e, e), 1e-12), 0, 1)
    return float(np.min(np.linalg.norm(a + u[:, None] * e - c, axis=1)))


def _inside(c, quad):
    e = np.roll(quad, -1, axis=0) - quad
    cross = e[:, 0] * (c - quad)[:, 1] - e[:, 1] * (c - quad)[:, 0]
    return bool(np.all(cross >= 0) or np.all(cross <= 0))


def pick_point(cam, handles, h):
    """A world point on handle h whose projection is as far as possible from every other handle."""
    if h.kind == "axis":
        cands = h.points[0] + np.linspace(0.3, 0.95, 14)[:, None] * (h.points[1] - h.points[0])
    elif h.kind == "plane":
        w = np.linspace(0.1, 0.9, 7)
        a, b, d = h.points[0], h.points[1], h.points[3]
        cands = np.array([a + s * (b - a) + t * (d - a) for s in w for t in w])
    else:
        cands = h.points
    others = [(cam.project(o.points)[0], o.kind) for o in handles if o is not h]

    def clearance(p):
        c = np.array(px_of(cam, p))
        return min(0.0 if kind == "plane" and _inside(c, pts2) else _dist_to_outline(c, pts2, kind != "axis")
                   for pts2, kind in others)

    return max(cands, key=clearance)


def rot_angle_axis(q_new, q_old):
    rv = quat_to_rotvec(quat_mul(q_new, quat_conj(q_old)))
    angle = np.linalg.norm(rv)
    return angle, rv / max(angle, 1e-300)


# -- geometry and picking --------------------------------------------------------------------------
@pytest.mark.parametrize("space", ["world", "local"])
def test_handle_geometry(space):
    g = Gizmo(POS, Q_ROT, size_m=0.2, space=space)
    A = quat_to_matrix(Q_ROT) if space == "local" else E
    hs = handle_geometry(g)
    assert [h.kind for h in hs] == ["axis"] * 3 + ["plane"] * 3 + ["ring"] * 3
    for k in range(3):
        ax, pl, ring = find(hs, "axis", k), find(hs, "plane", k), find(hs, "ring", k)
        d = ax.points[1] - ax.points[0]
        np.testing.assert_allclose(d / np.linalg.norm(d), A[:, k], atol=1e-12)
        np.testing.assert_allclose(ax.points[1], POS + 0.2 * A[:, k], atol=1e-12)
        np.testing.assert_allclose((pl.points - POS) @ A[:, k], 0, atol=1e-12)  # square in the plane normal to k
        assert np.all((pl.points - POS) @ A[:, (k + 1) % 3] > 0) and np.all((pl.points - POS) @ A[:, (k + 2) % 3] > 0)
        np.testing.assert_allclose(np.linalg.norm(ring.points - POS, axis=1), RING_RADIUS * 0.2)
        np.testing.assert_allclose((ring.points - POS) @ A[:, k], 0, atol=1e-12)
        assert ax.color == pl.color == ring.color and np.argmax(ax.color) == k  # x red, y green, z blue
        assert all(h.enabled for h in (ax, pl, ring))
    assert [h.label for h in hs] == ["move x", "move y", "move z", "move yz", "move zx", "move xy",
                                     "rotate x", "rotate y", "rotate z"]


@pytest.mark.parametrize("space", ["world", "local"])
@pytest.mark.parametrize("view", [(35.0, 25.0), (-120.0, 50.0), (160.0, -20.0)])
def test_pick_each_handle_at_its_projection(space, view):
    g = Gizmo(POS, Q_ROT, size_m=0.2, space=space)
    cam = cam_for(az=view[0], el=view[1])
    hs = handle_geometry(g)
    for h in hs:
        hit = pick(g, cam, *px_of(cam, pick_point(cam, hs, h)))
        assert hit is not None, h.label
        assert (hit.handle.kind, hit.handle.axis) == (h.kind, h.axis)
        assert np.isfinite(hit.point).all() and hit.depth > 0
    # far from every handle: nothing
    assert pick(g, cam, 5.0, 5.0) is None


def test_masked_handles_are_dimmed_and_not_picked():
    cam = cam_for()
    full = Gizmo(POS, [1, 0, 0, 0])
    hs_full = handle_geometry(full)
    where = {(h.kind, h.axis): px_of(cam, pick_point(cam, hs_full, h)) for h in hs_full}
    g = Gizmo(POS, [1, 0, 0, 0], pos_mask=[False, True, True], rot_mask=[False, False, True])
    enabled = {(h.kind, h.axis): h.enabled for h in handle_geometry(g)}
    assert enabled == {("axis", 0): False, ("axis", 1): True, ("axis", 2): True,
                       ("plane", 0): True, ("plane", 1): False, ("plane", 2): False,  # yz on; zx, xy use x
                       ("ring", 0): True, ("ring", 1): True, ("ring", 2): False}  # z only: rotation about z free
    for key, ok in enabled.items():
        hit = pick(g, cam, *where[key])
        if ok:
            assert (hit.handle.kind, hit.handle.axis) == key
        else:
            assert hit is None or (hit.handle.kind, hit.handle.axis) != key
            assert hit is None or hit.handle.enabled
    none = Gizmo(POS, [1, 0, 0, 0], pos_mask=[False] * 3, rot_mask=[False] * 3)
    assert not any(h.enabled for h in handle_geometry(none))
    assert all(pick(none, cam, *xy) is None for xy in where.values())
    h = find(handle_geometry(none), "axis", 0)
    assert h.display_color() != h.color  # dimmed
    with pytest.raises(ValueError, match="disabled"):
        begin_drag(none, cam, HitResult(h, 0.0, 1.0, h.points[1]), *where[("axis", 0)])


def test_pick_tie_goes_to_nearest():
    # Looking along -x, the z ring is seen edge-on, on top of the y arrow: the ring's near side wins.
    g = Gizmo(POS, [1, 0, 0, 0], size_m=0.2)
    cam = cam_for(az=0.0, el=0.0)
    hit = pick(g, cam, *px_of(cam, POS + [0, 0.1, 0]))
    assert (hit.handle.kind, hit.handle.axis) == ("ring", 2)
    assert hit.depth < cam.distance and hit.point[0] > POS[0]


# -- drags ---------------------------------------------------------------------------------------
def grab(g, cam, kind, axis, point=None):
    """begin_drag on handle (kind, axis) at the projection of ``point`` (default: an unambiguous one)."""
    hs = handle_geometry(g)
    h = find(hs, kind, axis)
    point = pick_point(cam, hs, h) if point is None else np.asarray(point, float)
    xy = px_of(cam, point)
    hit = pick(g, cam, *xy)
    if hit is None or hit.handle.kind != kind or hit.handle.axis != axis:  # points the test chose itself
        hit = HitResult(h, 0.0, 1.0, point)
    return begin_drag(g, cam, hit, *xy), point


@pytest.mark.parametrize("space", ["world", "local"])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_axis_drag_moves_exactly_along_the_axis(space, k):
    g = Gizmo(POS, Q_ROT, space=space)
    cam = cam_for()
    a = g.axes()[:, k]
    for step in (0.1, -0.1, 0.037):
        st, p = grab(g, cam, "axis", k)
        pos, quat = drag_to(st, cam, *px_of(cam, p + step * a))
        np.testing.assert_allclose(pos, POS + step * a, atol=1e-6)
        np.testing.assert_allclose(quat, g.quat)
        # nothing along the other two handle axes
        np.testing.assert_allclose(np.delete((pos - POS) @ g.axes(), k), 0, atol=1e-9)
    if space == "world":
        st, p = grab(g, cam, "axis", 0)
        pos, _ = drag_to(st, cam, *px_of(cam, p + [0.1, 0, 0]))
        assert abs(pos[0] - POS[0] - 0.1) < 1e-6 and abs(pos[1] - POS[1]) < 1e-9 and abs(pos[2] - POS[2]) < 1e-9


def test_local_space_uses_the_targets_axes():
    q = quat_from_axis_angle(np.array([0.0, 0.0, 1.0]), math.pi / 2)  # local x = world y
    cam = cam_for()
    for space, expect in (("world", [0.1, 0, 0]), ("local", [0, 0.1, 0])):
        g = Gizmo(POS, q, space=space)
        st, p = grab(g, cam, "axis", 0)
        pos, _ = drag_to(st, cam, *px_of(cam, p + np.array(expect)))
        np.testing.assert_allclose(pos - POS, expect, atol=1e-6)


@pytest.mark.parametrize("space", ["world", "local"])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_plane_drag_stays_in_plane_and_under_cursor(space, k):
    g = Gizmo(POS, Q_ROT, space=space)
    cam = cam_for(az=50.0, el=40.0)
    n = g.axes()[:, k]
    st, p = grab(g, cam, "plane", k)
    start_px = np.array(px_of(cam, p))
    for delta in ([23.0, -11.0], [-60.0, 35.0]):
        target_px = start_px + delta
        pos, quat = drag_to(st, cam, *target_px)
        assert abs(np.dot(pos - POS, n)) < 1e-9
        np.testing.assert_allclose(px_of(cam, p + (pos - POS)), target_px, atol=1e-6)  # grabbed point followed
        np.testing.assert_allclose(quat, g.quat)
    # a known displacement inside the plane is reproduced exactly
    u, v = g.axes()[:, (k + 1) % 3], g.axes()[:, (k + 2) % 3]
    pos, _ = drag_to(st, cam, *px_of(cam, p + 0.05 * u - 0.02 * v))
    np.testing.assert_allclose(pos, POS + 0.05 * u - 0.02 * v, atol=1e-6)


def ring_point(g, k, angle_deg):
    A, r = g.axes(), RING_RADIUS * g.size_m
    t = math.radians(angle_deg)
    return g.pos + r * (math.cos(t) * A[:, (k + 1) % 3] + math.sin(t) * A[:, (k + 2) % 3])


@pytest.mark.parametrize("space", ["world", "local"])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_ring_drag_rotates_by_the_swept_angle(space, k):
    g = Gizmo(POS, Q_ROT, space=space)
    cam = cam_for(az=50.0, el=40.0)
    axis = g.axes()[:, k]
    st, _ = grab(g, cam, "ring", k, ring_point(g, k, 0.0))
    pos, quat = drag_to(st, cam, *px_of(cam, ring_point(g, k, 30.0)))
    np.testing.assert_allclose(pos, POS)
    R_expect = quat_to_matrix(quat_from_axis_angle(axis, math.radians(30))) @ quat_to_matrix(g.quat)
    np.testing.assert_allclose(quat_to_matrix(quat), R_expect, atol=1e-9)
    angle, ax = rot_angle_axis(quat, g.quat)
    assert math.degrees(angle) == pytest.approx(30.0)
    np.testing.assert_allclose(ax, axis, atol=1e-9)
    if space == "local":  # same thing as turning about the target's own axis k
        R_local = quat_to_matrix(g.quat) @ quat_to_matrix(quat_from_axis_angle(E[k], math.radians(30)))
        np.testing.assert_allclose(quat_to_matrix(quat), R_local, atol=1e-9)
    # a drag further round accumulates past half a turn
    for deg in (120, 240, 300):
        _, quat = drag_to(st, cam, *px_of(cam, ring_point(g, k, deg)))
    assert math.degrees(st.angle) == pytest.approx(300.0)
    angle, ax = rot_angle_axis(quat, g.quat)
    assert math.degrees(angle) == pytest.approx(60.0) and np.allclose(ax, -axis, atol=1e-9)


def test_snapping():
    g = Gizmo(POS, Q_ROT)
    cam = cam_for()
    st, p = grab(g, cam, "axis", 1)
    pos, _ = drag_to(st, cam, *px_of(cam, p + [0, 0.0637, 0]), snap=True)
    np.testing.assert_allclose(pos - POS, [0, 0.06, 0], atol=1e-12)
    pos, _ = drag_to(st, cam, *px_of(cam, p + [0, 0.0637, 0]), snap=False)
    np.testing.assert_allclose(pos - POS, [0, 0.0637, 0], atol=1e-6)
    st, p = grab(g, cam, "plane", 2)
    pos, _ = drag_to(st, cam, *px_of(cam, p + [0.0234, -0.0471, 0]), snap=True)
    steps = (pos - POS) / SNAP_POS_M
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-9)
    np.testing.assert_allclose(pos - POS, [0.02, -0.05, 0], atol=1e-12)
    st, _ = grab(g, cam, "ring", 0, ring_point(g, 0, 10.0))
    for swept, expect in ((37.0, 30.0), (38.0, 45.0), (-8.0, -15.0), (5.0, 0.0)):
        _, quat = drag_to(st, cam, *px_of(cam, ring_point(g, 0, 10.0 + swept)), snap=True)
        angle, ax = rot_angle_axis(quat, g.quat)
        assert math.degrees(angle) == pytest.approx(abs(expect), abs=1e-7)
        if expect:
            np.testing.assert_allclose(ax, np.sign(expect) * E[0], atol=1e-9)


def test_degenerate_rays_do_not_move_or_nan():
    g = Gizmo(POS, [1, 0, 0, 0])
    cam = cam_for(az=0.0, el=0.0)  # looking along -x: x axis end-on, xy and zx planes / y and z rings edge-on
    cx, cy = cam.width / 2, cam.height / 2
    for kind, k in (("axis", 0), ("plane", 2), ("ring", 2), ("plane", 1), ("ring", 1)):
        h = find(handle_geometry(g), kind, k)
        st = begin_drag(g, cam, HitResult(h, 0.0, 1.0, h.center), cx, cy)  # the ray through the centre
        for xy in ((cx, cy), (cx + 1e-9, cy), (cx, cy - 1e-9)):
            pos, quat = drag_to(st, cam, *xy)
            assert np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))
            np.testing.assert_allclose(pos, POS)
            np.testing.assert_allclose(quat, [1, 0, 0, 0])
        # pixels elsewhere: still finite, and no jump from a degenerate grab
        for xy in ((cx + 40, cy), (cx, cy + 40), (cx + 300, cy - 200), (cx + 41, cy + 3)):
            pos, quat = drag_to(st, cam, *xy, snap=True)
            assert np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))
            assert np.linalg.norm(pos - POS) <= cam.far
    # straight down the z axis from above
    top = cam_for(az=0.0, el=90.0)
    st, _ = grab(g, top, "axis", 2, POS + [0, 0, 0.15])
    pos, quat = drag_to(st, top, *px_of(top, POS + [0, 0, 0.15]))
    assert np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))


def test_degenerate_grab_then_valid_drag_has_no_jump():
    g = Gizmo(POS, [1, 0, 0, 0])
    cam = cam_for(az=0.0, el=0.0)
    h = find(handle_geometry(g), "plane", 2)  # xy plane, edge-on
    st = begin_drag(g, cam, HitResult(h, 0.0, 1.0, h.center), cam.width / 2, cam.height / 2)
    assert st.grab is None
    cam2 = cam_for(az=0.0, el=30.0)  # the view changed mid-drag (e.g. orbit): the first valid ray becomes the grab
    pos, _ = drag_to(st, cam2, 700, 500)
    np.testing.assert_allclose(pos, POS)
    p = st.grab
    pos, _ = drag_to(st, cam2, *px_of(cam2, p + [0.03, 0.01, 0]))
    np.testing.assert_allclose(pos, POS + [0.03, 0.01, 0], atol=1e-6)


def test_gizmo_validation():
    with pytest.raises(ValueError, match="space"):
        Gizmo(POS, [1, 0, 0, 0], space="view")
    with pytest.raises(ValueError, match="pos_mask"):
        Gizmo(POS, [1, 0, 0, 0], pos_mask=[True, False])
    with pytest.raises(ValueError, match="size_m"):
        Gizmo(POS, [1, 0, 0, 0], size_m=0)


def test_layout_keeps_gizmo_discs_apart():
    rng = np.random.default_rng(0)
    for n in (2, 3, 5):
        for _ in range(20):
            centers = rng.normal(0.0, 30.0, (n, 2))
            if rng.random() < 0.3:
                centers[1] = centers[0]  # two targets at the same point
            fixed = int(rng.integers(n)) if rng.random() < 0.5 else None
            sizes, offsets = layout(centers, 80.0, 36.0, 8.0, fixed=fixed)
            assert np.all((sizes >= 36.0) & (sizes <= 80.0))
            p = centers + offsets
            for i in range(n):
                for j in range(i + 1, n):
                    assert np.linalg.norm(p[i] - p[j]) >= sizes[i] + sizes[j] + 8.0 - 1e-6
            if fixed is not None:
                np.testing.assert_array_equal(offsets[fixed], 0.0)
    # far apart: full size, not moved
    sizes, offsets = layout([[0, 0], [500, 0]], 80.0, 36.0)
    np.testing.assert_array_equal(sizes, [80.0, 80.0])
    np.testing.assert_array_equal(offsets, 0.0)
