"""``Configuration``: one entity's kinematic state over the envs of a built scene.

Made by ``scene.build()`` (one per entity) and dropped by ``scene.destroy()``; everything that
reads or writes an entity's joint state goes through it: the tree and its kernel tables, the
float dtype, the env count, qpos and the link poses kept in step with it, the joint limits, the
dof position targets, and what ``scene.reset()`` restores. IK and collision checks keep their own
state objects beside it (:class:`engine.ik.state.IKState`, :class:`engine.collision.state.CollisionState`).

Shapes: ``B`` = envs of the scene (1 for an unbatched one), ``n_qs`` / ``n_dofs`` / ``n_links`` of
the tree. Positions in m, angles in rad, quaternions (w, x, y, z).
"""

from __future__ import annotations

import sys

import numpy as np

from . import dofs as dofs_mod
from . import inputs
from .errors import InvalidValueError, OutOfMemoryError
from .kernels import fk as fk_kernels
from .kernels.layout import pack_tree
from .kernels.spec import robot_spec
from .model.tree import KinematicTree
from .runtime import dispatch, memory, span, threads
from .runtime.state import STATE, float_dtype

# the per-env arrays (what state_nbytes counts); the init_* ones are what reset restores
STATE_ARRAYS = ("qpos", "pose", "dof_target", "dof_controlled", "init_qpos", "body_pose", "init_body_pose")


