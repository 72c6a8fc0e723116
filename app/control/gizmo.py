"""Transform gizmo for a target frame: handle geometry, screen-space picking, and drags (plain numpy).

Conventions
-----------
* Positions in metres, quaternions (w, x, y, z), angles in radians unless named ``*_deg``;
  mouse positions in image pixels (x right, y down, origin top-left), as :mod:`app.control.camera_math`.
* ``space="world"``: handles use the world x/y/z axes; ``space="local"``: the target's own axes
  (the columns of its rotation matrix). Drags move/rotate along those same axes.
* Handles (sizes are fractions of ``size_m``): three arrows (``kind="axis"``, axis k, from 0.15
  to 1.0 along axis k); three plane squares (``kind="plane"``, indexed by their normal k: 0 = yz,
  1 = zx, 2 = xy; corners at 0.2..0.4 along the two in-plane axes); three rings (``kind="ring"``,
  rotation about axis k, radius 0.8, in the plane of axes k+1, k+2). Colours: x red, y green,
  z blue; a plane takes its normal's colour.
* ``enabled``: an arrow is off when its position axis is masked out, a plane when either of its
  axes is. Rings follow the engine's ``rot_mask``: all True (or two True, which the engine
  rejects but which also fixes the full orientation) = all rings on; exactly one True (axis a) =
  only the direction of local axis a matters, so the ring about axis a is off (that rotation is
  free) and the other two on; all False = all rings off. The rule goes by axis index in either
  space.
* Drags keep the grabbed point under the cursor: an arrow moves the target by the displacement
  of the closest point between the mouse ray and the axis line; a plane by the displacement of
  the ray-plane intersection; a ring rotates the start orientation about the ring's axis (world
  or local) by the angle swept by the ray-plane intersection around the centre (unwrapped, so
  more than a half turn accumulates). With ``snap``: displacements to 1 cm steps along each moved
  axis, angles to 15 degree steps. A ray nearly parallel to the axis/plane, or a grab point
  behind the camera or beyond its far plane, moves nothing: the last valid pose is kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from engine.transforms import quat_from_axis_angle, quat_mul, quat_normalize, quat_to_matrix

from .camera_math import OrbitCamera

AXIS_COLORS = ((0.90, 0.20, 0.20), (0.30, 0.80, 0.25), (0.25, 0.45, 0.95))
HOVER_COLOR = (1.0, 0.85, 0.10)
PLANE_NAMES = ("yz", "zx", "xy")  # plane handle k: normal k
ARROW_START, ARROW_END = 0.15, 1.0  # fractions of size_m
PLANE_LO, PLANE_HI = 0.2, 0.4
RING_RADIUS = 0.8
RING_SAMPLES = 64
SNAP_POS_M = 0.01
SNAP_ANGLE_DEG = 15.0
PARALLEL_EPS = 1e-3  # |sin| (ray vs axis) or |cos| (ray vs plane normal) below which a drag is degenerate
TIE_PX = 0.5  # pick: candidates this close in pixel distance are ranked by depth


def _mask(name: str, value) -> np.ndarray:
    arr = np.asarray(value)
    if arr.shape != (3,):
        raise ValueError(f"{name}: expected 3 booleans (x, y, z), got shape {arr.shape}")
    return arr.astype(bool)


@dataclass(eq=False)
class Gizmo:
    """The target frame the gizmo edits: ``pos`` (3,) m, ``quat`` (4,) wxyz, ``size_m`` (arrow
    length, m), ``space`` ("world" | "local"), ``pos_mask`` / ``rot_mask`` (3 bools, the IK masks)."""

    pos: np.ndarray
    quat: np.ndarray
    size_m: float = 0.2
    space: str = "world"
    pos_mask: np.ndarray = field(default_factory=lambda: np.ones(3, bool))
    rot_mask: np.ndarray = field(default_factory=lambda: np.ones(3, bool))

    def __post_init__(self) -> None:
        self.pos = np.array(self.pos, dtype=float).reshape(3)
        self.quat = quat_normalize(np.array(self.quat, dtype=float).reshape(4))
        if self.space not in ("world", "local"):
            raise ValueError(f"space: expected 'world' or 'local', got {self.space!r}")
        if not (self.size_m > 0):
            raise ValueError(f"size_m: expected > 0 m, got {self.size_m!r}")
        self.pos_mask = _mask("pos_mask", self.pos_mask)
        self.rot_mask = _mask("rot_mask", self.rot_mask)

    def axes(self) -> np.ndarray:
        """(3, 3): column k is handle axis k in world coordinates (identity in world space)."""
        return quat_to_matrix(self.quat) if self.space == "local" else np.eye(3)

    def ring_enabled(self) -> np.ndarray:
        """(3,) bool: which rings can be dragged under ``rot_mask`` (see the module docstring)."""
        n = int(self.rot_mask.sum())
        if n == 0:
            return np.zeros(3, bool)
        if n == 1:
            return ~self.rot_mask
        return np.ones(3, bool)


@dataclass(eq=False, frozen=True)
class Handle:
    """One handle in world space.

    ``points``: axis (2, 3) segment start/end; plane (4, 3) square corners in order; ring
    (RING_SAMPLES, 3) closed polyline. ``center``: gizmo origin (axis, ring) or square centre
    (plane). ``normal``: arrow direction / plane normal / ring axis (unit). ``radius``: ring
    radius, m (0 otherwise).
    """

    kind: str
    axis: int
    color: tuple
    enabled: bool
    points: np.ndarray
    center: np.ndarray
    normal: np.ndarray
    radius: float = 0.0

    @property
    def label(self) -> str:
        """Short name for tooltips: "move x", "move xy", "rotate z"."""
        if self.kind == "plane":
            return f"move {PLANE_NAMES[self.axis]}"
        return f"{'move' if self.kind == 'axis' else 'rotate'} {'xyz'[self.axis]}"

    def display_color(self, hovered: bool = False) -> tuple:
        """RGB to draw with: highlighted when hovered, greyed out when disabled."""
        if hovered and self.enabled:
            return HOVER_COLOR
        if not self.enabled:
            return tuple(0.35 * c + 0.65 * 0.5 for c in self.color)
        return self.color


@dataclass(eq=False)
class HitResult:
    """A picked handle: its pixel distance from the cursor, the depth (m) and world point (3,) hit."""

    handle: Handle
    distance_px: float
    depth: float
    point: np.ndarray


@dataclass(eq=False)
class DragState:
    """What a drag needs between mouse events. ``pos`` / ``quat`` hold the last valid result."""

    kind: str
    axis: int
    start_pos: np.ndarray
    start_quat: np.ndarray
    direction: np.ndarray  # arrow direction / plane normal / ring axis (world, unit)
    in_plane: np.ndarray  # (2, 3): the plane's two axes (plane drags), unused otherwise
    grab: np.ndarray | None  # grabbed world point (None until a non-degenerate ray)
    pos: np.ndarray
    quat: np.ndarray
    angle: float = 0.0  # ring: accumulated unsnapped angle, rad
    last_raw: float = 0.0  # ring: last raw angle relative to the grab, rad


def handle_geometry(gizmo: Gizmo) -> list[Handle]:
    """The nine handles of ``gizmo`` in world space: arrows 0-2, planes 3-5, rings 6-8."""
    A, s, c = gizmo.axes(), float(gizmo.size_m), gizmo.pos
    handles = []
    for k in range(3):
        a = A[:, k]
        seg = np.stack([c + a * (s * ARROW_START), c + a * (s * ARROW_END)])
        handles.append(Handle("axis", k, AXIS_COLORS[k], bool(gizmo.pos_mask[k]), seg, c.copy(), a.copy()))
    for k in range(3):
        i, j = (k + 1) % 3, (k + 2) % 3
        u, v = A[:, i] * s, A[:, j] * s
        corners = np.stack([c + lo * u + hi * v for lo, hi in
                            ((PLANE_LO, PLANE_LO), (PLANE_HI, PLANE_LO), (PLANE_HI, PLANE_HI), (PLANE_LO, PLANE_HI))])
        enabled = bool(gizmo.pos_mask[i] and gizmo.pos_mask[j])
        handles.append(Handle("plane", k, AXIS_COLORS[k], enabled, corners, corners.mean(axis=0), A[:, k].copy()))
    ring_on = gizmo.ring_enabled()
    theta = np.linspace(0.0, 2.0 * np.pi, RING_SAMPLES, endpoint=False)
    r = RING_RADIUS * s
    for k in range(3):
        u, v = A[:, (k + 1) % 3], A[:, (k + 2) % 3]
        pts = c + r * (np.cos(theta)[:, None] * u + np.sin(theta)[:, None] * v)
        handles.append(Handle("ring", k, AXIS_COLORS[k], bool(ring_on[k]), pts, c.copy(), A[:, k].copy(), r))
    return handles


def layout(centers_px, size_px: float, min_px: float, margin_px: float = 8.0, fixed: int | None = None,
           iterations: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """Screen sizes and displacements that keep several gizmos from overlapping.

    ``centers_px`` (N, 2): where each gizmo's target projects. A gizmo covers at most a disc of
    its arrow length around its centre, so discs apart by ``margin_px`` never overlap. Gizmos
    closer than that first shrink (down to ``min_px``), then the rest of the gap is made by
    pushing them apart on screen (the GUI draws a leader line back to each target); ``fixed``
    (the one being dragged) never moves. Returns (sizes (N,) px, offsets (N, 2) px).
    """
    c = np.asarray(centers_px, float).reshape(-1, 2)
    n = len(c)
    sizes = np.full(n, float(size_px))
    if n < 2:
        return sizes, np.zeros((n, 2))
    dist = np.linalg.norm(c[:, None] - c[None], axis=2) + np.diag(np.full(n, np.inf))
    sizes = np.clip((dist.min(axis=1) - margin_px) / 2.0, min_px, size_px)
    p = c.copy()
    for _ in range(iterations):
        moved = False
        for i in range(n):
            for j in range(i + 1, n):
                d = p[i] - p[j]
                gap = sizes[i] + sizes[j] + margin_px - float(np.linalg.norm(d))
                if gap <= 1e-6:
                    continue
                moved = True
                norm = float(np.linalg.norm(d))
                angle = 2.0 * math.pi * i / n  # coincident: apart along a direction of their own
                u = d / norm if norm > 1e-6 else np.array([math.cos(angle), math.sin(angle)])
                share_i = 0.0 if i == fixed else (1.0 if j == fixed else 0.5)
                p[i] += u * gap * share_i
                p[j] -= u * gap * (1.0 - share_i)
        if not moved:
            break
    return sizes, p - c


# -- ray geometry ------------------------------------------------------------------------------------
def _ray_plane(o, d, p0, n, far: float) -> np.ndarray | None:
    """Intersection of the ray o + t d (t > 0, within ``far``) with the plane (p0, n); None if degenerate."""
    den = float(np.dot(n, d))
    if abs(den) < PARALLEL_EPS:
        return None
    t = float(np.dot(n, p0 - o)) / den
    if not (0.0 < t <= far):
        return None
    return o + t * d


def _ray_line_param(o, d, p0, a, far: float) -> float | None:
    """Parameter s of the point p0 + s a (a unit) closest to the ray o + t d; None if degenerate."""
    b = float(np.dot(a, d))
    sin2 = 1.0 - b * b
    if sin2 < PARALLEL_EPS**2:
        return None
    w = p0 - o
    s = (b * float(np.dot(d, w)) - float(np.dot(a, w))) / sin2
    t = b * s + float(np.dot(d, w))
    if not (0.0 < t <= far) or np.linalg.norm(w + s * a) > far:
        return None
    return s


# -- picking -------------------------------------------------------------------------------------
def _polyline_hit(camera: OrbitCamera, cursor, pts, closed: bool):
    """(pixel distance, world point) of the cursor's nearest point on the projected polyline."""
    a3, b3 = (pts, np.roll(pts, -1, axis=0)) if closed else (pts[:-1], pts[1:])
    (a2, za), (b2, zb) = camera.project(a3), camera.project(b3)
    ok = (za > 0) & (zb > 0)
    if not ok.any():
        return None
    a3, b3, a2, b2, za, zb = a3[ok], b3[ok], a2[ok], b2[ok], za[ok], zb[ok]
    e = b2 - a2
    len2 = np.einsum("ij,ij->i", e, e)
    u = np.clip(np.einsum("ij,ij->i", cursor - a2, e) / np.maximum(len2, 1e-12), 0.0, 1.0)
    dist = np.linalg.norm(a2 + u[:, None] * e - cursor, axis=1)
    i = int(np.argmin(dist))
    s = u[i] * za[i] / ((1.0 - u[i]) * zb[i] + u[i] * za[i])  # perspective-correct 3D parameter
    return float(dist[i]), a3[i] + s * (b3[i] - a3[i])


