"""Pydantic v2 models of a scene file. Every model forbids unknown keys.

The models check each value on its own (shapes, ranges, types) and the few rules that tie keys of
one mapping together (``quat`` or ``rpy``, ``seconds`` or ``frames``). Rules that need the robot or
several sections (link names, groups, per-env counts) are in :func:`engine.scenefile.io.check_spec`,
and building a scene from a spec is :func:`engine.scenefile.runner.build`: this module holds data and
its validation only, and imports nothing of the engine beyond this package's errors and patterns.

Values are kept as written (a quaternion is not normalised, an rpy is not turned into a quaternion)
so that saving a loaded spec writes the same file back; the ``*_quat()`` helpers give the derived
values.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, model_validator

from .errors import custom, show
from .patterns import PLANES, rpy_to_quat

# -- value types ------------------------------------------------------------------------------------


MAX_NUMBER = 1e30  # beyond this a number is inf, or overflows, in the engine's float32 kernels


def _is_number(x) -> bool:
    """A real number that fits a float (YAML can write ints too big for one)."""
    if not isinstance(x, int | float | np.integer | np.floating) or isinstance(x, bool | np.bool_):
        return False
    try:
        float(x)
    except OverflowError:
        return False
    return True


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _seq(v) -> bool:
    return isinstance(v, list | tuple | np.ndarray)


def _numbers(n: int, what: str = "numbers", finite: bool = True):
    def check(v):
        if not _seq(v):
            raise custom(f"expected {n} {what}, got {show(v)}")
        if len(v) != n:
            raise custom(f"expected {n} {what}, got {len(v)}")
        if not all(_is_number(x) for x in v):
            raise custom(f"expected {n} {what}, got {show(list(v))}")
        if finite and not all(math.isfinite(float(x)) for x in v):
            raise custom(f"expected {n} finite {what}, got {show([float(x) for x in v])}")
        if finite and any(abs(float(x)) > MAX_NUMBER for x in v):
            raise custom(f"expected {n} {what} within +-{MAX_NUMBER:g}, got {show([float(x) for x in v])}")
        return tuple(float(x) for x in v)

    return check


def _quat(v):
    q = _numbers(4, "numbers (w, x, y, z)")(v)
    if math.sqrt(sum(x * x for x in q)) < 1e-9:
        raise custom(f"expected a non-zero (w, x, y, z) quaternion, got {show(list(q))}")
    return q


def _mask(v):
    if not _seq(v):
        raise custom(f"expected 3 booleans, got {show(v)}")
    if len(v) != 3:
        raise custom(f"expected 3 booleans, got {len(v)}")
    out = []
    for x in v:
        if isinstance(x, bool | np.bool_):
            out.append(bool(x))
        elif _is_number(x) and x in (0, 1):
            out.append(bool(x))
        else:
            raise custom(f"expected 3 booleans, got {show(list(v))}")
    return tuple(out)


def _rot_mask(v):
    mask = _mask(v)
    if sum(mask) == 2:
        raise custom(f"{show(list(mask))} has two true axes; two aligned axes fix the third, so use all three "
                     "(full orientation), one (align that axis) or none (orientation free)")
    return mask


def _number(low: float | None = None, strict_low: bool = False, high: float | None = None,
            strict_high: bool = False, integer: bool = False, quiet_high: bool = False):
    """A number check; ``quiet_high``: the upper bound is a technical one (the kernels' int32),
    named only in the message of a value beyond it."""
    kind = "an integer" if integer else "a number"
    if high is not None and quiet_high:
        over = f"expected at most {high:,}"
        high_shown = None
    else:
        over = None
        high_shown = high
    if low is not None and high_shown is not None:
        want = f"{kind} in {'(' if strict_low else '['}{_fmt(low)}, {_fmt(high)}{')' if strict_high else ']'}"
    elif low == 0 and strict_low:
        want = f"a positive {'integer' if integer else 'number'}"
    elif low == 0:
        want = f"a non-negative {'integer' if integer else 'number'}"
    elif low is not None:
        want = f"{kind} {'>' if strict_low else '>='} {_fmt(low)}"
    else:
        want = kind

    def check(v):
        if not _is_number(v) or not math.isfinite(float(v)):
            raise custom(f"expected {want}, got {show(v)}")
        if abs(float(v)) > MAX_NUMBER:
            raise custom(f"expected {want} within +-{MAX_NUMBER:g}, got {show(v)}")
        if integer and float(v) != int(v):
            raise custom(f"expected {want}, got {show(v)}")
        x = float(v)
        if low is not None and (x < low or strict_low and x == low):
            raise custom(f"expected {want}, got {show(v)}")
        if high is not None and (x > high or strict_high and x == high):
            raise custom(f"{over or 'expected ' + want}, got {show(v)}")
        return int(v) if integer else x

    return check


def _range(v):
    if _is_number(v):
        v = [v, v]
    if not _seq(v) or len(v) != 2 or not all(_is_number(x) and math.isfinite(float(x)) for x in v):
        raise custom(f"expected [min, max] (2 numbers) or one number, got {show(v)}")
    lo, hi = float(v[0]), float(v[1])
    if lo > hi:
        raise custom(f"expected [min, max] with min <= max, got {show([v[0], v[1]])}")
    return (lo, hi)


def _resolution(v):
    if not _seq(v) or len(v) != 2 or not all(_is_number(x) and float(x) == int(x) for x in v):
        raise custom(f"expected [width, height] (2 integers), got {show(v)}")
    w, h = int(v[0]), int(v[1])
    if not (16 <= w <= 8192 and 16 <= h <= 8192):
        raise custom(f"expected [width, height] with each in [16, 8192] pixels, got {show([w, h])}")
    return (w, h)


def _text(what: str):
    def check(v):
        if not isinstance(v, str) or not v.strip():
            raise custom(f"expected {what}, got {show(v)}")
        return v

    return check


def _plane(v):
    if v not in PLANES:
        raise custom(f"expected one of {', '.join(PLANES)}, got {show(v)}")
    return v


def _bool(v):
    if not isinstance(v, bool | np.bool_):
        raise custom(f"expected true or false, got {show(v)}")
    return bool(v)


Vec2 = Annotated[tuple[float, float], BeforeValidator(_numbers(2))]
Vec3 = Annotated[tuple[float, float, float], BeforeValidator(_numbers(3))]
Quat = Annotated[tuple[float, float, float, float], BeforeValidator(_quat)]
Mask = Annotated[tuple[bool, bool, bool], BeforeValidator(_mask)]
RotMask = Annotated[tuple[bool, bool, bool], BeforeValidator(_rot_mask)]
Range = Annotated[tuple[float, float], BeforeValidator(_range)]
Resolution = Annotated[tuple[int, int], BeforeValidator(_resolution)]
Bool = Annotated[bool, BeforeValidator(_bool)]
PosInt = Annotated[int, BeforeValidator(_number(0, strict_low=True, high=2**31 - 1, integer=True, quiet_high=True))]
NonNegInt = Annotated[int, BeforeValidator(_number(0, high=2**31 - 1, integer=True, quiet_high=True))]
# envs a scene file may ask for: every env is drawn by the app and the recorder (the app's own limit
# too, app/controller.py); the engine's API takes more (engine.Scene.build checks the memory)
MAX_ENVS = 1024
EnvCount = Annotated[int, BeforeValidator(_number(1, high=MAX_ENVS, integer=True))]
Seed = Annotated[int, BeforeValidator(_number(0, high=2**31 - 1, integer=True))]
PosFloat = Annotated[float, BeforeValidator(_number(0, strict_low=True))]
NonNegFloat = Annotated[float, BeforeValidator(_number(0))]
Float = Annotated[float, BeforeValidator(_number())]
# restarts and iterations a scene file may ask for: each frame solves them all; 10,000 x 10,000 on
# an unreachable target is already hours (the engine's API takes up to int32)
MAX_SOLVER_COUNT = 10_000
SolverCount = Annotated[int, BeforeValidator(_number(1, high=MAX_SOLVER_COUNT, integer=True))]
# frames per second of a recording (and the runner's step): below 0.1, a frame is 10 s of motion
Fps = Annotated[float, BeforeValidator(_number(0.1, high=1000, integer=False))]
Fov = Annotated[float, BeforeValidator(_number(0, strict_low=True, high=180, strict_high=True))]
Name = Annotated[str, BeforeValidator(_text("a non-empty string"))]
Plane = Annotated[str, BeforeValidator(_plane)]


class _Model(BaseModel):
    """Base: unknown keys are errors; equality is by value; the file's key order is remembered."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    _key_order: list[str] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler):
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, _Model):
            model._key_order = [k for k in data if isinstance(k, str)]
        return model

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self.model_dump() == other.model_dump()

    __hash__ = None  # mutable, compared by value


