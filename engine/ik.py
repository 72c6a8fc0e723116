"""Inverse kinematics front end: validates a request, runs the solver kernel, and picks each env's
answer among its restarts.

Genesis' parameters and defaults. ``rot_mask`` semantics: all True = full orientation; exactly
one True = that axis of the link is aligned with the same axis of the target, rotation about it
free (for any target orientation); all False = orientation free; two True is an error.

Everything but the targets, start configurations and seed is validated once per distinct request
and kept (:mod:`engine.ik_plan`); a repeated call checks its targets and launches. The solver is
:mod:`engine.kernels.static_ik` (compiled for the robot) or :mod:`engine.kernels.ik` (generic).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import backend, inputs
from .ik_plan import KERNELS, IKPlan, get_plan, labeler
from .kernels import choose as choose_kernel
from .kernels import fk as fk_kernels
from .kernels import ik as ik_kernels
from .kernels import memory, static_ik

__all__ = ["KERNELS", "IKResult", "fixed_sizes", "solve_ik"]

SERIAL_MAX_THREADS = 64  # per-robot solves of up to this many threads run in the calling thread on a CPU


@dataclass
class IKResult:
    """What one IK call found, per env (leading axis dropped for an unbatched scene).

    ``qpos`` ([n_envs,] n_qs); ``error`` ([n_envs,] n_links, 6): masked position (m) and rotation
    (rad, rotation vector) error of each target, world axes, at ``qpos``; ``success`` ([n_envs,])
    bool: every target within pos_tol / rot_tol; ``iterations`` ([n_envs,]): solver iterations of
    the returned sample; ``sample`` ([n_envs,]): which restart it came from (0 = init_qpos).
    """

    qpos: np.ndarray
    error: np.ndarray
    success: np.ndarray
    iterations: np.ndarray
    sample: np.ndarray

    @property
    def pos_error(self) -> np.ndarray:
        """Norm of each target's masked position error ([n_envs,] n_links), m."""
        return np.linalg.norm(self.error[..., :3], axis=-1)

    @property
    def rot_error(self) -> np.ndarray:
        """Angle of each target's masked rotation error ([n_envs,] n_links), rad."""
        return np.linalg.norm(self.error[..., 3:], axis=-1)


MAX_FIXED_DOFS = 16  # robots up to this many dofs get a solver compiled for their exact sizes ...
MAX_FIXED_TASKS = 2
MIN_FIXED_ENVS = 256  # ... when the batch is large enough to repay a compile (~10 s cold, then cached on disk)


def fixed_sizes(n_tasks: int, n_dofs: int, n_envs: int) -> tuple[int, int, int]:
    """Compile-time (rows, dofs, tasks) for the solver, or zeros to read the sizes at run time.

    Exact sizes make the small dense loops ~25 % faster, but each robot structure then compiles its
    own solver; the generic one (zeros) serves every robot. Large batches of small robots get the
    exact sizes; interactive use (the app's 16 envs, robot after robot) keeps the generic solver.
    """
    if n_envs >= MIN_FIXED_ENVS and n_dofs <= MAX_FIXED_DOFS and n_tasks <= MAX_FIXED_TASKS:
        return 6 * n_tasks, n_dofs, n_tasks
    return 0, 0, 0


class _Scratch:
    """Per-entity IK arrays, reused while shapes stay the same: the per-thread kept solutions and
    (generic solver) working set, which never leave the device on a GPU
    (:func:`engine.kernels.memory.scratch`), and the per-env answers the host reads."""

    def __init__(self):
        self.key = None
        self.arrays: dict = {}

    def get(self, n_envs: int, K: int, n_tasks: int, n_qs: int, pose_rows: int, n_dofs: int, dtype,
            generic: bool = True) -> dict:
        key = (n_envs, K, n_tasks, n_qs, pose_rows, n_dofs, dtype, generic, backend.STATE.generation)
        if key != self.key:
            T, m = n_envs * K, 6 * n_tasks
            shapes = dict(best_q=((T, n_qs + 2), dtype), best_err=((T, n_tasks, 6), dtype),
                          best_i=((T, 3), np.int32))
            if generic:  # the per-robot kernel keeps its working set in registers
                shapes.update(q=((T, n_qs), dtype), pose=((T, pose_rows, 7), dtype), J=((T, m, n_dofs), dtype),
                              A=((T, m, m), dtype), vec=((T, 2 * m + 2 * n_dofs), dtype))
            self.arrays = {k: memory.scratch(shape, dt) for k, (shape, dt) in shapes.items()}
            # each env's answer (engine.kernels.choose), on the host
            self.arrays.update(q_out=np.zeros((n_envs, n_qs), dtype), err_out=np.zeros((n_envs, n_tasks, 6), dtype),
                               info_out=np.zeros((n_envs, 2), np.int32))
            self.key = key
        return self.arrays


