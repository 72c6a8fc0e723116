"""Obstacle shapes, in one table: for each primitive a fixed body can be, its kernel code, how its
size is packed, the ball that bounds it, its signed distance in numpy, its morph and its visual,
and how a scene file's obstacle of that kind becomes the morph.

The kernels compute the same signed distance (:func:`engine.kernels.collide.shape_distance`, by
the code given here); :mod:`engine.collision.world` packs obstacles through :data:`SHAPES`, and
:mod:`engine.model.shapes` and :mod:`engine.scenefile.obstacles` build bodies through it. A new
primitive is: its row here, its branch of ``shape_distance``, its morph in :mod:`engine.morphs`,
and its scene-file model in :mod:`engine.scenefile.models`.

Sizes as packed (m): box half extents ``(3,)``; sphere ``(radius,)``; cylinder ``(radius, half
height)``; capsule ``(radius, half length)`` (the segment between its caps' centres, along local
z); plane its unit normal ``(3,)`` (the half-space behind it is inside).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# the kernels' obstacle codes (engine.kernels.collide branches on them); this table imports no
# taichi, so the model and scene-file layers can read it without loading the kernels
BOX, SPHERE, CYLINDER, PLANE, CAPSULE = 0, 1, 2, 3, 4


@dataclass(frozen=True)
class ShapeKind:
    """One primitive. ``name``: the morph's ``kind`` and the scene file's; ``code``: the kernels'
    (:mod:`engine.kernels.collide`); ``morph``: the :mod:`engine.morphs` class name; ``size(morph)``
    -> packed size; ``bound(size)`` -> radius of a ball about the shape's origin that holds it (m;
    1e30 unbounded); ``distance(size, p)`` -> signed distance of points ``p (..., 3)`` in the
    shape's frame (m, negative inside); ``visual(morph)`` -> (visual kind of
    :class:`~engine.model.tree.Visual`, its size, the volume in m^3), None where the body draws
    otherwise (a plane); ``from_spec(obstacle, pose)`` -> the fixed morph of a scene file's obstacle
    (``pose``: ``pos`` and ``quat`` keywords)."""

    name: str
    code: int
    morph: str
    size: Callable
    bound: Callable
    distance: Callable
    visual: Callable | None
    from_spec: Callable | None


def _box_distance(size, p):
    q = np.abs(p) - size
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(-1), 0.0)


def _cylinder_distance(size, p):
    q = np.stack([np.linalg.norm(p[..., :2], axis=-1) - size[0], np.abs(p[..., 2]) - size[1]], axis=-1)
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(-1), 0.0)


def _capsule_distance(size, p):
    axial = np.clip(p[..., 2], -size[1], size[1])
    return np.linalg.norm(p - np.stack([np.zeros_like(axial), np.zeros_like(axial), axial], axis=-1), axis=-1) - \
        size[0]


def _morph(name: str):
    from . import morphs

    return getattr(morphs, name)


SHAPES = (
    ShapeKind("box", BOX, "Box", lambda m: np.asarray(m.size, float) / 2, lambda s: float(np.linalg.norm(s)),
              _box_distance, lambda m: ("box", m.size.copy(), float(np.prod(m.size))),
              lambda o, pose: _morph("Box")(size=o.size, fixed=True, **pose)),
    ShapeKind("sphere", SPHERE, "Sphere", lambda m: np.array([float(m.radius)]), lambda s: float(s[0]),
              lambda s, p: np.linalg.norm(p, axis=-1) - s[0],
              lambda m: ("sphere", np.array([m.radius]), 4 / 3 * np.pi * m.radius**3),
              lambda o, pose: _morph("Sphere")(radius=o.size, fixed=True, **pose)),
    ShapeKind("cylinder", CYLINDER, "Cylinder", lambda m: np.array([float(m.radius), float(m.height) / 2]),
              lambda s: float(np.hypot(s[0], s[1])), _cylinder_distance,
              lambda m: ("cylinder", np.array([m.radius, m.height]), np.pi * m.radius**2 * m.height),
              lambda o, pose: _morph("Cylinder")(radius=o.size[0], height=o.size[1], fixed=True, **pose)),
    ShapeKind("plane", PLANE, "Plane", lambda m: np.asarray(m.normal, float), lambda s: 1e30,
              lambda s, p: p @ np.asarray(s, float), None, lambda o, pose: _morph("Plane")(**pose)),
    ShapeKind("capsule", CAPSULE, "Capsule", lambda m: np.array([float(m.radius), float(m.length) / 2]),
              lambda s: float(s[0] + s[1]), _capsule_distance,
              lambda m: ("capsule", np.array([m.radius, m.length]),
                         np.pi * m.radius**2 * (m.length + 4 / 3 * m.radius)),
              lambda o, pose: _morph("Capsule")(radius=o.size[0], length=o.size[1], fixed=True, **pose)),
)
BY_NAME = {shape.name: shape for shape in SHAPES}
BY_CODE = {shape.code: shape for shape in SHAPES}
assert sorted(BY_CODE) == list(range(len(SHAPES))), "kernel codes are 0 .. n-1"
KINDS = tuple(BY_CODE[code].name for code in range(len(SHAPES)))  # names by kernel code


def shape(name: str) -> ShapeKind:
    return BY_NAME[name]