# -- sections ---------------------------------------------------------------------------------------


class RobotSpec(_Model):
    """``robot: panda`` or ``robot: {file: ..., pos, quat, fixed, scale}``.

    ``file``: a catalog name (``ikstudio robots``) or a path to a .urdf / .xml (relative to the scene
    file). ``fixed`` (URDF only, default true) bolts the root link down; false adds a free joint.
    """

    file: Name
    pos: Vec3 = (0.0, 0.0, 0.0)
    quat: Quat = (1.0, 0.0, 0.0, 0.0)
    fixed: Bool | None = None
    scale: PosFloat = 1.0

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, data):
        return {"file": data} if isinstance(data, str) else data


class EnvsSpec(_Model):
    """``n_envs`` parallel environments laid out ``env_spacing`` (x, y) metres apart on screen."""

    n_envs: EnvCount = 1
    env_spacing: Annotated[tuple[float, float], BeforeValidator(_numbers(2))] = (1.0, 1.0)

    @model_validator(mode="after")
    def _spacing(self):
        if any(x < 0 for x in self.env_spacing):
            raise custom(f"expected 2 non-negative numbers, got {show(list(self.env_spacing))}", at="env_spacing")
        return self


class SolverSpec(_Model):
    """IK parameters, Genesis' defaults (see ``RigidEntity.inverse_kinematics``).

    ``seed``: restarts are seeded with ``seed + frame`` so a run is reproducible; null draws randomly.
    ``kernel``: which compiled solver runs (see ``engine.ik.KERNELS``); "generic" by default, so
    that loading a robot or adding a target never waits for a per-robot compile (~10 s the first
    time); "auto" is faster per call once compiled.
    """

    max_samples: SolverCount = 50
    max_solver_iters: Annotated[int, BeforeValidator(_number(0, high=MAX_SOLVER_COUNT, integer=True))] = 20
    damping: PosFloat = 0.01
    pos_tol: PosFloat = 5e-4
    rot_tol: PosFloat = 5e-3
    max_step_size: PosFloat = 0.5
    respect_joint_limit: Bool = True
    seed: Seed | None = None
    rest_weight: NonNegFloat = 0.0
    kernel: Literal["auto", "per_robot", "generic"] = "generic"


