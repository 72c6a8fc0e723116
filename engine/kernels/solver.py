"""The batched IK algorithm, written once: samples, iterations, the step, the bookkeeping.

One thread per (env, restart slot): thread ``t`` serves env ``e = t % B`` and slot ``k = t // B``
and runs samples ``k, k + K, k + 2K, ...``, each plus ``SOLVE_I.first``, below ``SOLVE_I.end``
(0 and ``n_samples`` but in the later solves of an avoiding request, :mod:`engine.ik.avoiding`;
a sample may stall but the request's last). Sample 0 starts from the env's initial qpos, the
others from a uniform draw within the joint limits made by a counter-based hash of (seed, env,
sample, qpos index), so results do not depend on thread scheduling. A thread stops at its own
first success; ``done[e]`` is a hint shared by env e's threads: some sample index that met the
tolerances (or :data:`BIG`), and a sample above it is skipped. The env's answer is the lowest
successful sample (or, if none, the lowest-score one; :mod:`engine.kernels.answers`), so the
output is deterministic: every sample below the lowest success runs, whatever the hint holds when.

**Continuity** (``SOLVE_I.continuity`` = a window of W samples, every solve without a posture
pull; 0: off): sample 0 (the warm start) wins when it succeeds. When it fails, samples 1 .. W-1
all run, each stopping at its own success, and the answer is the success among them nearest the
start by the form's ``distance`` (ties: the lower sample), so that a failed warm start does not
send the robot to whichever branch the lowest restart found; only when none of them succeeds do
the samples from W on run, the lowest success winning as without continuity. The hint then reads
0 (sample 0 succeeded), W - 1 (a success within the window: nothing beyond it runs) or the lowest
success beyond it; the samples judged are the same whatever the schedule.

``done`` is read and written with plain loads and stores, never atomics: any value a thread sees
bounds the samples of its env that can still change the answer (a successful sample's index, or
with continuity the window's last), so a stale or overwritten hint only costs work, never the
answer. (Atomics inside these divergent loops broke the whole kernel on Mesa's lavapipe Vulkan:
the loop exited early for every lane and nothing after it ran. See docs/backends.md.)

Per iteration: FK, then every task's error and Jacobian rows (:func:`frame_task`,
:func:`com_task`; 6 rows a task), then ``dq = J^T (J J^T + lambda I)^-1 e`` with lambda =
damping * min(|e|^2, 1) + 1e-6 (Levenberg-Marquardt: damped far from the target, Gauss-Newton
near it). With joint limits on, dofs resting on a limit whose step points outward leave the step
and it is solved again (an active set). The step is scaled so that no dof moves more than
``max_step``; the posture pull toward ``rest`` is added in the tasks' null space; the result is
clamped to the limits. A sample that stalls far from its target gives way to the next.

**Forms.** Where the quantities live is the *form*'s business, and the only thing the two solvers
differ in: :mod:`engine.kernels.generic` (generic: the robot read from arrays at run time, the working
set in global memory, one compiled kernel for every robot) and :mod:`engine.kernels.per_robot`
(compiled for one robot and task structure: FK unrolled, the working set in registers). A form is
a class of ``ti.func`` static methods, all taking ``(ctx, S, t, ...)``: ``ctx`` the form's arrays
and sizes (a tuple, a compile-time argument), ``S`` the thread's local state (a tuple of local
matrices; the generic form keeps none). The hooks:

- ``new_state(ctx)`` -> S; ``start(ctx, S, t, e, s, q0, task_i, seed)``: sample s's start;
- ``rows(ctx, S, t, e, task_i, task_f, targets)`` -> (all met, score): FK, then each task's rows
  through its kind (:mod:`engine.kernels.kinds`: :func:`frame_task`, :func:`com_task`,
  :func:`look_at_task`, ...), which use the primitives ``link_pose``, ``set_jacobian``,
  ``add_jacobian``, ``com``, ``add_com_jacobian``, ``zero_rows``, ``transform_rows``,
  ``mix_rows``, ``set_error``;
- ``distance(ctx, S, t, e, task_f, start)``: the squared distance to the rest posture, or with
  ``start`` continuity's from the start, ``sum_i w_i (q_i - q0_i)^2`` (``w_i``:
  ``QPOS_REST_F.span``); ``keep`` (copy the iterate to the kept solution);
- step primitives used by :func:`step`: ``error_sq``, ``direction``, ``block``, ``largest``,
  ``scale``, ``posture``, ``add_pull``, ``apply``.

Kernel tables as named in :mod:`engine.kernels.tables`: ``q0`` (B, n_qs), ``targets`` (B, Lt, 7),
``task_i`` / ``task_f`` (the request), outputs per thread ``best_q`` (T, n_qs + 2): kept qpos, its
score and rest distance; ``best_err`` (T, Lt, 6): each task's error (m, rad; unweighted);
``best_i`` (T, 3) :data:`~engine.kernels.tables.BEST_I`; ``done`` (B,) int, initialised to BIG.
"""

