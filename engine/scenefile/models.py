"""Pydantic v2 models of a scene file. Every model forbids unknown keys.

The models check each value on its own (shapes, ranges, types) and the few rules that tie keys of
one mapping together (``quat`` or ``rpy``, ``seconds`` or ``frames``). Rules that need the robot or
several sections (link names, groups, per-env counts) are in :func:`engine.scenefile.io.check_spec`,
and building a scene from a spec is :func:`engine.scenefile.runner.build`: this module holds data and
its validation only, and imports nothing of the engine beyond this package's errors, patterns and
value types (:mod:`engine.scenefile.values`), and the solver settings' table
(:mod:`engine.ik.options`).

Values are kept as written (a quaternion is not normalised, an rpy is not turned into a quaternion)
so that saving a loaded spec writes the same file back; the ``*_quat()`` helpers give the derived
values.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr, create_model, model_validator

from ..ik.options import SETTINGS, Setting
from .errors import custom, show
from .patterns import rpy_to_quat
from .values import MAX_ENVS as MAX_ENVS  # re-exported: the app and the batch jobs read the limits here
from .values import (
    MAX_SOLVER_COUNT,
    Bool,
    Color,
    EnvCount,
    Float,
    Fov,
    Fps,
    Length,
    Lengths2,
    Lengths3,
    Mask,
    Name,
    NonNegFloat,
    Plane,
    PosFloat,
    PosInt,
    Position,
    Quat,
    Range,
    Resolution,
    RotMask,
    Scale,
    Seed,
    Vec3,
    Velocity,
    number_field,
    numbers_field,
)


class SpecModel(BaseModel):
    """Base: unknown keys are errors; equality is by value; the file's key order is remembered."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    _key_order: list[str] | None = PrivateAttr(default=None)

    def key_order(self) -> list[str] | None:
        """The keys in the order the file wrote them (None for a model made in code)."""
        return self._key_order

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler):
        model = handler(data)
        if isinstance(data, dict) and isinstance(model, SpecModel):
            model._key_order = [k for k in data if isinstance(k, str)]
        return model

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self.model_dump() == other.model_dump()

    __hash__ = None  # mutable, compared by value


# -- sections ---------------------------------------------------------------------------------------


class RobotSpec(SpecModel):
    """``robot: panda`` or ``robot: {file: ..., pos, quat, fixed, scale}``.

    ``file``: a catalog name (``ikstudio robots``) or a path to a .urdf / .xml (relative to the scene
    file). ``fixed`` (URDF only) bolts the root link down; false adds a free joint. A scene file's
    default is true (an arm on a table), unlike ``engine.morphs.URDF``'s (Genesis': free).
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


class EnvsSpec(SpecModel):
    """``n_envs`` parallel environments laid out ``env_spacing`` (x, y) metres apart on screen."""

    n_envs: EnvCount = 1
    env_spacing: Annotated[tuple[float, float], BeforeValidator(numbers_field(2))] = (1.0, 1.0)

    @model_validator(mode="after")
    def _spacing(self):
        if any(x < 0 for x in self.env_spacing):
            raise custom(f"expected 2 non-negative numbers, got {show(list(self.env_spacing))}", at="env_spacing")
        return self


def _solver_field(setting: Setting):
    """A scene file's type for a solver setting (:data:`engine.ik.options.SETTINGS`): counts at most
    :data:`MAX_SOLVER_COUNT`, the numbers' ranges, a choice as a Literal."""
    if setting.kind == "bool":
        return Bool
    if setting.kind == "choice":
        return Literal[setting.choices]
    integer = setting.kind == "int"
    check = number_field(setting.low or 0, strict_low=setting.low_open, integer=integer,
                         high=MAX_SOLVER_COUNT if integer else setting.high)
    return Annotated[int if integer else float, BeforeValidator(check)]


