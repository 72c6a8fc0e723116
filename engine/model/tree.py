"""The kinematic tree: a robot's links and joints as plain numpy data (no taichi).

Frames. Each link has a *body frame*. Its pose in the world is::

    T_link = T_parent * T_offset(link.pos, link.quat) * M_j1(q1) * M_j2(q2) * ...

where ``M_j`` is the motion of each of the link's joints, applied in order, expressed in the
link frame: a hinge rotates about ``joint.axis`` through ``joint.pos``; a slide translates along
``joint.axis``; a ball rotates by its quaternion about ``joint.pos``. A free joint replaces the
pose outright with its qpos (world position + quaternion). A root link's parent is the world.
URDF links carry at most one joint (anchor at the link origin); MJCF bodies may carry several.

qpos layout: joints in link order, each taking ``n_qs`` entries (free 7: xyz + wxyz, ball 4: wxyz,
hinge/slide 1, fixed 0). Dofs: free 6 (world linear velocity, then angular velocity in the body
frame, as MuJoCo), ball 3 (angular velocity in the joint's rotated frame), hinge/slide 1.
Hinge/slide motion is ``q - joint.ref`` (MuJoCo's qpos0 reference; 0 for URDF).
A mimic joint keeps its qpos slot but follows its leader: ``q = multiplier * q_leader + offset``.

Inertia. Each link has a mass (kg) and a centre of mass ``com`` (m) in its body frame: a URDF
link's ``<inertial>`` (0 kg at the link origin without one), an MJCF body's as MuJoCo compiles it
(from its geoms without an ``<inertial>``). A morph's ``scale`` scales ``com`` like every other
length; masses are the file's, unscaled. ``link_masses``, ``link_coms`` and ``total_mass`` gather
them for the whole tree.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from ..errors import InvalidValueError
from .errors import ModelLoadError

JOINT_TYPES = ("fixed", "revolute", "continuous", "prismatic", "free", "ball")
N_QS = {"fixed": 0, "revolute": 1, "continuous": 1, "prismatic": 1, "free": 7, "ball": 4}
N_DOFS = {"fixed": 0, "revolute": 1, "continuous": 1, "prismatic": 1, "free": 6, "ball": 3}
# Integer codes used by the kernels.
JOINT_CODE = {"fixed": 0, "revolute": 1, "continuous": 1, "prismatic": 2, "ball": 3, "free": 4}

# Velocity limits used where the file states none (rad/s for rotations, m/s for translations).
DEFAULT_ANGULAR_VELOCITY_LIMIT = 3.0
DEFAULT_LINEAR_VELOCITY_LIMIT = 1.0


@dataclass
class Visual:
    """One visual geometry of a link, posed in the link frame.

    ``kind``: "box" (size = full extents x, y, z, m), "sphere" (size = (radius,)),
    "cylinder" / "capsule" (size = (radius, length) along local z, m), "ellipsoid" (radii) or
    "mesh" (``mesh_file`` on disk, or ``mesh_data`` vertices/faces already in memory, scaled by
    ``size``, 3 factors). ``mesh_colors``: draw a mesh file's own vertex colours (when it has
    them) instead of ``rgba``.
    """

    kind: str
    size: np.ndarray
    pos: np.ndarray
    quat: np.ndarray
    rgba: np.ndarray = field(default_factory=lambda: np.array([0.7, 0.7, 0.7, 1.0]))
    mesh_file: Path | None = None
    mesh_data: tuple[np.ndarray, np.ndarray] | None = None
    mesh_colors: bool = False

    @cached_property
    def mesh(self):
        """The visual as a ``trimesh.Trimesh`` in the visual's own frame (loaded on first use)."""
        from .meshes import visual_to_trimesh

        return visual_to_trimesh(self)

    @property
    def loaded_mesh(self):
        """:attr:`mesh` if it was loaded already, else None (never loads it)."""
        return self.__dict__.get("mesh")


MAX_JOINT_VALUE = 1e6  # rad or m: a 1-dof joint's value beyond this is refused (see check_joint_values)
MAX_MODEL_NUMBER = 1e30  # a robot file's numbers beyond this (1e39 is inf in float32) are refused


