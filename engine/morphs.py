"""Robot morphs: what to load and where to place it, validated on construction.

``URDF(file=...)`` and ``MJCF(file=...)`` name a robot description and its base pose.
``file`` may be a path or a catalog name (``"panda"``, ``"ur5"``; see :mod:`engine.assets`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import InvalidTypeError, InvalidValueError, MissingFileError


def _vector(name: str, value, size: int) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise InvalidValueError(f"{name}: expected {size} numbers, got {value!r}") from None
    if arr.shape != (size,):
        raise InvalidValueError(f"{name}: expected shape ({size},), got shape {arr.shape} ({value!r})")
    if not np.all(np.isfinite(arr)):
        raise InvalidValueError(f"{name}: expected finite numbers, got {value!r}")
    return arr


def _resolve_file(file, suffixes: tuple[str, ...]) -> Path:
    path = Path(file).expanduser()
    if path.is_file():
        return path.resolve()
    from . import assets  # a catalog name, or one of Genesis' asset paths

    if str(file).strip().lower() in assets.GENESIS_PATHS:
        return assets.resolve(str(file)).path
    if path.suffix.lower() in suffixes or "/" in str(file) or path.suffix:
        raise MissingFileError(f"file: no such robot file: '{path}'")

    try:
        return assets.resolve(str(file)).path
    except KeyError as err:
        raise MissingFileError(f"file: no such robot file or catalog name: '{file}' ({err.args[0]})") from None


MAX_SCALE = 1e6  # a robot scaled beyond this (or placed beyond MAX_POS) overflows float32 poses
MAX_POS = 1e6  # m


@dataclass(frozen=True)
class _Morph:
    file: Path
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    quat: np.ndarray = field(default_factory=lambda: np.array([1.0, 0.0, 0.0, 0.0]))
    scale: float = 1.0
    # Genesis' flag; Jacobians and IK are always available here, so only True is accepted
    requires_jac_and_IK: bool = True

    _suffixes: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "file", _resolve_file(self.file, self._suffixes))
        object.__setattr__(self, "pos", _vector("pos", self.pos, 3))
        quat = _vector("quat", self.quat, 4)
        norm = np.linalg.norm(quat)
        if norm < 1e-9:
            raise InvalidValueError(f"quat: expected a non-zero (w, x, y, z) quaternion, got {self.quat!r}")
        object.__setattr__(self, "quat", quat / norm)
        if isinstance(self.scale, bool | np.bool_ | str):
            raise InvalidTypeError(f"scale: expected a number, got {self.scale!r}")
        scale = float(self.scale)
        if not np.isfinite(scale) or scale <= 0 or scale > MAX_SCALE:
            raise InvalidValueError(f"scale: expected a positive number up to {MAX_SCALE:g}, got {self.scale!r}")
        object.__setattr__(self, "scale", scale)
        if np.abs(self.pos).max() > MAX_POS:
            raise InvalidValueError(f"pos: expected coordinates within {MAX_POS:g} m, got {self.pos.tolist()}")
        if self.requires_jac_and_IK is not True:
            raise InvalidValueError(f"requires_jac_and_IK: every entity here supports Jacobians and IK; expected True, "
                                    f"got {self.requires_jac_and_IK!r}")


@dataclass(frozen=True)
class URDF(_Morph):
    """A URDF robot. ``fixed=True`` bolts the root link to ``pos``/``quat``; ``False`` adds a free joint."""

    fixed: bool = True
    _suffixes: tuple[str, ...] = (".urdf",)

    def __post_init__(self):
        if not isinstance(self.fixed, bool | np.bool_):  # 'no' is not False
            raise InvalidTypeError(f"fixed: expected True or False, got {self.fixed!r}")
        object.__setattr__(self, "fixed", bool(self.fixed))
        super().__post_init__()


@dataclass(frozen=True)
class MJCF(_Morph):
    """A MuJoCo MJCF robot, compiled by ``mujoco``; ``pos``/``quat`` move the file's world frame."""

    _suffixes: tuple[str, ...] = (".xml", ".mjcf")


def from_file(file, **kwargs) -> URDF | MJCF:
    """The morph matching a file's format (``.urdf`` -> URDF, else MJCF), or a catalog name's."""
    path = _resolve_file(file, (".urdf", ".xml", ".mjcf"))
    return URDF(file=path, **kwargs) if path.suffix.lower() == ".urdf" else MJCF(file=path, **kwargs)
