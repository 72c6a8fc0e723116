"""``gs.materials``: Genesis' rigid-body materials, accepted for Genesis scripts.

``Rigid`` (Genesis' default) and ``Kinematic`` (a visual-only body in Genesis). Everything here is
kinematic, so both behave alike; ``Rigid.rho`` (kg/m^3) sets the mass of a primitive body
(Box, Sphere, Cylinder: rho x volume, used by the centre-of-mass task). The friction, coupling and
SDF fields are validated and otherwise unused (no contacts yet).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, StrictBool

from .errors import InvalidValueError
from .options import Number, Options, PosFloat, PosInt, number_field

__all__ = ["Kinematic", "Material", "Rigid"]


def _range(lo: float, hi: float):
    def check(v):
        x = number_field()(v)
        if not lo <= x <= hi:
            raise ValueError(f"expected a number in [{lo:g}, {hi:g}], got {v!r}")
        return x

    return check


class Material(Options):
    """Base of every material."""


class Kinematic(Material):
    """A body that is posed, never simulated (the only kind there is here)."""


class Rigid(Kinematic):
    """A rigid body. ``rho`` kg/m^3 (None: Genesis' 600 for plain objects) sets a primitive's mass."""

    rho: Annotated[float | None, BeforeValidator(lambda v: None if v is None else number_field("positive")(v))] = None
    friction: Annotated[float | None, BeforeValidator(lambda v: None if v is None else _range(0.01, 5.0)(v))] = None
    needs_coup: StrictBool = True
    coup_friction: Annotated[float, BeforeValidator(number_field("non-negative"))] = 0.1
    coup_softness: Annotated[float, BeforeValidator(number_field("non-negative"))] = 0.002
    coup_restitution: Annotated[float, BeforeValidator(_range(0.0, 1.0))] = 0.0
    sdf_cell_size: PosFloat = 0.005
    sdf_min_res: PosInt = 32
    sdf_max_res: PosInt = 128
    gravity_compensation: Number = 0.0

    def model_post_init(self, context: Any) -> None:
        if self.sdf_min_res > self.sdf_max_res:
            raise InvalidValueError(f"Rigid.sdf_min_res: expected at most sdf_max_res ({self.sdf_max_res}), got "
                                    f"{self.sdf_min_res}")
