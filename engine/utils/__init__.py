"""Genesis' ``genesis.utils`` names that its IK scripts use: :mod:`engine.utils.geom` (rotations and
transforms) and :func:`get_assets_dir` (where Genesis' bundled assets are found,
:mod:`engine.genesis_assets`)."""

from ..genesis_assets import get_assets_dir
from . import geom

__all__ = ["geom", "get_assets_dir"]