# scene files default to the generic kernel: loading a robot or adding a target never waits for a
# per-robot compile (~10 s the first time); "auto" is faster per call once compiled
_SCENE_DEFAULTS = {"kernel": "generic"}

class _Tracking(SpecModel):
    """What :data:`SolverSpec` adds to the IK settings: velocity-limited tracking (issue 30)."""

    def samples(self) -> int:
        """Restarts per tracked frame: ``max_samples`` when the file gives it, else 1 (a restart
        would be a jump)."""
        return self.max_samples if "max_samples" in self.model_fields_set else 1

    @model_validator(mode="after")
    def _velocity_needs_track(self):
        if self.track and self.plan:
            raise custom("track and plan are two ways to move: track follows the targets frame by frame, plan "
                         "moves along collision-free paths; choose one", at="plan")
        if self.max_joint_velocity is not None and not (self.track or self.plan):
            raise custom("max_joint_velocity bounds the motion of velocity-limited tracking or of planned paths; "
                         "add track: true or plan: true", at="max_joint_velocity")
        return self


SolverSpec = create_model(
    "SolverSpec", __base__=_Tracking, __module__=__name__,
    __doc__="""IK parameters: the settings of :data:`engine.ik.options.SETTINGS` (Genesis' defaults,
    but ``kernel``: "generic"; see ``RigidEntity.inverse_kinematics``), and ``seed``: restarts are
    seeded with ``seed + frame`` so a run is reproducible; null draws randomly. ``track``:
    velocity-limited tracking (``inverse_kinematics(track=True)``) after the first frame: each frame
    moves each dof at most ``max_joint_velocity`` (rad/s or m/s: a number, one per dof, or "file": the
    robot file's limits, the default) times the frame's time step, so the motion never jumps; then
    one sample runs per frame unless ``max_samples`` is given (``samples()``). ``plan``: planned
    motion instead (:mod:`engine.scenefile.planned`): when the targets move, each env solves them
    with collision avoidance and moves there along a collision-free path planned with
    ``plan_path``, at ``max_joint_velocity``; ``plan_max_nodes`` bounds each search's tree.""",
    **{s.name: (_solver_field(s), _SCENE_DEFAULTS.get(s.name, s.default)) for s in SETTINGS},
    seed=(Seed | None, None), track=(Bool, False), max_joint_velocity=(Velocity | None, None),
    plan=(Bool, False), plan_max_nodes=(Annotated[int, BeforeValidator(number_field(1, integer=True, high=100_000))],
                                        2000))


def solver_keywords(solver) -> dict:
    """``solver``'s settings as keywords of the IK calls (``seed`` left out: the runner derives a
    seed per frame)."""
    return {s.name: getattr(solver, s.name) for s in SETTINGS}


# -- motion patterns --------------------------------------------------------------------------------


class CircleMotion(SpecModel):
    """Circle around ``target.pos + center`` in ``plane``; per-env speed uniform in ``speed`` (rad/s)."""

    type: Literal["circle"]
    radius: PosFloat = 0.1
    center: Vec3 = (0.0, 0.0, 0.0)
    plane: Plane = "xy"
    speed: Range = (1.0, 1.0)
    phase: Float = 0.0
    seed: Seed | None = 0


class OffsetMotion(SpecModel):
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


class Figure8Motion(SpecModel):
    """Figure eight (width 2 radius, height radius) around ``target.pos + center``, one lap per ``period``
    seconds; env i starts at phase ``phase + i * env_phase`` (rad)."""

    type: Literal["figure8"]
    radius: PosFloat = 0.1
    period: PosFloat = 4.0
    center: Vec3 = (0.0, 0.0, 0.0)
    plane: Plane = "xy"
    phase: Float = 0.0
    env_phase: Float = 0.0


class KeyPose(SpecModel):
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


class KeyframesMotion(SpecModel):
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


class TargetSpec(SpecModel):
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


