"""Single-body morphs (Plane, Box, Sphere, Cylinder, Mesh) -> a one-link :class:`KinematicTree`.

The link is named after the shape (``box``, ``sphere``, ``cylinder``, ``plane``; a Mesh takes its
file's stem). A fixed body's link sits at the morph's pose and has no joint (qpos ``(0,)``);
any other body's link carries a free joint named ``root_joint`` whose default qpos is the
morph's pose (position + quaternion, ``(7,)``), so ``set_qpos(np.concatenate([pos, quat]))``
moves it and IK can drive it like any floating base. Mass (kg) is ``rho`` x volume for the
primitives (``rho`` from the entity's material, else Genesis' 600 kg/m^3 for plain objects);
a Mesh has none (0 kg: no volume is computed).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..obstacle_kinds import BY_NAME
from ..transforms import IDENTITY_QUAT, quat_between
from .tree import Joint, KinematicTree, Link, Visual

DEFAULT_RHO = 600.0  # kg/m^3: Genesis' default density of basic rigid objects
DEFAULT_RGBA = np.array([0.78, 0.78, 0.8, 1.0])
PLANE_RGBA = np.array([0.42, 0.45, 0.5, 1.0])
PLANE_DRAWN = 200.0  # m: the largest side of a Plane drawn on screen
PLANE_THICKNESS = 1e-3  # m, drawn just below the plane so that the ground grid's lines stay on top


def _visual(morph) -> tuple[list[Visual], float]:
    """The body's visuals (in the link frame) and its volume (m^3)."""
    kind = morph.kind
    zero = np.zeros(3)
    if kind in BY_NAME and BY_NAME[kind].visual is not None:  # a primitive: engine.obstacle_kinds
        visual, size, volume = BY_NAME[kind].visual(morph)
        return [Visual(visual, size, zero, IDENTITY_QUAT.copy(), DEFAULT_RGBA.copy())], volume
    if kind == "plane":
        side = np.minimum(morph.plane_size, PLANE_DRAWN)
        turn = quat_between([0.0, 0.0, 1.0], morph.normal)
        centre = -morph.normal * PLANE_THICKNESS
        return [Visual("box", np.array([side[0], side[1], PLANE_THICKNESS]), centre, turn, PLANE_RGBA.copy())], 0.0
    if kind == "mesh":
        # the file's own vertex colours are drawn, unless a surface colour replaces them
        return [Visual("mesh", morph.scale3, zero, IDENTITY_QUAT.copy(), DEFAULT_RGBA.copy(), mesh_file=morph.file,
                       mesh_colors=True)], 0.0
    raise TypeError(f"morph: not a single-body morph: {type(morph).__name__}")


def shape_visuals(morph) -> list[Visual]:
    """The body's geometry in its link frame (what it draws when ``visualization`` is on)."""
    return _visual(morph)[0]


def shape_tree(morph, rho: float | None = None) -> KinematicTree:
    """The one-link tree of a :class:`engine.morphs.Shape`."""
    visuals, volume = _visual(morph)
    if not morph.visualization:
        visuals = []
    name = Path(morph.file).stem if morph.kind == "mesh" else morph.kind
    mass = (DEFAULT_RHO if rho is None else float(rho)) * volume
    source = Path(morph.file) if morph.kind == "mesh" else Path(f"<{morph.kind}>")
    if morph.fixed:
        link = Link(name, -1, morph.pos.copy(), morph.quat.copy(), visuals, mass)
        return KinematicTree(name, source, [link], [])
    link = Link(name, -1, np.zeros(3), IDENTITY_QUAT.copy(), visuals, mass)
    joint = Joint("root_joint", "free", 0, np.zeros(3), np.zeros(3))
    return KinematicTree(name, source, [link], [joint], np.concatenate([morph.pos, morph.quat]))
