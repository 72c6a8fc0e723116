"""The folder where the engine keeps what it can always make again (decimated meshes, fitted
collision models, its shaders): ``$IKSTUDIO_CACHE_DIR``, else ``$XDG_CACHE_HOME/ikstudio``
(``~/.cache/ikstudio`` without XDG_CACHE_HOME): XDG's rule, what platformdirs gives on Linux,
without the dependency. Deleting it costs time, never a result. :func:`write_whole` writes a
cache file so that no reader sees half of it."""

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


def write_whole(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` whole or not at all: a temporary file beside it (named by pid and
    a random part, unique across processes and hosts sharing the folder), then a rename, so that a
    reader sees the old file or the new one. Returns False, leaving ``path`` as it was, when the
    folder cannot be written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        return False
    return True
