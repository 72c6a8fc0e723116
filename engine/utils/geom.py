"""Rotation and transform helpers under Genesis' names (``genesis.utils.geom``), so a Genesis
script's ``import genesis.utils.geom as gu`` becomes ``import engine.utils.geom as gu``.

Conventions, as in Genesis: quaternions are (w, x, y, z); angles are radians unless
``degrees=True``; every function takes a batch of any leading shape (``(..., 4)`` quaternions,
``(..., 3)`` vectors, ``(..., 3, 3)`` rotation matrices, ``(..., 4, 4)`` transforms) and
broadcasts. Euler angles ``xyz`` = (roll about x, pitch about y, yaw about z):

* ``rpy=False`` (Genesis' default for ``xyz_to_quat`` / ``quat_to_xyz``): intrinsic x-y-z,
  R = Rx(roll) Ry(pitch) Rz(yaw) (scipy's ``"XYZ"``);
* ``rpy=True``, and ``euler_to_quat`` / ``euler_to_R`` (degrees): extrinsic x-y-z,
  R = Rz(yaw) Ry(pitch) Rx(roll) (scipy's ``"xyz"``), the convention of a morph's ``euler``.

Arrays come back as numpy (float64, or the input's float dtype). A torch tensor is accepted
wherever an array is: it is read as numpy, and the answer comes back as a tensor of the
first tensor argument's dtype and device.
"""

from __future__ import annotations

import functools

import numpy as np

from ..transforms import quat_mul, quat_to_matrix

__all__ = ["R_to_T", "R_to_quat", "R_to_rotvec", "R_to_xyz", "T_to_quat", "T_to_trans", "T_to_trans_quat",
           "axis_angle_to_R", "axis_angle_to_quat", "euler_to_R", "euler_to_quat", "identity_quat", "inv_T",
           "inv_quat", "inv_transform_by_T", "inv_transform_by_quat", "inv_transform_by_trans_quat", "normalize",
           "quat_to_R", "quat_to_T", "quat_to_rotvec", "quat_to_xyz", "rotvec_to_R", "rotvec_to_quat",
           "trans_R_to_T", "trans_quat_to_T", "trans_to_T", "transform_by_R", "transform_by_T",
           "transform_by_quat", "transform_by_trans_R", "transform_by_trans_quat", "transform_quat_by_quat",
           "xyz_to_quat"]


