"""Morphs: what an entity is made of and where it starts, validated on construction.

``URDF(file=...)`` and ``MJCF(file=...)`` name a robot description and its base pose.
``file`` may be a path or a catalog name (``"panda"``, ``"ur5"``; see :mod:`engine.assets`).
``Plane``, ``Box``, ``Sphere``, ``Cylinder`` and ``Mesh`` are single rigid bodies (Genesis'
semantics: free unless ``fixed=True``; a Plane is always fixed). Every morph takes ``pos`` (m)
and either ``quat`` (w, x, y, z) or ``euler`` (degrees, Genesis' extrinsic x-y-z convention),
not both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import genesis_assets
from .errors import InvalidTypeError, InvalidValueError, MissingFileError
from .transforms import quat_from_euler


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
        found = genesis_assets.find(path)  # a path into Genesis' bundled assets
        if found is not None:
            return found
        where = "" if path.is_absolute() else (f" (looked in the working folder {Path.cwd()}, in the project's "
                                               f"Genesis paths {', '.join(sorted(assets.GENESIS_PATHS))}, in "
                                               f"{genesis_assets.places()})")
        raise MissingFileError(f"file: no such robot file: '{path}'{where}")

    try:
        return assets.resolve(str(file)).path
    except KeyError as err:
        raise MissingFileError(f"file: no such robot file or catalog name: '{file}' ({err.args[0]})") from None


MAX_SCALE = 1e6  # a robot scaled beyond this (or placed beyond MAX_POS) overflows float32 poses
MAX_POS = 1e6  # m


def orientation(quat, euler) -> np.ndarray:
    """The unit quaternion of a morph's ``quat`` or ``euler`` (degrees; not both; neither: identity)."""
    if quat is not None and euler is not None:
        raise InvalidValueError(f"quat, euler: give one orientation, not both (got quat={quat!r}, euler={euler!r})")
    if euler is not None:
        return quat_from_euler(_vector("euler", euler, 3))
    if quat is None:
        return np.array([1.0, 0.0, 0.0, 0.0])
    q = _vector("quat", quat, 4)
    scale = np.abs(q).max()  # divided out first: the squares of 1e300 overflow to inf
    if scale < 1e-9:
        raise InvalidValueError(f"quat: expected a non-zero (w, x, y, z) quaternion, got {quat!r}")
    q = q / scale
    return q / np.linalg.norm(q)


@dataclass(frozen=True)
class _Morph:
    file: Path
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    quat: np.ndarray | None = None
    scale: float = 1.0
    euler: np.ndarray | None = None  # degrees, extrinsic x-y-z (Genesis'); the alternative to quat
    # Genesis' flag; Jacobians and IK are always available here, so only True is accepted
    requires_jac_and_IK: bool = True

    _suffixes: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "file", _resolve_file(self.file, self._suffixes))
        object.__setattr__(self, "pos", _vector("pos", self.pos, 3))
        object.__setattr__(self, "quat", orientation(self.quat, self.euler))
        if self.euler is not None:
            object.__setattr__(self, "euler", _vector("euler", self.euler, 3))
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
    """A URDF robot. ``fixed=True`` bolts the root link to ``pos``/``quat``; ``False`` (Genesis'
    default) gives the root link a free joint: qpos starts with its position (3) and quaternion (4)."""

    fixed: bool = False
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


__all__ = ["MJCF", "URDF", "Box", "Capsule", "Cylinder", "Mesh", "Plane", "Primitive", "Shape", "Sphere",
           "from_file"]


def from_file(file, fixed: bool | None = None, **kwargs) -> URDF | MJCF:
    """The morph matching a file's format (``.urdf`` -> URDF, else MJCF), or a catalog name's.
    ``fixed`` applies to a URDF (None: the URDF default, free); an MJCF file says it itself."""
    path = _resolve_file(file, (".urdf", ".xml", ".mjcf"))
    if path.suffix.lower() != ".urdf":
        return MJCF(file=path, **kwargs)
    return URDF(file=path, **kwargs) if fixed is None else URDF(file=path, fixed=fixed, **kwargs)


# -- single rigid bodies --------------------------------------------------------------------------
DATA_DIR = Path(__file__).resolve().parent / "data"  # Genesis-style asset paths resolve here: meshes/axis.obj
MESH_SUFFIXES = (".obj", ".ply", ".stl", ".glb", ".gltf", ".off", ".dae")


def _flag(name: str, value) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise InvalidTypeError(f"{name}: expected True or False, got {value!r}")
    return bool(value)