def _quad_hit(camera: OrbitCamera, cursor, corners, center, normal, px, py):
    """(0, world point) if the cursor is inside the projected square, else None."""
    c2, z = camera.project(corners)
    if np.any(z <= 0):
        return None
    e = np.roll(c2, -1, axis=0) - c2
    rel = cursor - c2
    cross = e[:, 0] * rel[:, 1] - e[:, 1] * rel[:, 0]
    area2 = abs(float(np.sum(c2[:, 0] * np.roll(c2[:, 1], -1) - np.roll(c2[:, 0], -1) * c2[:, 1])))
    if area2 < 2.0 or not (np.all(cross >= 0) or np.all(cross <= 0)):
        return None
    o, d = camera.ray(px, py)
    hit = _ray_plane(o, d, center, normal, np.inf)
    return 0.0, (center.copy() if hit is None else hit)


def pick(gizmo: Gizmo, camera: OrbitCamera, px: float, py: float, tol_px: float = 8.0) -> HitResult | None:
    """The enabled handle under pixel (px, py), or None.

    Arrows and rings are hit within ``tol_px`` pixels of their projected segment / sampled
    ellipse, plane squares when the cursor is inside their projection. The nearest in pixels
    wins; candidates within TIE_PX of each other go to the one nearest the camera.
    """
    cursor = np.array([px, py], dtype=float)
    cam_pos, fwd = camera.position(), camera.forward()
    best = None
    for h in handle_geometry(gizmo):
        if not h.enabled:
            continue
        if h.kind == "plane":
            res = _quad_hit(camera, cursor, h.points, h.center, h.normal, px, py)
        else:
            res = _polyline_hit(camera, cursor, h.points, closed=h.kind == "ring")
        if res is None or res[0] > tol_px:
            continue
        cand = HitResult(h, res[0], float(np.dot(res[1] - cam_pos, fwd)), res[1])
        if (best is None or cand.distance_px < best.distance_px - TIE_PX
                or (abs(cand.distance_px - best.distance_px) <= TIE_PX and cand.depth < best.depth)):
            best = cand
    return best


