"""The folder where the engine keeps what it can always make again (decimated meshes, fitted
collision models, its shaders): ``$IKSTUDIO_CACHE_DIR``, else ``$XDG_CACHE_HOME/ikstudio``
(``~/.cache/ikstudio`` without XDG_CACHE_HOME): XDG's rule, what platformdirs gives on Linux,
without the dependency. Deleting it costs time, never a result."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The engine's cache folder (see the module doc), absolute; read from the environment at each
    call."""
    root = os.environ.get("IKSTUDIO_CACHE_DIR")
    if not root:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ikstudio"
    return Path(root).expanduser().absolute()  # (files named here are read after a chdir too)
