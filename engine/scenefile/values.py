"""The value types of scene files: numbers, vectors, quaternions, masks, ranges and names, each a
pydantic ``Annotated`` type whose check raises the message a user reads (through
:func:`engine.scenefile.errors.custom`). Imports nothing of the engine beyond this package's
errors and patterns.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
from pydantic import BeforeValidator

from .errors import custom, show
from .patterns import PLANES

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


def numbers_field(n: int, what: str = "numbers", finite: bool = True):
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
    q = numbers_field(4, "numbers (w, x, y, z)")(v)
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


def number_field(low: float | None = None, strict_low: bool = False, high: float | None = None,
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


MAX_LENGTH = 1e6  # m: the engine's bound on a body's position and size (engine.morphs.MAX_POS; float32 poses)


def _lengths(n: int):
    """``n`` positive lengths (m); one number when ``n`` is 1."""
    what = "a positive length (m)" if n == 1 else f"{n} positive lengths (m)"

    def check(v):
        values = [v] if n == 1 and _is_number(v) else v
        if n == 1 and not _is_number(v) or not _seq(values) or len(values) != n \
                or not all(_is_number(x) and math.isfinite(float(x)) for x in values):
            raise custom(f"expected {what}, got {show(v)}")
        if not all(0 < float(x) <= MAX_LENGTH for x in values):
            raise custom(f"expected {what} up to {MAX_LENGTH:g}, got {show(v)}")
        return float(values[0]) if n == 1 else tuple(float(x) for x in values)

    return check


def _position(v):
    p = numbers_field(3)(v)
    if max(abs(x) for x in p) > MAX_LENGTH:
        raise custom(f"expected 3 coordinates within +-{MAX_LENGTH:g} m, got {show(list(p))}")
    return p


def _color(v):
    if not _seq(v) or len(v) not in (3, 4) or not all(_is_number(x) for x in v):
        raise custom(f"expected [r, g, b] or [r, g, b, a] (numbers in [0, 1]), got {show(v)}")
    if not all(0.0 <= float(x) <= 1.0 for x in v):
        raise custom(f"expected colour components in [0, 1], got {show(list(v))}")
    return tuple(float(x) for x in v)


def _scale(v):
    if _is_number(v):
        factors = [v]
    elif _seq(v) and len(v) == 3:
        factors = list(v)
    else:
        raise custom(f"expected a scale factor or 3 (x, y, z), got {show(v)}")
    if not all(_is_number(x) and math.isfinite(float(x)) and 0 < float(x) <= MAX_LENGTH for x in factors):
        raise custom(f"expected positive scale factors up to {MAX_LENGTH:g}, got {show(v)}")
    return float(v) if _is_number(v) else tuple(float(x) for x in v)


Vec2 = Annotated[tuple[float, float], BeforeValidator(numbers_field(2))]
Vec3 = Annotated[tuple[float, float, float], BeforeValidator(numbers_field(3))]
Quat = Annotated[tuple[float, float, float, float], BeforeValidator(_quat)]
Mask = Annotated[tuple[bool, bool, bool], BeforeValidator(_mask)]
RotMask = Annotated[tuple[bool, bool, bool], BeforeValidator(_rot_mask)]
Range = Annotated[tuple[float, float], BeforeValidator(_range)]
Resolution = Annotated[tuple[int, int], BeforeValidator(_resolution)]
Bool = Annotated[bool, BeforeValidator(_bool)]
PosInt = Annotated[int, BeforeValidator(number_field(0, strict_low=True, high=2**31 - 1, integer=True,
                                                     quiet_high=True))]
NonNegInt = Annotated[int, BeforeValidator(number_field(0, high=2**31 - 1, integer=True, quiet_high=True))]
# envs a scene file may ask for: every env is drawn by the app and the recorder (the app's own limit
# too, app/control/controller.py); the engine's API takes more (engine.Scene.build checks the memory)
MAX_ENVS = 1024
EnvCount = Annotated[int, BeforeValidator(number_field(1, high=MAX_ENVS, integer=True))]
Seed = Annotated[int, BeforeValidator(number_field(0, high=2**31 - 1, integer=True))]
PosFloat = Annotated[float, BeforeValidator(number_field(0, strict_low=True))]
NonNegFloat = Annotated[float, BeforeValidator(number_field(0))]
Float = Annotated[float, BeforeValidator(number_field())]
# restarts and iterations a scene file may ask for: each frame solves them all; 10,000 x 10,000 on
# an unreachable target is already hours (the engine's API takes up to int32)
MAX_SOLVER_COUNT = 10_000
SolverCount = Annotated[int, BeforeValidator(number_field(1, high=MAX_SOLVER_COUNT, integer=True))]
# frames per second of a recording (and the runner's step): below 0.1, a frame is 10 s of motion
Fps = Annotated[float, BeforeValidator(number_field(0.1, high=1000, integer=False))]
Fov = Annotated[float, BeforeValidator(number_field(0, strict_low=True, high=180, strict_high=True))]
Name = Annotated[str, BeforeValidator(_text("a non-empty string"))]
Plane = Annotated[str, BeforeValidator(_plane)]
Length = Annotated[float, BeforeValidator(_lengths(1))]
Lengths2 = Annotated[tuple[float, float], BeforeValidator(_lengths(2))]
Lengths3 = Annotated[tuple[float, float, float], BeforeValidator(_lengths(3))]
Position = Annotated[tuple[float, float, float], BeforeValidator(_position)]
Color = Annotated[tuple[float, ...], BeforeValidator(_color)]
Scale = Annotated[float | tuple[float, float, float], BeforeValidator(_scale)]


def _velocity(v):
    """``max_joint_velocity``: "file" (the robot file's limits), a positive number (rad/s or m/s,
    every hinge and slide) or a list of them, one per dof."""
    if v == "file":
        return v
    positive = number_field(0, strict_low=True)
    if _seq(v):
        if not v:
            raise custom("expected \"file\", a positive number or a list of them (one per dof), got []")
        return tuple(positive(x) for x in v)
    if _is_number(v):
        return positive(v)
    raise custom(f"expected \"file\", a positive number or a list of them (one per dof), got {show(v)}")


# rad/s (m/s for slides): "file" (the robot's own), one number, or one per dof
Velocity = Annotated[str | float | tuple[float, ...], BeforeValidator(_velocity)]
