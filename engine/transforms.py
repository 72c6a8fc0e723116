"""Plain numpy rotation helpers. Quaternions are (w, x, y, z), unit norm.

Every function accepts a single item or a batch on the leading axes:
quaternions ``(..., 4)``, vectors ``(..., 3)``, rotation matrices ``(..., 3, 3)``.
"""

from __future__ import annotations

import numpy as np

IDENTITY_QUAT = np.array([1.0, 0.0, 0.0, 0.0])


def quat_normalize(q: np.ndarray) -> np.ndarray:
    """Unit quaternion(s) ``(..., 4)`` with a non-negative w (canonical sign)."""
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hamilton product ``a * b`` of quaternions ``(..., 4)``."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def quat_conj(q: np.ndarray) -> np.ndarray:
    """Conjugate (the inverse of a unit quaternion), ``(..., 4)``."""
    q = np.asarray(q, dtype=float)
    return q * np.array([1.0, -1.0, -1.0, -1.0])


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    """Rotation matrix ``(..., 3, 3)`` of quaternion(s) ``(..., 4)``."""
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def quat_from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternion ``(4,)`` of one rotation matrix ``(3, 3)`` (Shepperd's method)."""
    m = np.asarray(m, dtype=float)
    tr = np.trace(m)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    return quat_normalize(np.array(q))


def quat_rotate(q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate vector(s) ``(..., 3)`` by quaternion(s) ``(..., 4)``."""
    return np.einsum("...ij,...j->...i", quat_to_matrix(q), np.asarray(v, dtype=float))


def quat_rotate_unit(quat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Rotate ``v (..., 3)`` by *unit* quaternions ``quat (..., 4)`` (w, x, y, z), by two cross
    products (no matrix: what the collision model's hot paths use; :func:`quat_rotate` takes
    any non-zero quaternion)."""
    if np.ndim(quat) == 1 and np.ndim(v) == 1 and _float64(quat) and _float64(v):
        return _rotate_one(quat, v)
    w, u = quat[..., :1], quat[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def _float64(a) -> bool:
    return getattr(a, "dtype", None) == np.float64


def _rotate_one(quat: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:func:`quat_rotate_unit` of one float64 quaternion (4,) and vector (3,) in Python floats: the
    same operations in the same order as ``np.cross`` (a product, a product, a difference), so the
    same bits, ~20x sooner (numpy's fixed cost per call is most of a 3-vector cross product; the
    numpy GJK calls this twice per support point)."""
    w, x, y, z = quat.tolist()
    a, b, c = v.tolist()
    t0, t1, t2 = 2.0 * (y * c - z * b), 2.0 * (z * a - x * c), 2.0 * (x * b - y * a)
    return np.array([a + w * t0 + (y * t2 - z * t1), b + w * t1 + (z * t0 - x * t2), c + w * t2 + (x * t1 - y * t0)])


def quat_from_axis_angle(axis: np.ndarray, angle: np.ndarray) -> np.ndarray:
    """Quaternion ``(..., 4)`` rotating by ``angle`` (rad) about unit ``axis`` ``(..., 3)``."""
    axis = np.asarray(axis, dtype=float)
    half = 0.5 * np.asarray(angle, dtype=float)[..., None]
    return np.concatenate([np.cos(half), np.sin(half) * axis], axis=-1)


def quat_to_rotvec(q: np.ndarray) -> np.ndarray:
    """Rotation vector ``(..., 3)`` (axis * angle, angle in [0, pi]) of quaternion(s) ``(..., 4)``."""
    q = quat_normalize(q)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    scale = np.where(s > 1e-12, angle / np.maximum(s, 1e-300), 2.0)
    return v * scale


def pose_to_matrix(pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
    """Homogeneous transform ``(..., 4, 4)`` from position ``(..., 3)`` and quaternion ``(..., 4)``."""
    pos = np.asarray(pos, dtype=float)
    r = quat_to_matrix(quat)
    t = np.zeros(r.shape[:-2] + (4, 4))
    t[..., :3, :3] = r
    t[..., :3, 3] = pos
    t[..., 3, 3] = 1.0
    return t


def quat_from_euler(euler_deg) -> np.ndarray:
    """Quaternion ``(..., 4)`` of Euler angles ``(..., 3)`` in degrees, in Genesis' (scipy's)
    extrinsic x-y-z convention: rotate about the fixed x axis, then y, then z (R = Rz Ry Rx)."""
    angles = np.deg2rad(np.asarray(euler_deg, dtype=float))
    eye = np.eye(3)
    qx, qy, qz = (quat_from_axis_angle(np.broadcast_to(eye[i], angles.shape), angles[..., i]) for i in range(3))
    return quat_normalize(quat_mul(qz, quat_mul(qy, qx)))


def quat_between(a, b) -> np.ndarray:
    """The shortest-arc unit quaternion ``(4,)`` turning unit vector ``a`` (3,) onto unit vector ``b`` (3,)."""
    a = np.asarray(a, dtype=float) / np.linalg.norm(a)
    b = np.asarray(b, dtype=float) / np.linalg.norm(b)
    axis = np.cross(a, b)
    c = float(np.dot(a, b))
    if c < -1 + 1e-12:  # opposite: any perpendicular axis
        axis = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
        return quat_from_axis_angle(axis / np.linalg.norm(axis), np.pi)
    return quat_normalize(np.array([1.0 + c, *axis]))
