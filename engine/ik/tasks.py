"""IK tasks: what a solve must achieve, one small class per kind of target.

A task contributes 6 rows to the solve: an error (position m, rotation rad as a rotation vector)
and its Jacobian, scaled by the task's ``weight``; it is met when its unweighted errors are within
its tolerances. :meth:`engine.entity.RigidEntity.solve_ik` solves any mix of them, batched:

- :class:`PoseTask`: a link's point and orientation in the world (what ``inverse_kinematics``
  targets), with per-axis position masks and the rot_mask rules of :mod:`engine.ik`;
- :class:`RelativePoseTask`: a link's pose in another link's frame (closed chains: two hands on
  one box, a tool held against a fixture on the robot);
- :class:`ComTask`: the whole-body centre of mass (world frame), from the link masses and
  inertial origins of the robot file;
- :class:`PostureTask`: the pull toward a rest configuration in the tasks' null space, and the
  choice of the nearest-to-rest solution among those meeting the tasks;
- :class:`LookAtTask`: an axis of a link pointed at a world point (a camera, a head, a tool's
  approach axis);
- :class:`CollisionTask`: keep the robot's counted link pairs and its distance to the scene's
  obstacles at least ``margin`` apart (its sphere model; :mod:`engine.kernels.avoid`). What
  ``avoid_collisions=True`` adds to a solve.

Targets are ``(3,)`` / ``(4,)`` (shared by every env solved) or ``(n_envs, 3)`` /
``(n_envs, 4)`` (one per env), quaternions wxyz; :meth:`Task.set_target` replaces them between
calls. The rest of a task (link, masks, weight, tolerances) is its *structure*, fixed at creation;
a solve validates it once per entity and keeps the result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import inputs
from ..errors import InvalidValueError
from ..kernels.kinds import LOOK_AT
from ..kernels.tables import COLLIDE, COM, FRAME

__all__ = ["CollisionTask", "ComTask", "LookAtTask", "PoseTask", "PostureTask", "RelativePoseTask", "Task",
           "TaskRow"]

ALL = (True, True, True)


@dataclass(frozen=True)
class TaskRow:
    """A task's structure as the solver takes it (hashable: part of the plan cache key).

    ``kind``: :data:`~engine.kernels.tables.FRAME` or ``COM``; ``link`` / ``ref``: local link
    indices (-1: none / the world); ``has_pos``, ``has_quat``: which targets it takes;
    ``rot_mode``: 3 full orientation, -1 free, k align local axis k; ``point``: on the link (link
    frame, m); ``pos_mask``: per axis of the reference frame; ``pos_tol`` / ``rot_tol``: m / rad,
    None for the call's; ``margin``: a COLLIDE task's least accepted distance (m; 0 otherwise);
    ``axis``: a unit axis of the link (link frame; a look-at task's, zero otherwise)."""

    kind: int
    link: int
    ref: int
    has_pos: bool
    has_quat: bool
    rot_mode: int
    point: tuple[float, float, float]
    pos_mask: tuple[bool, bool, bool]
    weight: float
    pos_tol: float | None
    rot_tol: float | None
    margin: float = 0.0
    axis: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self):
        ok = (type(self.kind) is int and type(self.link) is int and type(self.ref) is int
              and type(self.rot_mode) is int and type(self.has_pos) is bool and type(self.has_quat) is bool
              and _floats(self.point, 3) and type(self.pos_mask) is tuple and len(self.pos_mask) == 3
              and all(type(v) is bool for v in self.pos_mask) and _positive(self.weight)
              and (self.pos_tol is None or _positive(self.pos_tol))
              and (self.rot_tol is None or _positive(self.rot_tol))
              and type(self.margin) is float and 0.0 <= self.margin < float("inf") and _floats(self.axis, 3))
        if not ok:
            raise InvalidValueError(f"TaskRow: not a valid task structure: {self!r}")

    @property
    def structure(self) -> tuple[int, int, int]:
        """What a solver compiled for a task structure is compiled for: (kind, link, ref)."""
        return self.kind, self.link, self.ref

    @property
    def plain(self) -> bool:
        """A full world pose of weight 1: its rows need no masking, rotating or scaling."""
        return (self.kind == FRAME and self.ref < 0 and self.has_pos and all(self.pos_mask)
                and self.rot_mode == 3 and self.weight == 1.0)


def _floats(values, n: int) -> bool:
    return type(values) is tuple and len(values) == n and all(type(v) is float and np.isfinite(v) for v in values)


def _positive(value) -> bool:
    return type(value) is float and 0 < value < float("inf")


