"""Robot description -> :class:`KinematicTree` (plain numpy; no taichi here).

``load(morph)`` is the entry point for both formats.
"""

from __future__ import annotations

from ..errors import InvalidTypeError
from .errors import ModelLoadError
from .tree import JOINT_TYPES, Joint, KinematicTree, Link, Mimic, Visual

__all__ = ["JOINT_TYPES", "Joint", "KinematicTree", "Link", "Mimic", "ModelLoadError", "Visual", "load"]


def load(morph, rho: float | None = None) -> KinematicTree:
    """The kinematic tree of a :mod:`engine.morphs` morph: URDF, MJCF, or a single body (Plane,
    Box, Sphere, Cylinder, Mesh; ``rho`` kg/m^3 sets a primitive's mass)."""
    from ..morphs import MJCF, URDF, Shape

    if isinstance(morph, URDF):
        from .urdf import load_urdf

        return load_urdf(morph)
    if isinstance(morph, MJCF):
        from .mjcf import load_mjcf

        return load_mjcf(morph)
    if isinstance(morph, Shape):
        from .shapes import shape_tree

        return shape_tree(morph, rho)
    raise InvalidTypeError(f"morph: expected an engine.morphs morph (URDF, MJCF, Plane, Box, Sphere, Cylinder, Mesh), "
                           f"got {type(morph).__name__}")