class Configuration:
    """The kinematic state of one entity over ``n_envs`` envs.

    Attributes (arrays in :attr:`dtype`, the engine's precision, unless said otherwise):
        tree: the :class:`~engine.model.tree.KinematicTree`.
        n_envs: B; batched: whether the scene was built with ``n_envs`` (else arrays returned to
            users drop the env axis).
        packed, robot_args: the tree's kernel tables (numpy, and as kernel arguments: on the device
            on a GPU); spec: the per-robot kernels' :class:`~engine.kernels.spec.RobotSpec`, or None.
        qpos ``(B, n_qs)``; pose ``(B, n_links, 7)``: link poses (pos xyz, quat wxyz) of qpos.
        dof_target ``(B, n_dofs)`` float64 and dof_controlled ``(B, n_dofs)`` bool:
            ``control_dofs_position``'s targets.
        init_qpos ``(B, n_qs)``: what ``scene.reset()`` restores.
        body_pose, init_body_pose ``(B, 7)``: a fixed single body's pose (``(B, 0)`` otherwise).
        q_limits: ``(lower, upper)`` ``(n_qs,)`` each; velocity_limit ``(n_dofs,)`` rad/s or m/s.
        generation: the ``engine.init`` generation it was built in (older ones are stale).
        dof_velocity ``(B, n_dofs)`` or None (zero): the last step's dof velocities, or what
            ``set_dofs_velocity`` set; a teleport zeroes it (:mod:`engine.kinematic_readers`).
    """

    def __init__(self, tree: KinematicTree, n_envs: int, batched: bool, placed_body: bool):
        dtype = float_dtype()
        self.tree = tree
        self.dtype = dtype
        self.n_envs = n_envs
        self.batched = batched
        self.generation = STATE.generation
        self.packed = pack_tree(tree, dtype)
        self.robot_args = tuple(memory.constant(a) for a in self.packed.args())  # on the device on a GPU
        self.spec = robot_spec(self.packed)  # None: the generic kernels serve this robot
        self.qpos = np.tile(tree.default_qpos.astype(dtype), (n_envs, 1))
        self.pose = np.zeros((n_envs, tree.n_links, 7), dtype)
        self.dof_target = dofs_mod.qpos_to_dofs(tree, self.qpos.astype(float))
        self.dof_controlled = np.zeros((n_envs, tree.n_dofs), dtype=bool)
        self.init_qpos = self.qpos.copy()
        self.velocity_limit = tree.velocity_limits()
        self.q_limits = tree.q_limits()
        self.has_quaternions = any(j.type in ("ball", "free") for j in tree.joints)
        self._fk_out = None  # large forward_kinematics outputs, reused while nobody holds them
        self._jac_pose = None  # the Jacobian kernel's FK scratch on a GPU
        self.run_fk(self.qpos, self.pose)
        self.body_pose = self.pose[:, 0].copy() if placed_body else np.zeros((n_envs, 0), dtype)
        self.init_body_pose = self.body_pose.copy()
        self.dof_velocity = None  # (B, n_dofs) dof velocities, or None: zero (engine.kinematic_readers)

    @property
    def is_current(self) -> bool:
        """False once ``engine.init`` (or ``destroy``) was called again: the scene must be built anew."""
        return self.generation == STATE.generation

    def state_nbytes(self) -> int:
        """Bytes held in the per-env arrays (all envs)."""
        return sum(getattr(self, name).nbytes for name in STATE_ARRAYS)

    # -- envs and shapes ----------------------------------------------------------------------
    def envs(self, envs_idx) -> np.ndarray:
        """``envs_idx`` (None: every env) as an index array, checked; errors name ``envs_idx``."""
        if envs_idx is not None and not self.batched:
            raise InvalidValueError("envs_idx: the scene was built without n_envs; pass envs_idx=None")
        idx = inputs.as_index_list("envs_idx", envs_idx, self.n_envs, "env")
        return np.arange(self.n_envs) if idx is None else idx

    def out(self, arr: np.ndarray) -> np.ndarray:
        """``arr`` with its env axis dropped for an unbatched scene (the public edge's shape rule)."""
        return arr if self.batched else arr[0]

    # -- qpos and link poses ----------------------------------------------------------------------
    def commit_qpos(self, envs: np.ndarray, qpos: np.ndarray) -> None:
        """Write checked configurations ``qpos (len(envs), n_qs)`` into the envs ``envs`` and update
        their link poses (a fixed body keeps the pose ``set_pos`` / ``set_quat`` gave it)."""
        self.dof_velocity = None  # a teleport zeroes velocities (a step sets them after: note_step)
        new = self.qpos.copy()
        new[envs] = qpos
        self.qpos = new.astype(self.dtype)
        if self.body_pose.shape[1]:
            self.pose[:, 0] = self.body_pose
            return
        self.run_fk(self.qpos, self.pose)

    def note_step(self, before: np.ndarray, dt: float) -> None:
        """After a step from ``before (B, n_qs)``: the dof velocities, the change of the dof
        positions over ``dt`` s."""
        old = dofs_mod.qpos_to_dofs(self.tree, before.astype(float))
        new = dofs_mod.qpos_to_dofs(self.tree, self.qpos.astype(float))
        self.dof_velocity = ((new - old) / dt).astype(self.dtype)

    def run_fk(self, qpos: np.ndarray, pose: np.ndarray) -> None:
        """FK of ``qpos (n, n_qs)`` into link poses ``pose (n, n_links, 7)`` (pos xyz, quat wxyz)."""
        q, n = kernel_array(qpos), qpos.shape[0]
        for offset in span.thread_offsets(n):
            threads.CHOICE.launch(("fk", id(self.packed)), n,
                                  lambda serial, at=offset: fk_kernels.forward_kinematics(q, *self.robot_args, pose,
                                                                                          serial, at))

    def fk_poses(self, qpos: np.ndarray) -> np.ndarray:
        """Link poses ``(n, n_links, 7)`` (pos, quat wxyz) of configurations ``qpos (n, n_qs)``."""
        pose = np.zeros((qpos.shape[0], self.tree.n_links, 7), self.dtype)
        if qpos.shape[0]:
            self.run_fk(np.ascontiguousarray(qpos, dtype=self.dtype), pose)
        return pose

    def fk_buffers(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Output arrays ``(n, n_links, 3)`` / ``(n, n_links, 4)`` for a large ``forward_kinematics``:
        the previous call's when nothing else refers to them any more (their reference counts say
        so), else new ones. Fresh multi-MB arrays cost a page fault per 4 KiB on first write (~0.2
        ms at 16384 Panda rows); a caller that keeps its results always gets new arrays."""
        kept = self._fk_out
        if kept is not None:
            pos, quat = kept
            # 3 references each: the kept tuple, the local name and getrefcount's argument
            if pos.shape[0] == n and sys.getrefcount(pos) == 3 and sys.getrefcount(quat) == 3:
                return pos, quat
        kept = (allocate("forward_kinematics", (n, self.tree.n_links, 3), self.dtype),
                allocate("forward_kinematics", (n, self.tree.n_links, 4), self.dtype))
        self._fk_out = kept
        return kept

    def jacobian_pose(self, n: int):
        """The Jacobian kernel's FK scratch ``(n, pose_rows, 7)``: new on the CPU (cheap), kept on a
        GPU, where it never leaves the device (:mod:`engine.runtime.memory`)."""
        if not memory.on_device():
            return np.empty((n, self.packed.pose_rows, 7), self.dtype)
        kept = self._jac_pose
        if kept is None or kept.shape[0] != n:
            kept = self._jac_pose = memory.scratch((n, self.packed.pose_rows, 7), self.dtype)
        return kept


def prepare_fk() -> None:
    """Compile, or load from taichi's cache, the FK kernel in each form a launch may take (serial
    and parallel on the CPU; one on a GPU), on a one-body tree: the kernel is the same for every
    robot (its tables are arguments), so no later build or pose read compiles it. For a process
    that must not stop for a compile later: taichi holds the GIL while it compiles, so the app's
    GUI thread would wait (0.2-0.6 s on a busy 2-core machine) if its first scene compiled it."""
    from .model import load
    from .morphs import Box

    config = Configuration(load(Box(size=(0.1, 0.1, 0.1)), None), 1, False, False)  # runs FK once
    q = kernel_array(config.qpos)
    for serial in {dispatch.serial(1), dispatch.serial(dispatch.SERIAL_MAX_ROWS + 1)}:
        fk_kernels.forward_kinematics(q, *config.robot_args, config.pose, serial, 0)


def kernel_array(arr: np.ndarray) -> np.ndarray:
    """A C-contiguous array with no zero-length axis (taichi cannot take an empty array)."""
    if arr.shape[-1] == 0:
        arr = np.zeros(arr.shape[:-1] + (1,), arr.dtype)
    return np.ascontiguousarray(arr)


def allocate(call: str, shape: tuple, dtype, zero: bool = False) -> np.ndarray:
    """An output array for ``call``; numpy's MemoryError, which names nothing, becomes one that
    says which call and how much."""
    try:
        return np.zeros(shape, dtype) if zero else np.empty(shape, dtype)
    except MemoryError:
        need = int(np.prod(shape)) * np.dtype(dtype).itemsize
        raise OutOfMemoryError(f"{call}: its output for {shape[0]:,} envs needs {need / 2**20:,.0f} MiB, which this "
                               "machine cannot allocate now; ask for fewer envs (envs_idx)") from None