@dataclass
class Mimic:
    """A joint that follows ``leader`` (joint index): ``q = multiplier * q_leader + offset``."""

    leader: int
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass
class Joint:
    """A joint of link ``link`` (index). ``pos`` and ``axis`` (unit) are in the link's body frame."""

    name: str
    type: str
    link: int
    pos: np.ndarray
    axis: np.ndarray
    lower: float = -np.inf  # rad or m; only for revolute / prismatic
    upper: float = np.inf
    velocity_limit: float = np.inf
    ref: float = 0.0
    mimic: Mimic | None = None
    idx: int = -1
    q_start: int = 0
    dof_start: int = 0

    @property
    def n_qs(self) -> int:
        return N_QS[self.type]

    @property
    def n_dofs(self) -> int:
        return N_DOFS[self.type]

    @property
    def qs_idx(self) -> list[int]:
        return list(range(self.q_start, self.q_start + self.n_qs))

    @property
    def dofs_idx(self) -> list[int]:
        return list(range(self.dof_start, self.dof_start + self.n_dofs))


@dataclass
class Link:
    """A rigid link. ``pos``/``quat``: body frame offset in the parent frame (the world for a root).
    ``mass``: kg. ``com``: centre of mass ``(3,)``, m, in the link's body frame."""

    name: str
    parent: int
    pos: np.ndarray
    quat: np.ndarray
    visuals: list[Visual] = field(default_factory=list)
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    idx: int = -1
    joints: list[int] = field(default_factory=list)  # joint indices, in application order


