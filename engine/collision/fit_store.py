"""Where fitted collision models are kept: the user's cache, and the fits shipped with the package.

A fit (a robot's spheres, or the link pairs its sampling excluded) is an npz file named by a key:
a hash of the robot file's and its mesh files' bytes and of the fit's parameters (its version
among them, so a changed fitting never reads an old answer). :func:`load` looks in the user's
cache (:func:`cache_dir`) and then among the fits shipped in ``engine/data/collision_fits``
(:data:`SHIPPED`), made for the catalog's robots by ``python -m engine.collision.prefit``, so
that a catalog robot's first collision check costs no fitting on a fresh machine (the Panda's
cover fit is ~10 s on an idle 2-core machine, Baxter's ~1 min). A robot file that differs by a
byte (another example-robot-data release, an edited URDF) has another key and is fitted, then
cached.
"""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import numpy as np

from ..cache_root import cache_root

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "collision_fits"


def cache_dir() -> Path:
    """Where fitted models are kept: ``$IKSTUDIO_CACHE_DIR/collision``, else
    ``$XDG_CACHE_HOME/ikstudio/collision`` (``~/.cache`` without XDG_CACHE_HOME)."""
    return cache_root() / "collision"


def cache_key(source: Path, files: list[Path], params: dict) -> str:
    """A hash (32 hex digits) of the robot file's and its mesh files' bytes and the parameters
    ``params`` (which name the fit's version)."""
    h = hashlib.sha256(f"{sorted(params.items())}".encode())
    for file in [Path(source), *files]:
        try:
            h.update(Path(file).read_bytes())
        except OSError:
            h.update(f"<missing {file}>".encode())
    return h.hexdigest()[:32]


def load(name: str, fields: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    """The arrays ``fields`` of the fit file ``name`` (``spheres_<key>.npz``), from the user's
    cache or else the shipped fits; None where neither holds it whole (a damaged file is passed
    over: the caller fits again and overwrites the cache's)."""
    for folder in (cache_dir(), SHIPPED):
        path = folder / name
        if not path.is_file():
            continue
        try:
            with np.load(path) as data:
                return {f: data[f] for f in fields}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            continue
    return None


def save(name: str, **arrays: np.ndarray) -> None:
    """Write the fit file ``name`` into the user's cache, atomically (a reader never sees half a
    file); a read-only cache is skipped."""
    path = cache_dir() / name
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez_compressed(tmp, **arrays)  # the shipped folder is these files: ~2.5x smaller
        os.replace(tmp, path)
    except OSError:
        pass


def shipped_names() -> list[str]:
    """The file names of the shipped fits."""
    return sorted(p.name for p in SHIPPED.glob("*.npz")) if SHIPPED.is_dir() else []
