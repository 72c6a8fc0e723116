"""``gs.surfaces``: how an entity looks, with Genesis' class and field names.

``scene.add_entity(morph, surface=gs.surfaces.Default(color=(1, 0.5, 0.5, 1)))``. The renderer
uses ``color`` (rgb or rgba in [0, 1]; it replaces the colours of every visual of the entity,
those of a mesh or robot file included) and ``opacity`` (in [0, 1]; it replaces the alpha).
``vis_mode`` is checked as Genesis checks it for rigid bodies ("visual", "collision", "sdf");
every mode draws the visual geometry here (there is no collision geometry yet). The other fields
(roughness, metallic, emissive, ior, smoothing, ...) are accepted and validated, not rendered:
the renderer's lighting is its own. ``Emission`` draws its colour lit like any other surface.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import BeforeValidator, StrictBool

from .errors import InvalidValueError
from .options import Number, Options, number_field, shown, type_error

__all__ = ["BSDF", "Collision", "Default", "Emission", "Glass", "Metal", "Plastic", "Reflective", "Rough", "Smooth",
           "Surface", "Water"]


def _color(v):
    if v is None:
        return None
    if isinstance(v, str | bytes) or not hasattr(v, "__len__") or len(v) not in (3, 4):
        raise type_error("3 or 4 numbers (r, g, b[, a]) in [0, 1]", v)
    values = tuple(number_field()(x) for x in v)
    if not all(0.0 <= x <= 1.0 for x in values):
        raise ValueError(f"expected colour components in [0, 1], got {shown(v)}")
    return values


def _unit(v):
    if v is None:
        return None
    x = number_field()(v)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"expected a number in [0, 1], got {shown(v)}")
    return x


Color = Annotated[tuple[float, ...] | None, BeforeValidator(_color)]
OptPositive = Annotated[float | None, BeforeValidator(lambda v: None if v is None else number_field("positive")(v))]
Unit = Annotated[float | None, BeforeValidator(_unit)]


class Surface(Options):
    """Base of every surface: ``color``, ``opacity`` (used by the renderer) and Genesis' other
    fields (accepted)."""

    color: Color = None
    opacity: Unit = None
    roughness: Unit = None
    metallic: Unit = None
    emissive: Color = None
    ior: OptPositive = None
    default_roughness: Unit = 1.0
    vis_mode: Literal["visual", "collision", "particle", "sdf", "recon"] | None = None
    smooth: StrictBool = True
    double_sided: StrictBool | None = None
    cutoff: Number = 180.0
    normal_diff_clamp: Number = 180.0
    recon_backend: Literal["splashsurf", "openvdb"] = "splashsurf"
    generate_foam: StrictBool = False

    def rgba(self, rgba) -> np.ndarray:
        """``rgba`` (4,) with this surface's colour and opacity applied (a copy)."""
        out = np.array(rgba, dtype=float, copy=True)
        if self.color is not None:
            out[: len(self.color)] = self.color
        if self.opacity is not None:
            out[3] = self.opacity
        return out

    @property
    def sets_color(self) -> bool:
        """True when the surface replaces the entity's colours or opacity."""
        return self.color is not None or self.opacity is not None


class Plastic(Surface):
    """Plastic, the basic surface (Genesis' ior 1.0)."""

    ior: OptPositive = 1.0


class BSDF(Surface):
    """Disney BSDF; ``specular_trans`` and ``diffuse_trans`` accepted."""

    ior: OptPositive = 1.0
    specular_trans: Number = 0.0
    diffuse_trans: Number = 0.0


class Default(BSDF):
    """Genesis' default surface (a BSDF)."""


class Rough(Plastic):
    """Rough plastic (roughness 1.0, ior 1.5)."""

    roughness: Unit = 1.0
    ior: OptPositive = 1.5


class Smooth(Plastic):
    """Smooth plastic (roughness 0.1, ior 1.5)."""

    roughness: Unit = 0.1
    ior: OptPositive = 1.5


class Reflective(Plastic):
    """Reflective plastic (roughness 0.01, ior 2.0)."""

    roughness: Unit = 0.01
    ior: OptPositive = 2.0


class Collision(Plastic):
    """Genesis' surface of collision geometry (grey)."""

    color: Color = (0.5, 0.5, 0.5)


class Metal(Surface):
    """Metal (roughness 0.1); ``metal_type`` as Genesis names them."""

    roughness: Unit = 0.1
    metal_type: Literal["aluminium", "gold", "copper", "brass", "iron", "titanium", "vanadium", "lithium"] = "iron"


class Emission(Surface):
    """A light-emitting surface; its colour is drawn (lit like the others: no glow here)."""


class Glass(Surface):
    """Glass (roughness 0.0, ior 1.5); ``subsurface`` and ``thickness`` accepted."""

    roughness: Unit = 0.0
    ior: OptPositive = 1.5
    subsurface: StrictBool = False
    thickness: OptPositive = None


class Water(Glass):
    """Genesis' water (a Glass)."""


RIGID_VIS_MODES = ("visual", "collision", "sdf")


def check_vis_mode(surface: Surface, vis_mode) -> None:
    """Apply ``add_entity``'s ``vis_mode`` shortcut to ``surface`` and check it for a rigid body."""
    if vis_mode is not None:
        surface.vis_mode = vis_mode
    if surface.vis_mode is None:
        surface.vis_mode = "visual"
    if surface.vis_mode not in RIGID_VIS_MODES:
        raise InvalidValueError(f"vis_mode: expected one of {RIGID_VIS_MODES} for a rigid entity, got "
                                f"{surface.vis_mode!r}")


def apply(surface: Surface, tree) -> None:
    """Give every visual of ``tree`` the surface's colour and opacity (in place; none: nothing)."""
    if not surface.sets_color:
        return
    for link in tree.links:
        for visual in link.visuals:
            visual.rgba = surface.rgba(visual.rgba)
            if surface.color is not None:
                visual.mesh_colors = False