# -- motion patterns --------------------------------------------------------------------------------


class CircleMotion(_Model):
    """Circle around ``target.pos + center`` in ``plane``; per-env speed uniform in ``speed`` (rad/s)."""

    type: Literal["circle"]
    radius: PosFloat = 0.1
    center: Vec3 = (0.0, 0.0, 0.0)
    plane: Plane = "xy"
    speed: Range = (1.0, 1.0)
    phase: Float = 0.0
    seed: Seed | None = 0


class OffsetMotion(_Model):
    """Fixed per-env offsets added to ``target.pos``: exactly one of ``offsets`` (one [x, y, z] per env),
    ``grid`` (half-extents [x, y, z] of a box filled by a regular grid) or ``random`` (half-extents of a
    box, uniform, seeded)."""

    type: Literal["offset"]
    offsets: list[Vec3] | None = None
    grid: Vec3 | None = None
    random: Vec3 | None = None
    seed: Seed | None = 0

    @model_validator(mode="after")
    def _one_spread(self):
        given = [k for k in ("offsets", "grid", "random") if getattr(self, k) is not None]
        if len(given) != 1:
            raise custom("expected exactly one of offsets, grid or random, got "
                         + (", ".join(given) if given else "none"))
        for key in ("grid", "random"):
            value = getattr(self, key)
            if value is not None and any(x < 0 for x in value):
                raise custom(f"expected 3 non-negative half-extents, got {show(list(value))}", at=key)
        if self.offsets is not None and not self.offsets:
            raise custom("expected one [x, y, z] per env, got an empty list", at="offsets")
        return self


