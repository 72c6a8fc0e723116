"""IK limits: bounds on what one solve may return, beside the tasks (what it should achieve).

A limit is a box on the robot's hinge and slide dofs: every answer, and every iterate of the
solver, stays inside it. The solver enforces the box inside the step, as it always did for the
joint limits: a dof resting on a bound whose step points outward leaves the step and the step is
solved again without it (an active set, :func:`engine.kernels.solver.step`), and the iterate is
kept within the box. Restarts draw their start configurations inside the box.

- :class:`JointPositionLimit`: the robot file's ``[lower, upper]`` per joint. What
  ``respect_joint_limit=True`` (the default of every IK call) means.
- :class:`VelocityLimit`: each dof moves at most ``max_joint_velocity * dt`` from the start
  configuration (rad or m): the box ``[q0 - v dt, q0 + v dt]``, per env, intersected with the
  joint limits when those are respected. For a control loop that solves once per ``dt`` seconds.

A limit resolves, on one robot, to a :class:`LimitRow` (hashable: part of the IK request), either
absolute (fixed bounds) or relative to each env's start configuration. :func:`box` intersects a
solve's rows for its starts. A new limit that is a box is a class here and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import inputs
from ..errors import InvalidTypeError, InvalidValueError

__all__ = ["JointPositionLimit", "Limit", "LimitRow", "VelocityLimit", "box"]

UNBOUNDED = 1e30  # what the kernels read as no bound (their tables hold +-1e30 where a joint has none)


@dataclass(frozen=True)
class LimitRow:
    """A limit resolved on one robot: per qpos entry ``lower`` / ``upper`` (tuples of floats, rad
    or m, +-inf where unbounded), absolute, or with ``relative`` offsets from each env's start
    configuration (the box ``[q0 + lower, q0 + upper]``). Only hinge and slide entries count."""

    relative: bool
    lower: tuple[float, ...]
    upper: tuple[float, ...]


class Limit:
    """Base class: :meth:`row` resolves the limit on a robot (errors name ``label``); ``step``: the
    scene's time step (s), for limits over time that were given none."""

    def row(self, tree, label: str, step: float) -> LimitRow:
        raise NotImplementedError


class JointPositionLimit(Limit):
    """Every hinge and slide within the robot file's joint limits (``entity.q_limits``)."""

    def row(self, tree, label: str, step: float) -> LimitRow:
        lo, hi = tree.q_limits()
        return LimitRow(False, tuple(float(v) for v in lo), tuple(float(v) for v in hi))

    def __eq__(self, other) -> bool:
        return type(other) is JointPositionLimit

    def __hash__(self) -> int:
        return hash(JointPositionLimit)

    def __repr__(self) -> str:
        return "JointPositionLimit()"