import taichi as ti

from .quat import atan2_upper, qcolumn, qconj, qlog, qmul, qrot, square
from .tables import BEST_I, KEPT_F, RESUME_F, RESUME_I, SOLVE_F, SOLVE_I, TARGET, TASK_F, TASK_I, task_row

BIG = 1 << 30
BEYOND = 1e6  # continuity's key of a success beyond its window: above any distance (at most n_dofs)
PI = 3.141592653589793
STALL_MIN_ITERS = 6    # never give up on a sample before this many iterations
STALL_RATIO = 0.95     # stalled: the score fell by less than 5% over two iterations ...
STALL_NEAR = 20.0      # ... while still this far (in tolerances) from the target
STEP, PULL = 0, 1      # the two per-dof vectors of a step: the task step, the posture pull


def loop_block_dim() -> int:
    """Threads per block of the solve loop: small on the CPU so that the workers stay on nearby
    (env, sample) items; a GPU-sized block elsewhere."""
    from ..runtime.state import STATE

    return 4 if STATE.arch == "cpu" else 128


@ti.func
def hash_uniform(seed, a, b, c):
    """Uniform float in [0, 1) from four integers (a PCG-style integer hash)."""
    h = ti.cast(seed, ti.u32) * ti.u32(747796405) + ti.u32(2891336453)
    h = (h ^ ti.cast(a, ti.u32)) * ti.u32(2654435761)
    h = ((h >> 16) ^ h) * ti.u32(0x45D9F3B)
    h = (h ^ ti.cast(b, ti.u32)) * ti.u32(2246822519)
    h = ((h >> 15) ^ h) * ti.u32(0x2C1B3C6D)
    h = (h ^ ti.cast(c, ti.u32)) * ti.u32(3266489917)
    h = ((h >> 16) ^ h) * ti.u32(0x297A2D39)
    h = (h >> 15) ^ h
    return ti.cast(h >> 8, ti.f32) / 16777216.0


@ti.func
def start_value(seed, e, s, q, lower, upper, is_hinge, current):
    """Qpos entry ``q`` of sample ``s`` > 0 of env ``e``: uniform within [lower, upper], or over a
    turn for an unbounded hinge; an unbounded slide keeps ``current``."""
    u = hash_uniform(seed, e, s, q)
    v = current
    if lower > -1e29 and upper < 1e29:
        v = lower + u * (upper - lower)
    elif is_hinge:
        v = -PI + 2.0 * PI * u
    return v


@ti.func
def align_error(a, b):
    """Rotation vector turning unit vector a onto unit vector b (world frame)."""
    c = a.cross(b)
    s = c.norm()
    d = a.dot(b)
    out = ti.Vector([0.0, 0.0, 0.0])
    if s > 1e-9:
        out = c * (atan2_upper(s, d) / s)
    elif d < 0:  # opposite: any axis perpendicular to a
        perp = a.cross(ti.Vector([1.0, 0.0, 0.0]))
        if perp.norm() < 1e-3:
            perp = a.cross(ti.Vector([0.0, 1.0, 0.0]))
        out = perp.normalized() * PI
    return out


@ti.func
def rotation_error(mode, lq, tq):
    """Rotation error (world rotation vector) of orientation ``lq`` against target ``tq`` for rot
    mode ``mode`` (3 full, -1 free: zero, k: align local axis k), and the aligned axis (world;
    zero unless one axis is aligned), whose component leaves the angular Jacobian rows."""
    er = ti.Vector([0.0, 0.0, 0.0])
    a = ti.Vector([0.0, 0.0, 0.0])
    if mode == 3:
        er = qlog(qmul(tq, qconj(lq)))
    elif mode >= 0:
        b = ti.Vector([0.0, 0.0, 0.0])
        for k in ti.static(range(3)):
            if mode == k:
                a = qcolumn(lq, k)
                b = qcolumn(tq, k)
        er = align_error(a, b)
    return er, a


