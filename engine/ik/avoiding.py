"""An avoiding request (a COLLIDE task among its tasks) solved in stages, each env leaving at the
first that gives it a clear answer (:func:`run_avoiding`).

Away from contact the avoidance rows are zero, so an avoiding solve takes the same steps as a
plain one there; what costs is the search of every pair at every iteration. So most envs are
never solved with the avoidance task at all:

1. **Plain.** The request without its COLLIDE task; an env whose answer succeeds and is at least
   the margin clear (by the collision model, as every answer is checked) keeps it.
2. **The warm start, avoiding.** An env whose plain answer came from its warm start (sample 0)
   but is not clear (in contact by less than :data:`WARM_DEPTH`) is solved with the avoidance
   task from that start alone: the answer continuity prefers, kept clear where the branch allows.
3. **The restarts, plain** (:mod:`engine.ik.window`): an env whose plain answer reached its
   targets but is still not clear gets the continuity window's restarts (samples 1 .. W-1)
   solved plain in one launch, one thread each, and checked: the clear success nearest the start
   wins; failing that, the lowest clear success of the next :data:`BEYOND_SAMPLES`.
4. **The rest, avoiding.** The envs still without a clear answer are solved with the avoidance
   task from the next restart on (the ones before it were tried).
5. **Polish** (:func:`_polish`). The checks settle contact on the links' hulls
   (:mod:`engine.collision.hulls`), to a few hundredths of a millimetre, but the avoidance task
   steers by the spheres, which stand a few millimetres out: an answer the spheres keep from a
   target that lies that close to an obstacle stops short of it, or reaches it and reads as
   colliding to the solver. So the envs that fail every stage are solved plain once more, from
   their avoiding answers, and keep what the check finds clear.

A boxed request (its box is about the caller's start, which restarts leave) and one with a
posture pull (whose plain solve ran every restart already) skip stages 2 and 3: their stage 4
runs every restart from the warm start on.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..kernels.tables import BEST_I, QPOS_REST_F, rest_row
from . import window
from .plan import CONTINUITY_WINDOW, IKPlan
from .request import IKRequest
from .result import IKResult
from .solve import check_answers, check_rows, fill_start, prepare, run_kernel, solve

__all__ = ["BEYOND_SAMPLES", "run_avoiding"]

# restarts beyond the continuity window an avoiding solve runs plain (and checks) for an env whose
# window gave no clear answer, before it solves that env with the avoidance task
BEYOND_SAMPLES = 8
# m: stage 2 takes the envs whose plain answer from the warm start is in contact by less than this
# (a target moved a little into contact, as when tracking). Deeper, the plain answer went through
# an obstacle and the avoidance task, pushing each pair apart along its own direction, often
# stalls: on the 1024 near-obstacle targets it solved 29 of 86 such envs, at about a tenth of the
# call's time, where the restarts of stages 3-4 answer them anyway. A constant of the Panda's scale
WARM_DEPTH = 0.02


def run_avoiding(entity, request: IKRequest, targets: list, init_qpos, seed: int, distances: bool) -> IKResult:
    """The answers of an avoiding ``request`` (the stages of the module docstring), batched; the
    arguments as :func:`engine.ik.run.run`'s."""
    avoiding = request.collide_index
    plain = replace(request, rows=request.rows[:avoiding] + request.rows[avoiding + 1:],
                    labels=request.labels[:avoiding] + request.labels[avoiding + 1:])
    plain_targets = targets[:avoiding] + targets[avoiding + 1:]
    first = solve(entity, plain, plain_targets, init_qpos, seed)
    plan = entity.ik_state.plans.get(entity, request)
    plan.update_avoidance(entity)  # the current pair set and obstacle poses
    dist, pairs, clear = check_answers(entity, plan, first.qpos, np.arange(plan.n_sel), distances)
    kept = first.success & clear
    out = replace(first, success=kept, sample=np.where(kept, first.sample, -1), min_distance=dist, min_pair=pairs,
                  warm_start_success=first.warm_start_success & kept)
    later = 0  # the first restart the last stage runs
    if not kept.all() and not request.boxed and request.rest_weight == 0:
        warm = ~kept & first.success & (first.sample == 0) & (dist >= -WARM_DEPTH)
        if warm.any():  # 2: the warm start, avoiding
            entity.ik_state.plans.get(entity, request, (0, 1)).share_avoidance(plan)
            got = solve(entity, request, targets, init_qpos, seed, skip=~warm, distances=distances, samples=(0, 1))
            out, kept = _take(out, got, warm & got.success), kept | (warm & got.success)
        out, kept = _window(entity, plan, plain, plain_targets, out, kept, first.success, init_qpos, seed,
                            distances)  # 3
        later = CONTINUITY_WINDOW + BEYOND_SAMPLES
    if not kept.all() and later < request.max_samples:  # 4: the rest, avoiding
        if later:
            entity.ik_state.plans.get(entity, request, (later, None)).share_avoidance(plan)
        got = solve(entity, request, targets, init_qpos, seed, skip=kept, distances=distances,
                    samples=(later, None) if later else None)
        out, kept = _take(out, got, ~kept), kept | got.success
    if not out.success.all() and not request.boxed:  # 5
        out = _polish(entity, plan, plain, plain_targets, out, init_qpos, seed, distances)
    return out