# -- dragging ------------------------------------------------------------------------------------
def _grab_point(state: DragState, camera: OrbitCamera, px: float, py: float) -> np.ndarray | None:
    """The world point under the cursor on the dragged axis line / plane, or None if degenerate."""
    o, d = camera.ray(px, py)
    if state.kind == "axis":
        s = _ray_line_param(o, d, state.start_pos, state.direction, camera.far)
        return None if s is None else state.start_pos + s * state.direction
    hit = _ray_plane(o, d, state.start_pos, state.direction, camera.far)
    if hit is not None and state.kind == "ring" and np.linalg.norm(hit - state.start_pos) < 1e-9:
        return None  # at the centre: no angle
    return hit


def begin_drag(gizmo: Gizmo, camera: OrbitCamera, hit: HitResult, px: float, py: float) -> DragState:
    """Start dragging ``hit``'s handle with the cursor at (px, py) (the grabbed point)."""
    h = hit.handle
    if not h.enabled:
        raise ValueError(f"hit: handle {h.label!r} is disabled by the masks and cannot be dragged")
    A = gizmo.axes()
    state = DragState(
        kind=h.kind, axis=h.axis, start_pos=gizmo.pos.copy(), start_quat=gizmo.quat.copy(),
        direction=A[:, h.axis].copy(), in_plane=np.stack([A[:, (h.axis + 1) % 3], A[:, (h.axis + 2) % 3]]),
        grab=None, pos=gizmo.pos.copy(), quat=gizmo.quat.copy())
    state.grab = _grab_point(state, camera, px, py)
    return state