@ti.func
def task_score(ep, er, pos_tol, rot_tol):
    """(1 when the position error ``ep`` and rotation error ``er`` are within tolerance else 0, the
    task's score: both norms in units of their tolerances)."""
    pe = ep.norm()
    re = er.norm()
    met = 1
    if pe > pos_tol or re > rot_tol:
        met = 0
    return met, pe / pos_tol + re / rot_tol


@ti.func
def target_of(targets: ti.template(), e, i):
    """Task i's target of env e: (position, wxyz quaternion)."""
    p = ti.Vector([targets[e, i, TARGET.pos + k] for k in ti.static(range(3))])
    q = ti.Vector([targets[e, i, TARGET.quat + k] for k in ti.static(range(4))])
    return p, q


@ti.func
def frame_task(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, i: ti.template(),
               link: ti.template(), ref: ti.template(), relative: ti.template(), plain, task_i: ti.template(),
               task_f: ti.template(), targets: ti.template()):
    """Rows ``6 i .. 6 i + 5`` of a link-frame task (PoseTask, RelativePoseTask): the error of the
    point ``TASK_F.point`` on ``link`` and of the link's orientation against the target, which is
    in the world frame, or with ``relative`` in ``ref``'s frame. The rows are the Jacobian of the
    tracked quantity: the point's velocity and the link's angular velocity, with ``relative``
    minus the velocity the reference link gives the same point and its own angular velocity
    (d/dt of R_ref^T (p - p_ref) is R_ref^T (v_p - v_ref(p))), both rotated into the reference
    frame, where the position mask applies; error and rows weighted. Returns
    (met, score) of the unweighted error against the task's tolerances. ``i``, ``link`` and
    ``ref`` are compile-time in the per-robot form, run-time in the generic one (hence template
    parameters, and ``6 * i`` written where a row index is passed on: a local variable would
    make it a run-time value)."""
    row = task_row(i)
    has_pos = task_i[row, TASK_I.has_pos]
    mode = task_i[row, TASK_I.rot_mode]
    weight = task_f[row, TASK_F.weight]
    lp, lq = form.link_pose(ctx, S, t, link)
    point = lp + qrot(lq, ti.Vector([task_f[row, TASK_F.point + k] for k in ti.static(range(3))]))
    tp, tq = target_of(targets, e, i)
    form.set_jacobian(ctx, S, t, link, point, 6 * i)
    inv = ti.Vector([1.0, 0.0, 0.0, 0.0])  # world to reference frame
    if ti.static(relative):
        rp, rq = form.link_pose(ctx, S, t, ref)
        tp = rp + qrot(rq, tp)
        tq = qmul(rq, tq)
        form.add_jacobian(ctx, S, t, ref, point, 6 * i, -1.0)  # the reference moves the target with it
        inv = qconj(rq)
    mask = ti.Vector([task_f[row, TASK_F.pos_mask + k] for k in ti.static(range(3))]) * ti.cast(has_pos, float)
    ep = tp - point
    er, axis = rotation_error(mode, lq, tq)
    if ti.static(relative):
        ep = qrot(inv, ep)
        er = qrot(inv, er)
    ep = ep * mask
    if plain == 0:
        form.transform_rows(ctx, S, t, 6 * i, relative, inv, axis, mask * weight, ti.cast(mode >= 0, float) * weight)
    form.set_error(ctx, S, t, 6 * i, ep * weight, er * weight)
    return task_score(ep, er, task_f[row, TASK_F.pos_tol], task_f[row, TASK_F.rot_tol])


@ti.func
def com_task(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, i: ti.template(), task_i: ti.template(),
             task_f: ti.template(), targets: ti.template()):
    """Rows ``6 i .. 6 i + 2`` of a ComTask: the whole-body centre of mass (world frame) against the
    target position, masked per world axis and weighted (the angular rows stay zero)."""
    row = task_row(i)
    weight = task_f[row, TASK_F.weight]
    tp, tq = target_of(targets, e, i)
    mask = ti.Vector([task_f[row, TASK_F.pos_mask + k] for k in ti.static(range(3))])
    ep = (tp - form.com(ctx, S, t)) * mask
    form.zero_rows(ctx, S, t, 6 * i)
    form.add_com_jacobian(ctx, S, t, 6 * i)
    form.transform_rows(ctx, S, t, 6 * i, False, ti.Vector([1.0, 0.0, 0.0, 0.0]), ti.Vector([0.0, 0.0, 0.0]),
                        mask * weight, 0.0)
    zero = ti.Vector([0.0, 0.0, 0.0])
    form.set_error(ctx, S, t, 6 * i, ep * weight, zero)
    return task_score(ep, zero, task_f[row, TASK_F.pos_tol], task_f[row, TASK_F.rot_tol])


