"""Decimated visual meshes kept on disk, so that a heavy robot (Baxter: ~410k triangles per env)
is decimated once per machine, not once per process.

An entry is keyed by a hash of the mesh file's path, size and modification time, the visual's
scale, the face budget and :data:`VERSION` (bump it when decimation changes: old entries are then
ignored). It lives in ``$IKSTUDIO_CACHE_DIR/meshes``, else ``$XDG_CACHE_HOME/ikstudio/meshes``
(``~/.cache`` without XDG_CACHE_HOME), as an ``.npz`` of ``vertices`` (V, 3) float64 m and
``faces`` (F, 3) int64. A cache that cannot be written is skipped; an unreadable entry is
recomputed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from ..cache_root import cache_root

VERSION = 4  # 4: vertices merged before every quadric collapse; budget doubled while area is lost


def cache_dir() -> Path:
    """The folder of decimated meshes (see the module docstring)."""
    return cache_root() / "meshes"


def entry_path(mesh_file, scale, max_faces: int) -> Path | None:
    """The cache file of ``mesh_file`` at ``scale`` (3,) decimated to ``max_faces``; None when the
    file cannot be stat'ed (nothing is cached for it)."""
    try:
        st = Path(mesh_file).stat()
    except OSError:
        return None
    scale = tuple(float(x) for x in np.round(np.asarray(scale, float).reshape(-1), 9))
    text = f"v{VERSION}:{Path(mesh_file).resolve()}:{st.st_size}:{st.st_mtime_ns}:{scale}:{int(max_faces)}"
    return cache_dir() / f"decimated_{hashlib.sha256(text.encode()).hexdigest()[:32]}.npz"


def load(path: Path | None):
    """The cached ``trimesh.Trimesh`` at ``path``, or None (no entry, or unreadable)."""
    if path is None or not path.is_file():
        return None
    import trimesh

    try:
        with np.load(path) as data:
            vertices, faces = np.asarray(data["vertices"], float), np.asarray(data["faces"], np.int64)
    except (OSError, KeyError, ValueError):
        return None
    if vertices.ndim != 2 or vertices.shape[1:] != (3,) or faces.ndim != 2 or faces.shape[1:] != (3,):
        return None
    if len(faces) and (faces.min() < 0 or faces.max() >= len(vertices)):
        return None
    return trimesh.Trimesh(vertices=vertices, faces=faces, process=False)


def save(path: Path | None, mesh) -> None:
    """Write ``mesh`` to ``path`` atomically (a reader never sees half a file); errors are skipped."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, vertices=np.asarray(mesh.vertices, float), faces=np.asarray(mesh.faces, np.int64))
        os.replace(tmp, path)
    except OSError:
        pass