class _ObstacleSpec(SpecModel):
    """What every obstacle takes: ``kind``, ``pos`` (m), ``quat`` (w, x, y, z) or ``rpy`` (degrees,
    as targets), ``color`` ([r, g, b] or [r, g, b, a] in [0, 1]). An obstacle is a fixed body of
    the scene (``set_pos`` / ``set_quat`` move it), which IK with ``solver.avoid_collisions``
    keeps clear of."""

    kind: str
    pos: Position = (0.0, 0.0, 0.0)
    quat: Quat | None = None
    rpy: Vec3 | None = None
    color: Color | None = None

    @model_validator(mode="after")
    def _orientation(self):
        if self.quat is not None and self.rpy is not None:
            raise custom("give quat or rpy, not both", at="rpy")
        return self

    def orientation(self) -> np.ndarray:
        """(w, x, y, z), unit; the identity when neither quat nor rpy is given."""
        q = _orientation(self.quat, self.rpy)
        return np.array([1.0, 0.0, 0.0, 0.0]) if q is None else q


class BoxObstacle(_ObstacleSpec):
    """A box of full extents ``size`` [x, y, z] m, centred at ``pos``."""

    kind: Literal["box"]
    size: Lengths3


class SphereObstacle(_ObstacleSpec):
    """A ball of radius ``size`` m, centred at ``pos``."""

    kind: Literal["sphere"]
    size: Length


class CylinderObstacle(_ObstacleSpec):
    """A cylinder of ``size`` [radius, height] m along its local z, centred at ``pos``."""

    kind: Literal["cylinder"]
    size: Lengths2


class CapsuleObstacle(_ObstacleSpec):
    """A capsule of ``size`` [radius, length] m: a ball swept along its local z over ``length``
    (between its caps' centres), centred at ``pos``."""

    kind: Literal["capsule"]
    size: Lengths2


class PlaneObstacle(_ObstacleSpec):
    """An infinite plane through ``pos`` whose normal is the local +z (turned by quat / rpy); the
    half-space behind it is solid."""

    kind: Literal["plane"]


class MeshObstacle(_ObstacleSpec):
    """The mesh in ``file`` (.obj, .stl, .ply, ...; relative to the scene file) scaled by ``scale``
    (one factor or 3), posed at ``pos``; as an obstacle it is spheres fitted to its surface."""

    kind: Literal["mesh"]
    file: Name
    scale: Scale = 1.0


OBSTACLE_KINDS = {"box": BoxObstacle, "sphere": SphereObstacle, "cylinder": CylinderObstacle, "plane": PlaneObstacle,
                  "mesh": MeshObstacle, "capsule": CapsuleObstacle}
ObstacleSpec = Annotated[BoxObstacle | SphereObstacle | CylinderObstacle | PlaneObstacle | MeshObstacle
                         | CapsuleObstacle, Field(discriminator="kind")]


class CameraSpec(SpecModel):
    """Viewer / recording camera: ``pos`` and ``lookat`` in metres, vertical ``fov`` in degrees."""

    pos: Vec3 = (3.5, 0.5, 2.5)
    lookat: Vec3 = (0.0, 0.0, 0.5)
    fov: Fov = 30.0

    @model_validator(mode="after")
    def _distinct(self):
        if np.allclose(self.pos, self.lookat):
            raise custom(f"expected a point other than pos, got {show(list(self.pos))} for both", at="lookat")
        return self


class RecordSpec(SpecModel):
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


class SceneSpec(SpecModel):
    """A whole scene file. Load with :func:`engine.scenefile.load`; build with :func:`engine.scenefile.build`."""

    description: str | None = None
    robot: RobotSpec
    envs: EnvsSpec = Field(default_factory=EnvsSpec)
    solver: SolverSpec = Field(default_factory=SolverSpec)
    targets: list[TargetSpec] = Field(default_factory=list)
    obstacles: list[ObstacleSpec] = Field(default_factory=list)
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