@ti.func
def look_at_rows(a, u, dist):
    """``(Gv, Gw)``, 3 x 3 each: minus the rate of :func:`align_error` ``(a, u)`` (the rotation
    vector turning the link's axis ``a`` onto ``u``, the unit direction from the link's point to
    the target, ``dist`` away) per unit of the point's velocity ``v`` and the link's angular
    velocity ``w``: ``d er = -(Gv v + Gw w)``. With c = a x u, s = |c|, d = a . u, theta =
    atan2(s, d) and er = theta c / s: da = w x a, du = -(I - u u^T) v / dist, dc = da x u + a x du,
    dd = u . da + a . du, ds = c . dc / s, dtheta = d ds - s dd, and d er = theta / s dc +
    c (s dtheta - theta ds) / s^2 (near alignment, d er = dc)."""
    c = a.cross(u)
    s = c.norm()
    d = a.dot(u)
    ax = ti.Matrix([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])  # a x . as a matrix
    ux = ti.Matrix([[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]])
    P = ti.Matrix.identity(float, 3) - u.outer_product(u)
    Cw = ux @ ax  # dc = da x u + a x du = -u x da + a x du, da = -a x w
    Cv = -(ax @ P) / dist
    Gv = -Cv
    Gw = -Cw
    if s > 1e-6:
        theta = atan2_upper(s, d)
        Dw = c  # dd = c . w - (P a) . v / dist
        Dv = -(P @ a) / dist
        Sw = (Cw.transpose() @ c) / s  # ds = c . dc / s, as rows
        Sv = (Cv.transpose() @ c) / s
        Tw = d * Sw - s * Dw
        Tv = d * Sv - s * Dv
        k = square(s)
        Gw = -(theta / s * Cw + c.outer_product(s * Tw - theta * Sw) / k)
        Gv = -(theta / s * Cv + c.outer_product(s * Tv - theta * Sv) / k)
    return Gv, Gw


@ti.func
def look_at_task(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, i: ti.template(),
                 link: ti.template(), task_i: ti.template(), task_f: ti.template(), targets: ti.template()):
    """Rows ``6 i .. 6 i + 5`` of a LookAtTask: the link's axis ``TASK_F.axis`` (link frame, unit)
    turned toward the target point (world) as seen from the link's point ``TASK_F.point``. The
    error is the rotation vector taking the axis onto that direction (angular rows; the linear
    rows stay zero), its rows the error's exact rate (:func:`look_at_rows`: the link turning,
    and the point moving, which turns the direction), weighted. Met within ``rot_tol``."""
    row = task_row(i)
    weight = task_f[row, TASK_F.weight]
    lp, lq = form.link_pose(ctx, S, t, link)
    point = lp + qrot(lq, ti.Vector([task_f[row, TASK_F.point + k] for k in ti.static(range(3))]))
    a = qrot(lq, ti.Vector([task_f[row, TASK_F.axis + k] for k in ti.static(range(3))]))
    tp, tq = target_of(targets, e, i)
    diff = tp - point
    dist = ti.max(diff.norm(), 1e-9)
    u = diff / dist
    er = align_error(a, u)
    form.set_jacobian(ctx, S, t, link, point, 6 * i)
    Gv, Gw = look_at_rows(a, u, dist)
    form.mix_rows(ctx, S, t, 6 * i, Gv * weight, Gw * weight)
    zero = ti.Vector([0.0, 0.0, 0.0])
    form.set_error(ctx, S, t, 6 * i, zero, er * weight)
    return task_score(zero, er, task_f[row, TASK_F.pos_tol], task_f[row, TASK_F.rot_tol])