def _snap(x: float, step: float) -> float:
    return round(x / step) * step


def drag_to(state: DragState, camera: OrbitCamera, px: float, py: float, snap: bool = False):
    """New target ``(pos (3,), quat (4,))`` with the cursor at (px, py); updates ``state``.

    A degenerate ray returns the last valid pose; if the grab itself was degenerate, the first
    valid point becomes the grab (so nothing jumps).
    """
    g = _grab_point(state, camera, px, py)
    if g is None:
        return state.pos.copy(), state.quat.copy()
    if state.grab is None:
        state.grab = g
        return state.pos.copy(), state.quat.copy()
    disp = g - state.grab
    if state.kind == "axis":
        s = float(np.dot(disp, state.direction))
        if snap:
            s = _snap(s, SNAP_POS_M)
        state.pos = state.start_pos + s * state.direction
    elif state.kind == "plane":
        du, dv = (float(np.dot(disp, e)) for e in state.in_plane)
        if snap:
            du, dv = _snap(du, SNAP_POS_M), _snap(dv, SNAP_POS_M)
        state.pos = state.start_pos + du * state.in_plane[0] + dv * state.in_plane[1]
    else:
        n = state.direction
        r0, r = state.grab - state.start_pos, g - state.start_pos
        raw = math.atan2(float(np.dot(n, np.cross(r0, r))), float(np.dot(r0, r)))
        state.angle += (raw - state.last_raw + math.pi) % (2.0 * math.pi) - math.pi
        state.last_raw = raw
        angle = _snap(state.angle, math.radians(SNAP_ANGLE_DEG)) if snap else state.angle
        state.quat = quat_normalize(quat_mul(quat_from_axis_angle(n, angle), state.start_quat))
    return state.pos.copy(), state.quat.copy()