def solve_ik(entity, links, poss, quats, local_points, init_qpos, respect_joint_limit, max_samples,
             max_solver_iters, damping, pos_tol, rot_tol, pos_mask, rot_mask, max_step_size, seed,
             dofs_idx_local, envs_idx, rest_qpos=None, rest_weight=0.0, single=False, kernel="auto") -> IKResult:
    """Validate every argument, run the kernel, choose each env's answer. State is not touched.

    ``single``: called by ``inverse_kinematics``, so errors name ``link`` / ``pos`` / ``quat`` /
    ``local_point`` rather than ``links[0]`` / ``poss[0]`` / ...
    """
    entity._require_built()
    plan = get_plan(entity, links, poss, quats, local_points, init_qpos is not None, respect_joint_limit,
                    max_samples, max_solver_iters, damping, pos_tol, rot_tol, pos_mask, rot_mask, max_step_size,
                    dofs_idx_local, envs_idx, rest_qpos, rest_weight, single, kernel)
    if seed is None:
        seed = int(np.random.randint(0, 2**31 - 1))
    elif isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise TypeError(f"seed: expected an int or None, got {seed!r}")
    _fill_targets(plan, poss, quats, single, entity._batched)
    _fill_start(plan, entity, init_qpos)
    plan.task_i[0, 3] = seed % (2**31)
    plan.done.fill(ik_kernels.BIG)

    tree = entity.tree
    n_sel, K, n_tasks = plan.n_sel, plan.K, plan.n_tasks
    n_qs_k, n_dofs_k = plan.q0.shape[1], max(tree.n_dofs, 1)
    generic = plan.spec is None
    scratch = entity.__dict__.get("_ik_scratch") or entity.__dict__.setdefault("_ik_scratch", _Scratch())
    try:
        s = scratch.get(n_sel, K, n_tasks, n_qs_k, entity._packed.pose_rows, n_dofs_k, entity._dtype, generic)
    except MemoryError:
        raise MemoryError(f"inverse_kinematics: {n_sel:,} envs x {K} restart slots do not fit in memory for the "
                          f"solver's working arrays; solve fewer envs per call (envs_idx) or use a smaller scene"
                          ) from None
    if not generic:
        static_ik.ik_kernel(plan.spec, plan.task_links)(plan.q0, plan.task_i, plan.task_f, plan.targets, s["best_q"],
                                                s["best_err"], s["best_i"], plan.done,
                                                fk_kernels.serial_for(n_sel * K, SERIAL_MAX_THREADS))
    else:
        ik_kernels.solve(plan.q0, plan.task_i, plan.task_f, plan.targets, *entity._robot_args, s["q"], s["pose"],
                         s["J"], s["A"], s["vec"], s["best_q"], s["best_err"], s["best_i"], plan.done,
                         *fixed_sizes(n_tasks, n_dofs_k, n_sel))
    return _choose(entity, s, n_sel, K, plan.exhaustive)


