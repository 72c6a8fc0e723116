"""``RigidEntity``: one robot in a scene, its per-env state, FK, Jacobians and IK entry points.

State per env: ``qpos`` (n_qs,), link poses (n_links, 3 | 4) kept in step with qpos, and dof
position targets for :meth:`control_dofs_position`. Every method follows the seed's shape rule:
a batched scene takes and returns a leading env axis, an unbatched one none. Arrays come back in
the engine's precision (float32 or float64, as set by ``engine.init``), as fresh copies. Methods
validate all input before touching state, so a call that raises leaves the entity as it was.
"""

from __future__ import annotations

import sys
from collections import OrderedDict

import numpy as np

from . import backend, dispatch, inputs
from . import dofs as dofs_mod
from .backend import float_dtype
from .base_pose import BasePoseMethods
from .collision_api import CollisionMethods
from .elements import RigidJoint, RigidLink
from .errors import InvalidTypeError, InvalidValueError, OutOfMemoryError, StateError, UnknownNameError
from .ik import Scratch
from .ik_api import IKMethods
from .ik_plan import PlanCache
from .kernels import fk as fk_kernels
from .kernels import lane_fk, memory, threads
from .kernels.layout import pack_tree
from .kernels.spec import robot_spec
from .kinematic_readers import KinematicReaders
from .locking import new_lock, serialised
from .model.tree import MAX_JOINT_VALUE, KinematicTree
from .morphs import Shape

# per-env state; the _init_* arrays are what reset restores. _body_pose: a fixed single body's pose
# (pos, quat wxyz; (B, 7)), which set_pos / set_quat move; (B, 0) for every other entity.
STATE_ARRAYS = ("_qpos", "_pose", "_dof_target", "_dof_controlled", "_init_qpos", "_body_pose", "_init_body_pose")