class Figure8Motion(_Model):
    """Figure eight (width 2 radius, height radius) around ``target.pos + center``, one lap per ``period``
    seconds; env i starts at phase ``phase + i * env_phase`` (rad)."""

    type: Literal["figure8"]
    radius: PosFloat = 0.1
    period: PosFloat = 4.0
    center: Vec3 = (0.0, 0.0, 0.0)
    plane: Plane = "xy"
    phase: Float = 0.0
    env_phase: Float = 0.0


class KeyPose(_Model):
    """One keyframe: ``pos`` and ``quat`` (or ``rpy``, degrees); a missing one is the target's."""

    pos: Vec3 | None = None
    quat: Quat | None = None
    rpy: Vec3 | None = None

    @model_validator(mode="after")
    def _orientation(self):
        if self.quat is not None and self.rpy is not None:
            raise custom("give quat or rpy, not both", at="rpy")
        return self

    def orientation(self) -> np.ndarray | None:
        """(w, x, y, z), unit, or None."""
        return _orientation(self.quat, self.rpy)


class KeyframesMotion(_Model):
    """Poses at ``times`` (s, increasing): positions interpolated linearly, orientations by slerp.
    ``loop`` wraps time over ``[times[0], times[-1]]``; else the last pose is held. Env i runs
    ``i * stagger`` seconds behind env 0."""

    type: Literal["keyframes"]
    times: list[Float] = Field(min_length=1)
    poses: list[KeyPose] = Field(min_length=1)
    loop: Bool = False
    stagger: NonNegFloat = 0.0

    @model_validator(mode="after")
    def _consistent(self):
        if len(self.times) != len(self.poses):
            raise custom(f"expected as many times as poses, got {len(self.times)} times and {len(self.poses)} "
                         "poses", at="times")
        if any(b <= a for a, b in zip(self.times, self.times[1:])):
            raise custom(f"expected strictly increasing times, got {show(list(self.times))}", at="times")
        if self.loop and len(self.times) < 2:
            raise custom("a looping motion needs at least 2 keyframes", at="loop")
        for key in ("pos", "quat"):
            has = [getattr(p, key) is not None or key == "quat" and p.rpy is not None for p in self.poses]
            if any(has) and not all(has):
                raise custom(f"either every keyframe has a {key} or none does", at="poses")
        return self


MOTION_TYPES = {"circle": CircleMotion, "offset": OffsetMotion, "figure8": Figure8Motion,
                "keyframes": KeyframesMotion}
Motion = Annotated[CircleMotion | OffsetMotion | Figure8Motion | KeyframesMotion, Field(discriminator="type")]


def _orientation(quat, rpy) -> np.ndarray | None:
    if quat is not None:
        q = np.asarray(quat, float)
        return q / np.linalg.norm(q)
    if rpy is not None:
        return rpy_to_quat(rpy)
    return None


