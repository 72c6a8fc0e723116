"""Inverse kinematics: run a validated request's plan and pick each env's answer among its restarts.

Genesis' parameters and defaults. ``rot_mask`` semantics: all True = full orientation; exactly
one True = that axis of the link is aligned with the same axis of the target, rotation about it
free (for any target orientation); all False = orientation free; two True is an error.

The pieces: :mod:`engine.tasks` (what to achieve), :mod:`engine.ik_request` (a validated, hashable
request), :mod:`engine.ik_plan` (its kernel tables, kept per request), :mod:`engine.dispatch`
(which solver), :mod:`engine.kernels.solver` (the algorithm), and here :func:`run`, which every
entry point ends in (``inverse_kinematics``, ``inverse_kinematics_multilink``, ``solve_ik``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import backend, dispatch, inputs
from .avoidance import answer_distance
from .dispatch import KERNELS
from .errors import InvalidValueError, OutOfMemoryError
from .ik_plan import IKPlan
from .ik_request import IKRequest, as_seed
from .kernels import choose as choose_kernel
from .kernels import ik as ik_kernels
from .kernels import memory, static_ik
from .kernels.avoid import ROUNDING
from .kernels.tables import BEST_I, CHOICE_I, RESUME_F, RESUME_I, SOLVE_I, START_BLOCKS, TARGET
from .limits import box

__all__ = ["KERNELS", "IKResult", "run"]


@dataclass
class IKResult:
    """What one IK call found, per env (leading axis dropped for an unbatched scene).

    ``qpos`` ([n_envs,] n_qs); ``error`` ([n_envs,] n_tasks, 6): each task's masked position (m)
    and rotation (rad, rotation vector) error at ``qpos``, world axes (a relative task's: its
    reference link's axes); ``success`` ([n_envs,]) bool: every task within its tolerances;
    ``iterations`` ([n_envs,]): solver iterations of the returned sample; ``sample``
    ([n_envs,]): which restart it came from (0 = init_qpos, -1 = none succeeded).

    With collision avoidance (``avoid_collisions=True`` or a CollisionTask; else both None):
    ``min_distance`` ``([n_envs,])`` m, the smallest sphere distance of the answer over the
    counted pairs and the obstacles (as ``collision_distance``; inf with nothing to check), and
    ``min_pair`` ``([n_envs,])`` what sets it, ``(link, link)`` or ``(link, obstacle)``. Success
    then also requires ``min_distance >= margin``. ``error`` has no rows for the avoidance task.

    ``step`` ([n_envs,]): the largest move of a hinge or slide from the start configuration
    (``init_qpos`` or the state), rad or m. ``warm_start_success`` ([n_envs,]) bool: sample 0,
    solved from the start, met the tolerances; when it did not, the answer is the successful
    restart nearest the start (continuity; :mod:`engine.kernels.solver`), unless a posture pull
    (``rest_weight``) asks for the one nearest the rest posture. In a velocity-limited solve
    (``track``) the tolerances may be out of reach within one step: ``success`` False, and
    ``pos_error`` / ``rot_error`` say how far the target still is.
    """

    qpos: np.ndarray
    error: np.ndarray
    success: np.ndarray
    iterations: np.ndarray
    sample: np.ndarray
    min_distance: np.ndarray | None = None
    min_pair: list | None = None
    step: np.ndarray | None = None
    warm_start_success: np.ndarray | None = None

    @property
    def pos_error(self) -> np.ndarray:
        """Norm of each task's masked position error ([n_envs,] n_tasks), m."""
        return np.linalg.norm(self.error[..., :3], axis=-1)

    @property
    def rot_error(self) -> np.ndarray:
        """Angle of each task's masked rotation error ([n_envs,] n_tasks), rad."""
        return np.linalg.norm(self.error[..., 3:], axis=-1)


class Scratch:
    """An entity's IK working arrays, reused while shapes stay the same: the per-thread kept
    solutions and (generic solver) working set, which never leave the device on a GPU
    (:func:`engine.kernels.memory.scratch`), and the per-env answers the host reads."""

    def __init__(self):
        self.key = None
        self.arrays: dict = {}

    def get(self, n_envs: int, K: int, n_tasks: int, n_qs: int, pose_rows: int, n_dofs: int, dtype,
            generic: bool) -> dict:
        key = (n_envs, K, n_tasks, n_qs, pose_rows, n_dofs, dtype, generic, backend.STATE.generation)
        if key != self.key:
            T, m = n_envs * K, 6 * n_tasks
            shapes = dict(best_q=((T, n_qs + 2), dtype), best_err=((T, n_tasks, 6), dtype),
                          best_i=((T, BEST_I.width), np.int32))
            if generic:  # the per-robot kernel keeps its working set in registers
                shapes.update(q=((T, n_qs), dtype), pose=((T, pose_rows, 7), dtype), J=((T, m, n_dofs), dtype),
                              A=((T, m, m), dtype), vec=((T, 2 * m + 2 * n_dofs), dtype),
                              resume_i=((T, RESUME_I.width), np.int32), resume_f=((T, RESUME_F.width), dtype))
            self.arrays = {k: memory.scratch(shape, dt) for k, (shape, dt) in shapes.items()}
            self.arrays.update(q_out=np.zeros((n_envs, n_qs), dtype), err_out=np.zeros((n_envs, n_tasks, 6), dtype),
                               info_out=np.zeros((n_envs, CHOICE_I.width), np.int32))
            self.key = key
        return self.arrays


def run(entity, request: IKRequest, targets: list, init_qpos, seed) -> IKResult:
    """Solve ``request`` on ``entity`` for ``targets`` (one ``(pos, quat)`` per task, None where the
    task has no such target) from ``init_qpos`` (None: the current state). State is not touched."""
    entity._require_built()
    plan = entity._ik_plans.get(entity, request)
    plan.task_i[0, SOLVE_I.seed] = as_seed(seed)
    fill_targets(plan, targets, entity._batched)
    start = fill_start(plan, entity, init_qpos)
    plan.done.fill(ik_kernels.BIG)
    if request.collide_index is not None:
        plan.update_avoidance(entity)  # the current pair set and obstacle poses
    tree = entity.tree
    n_sel, K, n_tasks = plan.n_sel, plan.K, plan.n_tasks
    generic = plan.spec is None
    try:
        s = entity._ik_scratch.get(n_sel, K, n_tasks, max(tree.n_qs, 1), entity._packed.pose_rows,
                                   max(tree.n_dofs, 1), entity._dtype, generic)
    except MemoryError:
        raise OutOfMemoryError(f"inverse_kinematics: {n_sel:,} envs x {K} restart slots do not fit in memory for the "
                               f"solver's working arrays; solve fewer envs per call (envs_idx) or use a smaller scene"
                               ) from None
    if generic:
        _run_generic(entity, plan, s)
    else:
        if plan.kernel is None:
            plan.kernel = static_ik.ik_kernel(plan.spec, request.structure, request.boxed)
        plan.kernel(
            plan.q0, plan.task_i, plan.task_f, plan.targets, s["best_q"], s["best_err"], s["best_i"], plan.done,
            *plan.avoid.args(), dispatch.serial(n_sel, dispatch.SERIAL_MAX_ENVS))
    return _choose(entity, s, plan, start)


def _run_generic(entity, plan: IKPlan, s: dict) -> None:
    """Launch the generic solver: once, or on a software Vulkan device as many times as the
    per-launch budget (:func:`engine.dispatch.solver_budget`) needs, until every thread is done."""
    request, budget = plan.request, plan.budget
    samples_per_thread = -(-request.max_samples // plan.K)
    launches = 1 if budget == 0 else samples_per_thread * (-(-request.max_iters // budget) + 1) + 1
    for launch in range(launches):
        ik_kernels.solve(plan.q0, plan.task_i, plan.task_f, plan.targets, *entity._robot_args, s["q"], s["pose"],
                         s["J"], s["A"], s["vec"], s["best_q"], s["best_err"], s["best_i"], plan.done,
                         *plan.avoid.args(), s["resume_i"], s["resume_f"], int(launch == 0), budget, *plan.fixed,
                         request.collide_index is not None, request.boxed)
        if budget and launch % 4 == 3 and _all_finished(s["resume_i"], request.max_samples):
            break


def _all_finished(resume_i, n_samples: int) -> bool:
    values = resume_i.to_numpy() if hasattr(resume_i, "to_numpy") else resume_i
    return bool((values[:, RESUME_I.sample] >= n_samples).all())


def fill_targets(plan: IKPlan, targets: list, batched: bool) -> None:
    """Check this call's targets and write them into ``plan.targets`` (quaternions made unit).

    Float arrays of an accepted shape are copied in directly and checked for NaN / inf together
    (a float64 beyond float32's range becomes inf in a float32 engine's buffer, so it is caught
    there too); anything else, and any failed check, goes through :func:`engine.inputs.batched`
    per argument, whose errors name it."""
    buf, n_sel = plan.targets, plan.n_sel
    shapes = {3: ((3,), (n_sel, 3)) if batched else ((3,),), 4: ((4,), (n_sel, 4)) if batched else ((4,),)}
    with np.errstate(over="ignore"):  # an overflowing cast is named below
        for i, which, col, width, label in plan.fields:
            value = targets[i][which]
            if type(value) is np.ndarray and value.dtype.kind == "f" and value.shape in shapes[width]:
                buf[:, i, col:col + width] = value
            else:
                buf[:, i, col:col + width] = inputs.batched(label, value, (width,), n_sel, batched)
    if not np.isfinite(buf).all():  # name the culprit
        for i, which, _, width, label in plan.fields:
            inputs.batched(label, targets[i][which], (width,), n_sel, batched)
    quat = buf[:, :, TARGET.quat:TARGET.quat + 4]
    scale = np.abs(quat).max(axis=-1)  # divided out first: the squares of 1e20 (float32), 1e160 (float64) overflow
    if scale.min() < 1e-9:
        i = int(np.argmin(scale.min(axis=0)))
        raise InvalidValueError(f"{plan.request.labels[i][1]}: expected non-zero (w, x, y, z) quaternions")
    quat /= scale[..., None]
    quat /= np.sqrt(np.einsum("ijk,ijk->ij", quat, quat))[..., None]


def fill_start(plan: IKPlan, entity, init_qpos) -> None:
    """Write sample 0's start configurations into ``plan.q0``: ``init_qpos`` or the current state,
    within the limits when they are respected (an answer accepted at its first FK must be), mimic
    joints following their leaders; with a box on the dofs (:attr:`IKRequest.boxed`), the box of
    each env from its start (:func:`engine.limits.box`) in the blocks after the start. Returns the
    start as given ``(n_sel, n_qs)`` (a copy)."""
    tree = entity.tree
    if init_qpos is None:
        q0 = (entity._qpos if plan.all_envs else entity._qpos[plan.envs]).copy()
    else:
        q0 = inputs.batched("init_qpos", init_qpos, (tree.n_qs,), plan.n_sel, entity._batched)
        tree.check_joint_values("init_qpos", q0)
    start = plan.q0[:, :tree.n_qs]
    if plan.request.respect_limits:  # every dof: an answer respects the limits, moved by the solver or not
        lo, hi = entity._q_limits
        np.maximum(q0, lo, out=start)
        np.minimum(start, hi, out=start)
    else:
        start[:] = q0
    tree.apply_mimic_inplace(start)
    if plan.request.boxed:
        n = plan.q0.shape[1] // START_BLOCKS
        lo, hi = box(plan.request.limits, start.astype(np.float64))
        plan.q0[:, n:n + tree.n_qs], plan.q0[:, 2 * n:2 * n + tree.n_qs] = lo, hi
    return q0


def _choose(entity, s: dict, plan: IKPlan, start: np.ndarray) -> IKResult:
    """Per env, the lowest successful sample (nearest rest when exhaustive, the warm start or the
    nearest the ``start`` with continuity), else the lowest score (:mod:`engine.kernels.choose`).
    With one thread per env on the CPU (the usual case there) each thread's kept solution is
    already its env's. Arrays come back in the engine's precision."""
    n_qs = entity.tree.n_qs
    if plan.K == 1 and not memory.on_device():
        q, err = s["best_q"][:, :n_qs].copy(), s["best_err"].copy()
        sample, iterations = s["best_i"][:, BEST_I.success].copy(), s["best_i"][:, BEST_I.iters].copy()
        warm = sample == 0  # the thread's first (continuity: kept) success; 0 only when sample 0 succeeded
    else:
        choose_kernel.choose(s["best_q"], s["best_err"], s["best_i"], plan.exhaustive, plan.continuity, s["q_out"],
                             s["err_out"], s["info_out"], dispatch.serial(plan.n_sel))
        q, err = s["q_out"][:, :n_qs].copy(), s["err_out"].copy()
        sample, iterations = s["info_out"][:, CHOICE_I.sample].copy(), s["info_out"][:, CHOICE_I.iters].copy()
        warm = s["info_out"][:, CHOICE_I.warm] == 1
    q = entity.tree.apply_mimic_inplace(q)
    scalar = list(plan.scalar_qs)
    step = np.abs(q[:, scalar] - start[:, scalar]).max(axis=1) if scalar else np.zeros(len(q))
    success = sample >= 0
    dist = pairs = None
    avoiding = plan.request.collide_index
    if avoiding is not None:  # the answers checked on the host, as collision_distance would
        dist, pairs = answer_distance(entity, q, plan.envs, plan.avoid)
        dist = dist.astype(entity._dtype)
        success &= dist >= plan.request.rows[avoiding].margin + ROUNDING  # as the kernel's test
        warm &= success | (sample != 0)  # the warm start's answer failed the host's check
        sample = np.where(success, sample, -1)
        err = np.delete(err, avoiding, axis=1)
    out = IKResult(qpos=q, error=err, success=success, iterations=iterations, sample=sample, min_distance=dist,
                   min_pair=pairs, step=step.astype(entity._dtype), warm_start_success=warm)
    if not entity._batched:
        out = IKResult(out.qpos[0], out.error[0], out.success[0], out.iterations[0], out.sample[0],
                       None if dist is None else dist[0], None if pairs is None else pairs[0], out.step[0],
                       out.warm_start_success[0])
    return out