def _fill_targets(plan: IKPlan, poss, quats, single: bool, batched: bool) -> None:
    """Check this call's targets and write them into ``plan.targets`` (quaternions made unit).

    Float arrays of an accepted shape are copied in directly and checked for NaN / inf together
    (a float64 beyond float32's range becomes inf in a float32 engine's buffer, so it is caught
    there too); anything else, and any failed check, goes through :func:`engine.inputs.batched`
    per argument, whose errors name it."""
    targets, n_sel = plan.targets, plan.n_sel
    pos_label, quat_label = labeler(single, "poss", "pos"), labeler(single, "quats", "quat")
    accepted = ((3,), (n_sel, 3)) if batched else ((3,),)
    accepted_quat = ((4,), (n_sel, 4)) if batched else ((4,),)
    with np.errstate(over="ignore"):  # an overflowing cast is named below
        for i in range(plan.n_tasks):
            if plan.has_pos[i]:
                value = poss[i]
                if type(value) is np.ndarray and value.dtype.kind == "f" and value.shape in accepted:
                    targets[:, i, :3] = value
                else:
                    targets[:, i, :3] = inputs.batched(pos_label(i), value, (3,), n_sel, batched)
            if plan.has_quat[i]:
                value = quats[i]
                if type(value) is np.ndarray and value.dtype.kind == "f" and value.shape in accepted_quat:
                    targets[:, i, 3:] = value
                else:
                    targets[:, i, 3:] = inputs.batched(quat_label(i), value, (4,), n_sel, batched)
    if not np.isfinite(targets).all():  # name the culprit
        for i in range(plan.n_tasks):
            if plan.has_pos[i]:
                inputs.batched(pos_label(i), poss[i], (3,), n_sel, batched)
            if plan.has_quat[i]:
                inputs.batched(quat_label(i), quats[i], (4,), n_sel, batched)
    quat = targets[:, :, 3:]  # links without an orientation target hold (1, 0, 0, 0)
    scale = np.abs(quat).max(axis=-1)  # divided out first: the squares of 1e20 (float32), 1e160 (float64) overflow
    if scale.min() < 1e-9:
        i = int(np.argmin(scale.min(axis=0)))
        raise ValueError(f"{quat_label(i)}: expected non-zero (w, x, y, z) quaternions")
    quat /= scale[..., None]
    quat /= np.sqrt(np.einsum("ijk,ijk->ij", quat, quat))[..., None]


def _fill_start(plan: IKPlan, entity, init_qpos) -> None:
    """Write sample 0's start configurations into ``plan.q0``: ``init_qpos`` or the current state,
    within the limits when they are respected (an answer accepted at its first FK must be), mimic
    joints following their leaders."""
    tree = entity.tree
    if init_qpos is None:
        q0 = entity._qpos if plan.all_envs else entity._qpos[plan.envs]
    else:
        q0 = inputs.batched("init_qpos", init_qpos, (tree.n_qs,), plan.n_sel, entity._batched)
        tree.check_joint_values("init_qpos", q0)
    start = plan.q0[:, :tree.n_qs]
    if plan.respect_limits:
        lo, hi = entity._q_limits
        np.maximum(q0, lo, out=start)
        np.minimum(start, hi, out=start)
    else:
        start[:] = q0
    tree.apply_mimic_inplace(start)


def _choose(entity, s: dict, n_sel: int, K: int, exhaustive: int) -> IKResult:
    """Per env, the lowest successful sample (nearest rest when exhaustive), else the lowest
    score (:mod:`engine.kernels.choose`). With one thread per env on the CPU (the usual case
    there) each thread's kept solution is already its env's. Arrays come back in the engine's
    precision."""
    tree = entity.tree
    if K == 1 and not memory.on_device():
        q, err = s["best_q"][:, :tree.n_qs].copy(), s["best_err"].copy()
        sample, iterations = s["best_i"][:, 0].copy(), s["best_i"][:, 1].copy()
    else:
        choose_kernel.choose(s["best_q"], s["best_err"], s["best_i"], exhaustive, s["q_out"], s["err_out"],
                             s["info_out"], fk_kernels.serial_for(n_sel))
        q, err = s["q_out"][:, :tree.n_qs].copy(), s["err_out"].copy()
        sample, iterations = s["info_out"][:, 0].copy(), s["info_out"][:, 1].copy()
    out = IKResult(qpos=tree.apply_mimic_inplace(q), error=err, success=sample >= 0, iterations=iterations,
                   sample=sample)
    if not entity._batched:
        out = IKResult(out.qpos[0], out.error[0], out.success[0], out.iterations[0], out.sample[0])
    return out
