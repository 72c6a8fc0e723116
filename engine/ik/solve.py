"""One solve of a validated request: its plan filled for this call (:func:`prepare`), the solver
launched (:func:`run_kernel`), and each env's answer chosen among its restarts (:func:`choose`),
an avoiding request's answers checked as ``collision_distance`` would (:func:`check_rows`).
:func:`engine.ik.run.run` and the stages of an avoiding request (:mod:`engine.ik.avoiding`) are
built of these."""

from __future__ import annotations

import warnings

import numpy as np

from .. import inputs
from ..collision.checks import answer_distance
from ..errors import InvalidValueError, OutOfMemoryError
from ..kernels import answers, generic, per_robot
from ..kernels.avoid import ROUNDING
from ..kernels.kinds import on_demand_mask
from ..kernels.tables import BEST_I, CHOICE_I, RESUME_I, SOLVE_I, START_BLOCKS, TARGET
from ..runtime import dispatch, memory, span
from .limits import box
from .plan import IKPlan
from .request import IKRequest
from .result import IKResult

__all__ = ["check_answers", "check_rows", "choose", "fill_start", "fill_targets", "far_targets", "launch", "prepare",
           "run_kernel", "solve"]

FAR = 1e9  # m: world position targets farther than this are solved toward at this distance (far_targets)


def solve(entity, request: IKRequest, targets: list, init_qpos, seed: int, skip: np.ndarray | None = None,
          distances: bool = True, samples: tuple[int, int | None] | None = None) -> IKResult:
    """One solve of ``request`` (the answers batched, ``(n_sel, ...)``); ``skip`` ``(n_sel,)`` bool:
    envs left unsolved (their rows are meaningless); ``samples``: which restarts
    (:func:`engine.ik.plan.pack`; None: all). A request that avoids collisions finds its plan's
    tables updated by the caller (the pair set and the obstacle poses of this call:
    :meth:`engine.ik.plan.IKPlan.update_avoidance`)."""
    plan, start, far = prepare(entity, request, targets, init_qpos, seed, samples)
    return launch(entity, plan, start, far, skip, distances)


def prepare(entity, request: IKRequest, targets: list, init_qpos, seed: int,
            samples: tuple[int, int | None] | None = None) -> tuple:
    """``request``'s plan (``samples``: of some restarts only, :func:`engine.ik.plan.pack`) with
    this call's seed, targets and starts written in: ``(plan, the start as given (n_sel, n_qs), the
    far targets' offsets (far_targets))``."""
    plan = entity.ik_state.plans.get(entity, request, samples)
    plan.task_i[0, SOLVE_I.seed] = seed
    fill_targets(plan, targets, entity.configuration.batched)
    far = far_targets(plan)
    return plan, fill_start(plan, entity, init_qpos), far


def launch(entity, plan: IKPlan, start: np.ndarray, far: dict | None, skip: np.ndarray | None = None,
            distances: bool = True) -> IKResult:
    """Solve the prepared ``plan`` (:func:`prepare`) and choose each env's answer; ``skip`` as in
    :func:`solve`, ``start`` what the steps are measured from."""
    return choose(entity, run_kernel(entity, plan, skip), plan, start, far, skip, distances)


def run_kernel(entity, plan: IKPlan, skip: np.ndarray | None) -> dict:
    """Run the solver on the prepared ``plan``; returns the working arrays, each thread's kept
    answer in ``best_q``, ``best_err``, ``best_i``."""
    cfg = entity.configuration
    request = plan.request
    plan.done.fill(generic.BIG)
    if skip is not None:
        plan.done[skip] = -1  # the solver's hint: no sample of these envs is left to run
    tree = entity.tree
    n_sel, K, n_tasks = plan.n_sel, plan.K, plan.n_tasks
    is_generic = plan.spec is None
    try:
        s = entity.ik_state.scratch.get(n_sel, K, n_tasks, max(tree.n_qs, 1), cfg.packed.pose_rows,
                                        max(tree.n_dofs, 1), cfg.dtype, is_generic)
    except MemoryError:
        raise OutOfMemoryError(f"inverse_kinematics: {n_sel:,} envs x {K} restart slots do not fit in memory for the "
                               f"solver's working arrays; solve fewer envs per call (envs_idx) or use a smaller scene"
                               ) from None
    if is_generic:
        _run_generic(entity, plan, s)
    else:
        if plan.kernel is None:
            plan.kernel = per_robot.ik_kernel(plan.spec, request.structure)
        for offset in span.thread_offsets(n_sel * K):
            plan.kernel(
                plan.q0, plan.task_i, plan.task_f, plan.targets, s["best_q"], s["best_err"], s["best_i"], plan.done,
                *plan.avoid.args(), dispatch.serial(n_sel, dispatch.SERIAL_MAX_ENVS), int(request.boxed), offset)
    return s


