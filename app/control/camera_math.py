"""Orbit camera for the app's 3D view, in plain numpy (no GL, no GUI).

Conventions
-----------
* World: z is up. Lengths in metres, angles in degrees (``*_deg``), image sizes and mouse
  positions in pixels.
* Camera frame (OpenGL's, what pyrender's camera node wants): the camera looks down its local
  -z axis, +y is up in the image, +x is right. :meth:`OrbitCamera.pose` is the camera-to-world
  matrix whose columns are (right, up, back, position).
* Orbit parameters: the camera sits at ``target + distance * (cos(el) cos(az), cos(el) sin(az),
  sin(el))`` and looks at ``target``. ``azimuth_deg = 0`` puts it on the target's +x side,
  ``elevation_deg = 90`` straight above. The image's right vector is always horizontal,
  ``(-sin(az), cos(az), 0)``, so the basis is well defined even at +-90 degrees elevation.
* Pixels: x right, y down, origin at the image's top-left corner; the image centre is
  ``(width / 2, height / 2)``. ``fov_deg`` is the vertical field of view; pixels are square.
  NDC x = 2 px / width - 1, NDC y = 1 - 2 py / height.
* Depth: distance along the view axis (camera -z), positive in front of the camera.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from engine.vis.camera import perspective_matrix, project_points, view_matrix_of

ELEVATION_LIMIT_DEG = 89.0  # orbit() keeps the elevation within +-this

PRESETS = {  # name -> (azimuth_deg, elevation_deg)
    "front": (0.0, 0.0),  # camera on +x, looking along -x (y to the right)
    "side": (-90.0, 0.0),  # camera on -y, looking along +y (x to the right)
    "top": (-90.0, 90.0),  # camera above, looking along -z (x right, y up in the image)
    "iso": (45.0, math.degrees(math.atan(1.0 / math.sqrt(2.0)))),  # looking along -(1, 1, 1)
}


def _wrap_deg(angle: float) -> float:
    """Angle in degrees wrapped to [-180, 180)."""
    return float((angle + 180.0) % 360.0 - 180.0)


@dataclass(eq=False)
class OrbitCamera:
    """A camera orbiting ``target`` (3,) m at ``distance`` m, ``azimuth_deg`` / ``elevation_deg``.

    ``fov_deg``: vertical field of view (degrees); ``width`` / ``height``: image size (pixels);
    ``near`` / ``far``: clip distances (m). Interaction gains: ``orbit_deg_per_px`` (degrees per
    pixel of drag), ``zoom_factor`` (distance ratio per wheel step), distance kept within
    [``min_distance``, ``max_distance``] (m).
    """

    target: np.ndarray
    distance: float
    azimuth_deg: float
    elevation_deg: float
    fov_deg: float = 45.0
    width: int = 1280
    height: int = 720
    near: float = 0.01
    far: float = 100.0
    orbit_deg_per_px: float = field(default=0.3, repr=False)
    zoom_factor: float = field(default=1.1, repr=False)
    min_distance: float = field(default=0.02, repr=False)
    max_distance: float = field(default=80.0, repr=False)
    _view_memo: tuple | None = field(default=None, init=False, repr=False)  # (orbit parameters, view matrix)

    def __post_init__(self) -> None:
        self.target = np.array(self.target, dtype=float).reshape(3)
        if not np.all(np.isfinite(self.target)):
            raise ValueError(f"target: expected 3 finite numbers, got {self.target.tolist()}")
        if not (self.distance > 0):
            raise ValueError(f"distance: expected > 0 m, got {self.distance!r}")
        if not (0 < self.fov_deg < 180):
            raise ValueError(f"fov_deg: expected a vertical field of view in (0, 180) degrees, got {self.fov_deg!r}")
        if not (0 < self.near < self.far):
            raise ValueError(f"near, far: expected 0 < near < far, got near={self.near!r}, far={self.far!r}")
        self.distance = float(self.distance)
        self.azimuth_deg = float(self.azimuth_deg)
        self.elevation_deg = float(self.elevation_deg)
        self.resize(self.width, self.height)

    # -- geometry --------------------------------------------------------------------------------
    @property
    def aspect(self) -> float:
        """Width / height."""
        return self.width / self.height

    def _basis(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """World-space unit (right, up, back) vectors of the camera (up = back x right, written out:
        the GUI asks for them many times a frame, and ``np.cross`` costs ~50 us a call)."""
        az, el = math.radians(self.azimuth_deg), math.radians(self.elevation_deg)
        ca, sa, ce, se = math.cos(az), math.sin(az), math.cos(el), math.sin(el)
        bx, by, bz = ce * ca, ce * sa, se
        rx, ry = -sa, ca
        return (np.array([rx, ry, 0.0]), np.array([-bz * ry, bz * rx, bx * ry - by * rx]),
                np.array([bx, by, bz]))

    def position(self) -> np.ndarray:
        """Camera position (3,), m."""
        return self.target + self.distance * self._basis()[2]

    def forward(self) -> np.ndarray:
        """Unit viewing direction (3,) (camera -z in world)."""
        return -self._basis()[2]

    def pose(self) -> np.ndarray:
        """Camera-to-world (4, 4), OpenGL convention: columns right, up, back (= -view dir), position."""
        right, up, back = self._basis()
        T = np.eye(4)
        T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = right, up, back, self.position()
        return T

    def view_matrix(self) -> np.ndarray:
        """World-to-camera (4, 4): the inverse of :meth:`pose` (a copy; the last one is kept for
        the same orbit parameters: the GUI projects points many times a frame)."""
        key = (self.azimuth_deg, self.elevation_deg, self.distance, *self.target.tolist())
        if self._view_memo is None or self._view_memo[0] != key:
            self._view_memo = (key, view_matrix_of(self.pose()))
        return self._view_memo[1].copy()

    def projection_matrix(self) -> np.ndarray:
        """OpenGL perspective projection (4, 4), as pyrender's ``PerspectiveCamera(yfov, aspect, near, far)``."""
        return perspective_matrix(self.fov_deg, self.aspect, self.near, self.far)

    def focal_px(self) -> float:
        """Focal length in pixels: a length L (m) at depth D (m), parallel to the image, spans L * f / D px."""
        return 0.5 * self.height / math.tan(math.radians(self.fov_deg) / 2.0)

    def meters_per_pixel(self, depth: float) -> float:
        """Size (m) of one pixel at ``depth`` (m) in front of the camera."""
        return float(depth) / self.focal_px()

    def project(self, points) -> tuple[np.ndarray, np.ndarray]:
        """Pixels ``(..., 2)`` and depth ``(...)`` (m) of world points ``(..., 3)``.

        Points behind the camera (depth <= 0) are flagged: their pixels are NaN and their depth
        is <= 0. Points beyond the near/far planes are projected normally.
        """
        pts = np.asarray(points, dtype=float)
        if pts.shape[-1:] != (3,):
            raise ValueError(f"points: expected shape (..., 3), got {pts.shape}")
        return project_points(self.view_matrix(), self.fov_deg, (self.width, self.height), pts)

    def ray(self, px: float, py: float) -> tuple[np.ndarray, np.ndarray]:
        """Ray through pixel (px, py): origin (3,) (the camera position, m) and unit direction (3,).

        Exact inverse of :meth:`project`: every point ``origin + t * direction`` with t > 0
        projects to (px, py).
        """
        right, up, back = self._basis()
        f = self.focal_px()
        d = right * ((px - 0.5 * self.width) / f) + up * ((0.5 * self.height - py) / f) - back
        return self.position(), d / np.linalg.norm(d)

    # -- interaction -------------------------------------------------------------------------------
    def orbit(self, dx_px: float, dy_px: float) -> None:
        """Left-drag by (dx, dy) pixels: the scene turns with the mouse.

        Azimuth decreases by ``dx * orbit_deg_per_px`` (wrapped to [-180, 180)); elevation
        increases by ``dy * orbit_deg_per_px`` (dragging down shows more of the top), clamped
        to +-89 degrees.
        """
        self.azimuth_deg = _wrap_deg(self.azimuth_deg - dx_px * self.orbit_deg_per_px)
        el = self.elevation_deg + dy_px * self.orbit_deg_per_px
        self.elevation_deg = float(np.clip(el, -ELEVATION_LIMIT_DEG, ELEVATION_LIMIT_DEG))

    def pan(self, dx_px: float, dy_px: float) -> None:
        """Middle/shift-drag by (dx, dy) pixels: move the target (and camera) in the view plane.

        Exact: a point at the target's depth that was under the cursor is under the cursor
        after the drag (every point at that depth moves by exactly (dx, dy) pixels).
        """
        right, up, _ = self._basis()
        s = self.meters_per_pixel(self.distance)
        self.target = self.target - right * (dx_px * s) + up * (dy_px * s)

    def zoom(self, wheel_steps: float) -> None:
        """Mouse wheel: positive steps zoom in (distance / zoom_factor per step), clamped to
        [min_distance, max_distance] m."""
        d = self.distance * self.zoom_factor ** (-float(wheel_steps))
        self.distance = float(np.clip(d, self.min_distance, self.max_distance))

    def preset(self, name: str) -> None:
        """Standard views (target and distance kept): "front" (looking along -x), "side"
        (along +y), "top" (along -z, x right), "iso" (along -(1, 1, 1)). "top" sets exactly 90 degrees
        elevation (well defined here); the next :meth:`orbit` brings it within +-89."""
        if name not in PRESETS:
            raise ValueError(f"name: expected one of {sorted(PRESETS)}, got {name!r}")
        self.azimuth_deg, self.elevation_deg = PRESETS[name]

    def frame_points(self, points, margin: float = 1.1) -> None:
        """Aim at the bounding sphere of ``points`` (N, 3) m and set the distance so that the
        sphere, enlarged by ``margin``, fits the view both ways (direction kept). The far plane
        grows if it would clip the sphere. Used for "frame all" and "follow env"."""
        pts = np.asarray(points, dtype=float).reshape(-1, 3)
        pts = pts[np.all(np.isfinite(pts), axis=1)]
        if len(pts) == 0:
            raise ValueError("points: expected at least one finite (x, y, z) point")
        center = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
        radius = max(float(np.linalg.norm(pts - center, axis=1).max()), 1e-3) * float(margin)
        half_v = math.radians(self.fov_deg) / 2.0
        half_h = math.atan(math.tan(half_v) * self.aspect)
        dist = radius / math.sin(min(half_v, half_h))
        self.target = center
        self.distance = float(np.clip(dist, max(self.min_distance, self.near + radius), self.max_distance))
        self.far = max(self.far, 2.0 * (self.distance + radius))

    def frame_box(self, lo, hi, margin_px: float = 24.0, iterations: int = 8) -> None:
        """Aim at the axis-aligned box ``lo``..``hi`` (3,) m, direction kept, at the distance where
        its 8 corners just fit the image with ``margin_px`` to spare on every side, and centred:
        a tighter fit than :meth:`frame_points`' bounding sphere (a wide, flat grid of envs fills
        the view). The far plane grows if it would clip the box."""
        lo, hi = np.asarray(lo, float), np.asarray(hi, float)
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        radius = 0.5 * float(np.linalg.norm(hi - lo))
        self.target = 0.5 * (lo + hi)
        m = min(float(margin_px), 0.25 * min(self.width, self.height))

        def fits(distance: float) -> bool:
            self.distance = distance
            pix, depth = self.project(corners)
            return bool(np.all(depth > self.near) and np.all(pix >= m)
                        and np.all(pix <= [self.width - m, self.height - m]))

        def fit_distance() -> bool:
            near, far = max(self.min_distance, self.near + 1e-3), self.max_distance
            if not fits(far):
                self.distance = far
                return False
            for _ in range(50):  # bisection: fits() turns true once and stays so as the camera backs off
                mid = 0.5 * (near + far)
                near, far = (near, mid) if fits(mid) else (mid, far)
            self.distance = far
            return True

        for _ in range(iterations):
            if not fit_distance():
                break
            pix, _ = self.project(corners)
            dx, dy = 0.5 * (pix.min(axis=0) + pix.max(axis=0)) - [0.5 * self.width, 0.5 * self.height]
            if abs(dx) < 0.5 and abs(dy) < 0.5:
                break
            self.pan(-dx, -dy)  # move the box to the image centre, then fit again
        else:
            fit_distance()
        self.far = max(self.far, 2.0 * (self.distance + radius))

    def resize(self, width: int, height: int) -> None:
        """Image size in pixels (the field of view stays vertical)."""
        w, h = int(width), int(height)
        if w != width or h != height or w < 1 or h < 1:
            raise ValueError(f"width, height: expected positive integers (pixels), got {(width, height)!r}")
        self.width, self.height = w, h

    def copy(self) -> OrbitCamera:
        """An independent copy."""
        return replace(self, target=self.target.copy())