class RigidEntity(IKMethods, CollisionMethods, KinematicReaders, BasePoseMethods):
    """An entity added with ``scene.add_entity(morph)`` (a robot, or a single body: Plane, Box,
    Sphere, Cylinder, Mesh); usable once the scene is built. ``surface`` and ``material`` are the
    ones it was added with (:mod:`engine.surfaces`, :mod:`engine.materials`)."""

    def __init__(self, scene, tree: KinematicTree, morph, entity_id: int, link_start: int, joint_start: int,
                 surface=None, material=None):
        self._scene = scene
        self.tree = tree
        self.morph = morph
        self.surface = surface
        self.material = material
        self.idx = entity_id
        self.links = [RigidLink(link.name, i, link_start + i, link.parent, entity_id, self)
                      for i, link in enumerate(tree.links)]
        self.joints = [RigidJoint(j.name, j.type, i, joint_start + i, j.link, tuple(j.qs_idx),
                                  tuple(j.dofs_idx), entity_id) for i, j in enumerate(tree.joints)]
        self._lock = new_lock()  # held by every call that touches state or buffers (engine.locking)
        self._link_by_name = {link.name: link for link in self.links}
        self._joint_by_name = {joint.name: joint for joint in self.joints}
        self._built = False

    # -- structure ----------------------------------------------------------------------------
    @property
    def n_links(self) -> int:
        return self.tree.n_links

    @property
    def n_joints(self) -> int:
        return self.tree.n_joints

    @property
    def n_qs(self) -> int:
        return self.tree.n_qs

    @property
    def n_dofs(self) -> int:
        return self.tree.n_dofs

    @property
    def is_free(self) -> bool:
        """True when the base link has a free joint (a floating robot, or a single body not fixed)."""
        joints = self.tree.joints
        return bool(joints) and joints[0].type == "free" and joints[0].link == 0

    @property
    def is_placed_body(self) -> bool:
        """True for a fixed single body (Plane, or a Box, Sphere, Cylinder or Mesh with ``fixed=True``):
        no joint, and a pose per env that ``set_pos`` / ``set_quat`` move."""
        return isinstance(self.morph, Shape) and self.morph.fixed

    @property
    def base_link(self) -> RigidLink:
        return self.links[0]

    @property
    def q_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper qpos bounds ``(n_qs,)`` each (inf where unbounded)."""
        return self.tree.q_limits()

    def get_link(self, name: str) -> RigidLink:
        """The link called ``name``; KeyError listing the valid names otherwise."""
        if isinstance(name, RigidLink):
            return self._own_link(name, "link")
        if name not in self._link_by_name:
            raise UnknownNameError(f"name: no link '{name}' in '{self.tree.name}'; links are: "
                                   f"{', '.join(self._link_by_name)}")
        return self._link_by_name[name]

    def get_joint(self, name: str) -> RigidJoint:
        """The joint called ``name``; KeyError listing the valid names otherwise."""
        if name not in self._joint_by_name:
            raise UnknownNameError(f"name: no joint '{name}' in '{self.tree.name}'; joints are: "
                                   f"{', '.join(self._joint_by_name)}")
        return self._joint_by_name[name]

    def _own_link(self, link, arg: str = "link") -> RigidLink:
        """``link`` (a RigidLink of this entity, or a link name) as this entity's link; errors name
        ``arg``."""
        if isinstance(link, str):
            try:
                return self.get_link(link)
            except KeyError as err:  # get_link's message names its own argument
                raise UnknownNameError(f"{arg}: {str(err.args[0]).removeprefix('name: ')}") from None
        if not isinstance(link, RigidLink):
            raise InvalidTypeError(f"{arg}: expected a RigidLink or a link name, got {type(link).__name__}")
        if link.entity_id != self.idx or link.idx_local >= self.n_links or self.links[link.idx_local] != link:
            raise InvalidValueError(f"{arg}: link '{link.name}' belongs to another entity")
        return link

    # -- build-time state -----------------------------------------------------------------------
    @serialised
    def _build(self, n_envs: int) -> None:
        dtype = float_dtype()
        self._generation = backend.STATE.generation
        self._dtype = dtype
        self._packed = pack_tree(self.tree, dtype)
        self._robot_args = tuple(memory.constant(a) for a in self._packed.args())  # on the device on a GPU
        self._spec = robot_spec(self._packed)  # None: the generic kernels serve this robot
        self._B = n_envs
        self._qpos = np.tile(self.tree.default_qpos.astype(dtype), (n_envs, 1))
        self._pose = np.zeros((n_envs, self.n_links, 7), dtype)  # link poses: pos xyz, quat wxyz
        self._dof_target = dofs_mod.qpos_to_dofs(self.tree, self._qpos.astype(float))
        self._dof_controlled = np.zeros((n_envs, self.n_dofs), dtype=bool)
        self._init_qpos = self._qpos.copy()  # what scene.reset() restores
        self._velocity_limit = self.tree.velocity_limits()
        self._q_limits = self.tree.q_limits()
        self._has_quaternions = any(j.type in ("ball", "free") for j in self.tree.joints)
        self._ik_plans = PlanCache()  # IK kernel tables per request (engine.ik_plan)
        self._ik_requests: OrderedDict = OrderedDict()  # Genesis calls' parameters -> request (engine.ik_api)
        self._ik_scratch = Scratch()  # the solver's working arrays (engine.ik)
        self._built = True
        self._run_fk(self._qpos, self._pose)
        self._body_pose = self._pose[:, 0].copy() if self.is_placed_body else np.zeros((n_envs, 0), dtype)
        self._init_body_pose = self._body_pose.copy()

    @serialised
    def _destroy(self) -> None:
        for name in STATE_ARRAYS + ("_collision", "_check_tables", "_obstacle_spheres", "_ik_scratch", "_ik_plans",
                                    "_ik_requests", "_fk_out", "_jac_pose", "_robot_args"):
            self.__dict__.pop(name, None)
        self._built = False

    def _require_built(self) -> None:
        if not self._built:
            raise StateError("the scene is not built: call scene.build() first")
        if self._generation != backend.STATE.generation:  # its kernels and device arrays are gone
            raise StateError("the scene was built before engine.init() was called again, which resets "
                               "taichi: build a new scene")

    def _run_fk(self, qpos: np.ndarray, pose: np.ndarray) -> None:
        """FK of qpos (B, n_qs) into link poses ``pose`` (B, n_links, 7): pos xyz, quat wxyz."""
        q, n = _kernel_array(qpos), qpos.shape[0]
        threads.CHOICE.launch(("fk", id(self._packed)), n,
                              lambda serial: fk_kernels.forward_kinematics(q, *self._robot_args, pose, serial))

    def state_bytes_per_env(self) -> int:
        """Bytes of per-env state one env costs (what :meth:`state_nbytes` holds per env), known
        before the scene is built."""
        size = np.dtype(float_dtype()).itemsize
        body = 2 * 7 * size if self.is_placed_body else 0
        return 2 * self.n_qs * size + self.n_links * 7 * size + self.n_dofs * (8 + 1) + body

    def widest_row(self) -> int:
        """Elements per env of the widest per-env array a kernel indexes (a pose buffer of links and
        joint frames)."""
        return (self.n_links + self.n_joints) * 7

    @serialised
    def state_nbytes(self) -> int:
        """Bytes held in per-env state arrays (all envs)."""
        return sum(getattr(self, name).nbytes for name in STATE_ARRAYS)

    # -- index and shape helpers ----------------------------------------------------------------
    @property
    def _batched(self) -> bool:
        return self._scene.is_batched

    def _envs(self, envs_idx) -> np.ndarray:
        if envs_idx is not None and not self._batched:
            raise InvalidValueError("envs_idx: the scene was built without n_envs; pass envs_idx=None")
        idx = inputs.as_index_list("envs_idx", envs_idx, self._B, "env")
        return np.arange(self._B) if idx is None else idx

    def _out(self, arr: np.ndarray) -> np.ndarray:
        """Drop the env axis for an unbatched scene."""
        return arr if self._batched else arr[0]

    def _select(self, name: str, idx, size: int, what: str) -> np.ndarray:
        sel = inputs.as_index_list(name, idx, size, what)
        return np.arange(size) if sel is None else sel

    # -- qpos and dofs ----------------------------------------------------------------------------
    @serialised
    def get_qpos(self, qs_idx_local=None, envs_idx=None) -> np.ndarray:
        """qpos ``([n_envs,] n_qs)``, or the selected entries / envs."""
        self._require_built()
        envs = self._envs(envs_idx)
        qs = self._select("qs_idx_local", qs_idx_local, self.n_qs, "qpos")
        return self._out(self._qpos[np.ix_(envs, qs)])

    @serialised
    def set_qpos(self, qpos, qs_idx_local=None, envs_idx=None, *, zero_velocity: bool = True,
                 skip_forward: bool = False) -> None:
        """Teleport: write qpos ``([n_envs,] n)`` (n = len(qs_idx_local) or n_qs) and update link poses.
        Mimic joints are set from their leaders; ball/free quaternions are normalised.
        ``zero_velocity`` False keeps the dof velocities the readers report; ``skip_forward`` is
        accepted (link poses are always updated)."""
        self._require_built()
        kept = self._velocities_kept(zero_velocity, skip_forward)
        envs = self._envs(envs_idx)
        qs = self._select("qs_idx_local", qs_idx_local, self.n_qs, "qpos")
        values = inputs.batched("qpos", qpos, (len(qs),), len(envs), self._batched)
        full = self._qpos[envs].astype(float)
        full[:, qs] = values
        full = self.tree.apply_mimic(dofs_mod.normalize_quaternions(self.tree, full))
        self.tree.check_joint_values("qpos", full)
        self._commit_qpos(envs, full)
        self._restore_velocities(kept)

    @serialised
    def get_dofs_position(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        """Dof positions ``([n_envs,] n)`` (see :mod:`engine.dofs` for ball and free joints)."""
        self._require_built()
        envs = self._envs(envs_idx)
        dofs = self._select("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        return self._out(dofs_mod.qpos_to_dofs(self.tree, self._qpos[envs].astype(float))[:, dofs].astype(self._dtype))

    @serialised
    def set_dofs_position(self, position, dofs_idx_local=None, envs_idx=None, *, zero_velocity: bool = True) -> None:
        """Teleport: write dof positions ``([n_envs,] n)`` and update link poses (``zero_velocity``:
        as in :meth:`set_qpos`)."""
        self._require_built()
        kept = self._velocities_kept(zero_velocity)
        envs = self._envs(envs_idx)
        dofs = self._select("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        values = inputs.batched("position", position, (len(dofs),), len(envs), self._batched)
        full = dofs_mod.qpos_to_dofs(self.tree, self._qpos[envs].astype(float))
        full[:, dofs] = values
        qpos = dofs_mod.dofs_to_qpos(self.tree, full)
        self.tree.check_joint_values("position", qpos)
        self._commit_qpos(envs, qpos)
        self._restore_velocities(kept)

    def _commit_qpos(self, envs: np.ndarray, qpos: np.ndarray) -> None:
        self._note_motion(None, 0.0)  # a teleport: velocities zero (a step sets them after)
        new = self._qpos.copy()
        new[envs] = qpos
        self._qpos = new.astype(self._dtype)
        if self._body_pose.shape[1]:  # a fixed body (one link, no joint) sits where set_pos / set_quat put it
            self._pose[:, 0] = self._body_pose
            return
        self._run_fk(self._qpos, self._pose)

    @serialised
    def control_dofs_position(self, position, dofs_idx_local=None, envs_idx=None) -> None:
        """Set position targets ``([n_envs,] n)``; ``scene.step()`` moves each dof toward its target
        by at most its velocity limit x dt."""
        self._require_built()
        envs = self._envs(envs_idx)
        dofs = self._select("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        values = inputs.batched("position", position, (len(dofs),), len(envs), self._batched)
        if np.abs(values).max(initial=0) > MAX_JOINT_VALUE:
            raise InvalidValueError(f"position: expected dof targets of at most {MAX_JOINT_VALUE:g} (rad or m) in "
                                    f"magnitude, got {float(np.abs(values).max()):.3g}")
        self._dof_target[np.ix_(envs, dofs)] = values
        self._dof_controlled[np.ix_(envs, dofs)] = True

    @serialised
    def _step(self, dt: float, joint_limits: bool = False) -> None:
        """Move controlled dofs toward their targets for ``dt`` s; with ``joint_limits`` the moved
        hinges and slides stop at their limits (RigidOptions.enable_joint_limit)."""
        before = self._qpos
        if not self._dof_controlled.any():
            self._note_motion(None, dt)  # nothing moved: zero velocities, no differencing
            return
        qpos = dofs_mod.step_towards(self.tree, self._qpos.astype(float), self._dof_target,
                                     self._dof_controlled, self._velocity_limit * dt)
        if joint_limits:
            qpos = self.tree.apply_mimic(_clamp_controlled(self.tree, qpos, self._dof_controlled, self._q_limits))
        self._commit_qpos(np.arange(self._B), qpos)
        self._note_motion(before, dt)

    @serialised
    def _reset(self, envs: np.ndarray, qpos: np.ndarray | None = None, body_pose: np.ndarray | None = None) -> None:
        """Back to the initial state in ``envs``: the qpos at build (or the one ``qpos`` (B, n_qs)
        registers as initial), no dof targets; a fixed body back to its pose at build (or the one
        ``body_pose`` (B, 7) registers)."""
        if qpos is not None:
            self._init_qpos = np.array(qpos, dtype=self._dtype)
        if body_pose is not None and self._body_pose.shape[1]:
            self._init_body_pose = np.array(body_pose, dtype=self._dtype)
        if self._body_pose.shape[1]:
            placed = self._body_pose.copy()
            placed[envs] = self._init_body_pose[envs]
            self._body_pose = placed
        self._dof_target[envs] = dofs_mod.qpos_to_dofs(self.tree, self._init_qpos[envs].astype(float))
        self._dof_controlled[envs] = False
        self._commit_qpos(envs, self._init_qpos[envs].astype(float))

    # -- link poses, FK, Jacobian -----------------------------------------------------------------
    @serialised
    def get_links_pos(self, links_idx_local=None, envs_idx=None) -> np.ndarray:
        """Link origins ``([n_envs,] n_links, 3)`` in the (env-local) world frame, m."""
        self._require_built()
        envs = self._envs(envs_idx)
        links = self._select("links_idx_local", links_idx_local, self.n_links, "link")
        return self._out(self._pose[np.ix_(envs, links)][..., :3])

    @serialised
    def get_links_quat(self, links_idx_local=None, envs_idx=None) -> np.ndarray:
        """Link orientations ``([n_envs,] n_links, 4)``, (w, x, y, z)."""
        self._require_built()
        envs = self._envs(envs_idx)
        links = self._select("links_idx_local", links_idx_local, self.n_links, "link")
        return self._out(self._pose[np.ix_(envs, links)][..., 3:])

    @serialised
    def forward_kinematics(self, qpos, qs_idx_local=None, links_idx_local=None, envs_idx=None):
        """Link poses for a configuration, without touching the scene's state.

        ``qpos``: ``([n_envs,] n)`` with n = len(qs_idx_local) or n_qs; entries not selected by
        ``qs_idx_local`` are taken from the current state. Returns ``(links_pos, links_quat)`` of
        shapes ``([n_envs,] n_links, 3)`` and ``([n_envs,] n_links, 4)`` for the selected links/envs.
        """
        self._require_built()
        envs = None if envs_idx is None else self._envs(envs_idx)
        n = self._B if envs is None else len(envs)
        links = inputs.as_index_list("links_idx_local", links_idx_local, self.n_links, "link")
        if qs_idx_local is None:
            full = inputs.batched("qpos", qpos, (self.n_qs,), n, self._batched, dtype=self._dtype)
        else:
            qs = self._select("qs_idx_local", qs_idx_local, self.n_qs, "qpos")
            values = inputs.batched("qpos", qpos, (len(qs),), n, self._batched)
            full = (self._qpos if envs is None else self._qpos[envs]).astype(float)
            full[:, qs] = values
        self.tree.check_joint_values("qpos", full)
        if self._has_quaternions:  # as set_qpos does: zero quaternions are an error, others made unit
            full = dofs_mod.normalize_quaternions(self.tree, full)
        # mimic joints need no fix-up here: the kernels derive them from their leaders
        full = np.ascontiguousarray(full, dtype=self._dtype)
        if dispatch.fk_form(self._spec, n) == "lane":
            pos, quat = self._fk_buffers(n)
            # serial or parallel, whichever has lately been faster here (kernels.threads)
            threads.CHOICE.launch(("lane_fk", id(self._spec)), n,
                                  lambda serial: lane_fk.run_fk(self._spec, full, pos, quat, serial))
        else:
            pose = _allocate("forward_kinematics", (n, self.n_links, 7), self._dtype)
            self._run_fk(full, pose)
            pos, quat = pose[..., :3], pose[..., 3:]
        if self._body_pose.shape[1]:  # a fixed body: where set_pos / set_quat put it, whatever qpos says
            placed = self._body_pose if envs is None else self._body_pose[envs]
            pos[:, 0], quat[:, 0] = placed[:, :3], placed[:, 3:]
        if links is not None:
            pos, quat = pos[:, links], quat[:, links]
        return self._out(pos), self._out(quat)

    def _fk_buffers(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Output arrays (n, n_links, 3) / (n, n_links, 4) for a large ``forward_kinematics``: the
        previous call's when nothing else refers to them any more (their reference counts say so),
        else new ones. Fresh multi-MB arrays cost a page fault per 4 KiB on first write (~0.2 ms
        at 16384 Panda rows); a caller that keeps its results always gets new arrays."""
        kept = self.__dict__.get("_fk_out")
        if kept is not None:
            pos, quat = kept
            # 3 references each: the kept tuple, the local name and getrefcount's argument
            if pos.shape[0] == n and sys.getrefcount(pos) == 3 and sys.getrefcount(quat) == 3:
                return pos, quat
        kept = (_allocate("forward_kinematics", (n, self.n_links, 3), self._dtype),
                _allocate("forward_kinematics", (n, self.n_links, 4), self._dtype))
        self._fk_out = kept
        return kept

    @serialised
    def get_jacobian(self, link, local_point=None, envs_idx=None) -> np.ndarray:
        """Jacobian ``([n_envs,] 6, n_dofs)`` of a point fixed to ``link`` at the current state.

        ``local_point`` (3,) is in the link frame (default: the link origin). Rows 0-2: linear
        velocity of the point; rows 3-5: angular velocity; world axes; one column per dof.
        """
        self._require_built()
        link = self._own_link(link)
        envs = self._envs(envs_idx)
        point = np.zeros(3) if local_point is None else inputs.as_float_array("local_point", local_point)
        if point.shape != (3,):
            raise InvalidValueError(f"local_point: expected shape (3,), got {point.shape}")
        n = len(envs)
        pose = self._jacobian_pose(n)
        J = _allocate("get_jacobian", (n, 6, max(self.n_dofs, 1)), self._dtype, zero=True)
        q, point = _kernel_array(self._qpos[envs]), point.astype(self._dtype)[None]
        threads.CHOICE.launch(("jacobian", id(self._packed)), n,
                              lambda serial: fk_kernels.jacobian(q, link.idx_local, point, *self._robot_args, pose,
                                                                 J, serial))
        return self._out(J[:, :, : self.n_dofs])

    def _jacobian_pose(self, n: int):
        """The Jacobian kernel's FK scratch (n, pose_rows, 7): new on the CPU (cheap), kept on a GPU,
        where it never leaves the device (:mod:`engine.kernels.memory`)."""
        if not memory.on_device():
            return np.empty((n, self._packed.pose_rows, 7), self._dtype)
        kept = self.__dict__.get("_jac_pose")
        if kept is None or kept.shape[0] != n:
            kept = self._jac_pose = memory.scratch((n, self._packed.pose_rows, 7), self._dtype)
        return kept