def _length(name: str, value) -> float:
    """A positive length in m."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | float | np.integer | np.floating):
        raise InvalidTypeError(f"{name}: expected a positive number (m), got {value!r}")
    x = float(value)
    if not np.isfinite(x) or x <= 0 or x > MAX_POS:
        raise InvalidValueError(f"{name}: expected a positive length up to {MAX_POS:g} m, got {value!r}")
    return x


@dataclass(frozen=True, kw_only=True)
class Shape:
    """What every single-body morph takes. ``pos`` (m), ``quat`` (w, x, y, z) or ``euler``
    (degrees). ``fixed``: bolted to the world at that pose (no qpos); otherwise the body has a free
    joint, qpos ``(7,)`` = position (3) + quaternion (4). ``visualization`` False: not drawn.
    ``collision``, ``contype`` / ``conaffinity``, ``batch_fixed_verts`` and ``requires_jac_and_IK``
    are Genesis' fields, accepted (there is no collision yet; Jacobians and IK always work here)."""

    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    euler: np.ndarray | None = None
    quat: np.ndarray | None = None
    visualization: bool = True
    collision: bool = True
    requires_jac_and_IK: bool = False
    is_free: bool | None = None  # Genesis' deprecated field: accepted, ignored
    fixed: bool = False
    batch_fixed_verts: bool = True
    contype: int = 0xFFFF
    conaffinity: int = 0xFFFF

    kind = "shape"

    def __post_init__(self):
        pos = _vector("pos", self.pos, 3)
        if np.abs(pos).max() > MAX_POS:
            raise InvalidValueError(f"pos: expected coordinates within {MAX_POS:g} m, got {pos.tolist()}")
        object.__setattr__(self, "pos", pos)
        object.__setattr__(self, "quat", orientation(self.quat, self.euler))
        if self.euler is not None:
            object.__setattr__(self, "euler", _vector("euler", self.euler, 3))
        for name in ("visualization", "collision", "requires_jac_and_IK", "fixed", "batch_fixed_verts"):
            object.__setattr__(self, name, _flag(name, getattr(self, name)))
        if self.is_free is not None:
            _flag("is_free", self.is_free)
        if not self.visualization and not self.collision:
            raise InvalidValueError("visualization, collision: they cannot both be False")
        for name in ("contype", "conaffinity"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < 2**32:
                raise InvalidValueError(f"{name}: expected a 32-bit unsigned bitmask, got {value!r}")


@dataclass(frozen=True, kw_only=True)
class Primitive(Shape):
    """A shape primitive (Box, Sphere, Cylinder, Capsule, Plane: :mod:`engine.obstacle_kinds`)."""


@dataclass(frozen=True, kw_only=True)
class Box(Primitive):
    """A box: ``size`` (x, y, z extents, m) centred at ``pos``, or corners ``lower`` / ``upper``
    (m, world axes; they win over pos and size, as in Genesis). ``pos``, ``size``, ``lower`` and
    ``upper`` all hold their values after construction."""

    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    size: np.ndarray | None = None
    kind = "box"

    def __post_init__(self):
        if self.lower is not None or self.upper is not None:
            if self.lower is None or self.upper is None:
                raise InvalidValueError("lower, upper: give both corners (or pos and size)")
            lower, upper = _vector("lower", self.lower, 3), _vector("upper", self.upper, 3)
            if np.any(upper < lower):
                raise InvalidValueError(f"upper: expected upper >= lower on every axis, got lower={lower.tolist()}, "
                                        f"upper={upper.tolist()}")
            object.__setattr__(self, "pos", (lower + upper) / 2)
            object.__setattr__(self, "size", upper - lower)
        elif self.size is None:
            raise InvalidValueError("size: a Box needs size (with pos) or lower and upper")
        super().__post_init__()
        size = _vector("size", self.size, 3)
        if np.any(size <= 0) or size.max() > MAX_POS:
            raise InvalidValueError(f"size: expected 3 positive extents (m), got {size.tolist()}")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "lower", self.pos - size / 2)
        object.__setattr__(self, "upper", self.pos + size / 2)


@dataclass(frozen=True, kw_only=True)
class Sphere(Primitive):
    """A sphere of ``radius`` m (Genesis' default 0.5) centred at ``pos``."""

    radius: float = 0.5
    kind = "sphere"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "radius", _length("radius", self.radius))


@dataclass(frozen=True, kw_only=True)
class Cylinder(Primitive):
    """A cylinder of ``radius`` and ``height`` m (Genesis' defaults 0.5, 1.0) along its local z,
    centred at ``pos``."""

    height: float = 1.0
    radius: float = 0.5
    kind = "cylinder"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "height", _length("height", self.height))
        object.__setattr__(self, "radius", _length("radius", self.radius))


@dataclass(frozen=True, kw_only=True)
class Capsule(Primitive):
    """A capsule: a ball of ``radius`` m swept along its local z over ``length`` m (the segment
    between the centres of its two caps; the whole body is ``length + 2 radius`` long), centred at
    ``pos``. Not a Genesis morph (Genesis has none); its parameters follow ``Cylinder``'s."""

    length: float = 1.0
    radius: float = 0.5
    kind = "capsule"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "length", _length("length", self.length))
        object.__setattr__(self, "radius", _length("radius", self.radius))


