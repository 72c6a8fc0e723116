"""The hand-made fast paths of the collision model's numpy code give numpy's own bits.

The sphere fit computes squared distances by columns and k-means means with ``np.bincount``, and
``quat_rotate_unit`` rotates one float64 vector in Python floats (engine/collision/spheres.py,
engine/transforms.py). Each is checked here against the plain numpy expression it replaces, bit
for bit: a cached fit (FIT_VERSION) and every answer built on it stay the same only if they are.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.collision import spheres
from engine.transforms import quat_rotate_unit


def _points(rng, n=5000):
    return rng.normal(size=(n, 3)) * np.array([1e-3, 0.7, 40.0]) + rng.normal(size=3)


def test_one_vector_rotation_is_the_batched_rotation_bit_for_bit():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(20000, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    v = rng.normal(size=(20000, 3)) * 10.0 ** rng.uniform(-6, 3, (20000, 1))
    v[::7, 1] = 0.0
    q[::11, 2] = -0.0
    batched = quat_rotate_unit(q, v)  # numpy's cross products
    one = np.array([quat_rotate_unit(a, b) for a, b in zip(q, v)])
    assert np.array_equal(one.view(np.int64), batched.view(np.int64))  # signs of zeros too


def test_one_float32_rotation_stays_in_float32():
    out = quat_rotate_unit(np.float32([1.0, 0.0, 0.0, 0.0]), np.float32([1.0, 2.0, 3.0]))
    assert out.dtype == np.float32 and np.array_equal(out, [1.0, 2.0, 3.0])


def test_column_distances_are_numpys_row_sums():
    rng = np.random.default_rng(1)
    p = _points(rng)
    c = rng.normal(size=3)
    assert np.array_equal(spheres._squared_distances(spheres._columns(p), c), ((p - c) ** 2).sum(1))
    means = rng.normal(size=(9, 3))
    plain = np.argmin(((p[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
    assert np.array_equal(spheres._nearest(spheres._columns(p), means), plain)


def _plain_kmeans(points, k, rng, iterations=20):
    """k-means++ and Lloyd steps in plain numpy (the fit's code before its fast paths)."""
    means = [points[rng.integers(len(points))]]
    d2 = ((points - means[0]) ** 2).sum(1)
    for _ in range(1, k):
        total = d2.sum()
        pick = rng.integers(len(points)) if total <= 0 else rng.choice(len(points), p=d2 / total)
        means.append(points[pick])
        d2 = np.minimum(d2, ((points - points[pick]) ** 2).sum(1))
    means = np.array(means)
    for _ in range(iterations):
        label = np.argmin(((points[:, None, :] - means[None]) ** 2).sum(-1), axis=1)
        moved = np.array([points[label == j].mean(0) if np.any(label == j) else means[j] for j in range(k)])
        if np.allclose(moved, means):
            break
        means = moved
    return means


@pytest.mark.parametrize("k", [2, 8, 32])
def test_kmeans_is_the_plain_kmeans_bit_for_bit(k):
    rng = np.random.default_rng(k)
    p = _points(rng, 3000)
    p[:40] = p[0]  # repeated points: clusters that empty out keep their mean
    fast = spheres._kmeans(p, k, np.random.default_rng(5))
    assert np.array_equal(fast, _plain_kmeans(p, k, np.random.default_rng(5)))