def _is_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _numpy_io(func):
    """Torch tensors in -> numpy for ``func`` -> tensors out (the first tensor argument's dtype and
    device); numpy stays numpy."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        like = next((a for a in (*args, *kwargs.values()) if _is_tensor(a)), None)
        if like is None:
            return func(*args, **kwargs)
        args = tuple(a.detach().cpu().numpy() if _is_tensor(a) else a for a in args)
        kwargs = {k: v.detach().cpu().numpy() if _is_tensor(v) else v for k, v in kwargs.items()}
        out = func(*args, **kwargs)
        import torch  # a tensor came in: torch is there

        def back(a):
            return torch.as_tensor(np.ascontiguousarray(a), device=like.device).to(like.dtype)

        return tuple(back(o) for o in out) if isinstance(out, tuple) else back(out)

    return wrapper


def _float(x) -> np.ndarray:
    arr = np.asarray(x)
    return arr if np.issubdtype(arr.dtype, np.floating) else arr.astype(float)


def _check(name: str, arr: np.ndarray, last: tuple[int, ...]) -> np.ndarray:
    if arr.ndim < len(last) or arr.shape[arr.ndim - len(last):] != last:
        want = "(..., " + ", ".join(map(str, last)) + ")"
        raise ValueError(f"{name}: expected shape {want}, got {arr.shape}")
    return arr


# -- quaternions ---------------------------------------------------------------------------------
@_numpy_io
def identity_quat() -> np.ndarray:
    """(1, 0, 0, 0)."""
    return np.array([1.0, 0.0, 0.0, 0.0])


@_numpy_io
def normalize(x, eps: float = 1e-12) -> np.ndarray:
    """``x`` divided by its norm along the last axis (at least ``eps``)."""
    x = _float(x)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), eps)


@_numpy_io
def inv_quat(quat) -> np.ndarray:
    """The conjugate (the inverse of a unit quaternion) ``(..., 4)``."""
    q = _check("quat", _float(quat), (4,)).copy()
    q[..., 1:] *= -1
    return q


@_numpy_io
def transform_quat_by_quat(v, u) -> np.ndarray:
    """``v`` turned by ``u``: the product u * v (R_u @ R_v), ``(..., 4)``."""
    return quat_mul(_check("u", _float(u), (4,)), _check("v", _float(v), (4,))).astype(np.result_type(_float(u),
                                                                                                        _float(v)))


@_numpy_io
def transform_by_quat(v, quat) -> np.ndarray:
    """Vectors ``v`` ``(..., 3)`` rotated by ``quat`` ``(..., 4)``."""
    v = _check("v", _float(v), (3,))
    return np.einsum("...ij,...j->...i", quat_to_R(quat), v).astype(v.dtype)


@_numpy_io
def inv_transform_by_quat(pos, quat) -> np.ndarray:
    """``pos`` rotated by the inverse of ``quat``."""
    return transform_by_quat(pos, inv_quat(quat))


@_numpy_io
def transform_by_trans_quat(pos, trans, quat) -> np.ndarray:
    """Points ``pos`` ``(..., 3)`` moved by the pose (``trans`` (..., 3), ``quat`` (..., 4)): R pos + trans."""
    return transform_by_quat(pos, quat) + _check("trans", _float(trans), (3,))


@_numpy_io
def inv_transform_by_trans_quat(pos, trans, quat) -> np.ndarray:
    """World points ``pos`` expressed in the frame (``trans``, ``quat``): R^T (pos - trans)."""
    return inv_transform_by_quat(_float(pos) - _check("trans", _float(trans), (3,)), quat)


@_numpy_io
def quat_to_R(quat) -> np.ndarray:
    """Rotation matrices ``(..., 3, 3)`` of quaternions ``(..., 4)`` (normalised first)."""
    q = _check("quat", _float(quat), (4,))
    return quat_to_matrix(q).astype(q.dtype)


@_numpy_io
def R_to_quat(R) -> np.ndarray:
    """Unit quaternions ``(..., 4)`` of rotation matrices ``(..., 3, 3)``, w >= 0."""
    m = _check("R", _float(R), (3, 3))
    tr = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
    # Shepperd's method: per matrix, the branch of its largest quaternion component
    k = np.argmax(np.stack([tr, m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]], -1), axis=-1)
    d = (m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] - m[..., 0, 1])
    s = (m[..., 2, 1] + m[..., 1, 2], m[..., 0, 2] + m[..., 2, 0], m[..., 1, 0] + m[..., 0, 1])
    big = np.sqrt(np.maximum(1.0 + np.stack([tr, 2 * m[..., 0, 0] - tr, 2 * m[..., 1, 1] - tr,
                                             2 * m[..., 2, 2] - tr], -1), 1e-30))  # 2 * |component|
    q = np.empty(m.shape[:-2] + (4,), m.dtype)
    for branch, terms in enumerate(((None, d[0], d[1], d[2]), (d[0], None, s[2], s[1]),
                                    (d[1], s[2], None, s[0]), (d[2], s[1], s[0], None))):
        pick = k == branch
        if not np.any(pick):
            continue
        r = big[..., branch][pick]
        q[pick] = np.stack([0.5 * r if t is None else t[pick] / (2 * r) for t in terms], -1)
    q /= np.linalg.norm(q, axis=-1, keepdims=True)
    return np.where(q[..., :1] < 0, -q, q)


# -- Euler angles -----------------------------------------------------------------------------------
def _angles(xyz, degrees: bool) -> np.ndarray:
    a = _check("xyz", _float(xyz), (3,))
    return np.deg2rad(a) if degrees else a


@_numpy_io
def xyz_to_quat(xyz, rpy: bool = False, degrees: bool = False) -> np.ndarray:
    """Quaternions ``(..., 4)`` of Euler angles ``(..., 3)`` (roll, pitch, yaw); ``rpy=False``:
    intrinsic x-y-z, ``rpy=True``: extrinsic x-y-z (see the module's docstring)."""
    a = _angles(xyz, degrees)
    half = 0.5 * a
    c, s = np.cos(half), np.sin(half)
    qx = np.stack([c[..., 0], s[..., 0], 0 * c[..., 0], 0 * c[..., 0]], -1)
    qy = np.stack([c[..., 1], 0 * c[..., 1], s[..., 1], 0 * c[..., 1]], -1)
    qz = np.stack([c[..., 2], 0 * c[..., 2], 0 * c[..., 2], s[..., 2]], -1)
    q = quat_mul(qz, quat_mul(qy, qx)) if rpy else quat_mul(qx, quat_mul(qy, qz))
    return q.astype(a.dtype)


@_numpy_io
def R_to_xyz(R, rpy: bool = False, degrees: bool = False) -> np.ndarray:
    """Euler angles ``(..., 3)`` of rotation matrices, the inverse of :func:`xyz_to_quat`'s
    convention; pitch in [-pi/2, pi/2], roll and yaw in [-pi, pi] (roll 0 at gimbal lock)."""
    m = _check("R", _float(R), (3, 3))
    if rpy:  # R = Rz Ry Rx
        sinp, sr_cp, cr_cp, sy_cp, cy_cp = -m[..., 2, 0], m[..., 2, 1], m[..., 2, 2], m[..., 1, 0], m[..., 0, 0]
    else:  # R = Rx Ry Rz
        sinp, sr_cp, cr_cp, sy_cp, cy_cp = m[..., 0, 2], -m[..., 1, 2], m[..., 2, 2], -m[..., 0, 1], m[..., 0, 0]
    cosp = np.hypot(cy_cp, sy_cp)
    out = np.stack([np.arctan2(sr_cp, cr_cp), np.arctan2(sinp, cosp), np.arctan2(sy_cp, cy_cp)], -1)
    lock = cosp < 1e-9
    if np.any(lock):  # pitch +-90 degrees: only roll +- yaw is defined; roll = 0
        yaw = np.arctan2(m[..., 1, 0], m[..., 1, 1]) if not rpy else np.arctan2(-m[..., 0, 1], m[..., 1, 1])
        out[..., 0] = np.where(lock, 0.0, out[..., 0])
        out[..., 2] = np.where(lock, yaw, out[..., 2])
    return np.rad2deg(out) if degrees else out


@_numpy_io
def quat_to_xyz(quat, rpy: bool = False, degrees: bool = False) -> np.ndarray:
    """Euler angles ``(..., 3)`` of quaternions (see :func:`R_to_xyz`)."""
    return R_to_xyz(quat_to_R(quat), rpy=rpy, degrees=degrees)


@_numpy_io
def euler_to_quat(euler_xyz) -> np.ndarray:
    """Quaternions of Euler angles in degrees, extrinsic x-y-z (a morph's ``euler``)."""
    return xyz_to_quat(euler_xyz, rpy=True, degrees=True)


@_numpy_io
def euler_to_R(euler_xyz) -> np.ndarray:
    """Rotation matrices of Euler angles in degrees, extrinsic x-y-z (a morph's ``euler``)."""
    return quat_to_R(euler_to_quat(euler_xyz))


# -- axis-angle and rotation vectors ----------------------------------------------------------------
@_numpy_io
def axis_angle_to_quat(angle, axis) -> np.ndarray:
    """Quaternions rotating by ``angle`` (rad, ``(...)``) about ``axis`` ``(..., 3)`` (normalised)."""
    angle = _float(angle)
    axis = normalize(_check("axis", _float(axis), (3,)))
    half = 0.5 * angle[..., None]
    w, xyz = np.cos(half), np.sin(half) * axis
    return normalize(np.concatenate([np.broadcast_to(w, xyz.shape[:-1] + (1,)), xyz], -1))


@_numpy_io
def axis_angle_to_R(axis, theta) -> np.ndarray:
    """Rotation matrices by ``theta`` (rad) about ``axis`` (Genesis' argument order: axis first)."""
    return quat_to_R(axis_angle_to_quat(theta, axis))


@_numpy_io
def quat_to_rotvec(quat) -> np.ndarray:
    """Rotation vectors (axis * angle, angle in [0, pi]) ``(..., 3)`` of quaternions."""
    q = normalize(_check("quat", _float(quat), (4,)))
    q = np.where(q[..., :1] < 0, -q, q)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1, keepdims=True)
    angle = 2.0 * np.arctan2(s, q[..., :1])
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(s > 1e-12, angle / s, 2.0)
    return v * scale