def _run_generic(entity, plan: IKPlan, s: dict) -> None:
    """Launch the generic solver: once, or on a software Vulkan device as many times as the
    per-launch budget (:func:`engine.runtime.dispatch.solver_budget`) needs, until every thread is done."""
    cfg = entity.configuration
    request, budget = plan.request, plan.budget
    samples_per_thread = -(-request.max_samples // plan.K)
    launches = 1 if budget == 0 else samples_per_thread * (-(-request.max_iters // budget) + 1) + 1
    offsets = span.thread_offsets(s["q"].shape[0])
    for launch in range(launches):
        for offset in offsets:
            generic.solve(plan.q0, plan.task_i, plan.task_f, plan.targets, *cfg.robot_args, s["q"], s["pose"],
                          s["J"], s["A"], s["vec"], s["best_q"], s["best_err"], s["best_i"], plan.done,
                          *plan.avoid.args(), s["resume_i"], s["resume_f"], int(launch == 0), budget, *plan.fixed,
                          on_demand_mask(request.structure), int(request.boxed), offset)
        if budget and launch % 4 == 3 and _all_finished(s["resume_i"], int(plan.task_i[0, SOLVE_I.end])):
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
    each env from its start (:func:`engine.ik.limits.box`) in the blocks after the start. Returns the
    start as given ``(n_sel, n_qs)`` (a copy)."""
    tree, cfg = entity.tree, entity.configuration
    if init_qpos is None:
        q0 = (cfg.qpos if plan.all_envs else cfg.qpos[plan.envs]).copy()
    else:
        q0 = inputs.batched("init_qpos", init_qpos, (tree.n_qs,), plan.n_sel, cfg.batched)
        tree.check_joint_values("init_qpos", q0)
    start = plan.q0[:, :tree.n_qs]
    if plan.request.respect_limits:  # every dof: an answer respects the limits, moved by the solver or not
        lo, hi = cfg.q_limits
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


def far_targets(plan: IKPlan) -> dict | None:
    """Bring world position targets farther than :data:`FAR` from the origin to that distance, in
    the same direction, in ``plan.targets``; returns ``{task: (n_sel, 3) float64}``, what each
    was moved by (None when none was). The solver's squared errors of a target at 1e20 m overflow
    float32 and it would never record an answer; toward a target at ``FAR`` it reaches the same
    way, and :func:`choose` adds the offsets back to the errors, in float64."""
    out = None
    for i, which, col, _, _ in plan.fields:
        row = plan.request.rows[i]
        if which != 0 or row.ref != -1:
            continue
        if np.abs(plan.targets[:, i, col:col + 3]).max() <= FAR / np.sqrt(3.0):  # the usual case: no norm beyond FAR
            continue
        pos = plan.targets[:, i, col:col + 3].astype(np.float64)
        norm = np.sqrt(np.einsum("ij,ij->i", pos / FAR, pos / FAR)) * FAR  # no overflow for 1e38
        far = norm > FAR
        if not far.any():
            continue
        moved = pos.copy()
        moved[far] *= (FAR / norm[far])[:, None]
        plan.targets[:, i, col:col + 3] = moved
        out = out or {}
        out[i] = np.where(far[:, None], pos - moved, 0.0) * np.asarray(row.pos_mask, float)
    return out


def _warn_nothing_to_avoid(entity) -> None:
    """Warn once per entity that ``avoid_collisions`` had nothing to measure (see :class:`IKResult`)."""
    state = entity.ik_state
    if state.warned_nothing_to_avoid:
        return
    state.warned_nothing_to_avoid = True
    warnings.warn(f"avoid_collisions: robot '{entity.tree.name}' has no collision geometry to check (no collision "
                  "or visual geometry, or no counted link pairs and no obstacles in the scene): its answers' "
                  "min_distance is NaN and their success counts the other tasks only", RuntimeWarning, stacklevel=5)


def choose(entity, s: dict, plan: IKPlan, start: np.ndarray, far: dict | None = None,
            skip: np.ndarray | None = None, distances: bool = True) -> IKResult:
    """Per env, the lowest successful sample (nearest rest when exhaustive, the warm start or the
    nearest the ``start`` with continuity), else the lowest score (:mod:`engine.kernels.answers`).
    With one thread per env on the CPU (the usual case there) each thread's kept solution is
    already its env's. Arrays come back in the engine's precision."""
    cfg = entity.configuration
    n_qs = entity.tree.n_qs
    if plan.K == 1 and not memory.on_device():
        q, err = s["best_q"][:, :n_qs].copy(), s["best_err"].copy()
        sample, iterations = s["best_i"][:, BEST_I.success].copy(), s["best_i"][:, BEST_I.iters].copy()
        warm = sample == 0  # the thread's first (continuity: kept) success; 0 only when sample 0 succeeded
    else:
        answers.choose(s["best_q"], s["best_err"], s["best_i"], plan.exhaustive, plan.continuity, s["q_out"],
                       s["err_out"], s["info_out"], dispatch.serial(plan.n_sel))
        q, err = s["q_out"][:, :n_qs].copy(), s["err_out"].copy()
        sample, iterations = s["info_out"][:, CHOICE_I.sample].copy(), s["info_out"][:, CHOICE_I.iters].copy()
        warm = s["info_out"][:, CHOICE_I.warm] == 1
    q = entity.tree.apply_mimic_inplace(q)
    if far:  # the true residuals of far targets (see far_targets): float32 holds them, the sums are float64
        err = err.astype(np.float64)
        for i, offset in far.items():
            err[:, i, :3] += offset
        err = err.astype(cfg.dtype)
        reached = np.ones(len(err), bool)
        for offset in far.values():
            reached &= ~offset.any(axis=1)
        sample = np.where(reached, sample, -1)  # a target FAR away is never met
        warm &= reached
    scalar = list(plan.scalar_qs)
    step = np.abs(q[:, scalar] - start[:, scalar]).max(axis=1) if scalar else np.zeros(len(q))
    success = sample >= 0
    dist = pairs = None
    avoiding = plan.request.collide_index
    if avoiding is not None:  # the answers checked on the host, as collision_distance would
        dist, pairs, clear = check_answers(entity, plan, q, np.flatnonzero(~skip) if skip is not None else
                                            np.arange(plan.n_sel), distances)
        success &= clear
        warm &= success | (sample != 0)  # the warm start's answer failed the host's check
        sample = np.where(success, sample, -1)
        err = np.delete(err, avoiding, axis=1)
    return IKResult(qpos=q, error=err, success=success, iterations=iterations, sample=sample, min_distance=dist,
                    min_pair=pairs, step=step.astype(cfg.dtype), warm_start_success=warm)


def check_answers(entity, plan: IKPlan, q: np.ndarray, rows: np.ndarray, distances: bool = True
                   ) -> tuple[np.ndarray, list, np.ndarray]:
    """The answers ``q (n_sel, n_qs)`` of the envs ``rows`` (indices into the plan's envs) checked
    as ``collision_distance`` would (:func:`check_rows`); the other rows read NaN, None, False."""
    n = len(q)
    dist, pairs, clear = np.full(n, np.nan, entity.configuration.dtype), [None] * n, np.zeros(n, bool)
    if len(rows) == n:
        return check_rows(entity, plan, q, rows, distances)
    if len(rows):
        got, names, ok = check_rows(entity, plan, q[rows], rows, distances)
        dist[rows], clear[rows] = got, ok
        for r, name in zip(rows.tolist(), names):
            pairs[r] = name
    return dist, pairs, clear


def check_rows(entity, plan: IKPlan, q: np.ndarray, rows: np.ndarray, distances: bool = True
                ) -> tuple[np.ndarray, list, np.ndarray]:
    """Configurations ``q (m, n_qs)`` of the envs ``rows (m,)`` (indices into the avoiding
    ``plan``'s envs, repeats allowed) checked as ``collision_distance`` would, over the plan's
    tables: ``(distance (m,) m, NaN where nothing is checked; what sets it; clear (m,) bool: at
    least the task's margin apart, as the kernel's test, or nothing to check)``. ``distances``
    False: the search stops at the margin, and a distance beyond it reads as the margin's reach
    (a lower bound)."""
    margin = plan.request.rows[plan.request.collide_index].margin
    reach = None if distances else margin + 2 * ROUNDING
    if len(rows) == plan.n_sel and (rows == np.arange(plan.n_sel)).all():
        dist, pairs = answer_distance(entity, q, plan.envs, plan.avoid, reach)
    else:
        dist, pairs = answer_distance(entity, q, plan.envs[rows], plan.avoid.subset(rows), reach)
    if reach is not None and plan.avoid.has_checks():  # inf: every pair beyond the reach
        dist = np.where(np.isinf(dist), reach, dist)
    measured = np.isfinite(dist)
    if not measured.all():  # nothing to keep apart: said once, and no distance is made up
        _warn_nothing_to_avoid(entity)
    clear = ~measured | (dist >= margin + ROUNDING)
    return np.where(measured, dist, np.nan).astype(entity.configuration.dtype), pairs, clear