@ti.func
def step(form: ti.template(), ctx: ti.template(), S: ti.template(), t, it, task_i: ti.template(),
         task_f: ti.template()):
    """One damped Gauss-Newton step from the rows of this iteration (see the module docstring)."""
    lam = task_f[0, SOLVE_F.damping] * ti.min(form.error_sq(ctx, S, t), 1.0) + 1e-6
    respect_limits = task_i[0, SOLVE_I.respect_limits]
    # the direction; with limits, the dofs it pushes outward off a limit leave J's columns and the
    # direction is solved once more without them (one call site in a loop of at most two passes:
    # the per-robot form unrolls the solve, and a second copy was ~28 % of its code)
    for solve in range(2):
        form.direction(ctx, S, t, lam)
        blocked = 0.0  # (the per-robot form counts in floats)
        if respect_limits == 1:  # (on the first pass their Jacobian columns leave the next solve)
            blocked = form.block(ctx, S, t, STEP, 1 - solve)
        if blocked == 0:
            break
    max_step = task_f[0, SOLVE_F.max_step]
    big = form.largest(ctx, S, t, STEP)
    if big > max_step:
        form.scale(ctx, S, t, STEP, max_step / big)
        big = max_step
    # the posture pull (task priority): in the tasks' null space, within what the step has left and
    # shrinking over the iterations, so that the last ones converge on the tasks (a null-space move
    # is only null to first order)
    weight = task_f[0, SOLVE_F.rest_weight]
    if weight > 0 and big < max_step:
        form.posture(ctx, S, t, weight, task_i, task_f)
        if respect_limits == 1:
            form.block(ctx, S, t, PULL, 0)
        pull = form.largest(ctx, S, t, PULL)
        left = 1.0 - ti.cast(it + 1, float) / ti.cast(task_i[0, SOLVE_I.max_iters], float)
        budget = (max_step - big) * left * left
        factor = 1.0
        if pull > budget:
            factor = budget / pull
        form.add_pull(ctx, S, t, factor)
    form.apply(ctx, S, t, respect_limits)


@ti.func
def reset_kept(t, best_q: ti.template(), best_i: ti.template(), n_qs):
    """Empty the thread's kept solution (no success, infinite score, no samples run)."""
    best_i[t, BEST_I.success] = -1
    best_i[t, BEST_I.iters] = 0
    best_i[t, BEST_I.samples] = 0
    best_q[t, n_qs + KEPT_F.score] = 1e30
    best_q[t, n_qs + KEPT_F.rest_dist] = 1e30


@ti.func
def keep_if_better(t, s, it, ok, score, rest_dist, exhaustive, continuity, best_q: ti.template(),
                   best_i: ti.template(), n_qs):
    """Whether this iterate replaces the thread's kept one (any success beats failure; among
    successes the nearest rest when ``exhaustive``, the nearest start with ``continuity``; among
    failures the lowest score). If so its sample (when a first success; with continuity, every
    success kept), iteration, score and distance ``rest_dist`` are recorded; the caller copies its
    qpos and error."""
    better = False
    if ok == 1:
        if best_i[t, BEST_I.success] < 0 or ((exhaustive == 1 or continuity > 0) and
                                             rest_dist < best_q[t, n_qs + KEPT_F.rest_dist] - 1e-12):
            better = True
    elif best_i[t, BEST_I.success] < 0 and score < best_q[t, n_qs + KEPT_F.score]:
        better = True
    if better:
        if ok == 1 and (best_i[t, BEST_I.success] < 0 or continuity > 0):
            best_i[t, BEST_I.success] = s
        best_i[t, BEST_I.iters] = it
        best_q[t, n_qs + KEPT_F.score] = score
        best_q[t, n_qs + KEPT_F.rest_dist] = rest_dist
    return better


@ti.func
def stalled(exhaustive, s, n_samples, it, score, lag2):
    """A sample that stalls far from its target (a local minimum or a limit) gives way to the next
    restart instead of spending its remaining iterations."""
    return exhaustive == 0 and s + 1 < n_samples and it >= STALL_MIN_ITERS and score > STALL_RATIO * lag2 and \
        score > STALL_NEAR


@ti.func
def sample_over(e, s, it, ok, score, lag2, exhaustive, continuity, n_samples, max_iters, done: ti.template()):
    """Whether the current sample stops after this iterate: it met its targets (then env ``e``'s
    ``done`` hint is lowered to ``s``, unless every sample must run; within a ``continuity``
    window of samples, after sample 0, to the window's last sample), it used its iterations, or
    it stalled."""
    over = 0
    if ok == 1 and exhaustive == 0:
        hint = s
        if s > 0 and s < continuity:
            hint = continuity - 1
        if hint < done[e]:  # a plain store: see the module docstring
            done[e] = hint
        over = 1
    elif it == max_iters or stalled(exhaustive, s, n_samples, it, score, lag2):
        over = 1
    return over