class VelocityLimit(Limit):
    """Each hinge and slide dof moves at most ``max_joint_velocity * dt`` in one solve, from its start
    configuration (``init_qpos``, or the current state).

    ``max_joint_velocity``: rad/s for hinges, m/s for slides: one positive number for every hinge
    and slide dof, an array ``(n_dofs,)`` (inf: that dof unbounded; ball and free joints' dofs,
    which this limit does not bound, must be inf), or ``"file"``: the robot file's velocity limits
    (URDF ``<limit velocity>``, MJCF where it gives them; a joint without one gets the engine's
    default, :meth:`KinematicTree.velocity_limits`). ``dt``: seconds (> 0); None: the scene's step
    (``scene.dt``)."""

    def __init__(self, max_joint_velocity="file", dt: float | None = None):
        self.dt = None if dt is None else float(inputs.as_positive("dt", dt))
        if isinstance(max_joint_velocity, str):
            if max_joint_velocity != "file":
                raise InvalidValueError(f"max_joint_velocity: expected a number, an array (n_dofs,) or 'file', got "
                                        f"{max_joint_velocity!r}")
            self.velocity = "file"
        elif np.ndim(max_joint_velocity) == 0:
            self.velocity = float(inputs.as_positive("max_joint_velocity", max_joint_velocity))
        else:
            arr = inputs.as_float_array("max_joint_velocity", max_joint_velocity, allow_nonfinite=True)
            if arr.ndim != 1 or np.isnan(arr).any() or (arr <= 0).any():
                raise InvalidValueError(f"max_joint_velocity: expected positive numbers (inf: unbounded) of shape "
                                        f"(n_dofs,), got {arr.tolist()}")
            self.velocity = tuple(float(v) for v in arr)

    def __eq__(self, other) -> bool:
        return type(other) is VelocityLimit and (self.velocity, self.dt) == (other.velocity, other.dt)

    def __hash__(self) -> int:
        return hash((VelocityLimit, self.velocity, self.dt))

    def __repr__(self) -> str:
        return f"VelocityLimit(max_joint_velocity={self.velocity!r}, dt={self.dt!r})"

    def per_dof(self, tree, label: str) -> np.ndarray:
        """The velocity bound of each dof ``(n_dofs,)`` on ``tree`` (inf: unbounded)."""
        scalar = [j for j in tree.joints if j.n_qs == 1 and j.mimic is None]
        v = np.full(tree.n_dofs, np.inf)
        if self.velocity == "file":
            limits = tree.velocity_limits()
            for j in scalar:
                v[j.dof_start] = limits[j.dof_start]
        elif isinstance(self.velocity, float):
            for j in scalar:
                v[j.dof_start] = self.velocity
        else:
            if len(self.velocity) != tree.n_dofs:
                raise InvalidValueError(f"{label}: expected {tree.n_dofs} velocities (one per dof of "
                                        f"'{tree.name}'), got {len(self.velocity)}")
            v[:] = self.velocity
            bounded = {j.dof_start for j in scalar}
            other = [d for d in np.flatnonzero(np.isfinite(v)) if int(d) not in bounded]
            if other:
                raise InvalidValueError(f"{label}: a velocity for dof {int(other[0])}, which is not a hinge or slide "
                                        "(a ball, free or mimic joint: not bounded by a velocity limit); give it inf")
        return v

    def row(self, tree, label: str, step: float) -> LimitRow:
        v = self.per_dof(tree, label)
        dt = step if self.dt is None else self.dt
        move = np.full(tree.n_qs, np.inf)
        for j in tree.joints:
            if j.n_qs == 1 and j.mimic is None:
                move[j.q_start] = v[j.dof_start] * dt
        return LimitRow(True, tuple(float(-m) for m in move), tuple(float(m) for m in move))


def as_limits(limits, label: str = "limits") -> list[Limit]:
    """The ``limits`` argument of an IK call as a list (None: none), each a :class:`Limit`."""
    if limits is None:
        return []
    items = list(limits) if isinstance(limits, list | tuple) else [limits]
    for i, item in enumerate(items):
        if not isinstance(item, Limit):
            raise InvalidTypeError(f"{label}[{i}]: expected a limit of engine.ik.limits (JointPositionLimit, "
                                   f"VelocityLimit), got {type(item).__name__}")
    return items


def box(rows, q0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The intersection of the limit ``rows`` for starts ``q0`` ``(n, n_qs)``: ``(lower, upper)``, each
    ``(n, n_qs)``, +-:data:`UNBOUNDED` where nothing bounds an entry. Where the start lies outside
    an absolute bound by more than a relative one allows (the two do not meet), the box is the one
    point the relative bound reaches toward the absolute one."""
    lo = np.full(q0.shape, -np.inf)
    hi = np.full(q0.shape, np.inf)
    rel_lo, rel_hi = lo.copy(), hi.copy()
    for row in rows:
        a, b = np.asarray(row.lower), np.asarray(row.upper)
        if row.relative:
            np.maximum(rel_lo, q0 + a, out=rel_lo)
            np.minimum(rel_hi, q0 + b, out=rel_hi)
        else:
            np.maximum(lo, a, out=lo)
            np.minimum(hi, b, out=hi)
    out_lo, out_hi = np.maximum(lo, rel_lo), np.minimum(hi, rel_hi)
    empty = out_lo > out_hi
    if empty.any():  # the start beyond an absolute bound: as far toward it as the relative bound allows
        toward = np.where(q0 < lo, rel_hi, rel_lo)
        out_lo = np.where(empty, toward, out_lo)
        out_hi = np.where(empty, toward, out_hi)
    return np.clip(out_lo, -UNBOUNDED, UNBOUNDED), np.clip(out_hi, -UNBOUNDED, UNBOUNDED)