@_numpy_io
def rotvec_to_quat(rotvec) -> np.ndarray:
    """Quaternions of rotation vectors ``(..., 3)`` (axis * angle, rad)."""
    r = _check("rotvec", _float(rotvec), (3,))
    angle = np.linalg.norm(r, axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.where(angle > 1e-12, np.sin(0.5 * angle) / angle, 0.5)
    return np.concatenate([np.cos(0.5 * angle)[..., None], r * k[..., None]], -1)


@_numpy_io
def rotvec_to_R(rotvec) -> np.ndarray:
    """Rotation matrices of rotation vectors."""
    return quat_to_R(rotvec_to_quat(rotvec))


@_numpy_io
def R_to_rotvec(R) -> np.ndarray:
    """Rotation vectors of rotation matrices."""
    return quat_to_rotvec(R_to_quat(R))


# -- 4x4 transforms -----------------------------------------------------------------------------------
@_numpy_io
def trans_R_to_T(trans=None, R=None) -> np.ndarray:
    """Transforms ``(..., 4, 4)`` of translations ``(..., 3)`` and rotation matrices (either may be None)."""
    trans = None if trans is None else _check("trans", _float(trans), (3,))
    R = None if R is None else _check("R", _float(R), (3, 3))
    batch = np.broadcast_shapes(*(x for x in (None if trans is None else trans.shape[:-1],
                                              None if R is None else R.shape[:-2]) if x is not None))
    T = np.zeros(batch + (4, 4), np.result_type(*(x for x in (trans, R) if x is not None), np.float32))
    T[..., 3, 3] = 1.0
    T[..., :3, :3] = np.eye(3) if R is None else R
    if trans is not None:
        T[..., :3, 3] = trans
    return T


@_numpy_io
def trans_quat_to_T(trans=None, quat=None) -> np.ndarray:
    """Transforms ``(..., 4, 4)`` of translations ``(..., 3)`` and quaternions ``(..., 4)``."""
    return trans_R_to_T(trans, None if quat is None else quat_to_R(quat))


@_numpy_io
def trans_to_T(trans) -> np.ndarray:
    """Pure translations as transforms."""
    return trans_R_to_T(trans, None)


@_numpy_io
def R_to_T(R) -> np.ndarray:
    """Pure rotations as transforms."""
    return trans_R_to_T(None, R)


@_numpy_io
def quat_to_T(quat) -> np.ndarray:
    """Pure rotations (quaternions) as transforms."""
    return trans_quat_to_T(None, quat)


@_numpy_io
def T_to_trans(T) -> np.ndarray:
    """The translations ``(..., 3)`` of transforms."""
    return _check("T", _float(T), (4, 4))[..., :3, 3].copy()


@_numpy_io
def T_to_quat(T) -> np.ndarray:
    """The rotations of transforms as quaternions ``(..., 4)``."""
    return R_to_quat(_check("T", _float(T), (4, 4))[..., :3, :3])


@_numpy_io
def T_to_trans_quat(T) -> tuple[np.ndarray, np.ndarray]:
    """``(trans (..., 3), quat (..., 4))`` of transforms ``(..., 4, 4)``."""
    return T_to_trans(T), T_to_quat(T)


@_numpy_io
def inv_T(T) -> np.ndarray:
    """Inverse rigid transforms: (R^T, -R^T t)."""
    T = _check("T", _float(T), (4, 4))
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    out = np.zeros_like(T)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", Rt, T[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


@_numpy_io
def transform_by_R(pos, R) -> np.ndarray:
    """Points ``(..., 3)`` rotated by matrices ``(..., 3, 3)``."""
    return np.einsum("...ij,...j->...i", _check("R", _float(R), (3, 3)), _check("pos", _float(pos), (3,)))


@_numpy_io
def transform_by_trans_R(pos, trans, R) -> np.ndarray:
    """R pos + trans."""
    return transform_by_R(pos, R) + _check("trans", _float(trans), (3,))


@_numpy_io
def transform_by_T(pos, T) -> np.ndarray:
    """Points ``(..., 3)`` moved by transforms ``(..., 4, 4)``."""
    T = _check("T", _float(T), (4, 4))
    return transform_by_trans_R(pos, T[..., :3, 3], T[..., :3, :3])


@_numpy_io
def inv_transform_by_T(pos, T) -> np.ndarray:
    """World points expressed in the frames of transforms ``T``."""
    return transform_by_T(pos, inv_T(T))