def resumable(resume) -> bool:
    """Whether ``run_thread`` was given a place to save its progress (called while tracing)."""
    return resume is not None


@ti.func
def run_thread(form: ti.template(), ctx: ti.template(), t, B, n_qs, q0: ti.template(), task_i: ti.template(),
               task_f: ti.template(), targets: ti.template(), best_q: ti.template(), best_err: ti.template(),
               best_i: ti.template(), done: ti.template(), resume: ti.template()):
    """Every sample thread ``t`` serves (see the module docstring), its best iterate kept.

    The samples and their iterations are one flat loop, so that a solve may stop after a number
    of iterations and carry on in the next launch: ``resume`` is None (one launch does it all) or
    ``(resume_i, resume_f, first, budget)``: the thread's saved place (``RESUME_I`` / ``RESUME_F``),
    1 on a solve's first launch, and how many iterations this launch may run (0: no bound). The
    answers do not depend on where the launches split the work."""
    e = t % B
    max_iters = task_i[0, SOLVE_I.max_iters]
    n_samples = task_i[0, SOLVE_I.n_samples]
    K = task_i[0, SOLVE_I.slots]
    seed = task_i[0, SOLVE_I.seed]
    exhaustive = task_i[0, SOLVE_I.exhaustive]
    continuity = task_i[0, SOLVE_I.continuity]
    rest_weight = task_f[0, SOLVE_F.rest_weight]
    s = task_i[0, SOLVE_I.first] + t // B
    end = task_i[0, SOLVE_I.end]  # n_samples, but in a solve of some restarts only
    it = 0
    lag1 = 1e30  # scores of the two previous iterations, for the stall test
    lag2 = 1e30
    budget = 0
    if ti.static(not resumable(resume)):
        reset_kept(t, best_q, best_i, n_qs)
    else:
        budget = resume[3]
        if resume[2] == 1:
            reset_kept(t, best_q, best_i, n_qs)
        else:
            s = resume[0][t, RESUME_I.sample]
            it = resume[0][t, RESUME_I.iter]
            lag1 = resume[1][t, RESUME_F.lag1]
            lag2 = resume[1][t, RESUME_F.lag2]
    S = form.new_state(ctx)
    work = 0
    while s < end:
        if budget > 0 and work >= budget:
            break  # the next launch carries on from here
        if it == 0:  # a new sample
            kept = best_i[t, BEST_I.success]
            if exhaustive == 0 and ((kept >= 0 and (kept == 0 or s >= continuity)) or done[e] < s):
                s = end  # this thread succeeded (within the continuity window: at sample 0), or the hint
                break
            best_i[t, BEST_I.samples] += 1
            form.start(ctx, S, t, e, s, q0, task_i, seed)
            lag1 = 1e30
            lag2 = 1e30
        ok, score = form.rows(ctx, S, t, e, task_i, task_f, targets)
        rest_dist = 0.0
        if rest_weight > 0:
            rest_dist = form.distance(ctx, S, t, e, task_f, False)
        elif continuity > 0 and ok == 1:
            rest_dist = -1.0  # the warm start's success beats every other ...
            if s >= continuity:
                rest_dist = BEYOND + ti.cast(s, float)  # ... and beyond the window the lowest sample wins
            elif s > 0:
                rest_dist = form.distance(ctx, S, t, e, task_f, True)
        if keep_if_better(t, s, it, ok, score, rest_dist, exhaustive, continuity, best_q, best_i, n_qs):
            form.keep(ctx, S, t, best_q, best_err, task_f)
        if sample_over(e, s, it, ok, score, lag2, exhaustive, continuity, n_samples, max_iters, done):
            s += K
            it = 0
        else:
            lag2 = lag1
            lag1 = score
            step(form, ctx, S, t, it, task_i, task_f)
            it += 1
            work += 1
    if ti.static(resumable(resume)):
        resume[0][t, RESUME_I.sample] = s
        resume[0][t, RESUME_I.iter] = it
        resume[1][t, RESUME_F.lag1] = lag1
        resume[1][t, RESUME_F.lag2] = lag2
