"""Where Genesis' bundled assets are found, so a Genesis script's relative asset paths
(``urdf/shadow_hand/shadow_hand.urdf``, ``meshes/duck.obj``) load here too.

A relative path that is neither in the working folder nor among the project's own files is looked
up, in this order, in:

1. the ``assets`` folder of an installed ``genesis`` package (its wheel ships them under
   ``genesis/assets/``); the package is located, never imported;
2. the folder named by the environment variable ``$GENESIS_ASSETS``, when it is set.

:func:`places` lists every folder a lookup tries, for error messages that say where they looked.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

ENV_VAR = "GENESIS_ASSETS"
PROJECT_DATA = Path(__file__).resolve().parent / "data"  # the project's Genesis-style files: meshes/axis.obj


def installed_genesis_assets() -> Path | None:
    """The ``assets`` folder of an installed ``genesis`` package, or None (not installed, or no
    such folder). Finding the package does not import it."""
    try:
        spec = importlib.util.find_spec("genesis")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "assets"
        if folder.is_dir():
            return folder.resolve()
    return None


def env_assets() -> Path | None:
    """The folder ``$GENESIS_ASSETS`` names, or None when the variable is unset or empty."""
    value = os.environ.get(ENV_VAR, "").strip()
    return Path(value).expanduser() if value else None


def search_dirs() -> list[Path]:
    """The Genesis asset folders that exist, in lookup order (installed package, then $GENESIS_ASSETS)."""
    out = []
    for folder in (installed_genesis_assets(), env_assets()):
        if folder is not None and folder.is_dir() and folder not in out:
            out.append(folder)
    return out


def find(relative: str | os.PathLike) -> Path | None:
    """The file ``relative`` inside the first Genesis asset folder holding it, or None. An absolute
    path is never looked up here."""
    path = Path(relative).expanduser()
    if path.is_absolute():
        return None
    for folder in search_dirs():
        if (folder / path).is_file():
            return (folder / path).resolve()
    return None


def places() -> str:
    """Every Genesis asset folder a lookup tries, with why one is missing, for error messages:
    ``"the installed genesis package's assets (genesis is not installed), $GENESIS_ASSETS (not set)"``."""
    installed = installed_genesis_assets()
    env = env_assets()
    first = (f"the installed genesis package's assets ({installed})" if installed is not None
             else "the installed genesis package's assets (genesis is not installed)")
    if env is None:
        second = f"${ENV_VAR} (not set)"
    elif not env.is_dir():
        second = f"${ENV_VAR} ({env}: no such folder)"
    else:
        second = f"${ENV_VAR} ({env})"
    return f"{first}, {second}"


def get_assets_dir() -> str:
    """The folder Genesis scripts join asset paths to (``os.path.join(gu.get_assets_dir(), ...)``):
    the installed genesis package's assets, else ``$GENESIS_ASSETS``, else the project's own
    Genesis-style files (``engine/data``, which holds ``meshes/axis.obj``)."""
    dirs = search_dirs()
    return str(dirs[0] if dirs else PROJECT_DATA)