def rot_mode(rot_mask) -> int:
    """Kernel code of a rot_mask: 3 full, -1 free, k to align axis k."""
    mask = inputs.as_mask("rot_mask", rot_mask)
    n = int(mask.sum())
    if n == 3:
        return 3
    if n == 0:
        return -1
    if n == 1:
        return int(np.argmax(mask))
    raise InvalidValueError(f"rot_mask: got {mask.tolist()}; two aligned axes fix the third, so use all three "
                            "(full orientation), one (align that axis) or none")


def _tolerance(name: str, value) -> float | None:
    return None if value is None else float(inputs.as_positive(name, value))


class Task:
    """Base class: a weight, tolerances, and targets set per call. Subclasses define
    :meth:`row` (the structure, for one entity) and hold their targets in ``pos`` / ``quat``.
    Everything but the targets is fixed once the task is made (assigning it is an
    AttributeError): make a new task for another link, mask or weight."""

    pos = None
    quat = None
    _TARGETS = ("pos", "quat")

    def __init__(self, weight: float = 1.0, pos_tol: float | None = None, rot_tol: float | None = None):
        self.weight = float(inputs.as_positive("weight", weight))
        self.pos_tol = _tolerance("pos_tol", pos_tol)
        self.rot_tol = _tolerance("rot_tol", rot_tol)

    def __setattr__(self, name: str, value) -> None:
        if self.__dict__.get("_sealed") and name not in self._TARGETS:
            raise AttributeError(f"{type(self).__name__}.{name} is fixed when the task is made; make a new task "
                                 "(only the targets, pos and quat, change between solves)")
        super().__setattr__(name, value)

    def _seal(self) -> None:
        self.__dict__["_sealed"] = True

    def row(self, entity, label: str) -> TaskRow:
        """This task's structure on ``entity`` (links resolved; errors name ``label``)."""
        raise NotImplementedError

    def labels(self, label: str) -> tuple[str, str]:
        """How errors name this task's position and orientation targets, for a task named ``label``."""
        return f"{label}.pos", f"{label}.quat"

    def set_target(self, pos=None, quat=None) -> None:
        """New targets for the next solve (shapes as in the module docstring); a task keeps the
        kinds of target it was made with (a position task stays one)."""
        if (pos is None) != (self.pos is None) or (quat is None) != (self.quat is None):
            made = f"{'a' if self.pos is not None else 'no'} position and {'an' if self.quat is not None else 'no'}"
            raise InvalidValueError(f"set_target: {type(self).__name__} was made with {made} orientation target; "
                                    "give the same kinds")
        self.pos, self.quat = pos, quat


class PoseTask(Task):
    """``link``'s point ``local_point`` (link frame, m; default its origin) at ``pos`` (m, world)
    and the link's orientation at ``quat`` (wxyz, world). Either target may be None (not both).
    ``pos_mask``: world axes to match; ``rot_mask``: all True full orientation, one True align
    that axis of the link with the target's (rotation about it free), none: free."""

    def __init__(self, link, pos=None, quat=None, *, pos_mask=ALL, rot_mask=ALL, local_point=None,
                 weight: float = 1.0, pos_tol: float | None = None, rot_tol: float | None = None):
        super().__init__(weight, pos_tol, rot_tol)
        if pos is None and quat is None:
            raise InvalidValueError("pos, quat: a pose task needs a position or an orientation target (or both)")
        self.link, self.pos, self.quat = link, pos, quat
        self.pos_mask = tuple(bool(v) for v in inputs.as_mask("pos_mask", pos_mask))
        self.rot_mode = rot_mode(rot_mask)
        self.local_point = (0.0, 0.0, 0.0) if local_point is None else inputs.as_point("local_point", local_point)
        if type(self) is PoseTask:
            self._seal()

    def _frame_row(self, entity, label: str, ref: int) -> TaskRow:
        link = entity.own_link(self.link, f"{label}.link").idx_local
        return TaskRow(FRAME, link, ref, self.pos is not None, self.quat is not None,
                       self.rot_mode if self.quat is not None else -1, self.local_point, self.pos_mask, self.weight,
                       self.pos_tol, self.rot_tol)

    def row(self, entity, label: str) -> TaskRow:
        return self._frame_row(entity, label, -1)


class RelativePoseTask(PoseTask):
    """``link``'s pose in ``ref_link``'s frame: the point ``local_point`` of ``link`` at ``pos``
    and ``link``'s orientation at ``quat``, both in ``ref_link``'s frame; ``pos_mask`` is per axis
    of that frame. Both links move: a closed chain between them."""

    def __init__(self, link, ref_link, pos=None, quat=None, *, pos_mask=ALL, rot_mask=ALL, local_point=None,
                 weight: float = 1.0, pos_tol: float | None = None, rot_tol: float | None = None):
        super().__init__(link, pos, quat, pos_mask=pos_mask, rot_mask=rot_mask, local_point=local_point,
                         weight=weight, pos_tol=pos_tol, rot_tol=rot_tol)
        self.ref_link = ref_link
        self._seal()

    def row(self, entity, label: str) -> TaskRow:
        ref = entity.own_link(self.ref_link, f"{label}.ref_link").idx_local
        out = self._frame_row(entity, label, ref)
        if out.link == ref:
            raise InvalidValueError(f"{label}: link and ref_link are the same link ('{entity.links[ref].name}')")
        return out


