"""``gs.options``: Genesis' option groups, with Genesis' field names and defaults.

``SimOptions``, ``RigidOptions``, ``ViewerOptions`` and ``VisOptions`` are small pydantic models
(:class:`Options`). An unknown field is a ``TypeError`` naming it (also on assignment); a value of
the wrong type is a ``TypeError`` and one out of range a ``ValueError``, both naming the field.
Vectors take any sequence of numbers (a list, a tuple, a numpy array) and are kept as tuples of
floats.

What takes effect here (everything else is accepted, validated and documented as physics or
rendering this kinematic engine does not do):

* ``SimOptions.dt`` / ``RigidOptions.dt`` (s): the step of ``scene.step()`` (RigidOptions' wins
  when given, as in Genesis).
* ``RigidOptions.enable_joint_limit``: ``scene.step()`` keeps controlled hinges and slides within
  their limits (a limit is a constraint of the simulation; ``set_qpos`` teleports without one).
* ``ViewerOptions``: ``res`` and ``camera_*`` set the camera of the viewer window and of
  ``scene.visualizer`` (renders and recordings); ``refresh_rate`` the window's redraw rate;
  ``max_FPS`` caps ``scene.step()`` while the viewer window is open.
* ``VisOptions``: ``show_world_frame`` / ``world_frame_size``, ``show_link_frame`` /
  ``link_frame_size``, ``background_color``, ``ambient_light`` and ``rendered_envs_idx``.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, StrictBool, ValidationError
from pydantic_core import PydanticCustomError

from .errors import InvalidTypeError, InvalidValueError

__all__ = ["Options", "RigidOptions", "SimOptions", "ViewerOptions", "VisOptions"]


# -- value types ------------------------------------------------------------------------------------
def type_error(expected: str, value) -> PydanticCustomError:
    return PydanticCustomError("ikstudio_type", "expected {expected}, got {got}",
                               {"expected": expected, "got": shown(value)})


def shown(value) -> str:
    text = repr(value.tolist() if isinstance(value, np.ndarray) else value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_number(x) -> bool:
    return isinstance(x, int | float | np.integer | np.floating) and not isinstance(x, bool | np.bool_)


def number_field(kind: str = "any", integer: bool = False):
    """A real number (bools and strings refused); ``kind``: "any", "positive" or "non-negative"."""
    what = ("an integer" if integer else "a number") if kind == "any" else \
        f"a {kind} {'integer' if integer else 'number'}"

    def check(v):
        if not _is_number(v) or (integer and not float(v).is_integer()):
            raise type_error(what, v)
        x = float(v)
        if not math.isfinite(x) or (kind == "positive" and x <= 0) or (kind == "non-negative" and x < 0):
            raise ValueError(f"expected {what}, got {shown(v)}")
        return int(x) if integer else x

    return check


def _vector(n: int, unit: bool = False, nonzero: bool = False):
    """``n`` finite numbers as a tuple of floats; ``unit``: each in [0, 1] (a colour)."""
    def check(v):
        if isinstance(v, str | bytes) or not hasattr(v, "__len__"):
            raise type_error(f"{n} numbers", v)
        if len(v) != n or not all(_is_number(x) for x in v):
            raise type_error(f"{n} numbers", v)
        out = tuple(float(x) for x in v)
        if not all(math.isfinite(x) for x in out):
            raise ValueError(f"expected {n} finite numbers, got {shown(v)}")
        if unit and not all(0.0 <= x <= 1.0 for x in out):
            raise ValueError(f"expected {n} numbers in [0, 1], got {shown(v)}")
        if nonzero and math.sqrt(sum(x * x for x in out)) < 1e-9:
            raise ValueError(f"expected a non-zero vector, got {shown(v)}")
        return out

    return check


def _resolution(v):
    if v is None:
        return None
    if isinstance(v, str | bytes) or not hasattr(v, "__len__") or len(v) != 2 or \
            not all(_is_number(x) and float(x).is_integer() for x in v):
        raise type_error("2 integers (width, height)", v)
    w, h = int(v[0]), int(v[1])
    if not (1 <= w <= 8192 and 1 <= h <= 8192):
        raise ValueError(f"expected width and height in [1, 8192] px, got {(w, h)}")
    return w, h


def _index_list(v):
    if v is None:
        return None
    arr = np.asarray(v)
    if arr.ndim != 1 or arr.size == 0 or not (np.issubdtype(arr.dtype, np.integer)) or np.any(arr < 0):
        raise type_error("a non-empty list of env indices (ints >= 0)", v)
    if np.unique(arr).size != arr.size:
        raise ValueError(f"expected unique env indices, got {shown(v)}")
    return [int(i) for i in arr]


Number = Annotated[float, BeforeValidator(number_field())]
PosFloat = Annotated[float, BeforeValidator(number_field("positive"))]
NonNegFloat = Annotated[float, BeforeValidator(number_field("non-negative"))]
PosInt = Annotated[int, BeforeValidator(number_field("positive", integer=True))]
Vec3 = Annotated[tuple[float, float, float], BeforeValidator(_vector(3))]
Dir3 = Annotated[tuple[float, float, float], BeforeValidator(_vector(3, nonzero=True))]
Color3 = Annotated[tuple[float, float, float], BeforeValidator(_vector(3, unit=True))]
Resolution = Annotated[tuple[int, int] | None, BeforeValidator(_resolution)]
EnvList = Annotated[list[int] | None, BeforeValidator(_index_list)]


def _optional(check):
    return lambda v: None if v is None else check(v)


OptPosFloat = Annotated[float | None, BeforeValidator(_optional(number_field("positive")))]
OptPosInt = Annotated[int | None, BeforeValidator(_optional(number_field("positive", integer=True)))]
NonNegInt = Annotated[int, BeforeValidator(number_field("non-negative", integer=True))]
OptNonNegInt = Annotated[int | None, BeforeValidator(_optional(number_field("non-negative", integer=True)))]
OptVec3 = Annotated[tuple[float, float, float] | None, BeforeValidator(_optional(_vector(3)))]


def _fov(v):
    x = number_field("positive")(v)
    if x >= 180:
        raise ValueError(f"expected a vertical field of view in (0, 180) degrees, got {shown(v)}")
    return x


def _false_only(v):
    if not isinstance(v, bool | np.bool_):
        raise type_error("True or False", v)
    if v:
        raise ValueError("this engine has no differentiable mode; expected False")
    return False


Fov = Annotated[float, BeforeValidator(_fov)]


# -- the base class ---------------------------------------------------------------------------------
class Options(BaseModel):
    """Base of every option group (and of ``gs.surfaces`` / ``gs.materials``): fields validated on
    construction and on assignment; errors name the class and the field."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, validate_default=True)

    def __init__(self, /, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as err:
            raise _translate(type(self), err) from None

    def __setattr__(self, name: str, value) -> None:
        if not name.startswith("_") and name not in type(self).model_fields:
            fields = ", ".join(type(self).model_fields)
            raise InvalidTypeError(f"{type(self).__name__}: unknown field '{name}'; its fields are: {fields}")
        try:
            super().__setattr__(name, value)
        except ValidationError as err:
            raise _translate(type(self), err) from None

    def copy(self):
        """An independent copy (the scene keeps one, so later edits of yours do not reach it)."""
        return self.model_copy(deep=True)


def _translate(model: type[BaseModel], err: ValidationError) -> Exception:
    """The first problem of a pydantic ValidationError as the engine's TypeError / ValueError,
    naming the class and the field."""
    cls = model.__name__
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    where = f"{cls}.{loc}" if loc else cls
    kind = first["type"]
    if kind == "extra_forbidden":
        return InvalidTypeError(f"{cls}: unknown field '{first['loc'][0]}'; its fields are: "
                                f"{', '.join(model.model_fields)}")
    message = first["msg"].removeprefix("Value error, ")
    if "got" not in message and "input" in first:
        message = f"{message[0].lower()}{message[1:]}, got {shown(first['input'])}"
    if kind == "ikstudio_type" or kind.endswith(("_type", "_parsing")):
        return InvalidTypeError(f"{where}: {message}")
    return InvalidValueError(f"{where}: {message}")


# -- the option groups ------------------------------------------------------------------------------
class SimOptions(Options):
    """The simulator. ``dt`` (s) is the step of ``scene.step()``; ``substeps`` divide it (the
    kinematic step here gives the same answer either way); ``gravity`` (m/s^2) and
    ``floor_height`` (m) are accepted (no dynamics here); ``requires_grad`` must stay False (no
    differentiable mode)."""

    dt: PosFloat = 1e-2
    substeps: PosInt = 1
    substeps_local: OptPosInt = None
    gravity: Vec3 = (0.0, 0.0, -9.81)
    floor_height: Number = 0.0
    requires_grad: Annotated[bool, BeforeValidator(_false_only)] = False
    use_hydroelastic_contact: StrictBool = False


class RigidOptions(Options):
    """The rigid solver. ``dt`` (s, None: SimOptions') and ``enable_joint_limit`` take effect
    here (see the module docstring); collision, contact, friction, constraint-solver, integrator
    and hibernation fields are accepted for Genesis scripts and do nothing (no dynamics here).
    Defaults are Genesis 1.4.5's; ``contact_resolve_time``, ``use_contact_island`` and
    ``hibernation_thresh_acc`` are earlier releases' fields, still accepted."""

    dt: OptPosFloat = None
    gravity: OptVec3 = None
    enable_collision: StrictBool = True
    enable_joint_limit: StrictBool = True
    enable_self_collision: StrictBool = True
    enable_adjacent_collision: StrictBool = False
    disable_constraint: StrictBool = False
    max_collision_pairs: NonNegInt = 150
    integrator: Literal["Euler", "implicitfast", "approximate_implicitfast"] = "approximate_implicitfast"
    IK_max_targets: PosInt = 6
    batch_links_info: StrictBool = False
    batch_joints_info: StrictBool = False
    batch_dofs_info: StrictBool = False
    constraint_solver: Literal["CG", "Newton"] = "Newton"
    iterations: PosInt = 25
    tolerance: OptPosFloat = None
    ls_iterations: PosInt = 50
    ls_tolerance: PosFloat = 1e-2
    sparse_solve: StrictBool | None = None
    contact_resolve_time: OptPosFloat = None
    constraint_timeconst: OptPosFloat = 0.01
    use_contact_island: StrictBool = False
    box_box_detection: StrictBool = False
    use_hibernation: StrictBool = False
    hibernation_thresh_vel: OptPosFloat = None
    hibernation_thresh_acc: PosFloat = 1e-2
    max_dynamic_constraints: PosInt = 8
    enable_multi_contact: StrictBool = True
    enable_mujoco_compatibility: StrictBool = False
    use_gjk_collision: StrictBool | None = None
    # Genesis 1.4.5's contact and friction model fields (accepted; no contacts here)
    enable_neutral_collision: StrictBool = False
    max_contacts: OptNonNegInt = None
    multiplier_collision_broad_phase: PosInt = 8
    noslip_iterations: NonNegInt = 0
    noslip_tolerance: PosFloat = 1e-6
    friction_cone: Any = "pyramidal"
    contact_resolution: Any = None
    enable_torsional_friction: StrictBool = False
    enable_rolling_friction: StrictBool = False
    impratio: OptPosFloat = None
    contact_pruning_tolerance: OptPosFloat = 0.02
    enable_contact_patch: StrictBool | None = None
    broadphase_traversal: Any = None


class ViewerOptions(Options):
    """The interactive viewer and the visualizer's camera.

    ``res`` (width, height) px (None: the viewer picks a 4:3 size from the screen; renders keep
    1280x720); ``refresh_rate`` (Hz) of the window; ``max_FPS`` caps ``scene.step()`` while the
    window is open (None: no cap); ``camera_pos`` / ``camera_lookat`` (m), ``camera_up`` and
    ``camera_fov`` (vertical, degrees) place the camera. A camera field you set places the camera;
    with none set, the camera frames every env instead (Genesis would use its default pose).
    ``run_in_thread`` is accepted: the window always runs in its own thread here.
    """

    res: Resolution = None
    run_in_thread: StrictBool | None = None
    refresh_rate: PosInt = 60
    max_FPS: OptPosInt = 60
    camera_pos: Vec3 = (3.5, 0.5, 2.5)
    camera_lookat: Vec3 = (0.0, 0.0, 0.5)
    camera_up: Dir3 = (0.0, 0.0, 1.0)
    camera_fov: Fov = 40.0
    # Genesis 1.4.5's pacing and overlay fields, accepted (max_FPS paces an open window here)
    realtime_factor: OptPosFloat = 1.0
    enable_help_text: StrictBool = True
    enable_default_keybinds: StrictBool = True
    enable_gui: StrictBool = False

    def model_post_init(self, context: Any) -> None:
        if np.allclose(self.camera_pos, self.camera_lookat):
            raise InvalidValueError(f"ViewerOptions.camera_lookat: expected a point other than camera_pos, got "
                                    f"{list(self.camera_lookat)} for both")

    @property
    def camera_set(self) -> bool:
        """True when any camera field was given (then it places the camera rather than framing)."""
        return bool(self.model_fields_set & {"camera_pos", "camera_lookat", "camera_up", "camera_fov"})


class VisOptions(Options):
    """What the renderer draws, shared by the viewer and ``scene.visualizer``.

    Taking effect: ``show_world_frame`` with axes ``world_frame_size`` m long at the origin of
    every env, ``show_link_frame`` with ``link_frame_size`` m axes on every link,
    ``background_color`` and ``ambient_light`` (rgb in [0, 1]) and ``rendered_envs_idx`` (None:
    all envs). The rest (shadows, reflections, lights, particles, segmentation) is accepted.
    """

    show_world_frame: StrictBool = False
    world_frame_size: PosFloat = 1.0
    show_link_frame: StrictBool = False
    link_frame_size: PosFloat = 0.2
    show_cameras: StrictBool = False
    shadow: StrictBool = True
    plane_reflection: StrictBool = False
    env_separate_rigid: StrictBool = False  # an earlier release's name for split_envs
    split_envs: StrictBool = False
    background_color: Color3 = (0.04, 0.08, 0.12)
    ambient_light: Color3 = (0.1, 0.1, 0.1)
    visualize_mpm_boundary: StrictBool = False
    visualize_sph_boundary: StrictBool = False
    visualize_pbd_boundary: StrictBool = False
    segmentation_level: Literal["entity", "link", "geom"] = "link"
    render_particle_as: Literal["sphere", "tet"] = "sphere"
    particle_size_scale: PosFloat = 1.0
    contact_force_scale: PosFloat = 0.01
    n_support_neighbors: PosInt = 12
    rendered_envs_idx: EnvList = None
    lights: list[dict] = [{"type": "directional", "dir": (-1, -1, -1), "color": (1.0, 1.0, 1.0), "intensity": 5.0}]


def check(name: str, value, cls: type[Options]) -> Options:
    """``value`` (None: the defaults) as a copy of a ``cls``; another type is a TypeError naming ``name``."""
    if value is None:
        return cls()
    if not isinstance(value, cls):
        raise InvalidTypeError(f"{name}: expected an engine.options.{cls.__name__}, got {type(value).__name__}")
    return value.copy()


# The project's own look, which its scene files (the app, `ikstudio record`) keep: no world frame,
# a grey background and a brighter ambient light than Genesis' defaults.
STUDIO_BACKGROUND = (0.16, 0.17, 0.19)
STUDIO_AMBIENT = (0.34, 0.34, 0.36)


def studio_vis_options() -> VisOptions:
    """VisOptions of the project's own look (used by scene files and by a scene without options)."""
    return VisOptions(show_world_frame=False, background_color=STUDIO_BACKGROUND, ambient_light=STUDIO_AMBIENT)


def __getattr__(name: str):
    """Genesis' option groups of solvers this engine does not have: a clear error naming them."""
    from .genesis_names import OPTION_FEATURES, missing

    raise missing("engine.options", name, OPTION_FEATURES)
