"""Import, before the window draws its first frame, the modules the sim and render threads would
otherwise import on the first scene.

An import holds the GIL while the module's code runs, and the libraries a first scene needs
import a great deal lazily: trimesh's loaders pull in scipy, networkx and shapely (~1,300
modules in all with pyrender, PyOpenGL, pyglet, imageio and PIL). Measured on a busy 2-core
machine, single imports of scipy's submodules held the GIL for up to 1 s in the sim thread while
the window drew, and the GUI thread stood still for as long (issue 27: no frame gap over 250 ms).
:class:`app.sim.thread.SimThread` calls :func:`preload` before it sets ``kernels_ready``, which the
window waits for before its first frame, so these imports cost start-up time (they would be paid
before the robots are drawn anyway) and never a frame.

The window's report lists the top-level packages imported after its first frame
(``late_imports``); ``tests/test_app_frame_gaps.py`` holds it to :data:`ALLOWED_LATE`.
"""

from __future__ import annotations

import importlib
import os
import sys

# In the order a first scene meets them; engine.vis first: it sets PYOPENGL_PLATFORM before OpenGL.
MODULES = (
    "engine.vis",
    "trimesh",
    "trimesh.exchange.load",
    "trimesh.path",
    "scipy.spatial",
    "scipy.sparse.csgraph",
    "scipy.optimize",
    "scipy.ndimage",
    "networkx",
    "lxml.etree",
    "collada",  # trimesh's DAE reader imports it on the first .dae mesh (Baxter's, UR5's ...)
    "yourdfpy",  # the URDF parser, for a robot switch from an MJCF scene
    "engine.model.urdf",  # and the engine's reader around it
    "trimesh.path.packing",  # imported by trimesh as Baxter's meshes load (a robot switch)
    "PIL.Image",
    "PIL.ImageDraw",
    "PIL.ImageFont",
    "PIL.ImageFile",
    "imageio.v2",
    "imageio.v3",
    "OpenGL.GL",
    "OpenGL.arrays.numpymodule",
    "OpenGL.arrays.ctypesarrays",
    "OpenGL.arrays.ctypespointers",
    "OpenGL.arrays.lists",
    "OpenGL.arrays.strings",
    "pyrender",
    "fast_simplification",
)

# Top-level packages a first scene may still import after the first frame: small ones only.
ALLOWED_LATE = frozenset({"encodings", "_codecs_cn", "_codecs_hk", "_codecs_iso2022", "_codecs_jp", "_codecs_kr",
                          "_codecs_tw", "_multibytecodec", "unicodedata"})


def preload(modules=MODULES) -> list[str]:
    """Import ``modules`` (names); those that fail to import (a library missing or broken) are
    skipped: the code that needs them reports it where it runs. Returns the names that failed."""
    failed = [name for name in modules if not _imported(name)]
    failed += [name for name in _gl_platform_modules() if not _imported(name)]  # after engine.vis chose it
    return failed


def _imported(name: str) -> bool:
    """Import module ``name``; False where that fails."""
    if name in sys.modules:
        return True
    try:
        importlib.import_module(name)
    except Exception:  # noqa: BLE001 -- reported where the module is used, not here
        return False
    return True


def _gl_platform_modules() -> list[str]:
    """PyOpenGL's and pyrender's modules for the GL platform :mod:`engine.vis` chose (imported
    first in :data:`MODULES`): ``osmesa`` or ``egl``."""
    platform = os.environ.get("PYOPENGL_PLATFORM", "")
    return [f"OpenGL.{platform}", f"pyrender.platforms.{platform}"] if platform in ("osmesa", "egl") else []


__all__ = ["ALLOWED_LATE", "MODULES", "preload"]