def _clamp_controlled(tree: KinematicTree, qpos: np.ndarray, controlled: np.ndarray, limits) -> np.ndarray:
    """``qpos`` (B, n_qs) with every controlled hinge or slide clipped into its limits."""
    lo, hi = limits
    out = qpos.copy()
    for joint in tree.joints:
        if joint.n_qs == 1 and joint.mimic is None:
            q, moved = joint.q_start, controlled[:, joint.dof_start]
            out[moved, q] = np.clip(out[moved, q], lo[q], hi[q])
    return out


def _kernel_array(arr: np.ndarray) -> np.ndarray:
    """A C-contiguous array with no zero-length axis (taichi cannot take an empty array)."""
    if arr.shape[-1] == 0:
        arr = np.zeros(arr.shape[:-1] + (1,), arr.dtype)
    return np.ascontiguousarray(arr)


def _allocate(call: str, shape: tuple, dtype, zero: bool = False) -> np.ndarray:
    """An output array for ``call``; numpy's MemoryError, which names nothing, becomes one that
    says which call and how much."""
    try:
        return np.zeros(shape, dtype) if zero else np.empty(shape, dtype)
    except MemoryError:
        need = int(np.prod(shape)) * np.dtype(dtype).itemsize
        raise OutOfMemoryError(f"{call}: its output for {shape[0]:,} envs needs {need / 2**20:,.0f} MiB, which this "
                               "machine cannot allocate now; ask for fewer envs (envs_idx)") from None