@dataclass
class KinematicTree:
    """Links (parents before children) and joints (grouped by link, in qpos order)."""

    name: str
    source: Path
    links: list[Link]
    joints: list[Joint]
    default_qpos: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self):
        self._check_values()
        self._finalise_layout()

    def _check_values(self) -> None:
        """Every number the kernels will use is finite and within :data:`MAX_MODEL_NUMBER`, and every
        range ordered; a file that says otherwise is a :class:`ModelLoadError` naming it and the
        element (a NaN origin would otherwise load and make FK return NaN)."""
        def bad(values) -> bool:  # not finite, or beyond what a float32 engine holds with room to compute
            arr = np.asarray(values, dtype=float)
            return not np.all(np.isfinite(arr)) or bool(np.abs(arr).max(initial=0) > MAX_MODEL_NUMBER)

        for link in self.links:
            where = f"{self.source}: link '{link.name}'"
            if bad(link.pos) or bad(link.quat):
                raise ModelLoadError(f"{where}: its pose is not finite: pos {np.asarray(link.pos).tolist()}, "
                                     f"quat {np.asarray(link.quat).tolist()}")
            if np.linalg.norm(link.quat) < 1e-9:
                raise ModelLoadError(f"{where}: zero orientation quaternion")
            if bad(link.mass) or bad(link.com):
                raise ModelLoadError(f"{where}: its inertia is not finite: mass {link.mass}, centre of mass "
                                     f"{np.asarray(link.com).tolist()}")
            if link.mass < 0:
                raise ModelLoadError(f"{where}: negative mass {link.mass} kg; expected >= 0")
            for v in link.visuals:
                if bad(v.pos) or bad(v.quat) or bad(v.size):
                    raise ModelLoadError(f"{where}: a {v.kind} visual's pose or size is not finite")
        for joint in self.joints:
            where = f"{self.source}: joint '{joint.name}'"
            if bad(joint.pos) or bad(joint.axis):
                raise ModelLoadError(f"{where}: its anchor or axis is not finite: pos "
                                     f"{np.asarray(joint.pos).tolist()}, axis {np.asarray(joint.axis).tolist()}")
            if N_QS.get(joint.type) == 1 and np.linalg.norm(joint.axis) < 1e-12:
                raise ModelLoadError(f"{where}: zero axis")
            if np.isnan(joint.lower) or np.isnan(joint.upper) or joint.lower > joint.upper or \
                    joint.lower > MAX_MODEL_NUMBER or joint.upper < -MAX_MODEL_NUMBER:
                raise ModelLoadError(f"{where}: limits lower={joint.lower} upper={joint.upper}; expected "
                                     "lower <= upper")
            if np.isnan(joint.velocity_limit) or joint.velocity_limit < 0 or bad(joint.ref):
                raise ModelLoadError(f"{where}: velocity limit {joint.velocity_limit} or reference {joint.ref} "
                                     "is not a valid number")
            if joint.mimic is not None and bad([joint.mimic.multiplier, joint.mimic.offset]):
                raise ModelLoadError(f"{where}: mimic multiplier/offset not finite")
        if bad(self.default_qpos):
            raise ModelLoadError(f"{self.source}: the default configuration is not finite")

    def _finalise_layout(self) -> None:
        q = dof = 0
        for i, link in enumerate(self.links):
            link.idx = i
            link.joints = []
            if link.parent >= i:
                raise InvalidValueError(f"{self.source}: link '{link.name}' comes before its parent")
        for j, joint in enumerate(self.joints):
            if joint.type not in JOINT_TYPES:
                raise InvalidValueError(f"{self.source}: joint '{joint.name}': unsupported type '{joint.type}'")
            if j > 0 and joint.link < self.joints[j - 1].link:
                raise InvalidValueError(f"{self.source}: joints must be grouped in link order")
            joint.idx = j
            joint.q_start, joint.dof_start = q, dof
            q += joint.n_qs
            dof += joint.n_dofs
            self.links[joint.link].joints.append(j)
        self._n_qs, self._n_dofs = q, dof
        for joint in self.joints:
            if joint.mimic is not None and (joint.n_qs != 1 or self.joints[joint.mimic.leader].n_qs != 1):
                warnings.warn(f"{self.source}: joint '{joint.name}': mimic ignored (only 1-dof joints can "
                              f"follow a 1-dof leader; leader is '{self.joints[joint.mimic.leader].name}', "
                              f"{self.joints[joint.mimic.leader].type})", RuntimeWarning, stacklevel=3)
                joint.mimic = None
        for joint in self.joints:  # a mimic of a mimic follows the root leader
            seen = 0
            while joint.mimic is not None and self.joints[joint.mimic.leader].mimic is not None:
                outer = self.joints[joint.mimic.leader].mimic
                joint.mimic = Mimic(outer.leader, joint.mimic.multiplier * outer.multiplier,
                                    joint.mimic.multiplier * outer.offset + joint.mimic.offset)
                seen += 1
                if seen > len(self.joints):
                    raise InvalidValueError(f"{self.source}: joint '{joint.name}': mimic cycle")
        if self.default_qpos.shape != (q,):
            self.default_qpos = self.neutral_qpos()
        self.default_qpos = self.apply_mimic(self.default_qpos)

    # -- sizes and lookups ------------------------------------------------------------------
    @property
    def n_links(self) -> int:
        return len(self.links)

    @property
    def n_joints(self) -> int:
        return len(self.joints)

    @property
    def n_qs(self) -> int:
        return self._n_qs

    @property
    def n_dofs(self) -> int:
        return self._n_dofs

    def link_names(self) -> list[str]:
        return [link.name for link in self.links]

    def joint_names(self) -> list[str]:
        return [joint.name for joint in self.joints]

    # -- inertia ------------------------------------------------------------------------------
    @cached_property
    def link_masses(self) -> np.ndarray:
        """Mass of each link ``(n_links,)``, kg (read-only)."""
        return _read_only(np.array([link.mass for link in self.links], dtype=float))

    @cached_property
    def link_coms(self) -> np.ndarray:
        """Centre of mass of each link in its body frame ``(n_links, 3)``, m, scaled by the morph's
        scale as the link offsets are (read-only)."""
        return _read_only(np.array([link.com for link in self.links], dtype=float).reshape(self.n_links, 3))

    @cached_property
    def total_mass(self) -> float:
        """Sum of the link masses, kg."""
        return float(self.link_masses.sum())

    # -- qpos helpers -------------------------------------------------------------------------
    def moving_dofs(self, links) -> tuple[int, ...]:
        """The dofs whose motion moves any of ``links`` (local link indices): those of the joints of
        the links and their ancestors, a mimic joint counting as its leader's dof; sorted."""
        out: set[int] = set()
        seen: set[int] = set()
        for link in links:
            while link >= 0 and link not in seen:
                seen.add(link)
                for j in self.links[link].joints:
                    joint = self.joints[j]
                    if joint.mimic is not None:
                        joint = self.joints[joint.mimic.leader]
                    out.update(joint.dofs_idx)
                link = self.links[link].parent
        return tuple(sorted(out))

    def neutral_qpos(self) -> np.ndarray:
        """Zeros clamped into the limits, identity quaternions for ball and free joints, ``(n_qs,)``."""
        q = np.zeros(self.n_qs)
        for joint in self.joints:
            s = joint.q_start
            if joint.type == "free":
                q[s + 3] = 1.0
            elif joint.type == "ball":
                q[s] = 1.0
            elif joint.n_qs == 1:
                q[s] = np.clip(joint.ref, joint.lower, joint.upper)
        return q

    def apply_mimic(self, qpos: np.ndarray) -> np.ndarray:
        """Copy of ``qpos`` ``(..., n_qs)`` (same float dtype) with every mimic joint set from its leader."""
        qpos = np.array(qpos, dtype=None if np.asarray(qpos).dtype.kind == "f" else float, copy=True)
        return self.apply_mimic_inplace(qpos)

    def apply_mimic_inplace(self, qpos: np.ndarray) -> np.ndarray:
        """Set every mimic joint of the float array ``qpos`` ``(..., n_qs)`` from its leader, in place;
        returns ``qpos``."""
        for follower, leader, multiplier, offset in self._mimic_slots:
            qpos[..., follower] = multiplier * qpos[..., leader] + offset
        return qpos

    @cached_property
    def _mimic_slots(self) -> tuple[tuple[int, int, float, float], ...]:
        """(follower q, leader q, multiplier, offset) of each mimic joint."""
        return tuple((joint.q_start, self.joints[joint.mimic.leader].q_start, joint.mimic.multiplier,
                      joint.mimic.offset) for joint in self.joints if joint.mimic is not None)

    def check_joint_values(self, name: str, qpos: np.ndarray) -> None:
        """Raise ValueError naming ``name`` and the joint when a 1-dof joint's value in ``qpos``
        (..., n_qs) lies beyond :data:`MAX_JOINT_VALUE` (rad or m): finite, but meaningless to the
        kernels' sine and cosine, whose reduction of such an angle is noise."""
        qpos = np.asarray(qpos)
        columns = self._one_dof_qs
        if qpos.size == 0 or not columns.size or np.abs(qpos[..., columns]).max() <= MAX_JOINT_VALUE:
            return  # one vectorised test per call: this runs in every FK and set_qpos
        for joint in self.joints:  # name the culprit
            if joint.n_qs == 1:
                worst = float(np.abs(qpos[..., joint.q_start]).max())
                if worst > MAX_JOINT_VALUE:
                    raise InvalidValueError(f"{name}: joint '{joint.name}' is given {worst:.3g}; expected at most "
                                            f"{MAX_JOINT_VALUE:g} (rad or m) in magnitude")

    @functools.cached_property
    def _one_dof_qs(self) -> np.ndarray:
        """qpos indices of the 1-dof joints (hinges and slides)."""
        return np.array([j.q_start for j in self.joints if j.n_qs == 1], dtype=np.intp)

    def q_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds per qpos entry ``(n_qs,)`` (inf where unbounded)."""
        lo = np.full(self.n_qs, -np.inf)
        hi = np.full(self.n_qs, np.inf)
        for joint in self.joints:
            if joint.n_qs == 1:
                lo[joint.q_start], hi[joint.q_start] = joint.lower, joint.upper
        return lo, hi

    def velocity_limits(self) -> np.ndarray:
        """Velocity limit per dof ``(n_dofs,)``; the module defaults where the file gives none."""
        v = np.zeros(self.n_dofs)
        for joint in self.joints:
            for k, d in enumerate(joint.dofs_idx):
                limit = joint.velocity_limit
                if not np.isfinite(limit) or limit <= 0:
                    linear = joint.type == "prismatic" or (joint.type == "free" and k < 3)
                    limit = DEFAULT_LINEAR_VELOCITY_LIMIT if linear else DEFAULT_ANGULAR_VELOCITY_LIMIT
                v[d] = limit
        return v


def _read_only(arr: np.ndarray) -> np.ndarray:
    """``arr`` made read-only (a cached array must not be edited through one caller's reference)."""
    arr.setflags(write=False)
    return arr
