"""Robot description -> :class:`KinematicTree` (plain numpy; no taichi here).

``load(morph)`` is the entry point for both formats.
"""

from __future__ import annotations

from ..errors import InvalidTypeError
from .errors import ModelLoadError
from .tree import JOINT_TYPES, Joint, KinematicTree, Link, Mimic, Visual

__all__ = ["JOINT_TYPES", "Joint", "KinematicTree", "Link", "Mimic", "ModelLoadError", "Visual", "load"]


def load(morph) -> KinematicTree:
    """The kinematic tree of a :mod:`engine.morphs` morph (URDF or MJCF)."""
    from ..morphs import MJCF, URDF

    if isinstance(morph, URDF):
        from .urdf import load_urdf

        return load_urdf(morph)
    if isinstance(morph, MJCF):
        from .mjcf import load_mjcf

        return load_mjcf(morph)
    raise InvalidTypeError(f"morph: expected engine.morphs.URDF or engine.morphs.MJCF, got {type(morph).__name__}")