class TargetSpec(_Model):
    """One IK target: ``link`` at ``pos`` / ``quat`` (w, x, y, z) or ``rpy`` (degrees), with masks.

    Targets sharing a ``group`` name are solved together in one ``inverse_kinematics_multilink``
    call (and must share their masks); a target without ``group`` is solved on its own. ``motion``
    animates the target (see :mod:`engine.scenefile.patterns`).
    """

    link: Name
    pos: Vec3 | None = None
    quat: Quat | None = None
    rpy: Vec3 | None = None
    pos_mask: Mask = (True, True, True)
    rot_mask: RotMask = (True, True, True)
    group: Name | None = None
    motion: Motion | None = None

    @model_validator(mode="after")
    def _consistent(self):
        if self.quat is not None and self.rpy is not None:
            raise custom("give quat or rpy, not both", at="rpy")
        animated_pos = isinstance(self.motion, KeyframesMotion) and self.motion.poses[0].pos is not None
        animated_rot = isinstance(self.motion, KeyframesMotion) and self.motion.poses[0].orientation() is not None
        if self.motion is not None and not isinstance(self.motion, KeyframesMotion) and self.pos is None:
            raise custom(f"a {self.motion.type} motion moves the target's pos; give the target a pos", at="motion")
        if self.pos is None and self.quat is None and self.rpy is None and not animated_pos and not animated_rot:
            raise custom("expected pos, quat or rpy (a target with none of them constrains nothing)")
        return self

    def orientation(self) -> np.ndarray | None:
        """The target's unit quaternion (w, x, y, z) from ``quat`` or ``rpy``, or None."""
        return _orientation(self.quat, self.rpy)


class CameraSpec(_Model):
    """Viewer / recording camera: ``pos`` and ``lookat`` in metres, vertical ``fov`` in degrees."""

    pos: Vec3 = (3.5, 0.5, 2.5)
    lookat: Vec3 = (0.0, 0.0, 0.5)
    fov: Fov = 30.0

    @model_validator(mode="after")
    def _distinct(self):
        if np.allclose(self.pos, self.lookat):
            raise custom(f"expected a point other than pos, got {show(list(self.pos))} for both", at="lookat")
        return self


class RecordSpec(_Model):
    """Video settings: ``fps``, length as ``seconds`` or ``frames`` (default 4 s), ``resolution``
    [W, H] in pixels, ``output`` path (relative to the scene file)."""

    fps: Fps = 30.0
    seconds: PosFloat | None = None
    frames: PosInt | None = None
    resolution: Resolution = (1280, 720)
    output: Name | None = None

    @model_validator(mode="after")
    def _length(self):
        if self.seconds is not None and self.frames is not None:
            raise custom("give seconds or frames, not both", at="frames")
        return self

    @property
    def n_frames(self) -> int:
        if self.frames is not None:
            return self.frames
        return max(1, round((self.seconds if self.seconds is not None else 4.0) * self.fps))


DEFAULT_FPS = 30.0


class SceneSpec(_Model):
    """A whole scene file. Load with :func:`engine.scenefile.load`; build with :func:`engine.scenefile.build`."""

    description: str | None = None
    robot: RobotSpec
    envs: EnvsSpec = Field(default_factory=EnvsSpec)
    solver: SolverSpec = Field(default_factory=SolverSpec)
    targets: list[TargetSpec] = Field(default_factory=list)
    camera: CameraSpec | None = None
    record: RecordSpec | None = None

    _source: Path | None = PrivateAttr(default=None)
    _base: Path | None = PrivateAttr(default=None)  # loads(text, base_dir=...): no file, but a folder

    # -- paths -------------------------------------------------------------------------------------
    @property
    def source(self) -> Path | None:
        """The file this spec was loaded from (None for a spec made in code)."""
        return self._source

    @property
    def base_dir(self) -> Path:
        """Relative paths in the spec resolve against this folder (the file's, else the cwd)."""
        if self._base is not None:
            return self._base
        return self._source.parent if self._source is not None else Path.cwd()

    def resolve_path(self, path: str | Path) -> Path:
        """``path`` as written in the file, made absolute against :attr:`base_dir`."""
        p = Path(path).expanduser()
        return p if p.is_absolute() else (self.base_dir / p).resolve()

    @property
    def fps(self) -> float:
        """Frames (runner steps) per second: ``record.fps``, else 30."""
        return self.record.fps if self.record is not None else DEFAULT_FPS

    def groups(self) -> list[tuple[str | None, list[int]]]:
        """Solve groups in file order: ``[(group name or None, [target indices])]``."""
        out: list[tuple[str | None, list[int]]] = []
        index: dict[str, int] = {}
        for i, target in enumerate(self.targets):
            if target.group is None:
                out.append((None, [i]))
            elif target.group in index:
                out[index[target.group]][1].append(i)
            else:
                index[target.group] = len(out)
                out.append((target.group, [i]))
        return out