class ComTask(Task):
    """The entity's centre of mass (world frame, m) at ``pos``, per world axis in ``pos_mask``. The
    masses and inertial origins come from the robot file (``KinematicTree.link_masses``)."""

    def __init__(self, pos, *, pos_mask=ALL, weight: float = 1.0, pos_tol: float | None = None):
        super().__init__(weight, pos_tol, None)
        if pos is None:
            raise InvalidValueError("pos: a centre-of-mass task needs a position target")
        self.pos = pos
        self.pos_mask = tuple(bool(v) for v in inputs.as_mask("pos_mask", pos_mask))
        self._seal()

    def row(self, entity, label: str) -> TaskRow:
        if entity.tree.total_mass <= 0:
            raise InvalidValueError(f"{label}: '{entity.tree.name}' has no link with a mass, so it has no centre of "
                                    "mass")
        return TaskRow(COM, -1, -1, True, False, -1, (0.0, 0.0, 0.0), self.pos_mask, self.weight, self.pos_tol,
                       None)


class CollisionTask(Task):
    """Collision avoidance: every counted self-collision pair of the robot (``collision_pairs()``)
    and every robot sphere and scene obstacle (fixed Box / Sphere / Cylinder / Plane / Mesh
    entities) at least ``margin`` (m, >= 0) apart in the answer, judged on the robot's sphere
    model (conservative: sphere clearance implies mesh clearance). Near contact its rows push the
    closest pairs apart; away from contact it costs nothing. ``weight`` scales that push against
    the other tasks. It moves only the dofs the other tasks move, and needs no target. At most
    one per solve; ``avoid_collisions=True`` adds one."""

    def __init__(self, margin: float = 0.0, *, weight: float = 1.0):
        super().__init__(weight, None, None)
        self.margin = float(inputs.as_positive("margin", margin, allow_zero=True))
        self._seal()

    def row(self, entity, label: str) -> TaskRow:
        return TaskRow(COLLIDE, -1, -1, False, False, -1, (0.0, 0.0, 0.0), (False, False, False), self.weight,
                       None, None, self.margin)


class LookAtTask(Task):
    """``link``'s ``axis`` (link frame; default its z axis) pointed at the world point ``target``
    ((3,) shared or (n_envs, 3) per env, m), as seen from the link's point ``local_point`` (link
    frame, m; default its origin). Rotation about the axis is free. Its error is the rotation
    vector (rad, world axes) taking the axis onto the direction to the target, met within
    ``rot_tol``; the link may also move its point to see the target."""

    _TARGETS = ("pos", "quat")

    def __init__(self, link, axis=(0.0, 0.0, 1.0), target=None, *, local_point=None, weight: float = 1.0,
                 rot_tol: float | None = None):
        super().__init__(weight, None, rot_tol)
        if target is None:
            raise InvalidValueError("target: a look-at task needs a target point")
        direction = np.array(inputs.as_point("axis", axis))
        norm = float(np.linalg.norm(direction))
        if not norm > 1e-9:
            raise InvalidValueError(f"axis: expected a non-zero direction, got {direction.tolist()}")
        self.link, self.pos = link, target
        self.axis = tuple(float(v) for v in direction / norm)
        self.local_point = (0.0, 0.0, 0.0) if local_point is None else inputs.as_point("local_point", local_point)
        self._seal()

    @property
    def target(self):
        return self.pos

    def set_target(self, target=None, quat=None) -> None:
        """A new target point for the next solve."""
        super().set_target(target, quat)

    def labels(self, label: str) -> tuple[str, str]:
        return f"{label}.target", f"{label}.quat"

    def row(self, entity, label: str) -> TaskRow:
        link = entity.own_link(self.link, f"{label}.link").idx_local
        return TaskRow(LOOK_AT, link, -1, True, False, -1, self.local_point, (True, True, True), self.weight, None,
                       self.rot_tol, axis=self.axis)


class PostureTask:
    """Pull toward ``qpos`` (n_qs,; default the robot's default configuration) with ``weight``
    (per unit of error, in the tasks' null space), and among configurations meeting every other
    task prefer the one nearest ``qpos``. At most one per solve; it has no rows and is always met."""

    def __init__(self, qpos=None, weight: float = 0.1):
        self.qpos = None if qpos is None else inputs.as_float_array("qpos", qpos).copy()
        self.weight = float(inputs.as_positive("weight", weight))