def _take(out: IKResult, other: IKResult, rows: np.ndarray) -> IKResult:
    """``out`` with the answers of ``other`` in the envs ``rows (n_sel,)`` bool (its info too)."""
    pick = rows[:, None]
    return IKResult(qpos=np.where(pick, other.qpos, out.qpos), error=np.where(pick[:, :, None], other.error, out.error),
                    success=np.where(rows, other.success, out.success),
                    iterations=np.where(rows, other.iterations, out.iterations),
                    sample=np.where(rows, other.sample, out.sample),
                    min_distance=np.where(rows, other.min_distance, out.min_distance),
                    min_pair=[b if r else a for r, a, b in zip(rows, out.min_pair, other.min_pair)],
                    step=np.where(rows, other.step, out.step),
                    warm_start_success=np.where(rows, other.warm_start_success, out.warm_start_success))


def _window(entity, plan: IKPlan, plain: IKRequest, targets: list, out: IKResult, kept: np.ndarray,
            reached: np.ndarray, init_qpos, seed: int, distances: bool) -> tuple[IKResult, np.ndarray]:
    """Stage 3: the envs not ``kept`` whose plain answer ``reached`` the targets get their restarts
    solved plain and checked: the window's (the clear success nearest the start), then for the
    envs still without one the next :data:`BEYOND_SAMPLES` (the lowest clear success). Returns
    ``out, kept`` with those envs' answers in."""
    rows = np.flatnonzero(~kept & reached)
    n_qs = entity.tree.n_qs
    qpos, err, its = out.qpos.copy(), out.error.copy(), out.iterations.copy()
    step, warm, sample = out.step.copy(), out.warm_start_success.copy(), out.sample.copy()
    dist, pairs, kept, success = out.min_distance.copy(), list(out.min_pair), kept.copy(), out.success.copy()
    for first_sample, count, nearest in ((1, CONTINUITY_WINDOW - 1, True),
                                         (CONTINUITY_WINDOW, BEYOND_SAMPLES, False)):
        rows = rows[~kept[rows]]
        count = min(count, plain.max_samples - first_sample)
        if not len(rows) or count <= 0:
            break
        solo, origin, far = prepare(entity, plain, targets, init_qpos, seed, (first_sample, count))
        if far:  # a target beyond FAR is never met (engine.ik.solve.far_targets)
            break
        skip = np.ones(plan.n_sel, bool)
        skip[rows] = False
        q, error, ok, iterations = _each_restart(entity, solo, run_kernel(entity, solo, skip), rows)
        m = len(rows)
        check, got, names = _checker(entity, plan, q.reshape(count * m, -1), np.tile(rows, count), distances)
        if nearest:
            weights = solo.task_f[rest_row(solo.n_tasks, 0):rest_row(solo.n_tasks, n_qs), QPOS_REST_F.span]
            weights = weights.astype(np.float64)
            start = solo.q0[rows, :n_qs].astype(np.float64)  # the caller's starts, within the limits
            good = ok & window.check_best_first(window.from_start(q, start, weights), ok, check)
            pick = window.nearest_clear(q, good, start, weights)
        else:
            good = ok & window.check_best_first(np.broadcast_to(np.arange(count)[:, None], (count, m)), ok, check)
            pick = window.first_clear(good)
        i = np.flatnonzero(pick >= 0)  # into rows
        k, r = pick[i], rows[i]
        qpos[r], err[r], its[r], sample[r] = q[k, i], error[k, i], iterations[k, i], first_sample + k
        scalar = list(solo.scalar_qs)  # the steps from the caller's start
        step[r] = np.abs(q[k, i][:, scalar] - origin[r][:, scalar]).max(axis=1) if scalar else 0.0
        dist[r] = got[k * m + i]
        for row, flat in zip(r.tolist(), (k * m + i).tolist()):
            pairs[row] = names[flat]
        warm[r], kept[r], success[r] = False, True, True
    return (replace(out, qpos=qpos, error=err, success=success, iterations=its, sample=sample, step=step,
                    warm_start_success=warm, min_distance=dist, min_pair=pairs), kept)


