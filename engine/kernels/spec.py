"""A robot's structure and constants as plain Python values, for kernels compiled per robot.

The generic kernels (:mod:`engine.kernels.fk`, :mod:`engine.kernels.generic`) read the robot from two
arrays at run time, so one compiled kernel serves every robot, at the price of loops with run-time
trip counts, branches on joint types and per-row scratch in global memory. A :class:`RobotSpec`
holds the same robot as Python constants: a kernel built from it (:mod:`engine.kernels.per_robot_fk`,
:mod:`engine.kernels.per_robot`) unrolls the tree at compile time, so joint types, parents, axes
and offsets become constants and every intermediate stays in registers. Robots made of hinges,
slides and fixed joints (mimic allowed) up to :data:`MAX_DOFS` dofs qualify; others use the generic
kernels.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from .fk import FIXED, HINGE, SLIDE
from .layout import PackedTree
from .tables import (
    JOINT_F,
    JOINT_I,
    LINK_F,
    LINK_I,
    QPOS_F,
    ROBOT_HEAD,
    joint_row_f,
    joint_row_i,
    link_row_i,
    qpos_row_f,
)

MAX_DOFS = 16     # more dofs would make the unrolled kernels slow to compile
MAX_LINKS = 48
MAX_JOINTS = 30   # moving joints; ancestor sets are int32 bit masks


@dataclass(frozen=True)
class JointSpec:
    """One hinge or slide joint. ``anchor``, ``axis``: in its link's frame (m, unit vector);
    ``ref``: qpos of zero motion; a mimic joint has ``lead_q`` / ``lead_dof`` >= 0 and moves as
    ``mult * q[lead_q] + offset``; ``lower`` / ``upper``: qpos limits (+-1e30 where unbounded)."""

    index: int
    kind: int
    q: int
    dof: int
    lead_q: int
    lead_dof: int
    anchor: tuple[float, float, float]
    axis: tuple[float, float, float]
    ref: float
    mult: float
    offset: float
    lower: float
    upper: float

    @property
    def has_anchor(self) -> bool:
        return any(a != 0.0 for a in self.anchor)

    @property
    def is_mimic(self) -> bool:
        return self.lead_q >= 0

    @property
    def bounded(self) -> bool:
        return self.lower > -1e29 and self.upper < 1e29


@dataclass(frozen=True)
class LinkSpec:
    """One link: parent index (-1 = world), body offset in the parent frame (pos m, quat wxyz), its
    joints in order, its mass (kg) and centre of mass (body frame, m)."""

    parent: int
    pos: tuple[float, float, float]
    quat: tuple[float, float, float, float]
    joints: tuple[JointSpec, ...]
    mass: float = 0.0
    com: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True, eq=False)
class RobotSpec:
    """A whole robot. ``key`` identifies its constants (compiled kernels are cached by it: two
    entities of the same robot share them); ``ancestor_masks[l]``: see :meth:`ancestor_mask`."""

    links: tuple[LinkSpec, ...]
    joints: tuple[JointSpec, ...]
    n_qs: int
    n_dofs: int
    key: str
    ancestor_masks: tuple[int, ...]

    @property
    def n_links(self) -> int:
        return len(self.links)

    @property
    def n_joints(self) -> int:
        return len(self.joints)

    def ancestor_mask(self, link: int) -> int:
        """Bit j set when joint j moves ``link`` (it belongs to the link or one of its ancestors)."""
        return self.ancestor_masks[link]

    def lineage(self, links) -> tuple[int, ...]:
        """``links`` and all their ancestors, sorted (parents first)."""
        out = set()
        for link in links:
            while link >= 0 and link not in out:
                out.add(link)
                link = self.links[link].parent
        return tuple(sorted(out))

    @property
    def massive_links(self) -> tuple[int, ...]:
        """The links with a mass, in order."""
        return tuple(l for l, link in enumerate(self.links) if link.mass > 0)

    @property
    def total_mass(self) -> float:
        return float(sum(link.mass for link in self.links))

    def moving_dofs(self, links) -> tuple[int, ...]:
        """The dofs whose motion moves any of ``links`` (a mimic joint counts as its leader's dof)."""
        mask = 0
        for link in links:
            mask |= self.ancestor_masks[link]
        return tuple(sorted({j.lead_dof if j.is_mimic else j.dof for j in self.joints if mask >> j.index & 1}))


def _ancestor_masks(links: tuple[LinkSpec, ...]) -> tuple[int, ...]:
    masks = []
    for link in links:  # parents come first
        own = sum(1 << joint.index for joint in link.joints)
        masks.append(own | (masks[link.parent] if link.parent >= 0 else 0))
    return tuple(masks)


def robot_spec(packed: PackedTree) -> RobotSpec | None:
    """The spec of a packed robot, or None when it does not qualify (ball or free joints, no dofs,
    too big). Fixed joints are left out: they move nothing (the link offsets hold them)."""
    ri, rf = packed.robot_i, np.asarray(packed.robot_f, np.float64)
    L, J = packed.n_links, packed.n_joints
    n_qs, n_dofs = int(ri[0, ROBOT_HEAD.n_qs]), int(ri[0, ROBOT_HEAD.n_dofs])
    if not 0 < n_dofs <= MAX_DOFS or L > MAX_LINKS:
        return None  # nothing to move, or too big to unroll
    joints, by_packed = [], {}  # fixed joints (a URDF's) move nothing: the spec leaves them out
    for j in range(J):
        row, frow = ri[joint_row_i(L, j)], rf[joint_row_f(L, j)]
        kind, q = int(row[JOINT_I.kind]), int(row[JOINT_I.q])
        if kind == FIXED:
            continue
        if kind not in (HINGE, SLIDE):
            return None
        limits = rf[qpos_row_f(L, J, q)]
        by_packed[j] = JointSpec(len(joints), kind, q, int(row[JOINT_I.dof]), int(row[JOINT_I.lead_q]),
                                 int(row[JOINT_I.lead_dof]), _floats(frow[JOINT_F.anchor:JOINT_F.anchor + 3]),
                                 _floats(frow[JOINT_F.axis:JOINT_F.axis + 3]), float(frow[JOINT_F.ref]),
                                 float(frow[JOINT_F.mult]), float(frow[JOINT_F.offset]),
                                 float(limits[QPOS_F.lower]), float(limits[QPOS_F.upper]))
        joints.append(by_packed[j])
    if len(joints) > MAX_JOINTS:
        return None

    def link_spec(l: int) -> LinkSpec:
        row, frow = ri[link_row_i(l)], rf[l]
        own = tuple(by_packed[j] for j in range(int(row[LINK_I.joint_start]), int(row[LINK_I.joint_end]))
                    if j in by_packed)
        return LinkSpec(int(row[LINK_I.parent]), _floats(frow[LINK_F.pos:LINK_F.pos + 3]),
                        _floats(frow[LINK_F.quat:LINK_F.quat + 4]), own, float(frow[LINK_F.mass]),
                        _floats(frow[LINK_F.com:LINK_F.com + 3]))

    links = tuple(link_spec(l) for l in range(L))
    if any(link.parent >= l for l, link in enumerate(links)):
        return None  # the unrolled FK needs parents before children (the packer's order)
    key = hashlib.sha1(ri.tobytes() + rf.tobytes()).hexdigest()
    return RobotSpec(links, tuple(joints), n_qs, n_dofs, key, _ancestor_masks(links))


def _floats(values) -> tuple:
    return tuple(float(v) for v in values)
