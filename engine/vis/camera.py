"""A pinhole camera in plain numpy: pose, projection to pixels, and framing a box (no GL).

Conventions (OpenGL's, as pyrender uses them): the camera looks down its local -z axis with +y up;
``fov`` is the vertical field of view in degrees; ``res`` is (width, height) in pixels. Pixel
coordinates from :meth:`Camera.project` are (x right, y down) with the image's top-left corner at
(0, 0), so pixel ``(int(x), int(y))`` of a rendered image (row ``int(y)``) holds the point.
"""

from __future__ import annotations

import numpy as np

from .. import inputs
from ..errors import InvalidValueError


def _vec3(name: str, value) -> np.ndarray:
    arr = inputs.as_float_array(name, value)
    if arr.shape != (3,):
        raise InvalidValueError(f"{name}: expected 3 numbers (x, y, z), got shape {arr.shape}")
    return arr


def _res(value) -> tuple[int, int]:
    arr = np.asarray(value)
    if arr.shape != (2,) or not np.issubdtype(arr.dtype, np.number) or np.any(arr != np.round(arr)):
        raise InvalidValueError(f"res: expected 2 integers (width, height), got {value!r}")
    w, h = int(arr[0]), int(arr[1])
    if not (1 <= w <= 8192 and 1 <= h <= 8192):
        raise InvalidValueError(f"res: expected width and height in [1, 8192], got {(w, h)}")
    return w, h


def perspective_matrix(fov_deg: float, aspect: float, znear: float, zfar: float) -> np.ndarray:
    """OpenGL perspective projection (4, 4), the one pyrender's ``PerspectiveCamera`` uses.
    ``fov_deg``: vertical field of view; ``aspect``: width / height; clip distances in m."""
    f = 1.0 / np.tan(np.deg2rad(fov_deg) / 2)
    P = np.zeros((4, 4))
    P[0, 0], P[1, 1] = f / aspect, f
    P[2, 2], P[2, 3] = (zfar + znear) / (znear - zfar), 2 * zfar * znear / (znear - zfar)
    P[3, 2] = -1.0
    return P


def view_matrix_of(pose: np.ndarray) -> np.ndarray:
    """World-to-camera (4, 4) of a camera-to-world rigid transform ``pose`` (4, 4)."""
    V = np.eye(4)
    V[:3, :3] = pose[:3, :3].T
    V[:3, 3] = -pose[:3, :3].T @ pose[:3, 3]
    return V