def _checker(entity, plan: IKPlan, q: np.ndarray, rows: np.ndarray, distances: bool) -> tuple:
    """``(check, distance, names)``: ``check(flat) -> clear (k,) bool`` checks the answers ``q[flat]``
    (``q (k_all, n_qs)`` of the envs ``rows (k_all,)``, :func:`engine.ik.solve.check_rows`) and
    records their distances into ``distance (k_all,)`` (NaN: not checked) and what sets them into
    ``names`` (a list of k_all)."""
    distance, names = np.full(len(rows), np.nan), [None] * len(rows)

    def check(flat: np.ndarray) -> np.ndarray:
        distance[flat], found, clear = check_rows(entity, plan, q[flat], rows[flat], distances)
        for f, name in zip(flat.tolist(), found):
            names[f] = name
        return clear

    return check, distance, names


def _each_restart(entity, plan: IKPlan, s: dict, rows: np.ndarray) -> tuple:
    """Each thread's kept answer of a solve of some restarts only (``plan.K`` restarts, one thread
    each: :func:`engine.ik.plan.pack`), for the envs ``rows (m,)``: ``qpos (K, m, n_qs)``, ``error
    (K, m, n_tasks, 6)``, ``success (K, m)`` bool, ``iterations (K, m)``."""
    n_qs, B, K = entity.tree.n_qs, plan.n_sel, plan.K

    def host(a):
        return a.to_numpy() if hasattr(a, "to_numpy") else a

    best_q = host(s["best_q"]).reshape(K, B, -1)[:, rows, :n_qs]
    best_i = host(s["best_i"]).reshape(K, B, -1)[:, rows]
    error = host(s["best_err"]).reshape((K, B) + s["best_err"].shape[1:])[:, rows]
    q = entity.tree.apply_mimic_inplace(best_q.reshape(K * len(rows), n_qs).copy()).reshape(K, len(rows), n_qs)
    return q, error.copy(), best_i[..., BEST_I.success] >= 0, best_i[..., BEST_I.iters].copy()


def _polish(entity, plan: IKPlan, plain: IKRequest, targets: list, out: IKResult, init_qpos, seed: int,
            distances: bool) -> IKResult:
    """``out`` with each failed env's answer replaced by a plain solve from it, where that one
    succeeds and the check finds it clear (stage 5); steps are still counted from the
    caller's start ``init_qpos``. Not for a boxed request: its box is about the caller's start,
    and a solve from another start would move it."""
    failed = ~out.success
    third = solve(entity, plain, targets, out.qpos, seed, skip=~failed)
    rows = np.flatnonzero(failed)
    dist, pairs, clear = check_answers(entity, plan, third.qpos, rows, distances)
    good = failed & third.success & clear
    if not good.any():
        return out
    origin = fill_start(plan, entity, init_qpos)  # the caller's start, as choose took it
    scalar = list(plan.scalar_qs)
    step = np.abs(third.qpos[:, scalar] - origin[:, scalar]).max(axis=1) if scalar else np.zeros(len(good))
    third = replace(third, success=good, min_distance=dist, min_pair=pairs, step=step.astype(out.step.dtype),
                    warm_start_success=np.zeros_like(good))
    return _take(out, third, good)