@dataclass(frozen=True, kw_only=True)
class Plane(Primitive):
    """An infinite plane through ``pos`` with ``normal`` (local frame, default +z). Always fixed.
    It is drawn as a square of ``plane_size`` (m, at most 200 m a side on screen)."""

    fixed: bool = True
    batch_fixed_verts: bool = False
    normal: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    plane_size: np.ndarray = field(default_factory=lambda: np.array([1e3, 1e3]))
    tile_size: np.ndarray = field(default_factory=lambda: np.array([1.0, 1.0]))
    kind = "plane"

    def __post_init__(self):
        super().__post_init__()
        if not self.fixed:
            raise InvalidValueError("fixed: a Plane is always fixed; expected True")
        if self.requires_jac_and_IK:
            raise InvalidValueError("requires_jac_and_IK: a Plane has no dofs; expected False")
        normal = _vector("normal", self.normal, 3)
        if np.linalg.norm(normal) < 1e-9:
            raise InvalidValueError(f"normal: expected a non-zero vector, got {normal.tolist()}")
        object.__setattr__(self, "normal", normal / np.linalg.norm(normal))
        for name in ("plane_size", "tile_size"):
            value = _vector(name, getattr(self, name), 2)
            if np.any(value <= 0):
                raise InvalidValueError(f"{name}: expected 2 positive lengths (m), got {value.tolist()}")
            object.__setattr__(self, name, value)


def resolve_mesh_file(file) -> Path:
    """A mesh file as Genesis finds it: the path itself, else the same relative path inside the
    engine's asset folder (``meshes/axis.obj`` is the project's frame marker), else inside Genesis'
    assets (:mod:`engine.genesis_assets`: an installed genesis package, then ``$GENESIS_ASSETS``)."""
    if not isinstance(file, str | Path) or not str(file).strip():
        raise InvalidTypeError(f"file: expected the path of a mesh file, got {file!r}")
    path = Path(file).expanduser()
    for candidate in (path, DATA_DIR / path, genesis_assets.find(path)):
        if candidate is not None and candidate.is_file():
            if candidate.suffix.lower() not in MESH_SUFFIXES:
                raise InvalidValueError(f"file: '{file}' is not a mesh file; expected one of "
                                        f"{', '.join(MESH_SUFFIXES)}")
            return candidate.resolve()
    if path.is_absolute():
        raise MissingFileError(f"file: no such mesh file: '{file}'")
    raise MissingFileError(f"file: no such mesh file: '{file}' (looked in the working folder {Path.cwd()}, in the "
                           f"project's data {DATA_DIR}, in {genesis_assets.places()})")


@dataclass(frozen=True, kw_only=True)
class Mesh(Shape):
    """A rigid body drawn with the mesh in ``file`` (.obj, .ply, .stl, .glb, ...; a path, or one
    of the engine's assets such as ``"meshes/axis.obj"``), scaled by ``scale`` (one factor or
    three, per axis). Genesis' decimation, convexification and parsing fields are accepted; the
    renderer decimates by its own level of detail."""

    file: Path | str = ""
    scale: float | np.ndarray = 1.0
    decimate: bool | None = None
    decimate_face_num: int = 500
    decimate_aggressiveness: int = 2
    convexify: bool | None = None
    decompose_nonconvex: bool | None = None
    decompose_object_error_threshold: float = 0.15
    decompose_robot_error_threshold: float = float("inf")
    coacd_options: object = None
    recompute_inertia: bool = False
    parse_glb_with_trimesh: bool = False
    parse_glb_with_zup: bool = False
    batch_fixed_verts: bool = False
    group_by_material: bool = False
    merge_submeshes_for_collision: bool = False
    kind = "mesh"

    def __post_init__(self):
        object.__setattr__(self, "file", resolve_mesh_file(self.file))
        super().__post_init__()
        scale = self.scale
        if isinstance(scale, bool | np.bool_ | str | bytes):
            raise InvalidTypeError(f"scale: expected a number or 3 numbers, got {scale!r}")
        factors = np.broadcast_to(_vector("scale", [scale] * 3, 3) if np.ndim(scale) == 0
                                  else _vector("scale", scale, 3), (3,))
        if np.any(factors <= 0) or factors.max() > MAX_SCALE:
            raise InvalidValueError(f"scale: expected positive factors up to {MAX_SCALE:g}, got {scale!r}")
        object.__setattr__(self, "scale", float(factors[0]) if np.ndim(scale) == 0 else factors.copy())
        if self.decimate is not None:
            _flag("decimate", self.decimate)
        for name in ("recompute_inertia", "parse_glb_with_trimesh", "parse_glb_with_zup",
                     "group_by_material", "merge_submeshes_for_collision"):
            _flag(name, getattr(self, name))

    @property
    def scale3(self) -> np.ndarray:
        """The scale as 3 factors (x, y, z)."""
        return np.broadcast_to(np.asarray(self.scale, float), (3,)).copy()


def __getattr__(name: str):
    """Genesis' morphs that this engine does not have: a clear error naming them."""
    from .genesis_names import MORPH_FEATURES, missing

    raise missing("engine.morphs", name, MORPH_FEATURES)