def project_points(view: np.ndarray, fov_deg: float, res, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixels (..., 2) (x right, y down, origin top-left) and depth (...) along the view axis (m)
    of world points (..., 3), for a camera with world-to-camera ``view`` (4, 4), vertical
    ``fov_deg`` and ``res`` (width, height). Points behind the camera get NaN pixels."""
    cam = points @ view[:3, :3].T + view[:3, 3]
    depth = -cam[..., 2]
    w, h = res
    f = 0.5 * h / np.tan(np.deg2rad(fov_deg) / 2)  # focal length, px
    with np.errstate(divide="ignore", invalid="ignore"):
        px = np.stack([0.5 * w + f * cam[..., 0] / depth, 0.5 * h - f * cam[..., 1] / depth], axis=-1)
    px[depth <= 0] = np.nan
    return px, depth


class Camera:
    """Where the renderer looks from. Every attribute is validated on assignment.

    ``pos`` / ``lookat`` / ``up`` (3,) m in the rendered world (env cells included); ``fov`` vertical
    degrees in (0, 180); ``res`` (width, height) px; ``znear`` / ``zfar`` clip distances, m.
    """

    def __init__(self, pos=(2.5, 0.0, 1.5), lookat=(0.0, 0.0, 0.4), up=(0.0, 0.0, 1.0), fov=40.0,
                 res=(1280, 720), znear=0.02, zfar=100.0):
        self.res = res
        self.fov = fov
        self.znear, self.zfar = znear, zfar
        self.up = up
        self.look_at(pos, lookat)

    # -- validated attributes ---------------------------------------------------------------------
    @property
    def pos(self) -> np.ndarray:
        return self._pos.copy()

    @pos.setter
    def pos(self, value) -> None:
        self._pos = _vec3("pos", value)

    @property
    def lookat(self) -> np.ndarray:
        return self._lookat.copy()

    @lookat.setter
    def lookat(self, value) -> None:
        self._lookat = _vec3("lookat", value)

    @property
    def up(self) -> np.ndarray:
        return self._up.copy()

    @up.setter
    def up(self, value) -> None:
        up = _vec3("up", value)
        if np.linalg.norm(up) < 1e-9:
            raise InvalidValueError("up: expected a non-zero vector, got (0, 0, 0)")
        self._up = up / np.linalg.norm(up)

    @property
    def fov(self) -> float:
        return self._fov

    @fov.setter
    def fov(self, value) -> None:
        fov = inputs.as_positive("fov", value)
        if fov >= 180:
            raise InvalidValueError(f"fov: expected a vertical field of view in (0, 180) degrees, got {value!r}")
        self._fov = float(fov)

    @property
    def res(self) -> tuple[int, int]:
        return self._res

    @res.setter
    def res(self, value) -> None:
        self._res = _res(value)

    @property
    def znear(self) -> float:
        return self._znear

    @znear.setter
    def znear(self, value) -> None:
        self._znear = float(inputs.as_positive("znear", value))

    @property
    def zfar(self) -> float:
        return self._zfar

    @zfar.setter
    def zfar(self, value) -> None:
        zfar = float(inputs.as_positive("zfar", value))
        if zfar <= self._znear:
            raise InvalidValueError(f"zfar: expected more than znear ({self._znear}), got {value!r}")
        self._zfar = zfar

    @property
    def aspect(self) -> float:
        return self._res[0] / self._res[1]

    # -- pose ---------------------------------------------------------------------------------------
    def look_at(self, pos, target, up=None) -> Camera:
        """Place the camera at ``pos`` looking at ``target`` (``up`` optional). Returns self."""
        pos, target = _vec3("pos", pos), _vec3("target", target)
        if np.linalg.norm(target - pos) < 1e-9:
            raise InvalidValueError(f"target: must differ from pos, both are {pos.tolist()}")
        if up is not None:
            self.up = up
        self._pos, self._lookat = pos, target
        return self

    @property
    def pose(self) -> np.ndarray:
        """Camera-to-world transform (4, 4): columns are the camera's x (right), y (up), z (back) axes."""
        back = self._pos - self._lookat
        back /= np.linalg.norm(back)
        up = self._up
        if abs(np.dot(up, back)) > 0.999:  # looking along up: pick any perpendicular
            up = np.array([0.0, 1.0, 0.0]) if abs(back[1]) < 0.9 else np.array([1.0, 0.0, 0.0])
        right = np.cross(up, back)
        right /= np.linalg.norm(right)
        T = np.eye(4)
        T[:3, 0], T[:3, 1], T[:3, 2], T[:3, 3] = right, np.cross(back, right), back, self._pos
        return T

    @property
    def view_matrix(self) -> np.ndarray:
        """World-to-camera transform (4, 4)."""
        return view_matrix_of(self.pose)

    @property
    def projection_matrix(self) -> np.ndarray:
        """OpenGL perspective projection (4, 4), the one pyrender's PerspectiveCamera uses."""
        return perspective_matrix(self._fov, self.aspect, self._znear, self._zfar)

    def project(self, points_world, return_depth: bool = False):
        """Pixel coordinates ``(..., 2)`` (x right, y down) of world points ``(..., 3)``.

        Points behind the camera get NaN. With ``return_depth`` also their distance along the view
        axis ``(...)``, m. Pure numpy; the same projection the renderer draws with.
        """
        pts = inputs.as_float_array("points_world", points_world)
        if pts.ndim == 0 or pts.shape[-1] != 3:
            raise InvalidValueError(f"points_world: expected shape (..., 3), got {pts.shape}")
        px, depth = project_points(self.view_matrix, self._fov, self._res, pts)
        return (px, depth) if return_depth else px

    # -- framing ------------------------------------------------------------------------------------
    def frame_bounds(self, lo, hi, direction=(1.0, 0.55, 0.6), margin: float = 0.04) -> Camera:
        """Aim at the box ``[lo, hi]`` from ``direction`` (target -> camera) and move back until all
        its corners are in view with ``margin`` (fraction of the image) to spare. Returns self."""
        lo, hi = _vec3("lo", lo), _vec3("hi", hi)
        if np.any(hi < lo):
            raise InvalidValueError(f"hi: expected hi >= lo per axis, got lo={lo.tolist()}, hi={hi.tolist()}")
        d = _vec3("direction", direction)
        if np.linalg.norm(d) < 1e-9:
            raise InvalidValueError("direction: expected a non-zero vector")
        d = d / np.linalg.norm(d)
        center = 0.5 * (lo + hi)
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        radius = max(np.linalg.norm(hi - lo) / 2, 1e-3)
        w, h = self._res
        bound = np.array([w, h]) * margin

        def fits(dist: float) -> bool:
            self.look_at(center + d * dist, center)
            px, depth = self.project(corners, return_depth=True)
            return bool(np.all(depth > self._znear) and np.all(px >= bound) and np.all(px <= (w, h) - bound))

        near, far = radius * 0.5, radius * 50
        for _ in range(40):  # bisection on the distance
            mid = 0.5 * (near + far)
            near, far = (near, mid) if fits(mid) else (mid, far)
        self.look_at(center + d * far, center)
        self.zfar = max(100.0, 4 * (far + radius))
        return self

    def copy(self) -> Camera:
        cam = Camera.__new__(Camera)
        cam.__dict__.update({k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()})
        return cam

    def __repr__(self) -> str:
        return (f"Camera(pos={np.round(self._pos, 3).tolist()}, lookat={np.round(self._lookat, 3).tolist()}, "
                f"fov={self._fov:g}, res={self._res})")
