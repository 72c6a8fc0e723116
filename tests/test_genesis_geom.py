"""``engine.utils.geom`` (Genesis' ``genesis.utils.geom`` names) against scipy's ``Rotation`` and
Genesis' documented conventions: (w, x, y, z) quaternions, Euler ``xyz`` intrinsic for
``rpy=False`` and extrinsic for ``rpy=True`` / ``euler_to_quat`` (degrees), batch shapes kept."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import engine.utils.geom as gu

RNG = np.random.default_rng(7)
ROT = Rotation.random(64, random_state=3)
QUAT = ROT.as_quat()[:, [3, 0, 1, 2]]  # (w, x, y, z)
MAT = ROT.as_matrix()


def same_rotation(q1, q2, tol=1e-9):
    return np.abs(np.abs(np.sum(q1 * q2, axis=-1)) - 1).max() < tol


def test_quat_to_R_and_R_to_quat_match_scipy_in_any_batch_shape():
    np.testing.assert_allclose(gu.quat_to_R(QUAT), MAT, atol=1e-12)
    q = gu.R_to_quat(MAT)
    assert q.shape == (64, 4) and np.all(q[:, 0] >= 0) and same_rotation(q, QUAT)
    batch = QUAT.reshape(4, 8, 2, 4)
    assert gu.quat_to_R(batch).shape == (4, 8, 2, 3, 3)
    np.testing.assert_allclose(gu.quat_to_R(batch).reshape(64, 3, 3), MAT, atol=1e-12)
    assert gu.quat_to_R(QUAT[0]).shape == (3, 3)
    # every Shepperd branch: the identity, and half turns about x, y and z
    for r in (np.eye(3), np.diag([1.0, -1, -1]), np.diag([-1.0, 1, -1]), np.diag([-1.0, -1, 1])):
        np.testing.assert_allclose(gu.quat_to_R(gu.R_to_quat(r)), r, atol=1e-12)


@pytest.mark.parametrize(("rpy", "seq"), [(False, "XYZ"), (True, "xyz")])
def test_xyz_to_quat_and_back_match_scipy_euler(rpy, seq):
    angles = np.column_stack([RNG.uniform(-3, 3, 50), RNG.uniform(-1.5, 1.5, 50), RNG.uniform(-3, 3, 50)])
    expected = Rotation.from_euler(seq, angles).as_quat()[:, [3, 0, 1, 2]]
    assert same_rotation(gu.xyz_to_quat(angles, rpy=rpy), expected)
    np.testing.assert_allclose(gu.quat_to_xyz(expected, rpy=rpy), angles, atol=1e-9)
    np.testing.assert_allclose(gu.R_to_xyz(Rotation.from_euler(seq, angles).as_matrix(), rpy=rpy), angles, atol=1e-9)
    degrees = np.rad2deg(angles)
    assert same_rotation(gu.xyz_to_quat(degrees, rpy=rpy, degrees=True), expected)
    np.testing.assert_allclose(gu.quat_to_xyz(expected, rpy=rpy, degrees=True), degrees, atol=1e-7)


def test_euler_to_quat_is_a_morphs_euler_convention():
    """Genesis' euler_to_quat: degrees, extrinsic x-y-z, as a morph's ``euler``."""
    e = np.array([30.0, -20.0, 75.0])
    expected = Rotation.from_euler("xyz", e, degrees=True).as_quat()[[3, 0, 1, 2]]
    assert same_rotation(gu.euler_to_quat(e), expected)
    np.testing.assert_allclose(gu.euler_to_R(e), Rotation.from_euler("xyz", e, degrees=True).as_matrix(), atol=1e-12)
    from engine import morphs

    box = morphs.Box(size=(1, 1, 1), euler=tuple(e))
    assert same_rotation(box.quat, gu.euler_to_quat(e))


def test_gimbal_lock_gives_the_same_rotation():
    for rpy, seq in ((False, "XYZ"), (True, "xyz")):
        angles = np.array([0.4, np.pi / 2, -0.3])
        q = gu.xyz_to_quat(angles, rpy=rpy)
        back = gu.quat_to_xyz(q, rpy=rpy)
        assert abs(back[1] - np.pi / 2) < 1e-6 and back[0] == 0.0
        assert same_rotation(gu.xyz_to_quat(back, rpy=rpy), Rotation.from_euler(seq, angles).as_quat()[[3, 0, 1, 2]])


def test_transforms_match_scipy_and_invert():
    trans = RNG.normal(size=(64, 3))
    T = gu.trans_quat_to_T(trans, QUAT)
    assert T.shape == (64, 4, 4)
    np.testing.assert_allclose(T[:, :3, :3], MAT, atol=1e-12)
    np.testing.assert_allclose(T[:, :3, 3], trans)
    np.testing.assert_allclose(T[:, 3], np.tile([0, 0, 0, 1.0], (64, 1)))
    t2, q2 = gu.T_to_trans_quat(T)
    np.testing.assert_allclose(t2, trans)
    assert same_rotation(q2, QUAT)
    pts = RNG.normal(size=(64, 3))
    moved = ROT.apply(pts) + trans
    np.testing.assert_allclose(gu.transform_by_trans_quat(pts, trans, QUAT), moved, atol=1e-12)
    np.testing.assert_allclose(gu.transform_by_T(pts, T), moved, atol=1e-12)
    np.testing.assert_allclose(gu.inv_transform_by_trans_quat(moved, trans, QUAT), pts, atol=1e-12)
    np.testing.assert_allclose(gu.inv_transform_by_T(moved, T), pts, atol=1e-12)
    np.testing.assert_allclose(gu.inv_T(T) @ T, np.broadcast_to(np.eye(4), T.shape), atol=1e-12)
    np.testing.assert_allclose(gu.trans_to_T(trans[0])[:3, 3], trans[0])
    np.testing.assert_allclose(gu.R_to_T(MAT[0])[:3, :3], MAT[0])


def test_quaternion_algebra_matches_scipy():
    v = RNG.normal(size=(64, 3))
    np.testing.assert_allclose(gu.transform_by_quat(v, QUAT), ROT.apply(v), atol=1e-12)
    np.testing.assert_allclose(gu.inv_transform_by_quat(ROT.apply(v), QUAT), v, atol=1e-12)
    assert same_rotation(gu.inv_quat(QUAT), ROT.inv().as_quat()[:, [3, 0, 1, 2]])
    other = Rotation.random(64, random_state=5)
    u = other.as_quat()[:, [3, 0, 1, 2]]
    # Genesis' transform_quat_by_quat(v, u): v turned by u, i.e. R_u @ R_v
    assert same_rotation(gu.transform_quat_by_quat(QUAT, u), (other * ROT).as_quat()[:, [3, 0, 1, 2]])
    # a vector (3,) turned by a batch of quaternions broadcasts
    assert gu.transform_by_quat(v[0], QUAT).shape == (64, 3)


def test_axis_angle_and_rotation_vectors_match_scipy():
    rotvec = ROT.as_rotvec()
    np.testing.assert_allclose(gu.quat_to_rotvec(QUAT), rotvec, atol=1e-9)
    assert same_rotation(gu.rotvec_to_quat(rotvec), QUAT)
    np.testing.assert_allclose(gu.rotvec_to_R(rotvec), MAT, atol=1e-12)
    np.testing.assert_allclose(gu.R_to_rotvec(MAT), rotvec, atol=1e-9)
    angle = np.linalg.norm(rotvec, axis=-1)
    axis = rotvec / angle[:, None] * 3.0  # not unit: normalised inside, as in Genesis
    assert same_rotation(gu.axis_angle_to_quat(angle, axis), QUAT)
    np.testing.assert_allclose(gu.axis_angle_to_R(axis, angle), MAT, atol=1e-12)
    np.testing.assert_allclose(gu.quat_to_rotvec(np.array([1.0, 0, 0, 0])), np.zeros(3))


def test_genesis_documented_examples():
    """The seed page's pointing-down quaternion (0, 1, 0, 0) turns z to -z; a 90-degree yaw."""
    down = np.array([0.0, 1.0, 0.0, 0.0])
    np.testing.assert_allclose(gu.transform_by_quat(np.array([0.0, 0.0, 1.0]), down), [0, 0, -1], atol=1e-12)
    assert same_rotation(gu.xyz_to_quat(np.array([180.0, 0.0, 0.0]), degrees=True), down)
    yaw = gu.xyz_to_quat(np.array([0.0, 0.0, 90.0]), rpy=True, degrees=True)
    np.testing.assert_allclose(yaw, [np.sqrt(0.5), 0, 0, np.sqrt(0.5)], atol=1e-12)
    np.testing.assert_allclose(gu.identity_quat(), [1, 0, 0, 0])


def test_float32_in_float32_out_and_bad_shapes_name_the_argument():
    assert gu.quat_to_R(QUAT.astype(np.float32)).dtype == np.float32
    assert gu.xyz_to_quat(np.zeros(3, np.float32)).dtype == np.float32
    with pytest.raises(ValueError, match=r"quat: expected shape \(\.\.\., 4\), got \(3,\)"):
        gu.quat_to_R(np.zeros(3))
    with pytest.raises(ValueError, match=r"T: expected shape \(\.\.\., 4, 4\)"):
        gu.T_to_trans_quat(np.eye(3))
