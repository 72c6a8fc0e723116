"""Batched damped-least-squares IK, one thread per (env, restart slot).

Thread ``t`` serves env ``e = t % B`` and restart slot ``k = t // B``; it runs samples
``k, k + K, k + 2K, ...`` (K slots in all). Sample 0 starts from the env's initial qpos; others
from a uniform draw within the joint limits made by a counter-based hash of (seed, env, sample,
qpos index), so results do not depend on thread scheduling. A thread stops at its own first
success; ``done[e]`` is a hint shared by env e's threads: some sample index that met the
tolerances (or :data:`BIG`), and a sample above it is skipped. The env's answer is the lowest
successful sample (or, if none, the lowest-score one), so the output is deterministic: every
sample below the lowest success runs, whatever the hint holds when.

``done`` is read and written with plain loads and stores, never atomics: any value a thread sees
is a successful sample of its env, so a stale or overwritten hint only costs work, never the
answer. (Atomics inside the solver's divergent loops broke the whole kernel on Mesa's lavapipe
Vulkan: the loop exited early for every lane and nothing after it ran. See docs/backends.md.)

Per iteration: FK of the thread's row, the masked error and Jacobian rows of every task, then
``dq = J^T (J J^T + lambda I)^-1 e`` by Cholesky, with lambda = damping * min(|e|^2, 1) + 1e-6
(Levenberg-Marquardt: damped far from the target, Gauss-Newton near it), optionally plus a
null-space pull toward ``rest``; the step is scaled so that no dof moves more than ``max_step``,
then clamped to the limits. A sample that stalls far from its target gives way to the next.

Arguments (B envs, T = B * K threads, Lt task links, m = 6 Lt rows, n dofs, robot arrays as in
:mod:`engine.kernels.layout`):

- ``q0`` (B, n_qs): initial qpos per env; ``targets`` (B, Lt, 7): target pos xyz + quat wxyz.
- ``task_i`` (1 + Lt + n, 7): row 0 = max_iters, n_samples, K, seed, respect_limits, exhaustive
  (1 = run every sample, for the rest-posture choice), unmasked (1 = full pos_mask and every dof
  active: no Jacobian entry needs masking); row 1 + i = link, has_pos, rot_mode
  (-1 free, 3 full, 0/1/2 align that local axis with the target's); row 1 + Lt + d = dof active.
- ``task_f`` (1 + Lt + n_qs, 8): row 0 = damping, pos_tol, rot_tol, max_step, rest_weight,
  pos_mask xyz; row 1 + i = the task's local point; row 1 + Lt + i, col 0 = rest qpos.
- scratch per thread: ``q`` (T, n_qs), ``pose`` (T, L + J, 7), ``J`` (T, m, n), ``A`` (T, m, m),
  ``vec`` (T, 2m + 2n): solve vector, dq, a copy of the error, the posture pull.
- outputs per thread: ``best_q`` (T, n_qs + 2): kept qpos, then its score and rest distance;
  ``best_err`` (T, Lt, 6); ``best_i`` (T, 3): success sample (-1 none), iterations of the kept
  solution, samples run. ``done`` (B,) int, initialised to :data:`BIG`.
"""

import taichi as ti

from .fk import BALL, FREE, HINGE, SLIDE, fk_row, jacobian_row, point_of, vec4
from .launch import fast
from .quat import atan2_upper, qcolumn, qconj, qexp, qlog, qmul, qnormalize

BIG = 1 << 30
PI = 3.141592653589793
STALL_MIN_ITERS = 6    # never give up on a sample before this many iterations
STALL_RATIO = 0.95     # stalled: the score fell by less than 5% over two iterations ...
STALL_NEAR = 20.0      # ... while still this far (in tolerances) from the target


def loop_block_dim() -> int:
    """Threads per block of the solve loop: small on the CPU so that the workers stay on nearby
    (env, sample) items; a GPU-sized block elsewhere."""
    from ..backend import STATE

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
def is_free_scalar(robot_i: ti.template(), jr, task_i: ti.template(), Lt):
    """True for a 1-dof, non-mimic joint (robot_i row jr) whose dof the solver may move."""
    kind = robot_i[jr, 0]
    return (kind == HINGE or kind == SLIDE) and robot_i[jr, 3] < 0 and task_i[1 + Lt + robot_i[jr, 2], 0] == 1


@ti.func
def init_sample(t, e, s, q0: ti.template(), q: ti.template(), robot_i: ti.template(), robot_f: ti.template(),
                task_i: ti.template(), seed, Lt):
    L = robot_i[0, 0]
    n_joints = robot_i[0, 1]
    for i in range(q.shape[1]):
        q[t, i] = q0[e, i]
    if s > 0:
        for j in range(n_joints):
            jr = 1 + L + j
            if is_free_scalar(robot_i, jr, task_i, Lt):
                qs = robot_i[jr, 1]
                lo = robot_f[L + n_joints + qs, 0]
                hi = robot_f[L + n_joints + qs, 1]
                u = hash_uniform(seed, e, s, qs)
                if lo > -1e29 and hi < 1e29:
                    q[t, qs] = lo + u * (hi - lo)
                elif robot_i[jr, 0] == HINGE:
                    q[t, qs] = -PI + 2.0 * PI * u


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
    """Rotation error (world rotation vector) of link orientation ``lq`` against target ``tq`` for
    rot mode ``mode`` (3 full, -1 free: zero, k: align local axis k), and the link's aligned axis
    (world; zero unless one axis is aligned), whose component the caller drops from the
    angular Jacobian rows."""
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
def task_rows(t, e, task_i: ti.template(), task_f: ti.template(), targets: ti.template(), robot_i: ti.template(),
              robot_f: ti.template(), pose: ti.template(), J: ti.template(), vec: ti.template(), Lt, n):
    """Fill the masked error (vec[t, 0:m]) and Jacobian rows of every task; return (all met, score)."""
    ok = 1
    score = 0.0
    pos_tol = task_f[0, 1]
    rot_tol = task_f[0, 2]
    for i in range(Lt):
        link = task_i[1 + i, 0]
        has_pos = task_i[1 + i, 1]
        mode = task_i[1 + i, 2]
        lq = vec4(pose, t, link, 3)
        point = point_of(t, link, task_f, 1 + i, pose)
        r0 = 6 * i
        jacobian_row(t, link, point, r0, robot_i, robot_f, pose, J, n)
        ep = ti.Vector([0.0, 0.0, 0.0])
        if has_pos == 1:
            ep = ti.Vector([targets[e, i, 0], targets[e, i, 1], targets[e, i, 2]]) - point
            for k in ti.static(range(3)):
                ep[k] *= task_f[0, 5 + k]
        er, a = rotation_error(mode, lq, vec4(targets, e, i, 3))
        if mode >= 0 and mode < 3:
            for d in range(n):  # drop the angular rows' component about the free axis
                w = ti.Vector([J[t, r0 + 3, d], J[t, r0 + 4, d], J[t, r0 + 5, d]])
                w = w - a * a.dot(w)
                for k in ti.static(range(3)):
                    J[t, r0 + 3 + k, d] = w[k]
        if task_i[0, 6] == 0 or has_pos == 0 or mode < 0:  # some rows or columns are masked out
            for d in range(n):
                active = task_i[1 + Lt + d, 0]
                for k in ti.static(range(3)):
                    J[t, r0 + k, d] *= task_f[0, 5 + k] * has_pos * active
                    if mode < 0 or active == 0:
                        J[t, r0 + 3 + k, d] = 0.0
        for k in ti.static(range(3)):
            vec[t, r0 + k] = ep[k]
            vec[t, r0 + 3 + k] = er[k]
        met, task = task_score(ep, er, pos_tol, rot_tol)
        ok = ok * met
        score += task
    return ok, score


@ti.func
def cholesky_factor(t, A: ti.template(), m):
    """In-place Cholesky of A[t] (m x m, SPD); the lower factor replaces the lower triangle."""
    for j in range(m):
        s = A[t, j, j]
        for k in range(j):
            s -= A[t, j, k] * A[t, j, k]
        s = ti.sqrt(ti.max(s, 1e-12))
        A[t, j, j] = s
        for i in range(j + 1, m):
            v = A[t, i, j]
            for k in range(j):
                v -= A[t, i, k] * A[t, j, k]
            A[t, i, j] = v / s


@ti.func
def cholesky_substitute(t, A: ti.template(), x: ti.template(), m):
    """Solve L L^T y = x[t, 0:m] in place with the lower factor in A[t]."""
    for i in range(m):
        v = x[t, i]
        for k in range(i):
            v -= A[t, i, k] * x[t, k]
        x[t, i] = v / A[t, i, i]
    for ii in range(m):
        i = m - 1 - ii
        v = x[t, i]
        for k in range(i + 1, m):
            v -= A[t, k, i] * x[t, k]
        x[t, i] = v / A[t, i, i]


@ti.func
def rest_pull(t, q: ti.template(), J: ti.template(), A: ti.template(), vec: ti.template(), robot_i: ti.template(),
              task_i: ti.template(), task_f: ti.template(), weight, m, n, Lt):
    """Null-space projection of ``weight * (rest - q)`` (free 1-dof joints) into vec[t, 2m+n:2m+2n]
    (zero elsewhere); A[t] holds the Cholesky factor of J J^T + lambda I and vec[t, 0:m] is free."""
    L = robot_i[0, 0]
    n_joints = robot_i[0, 1]
    o = 2 * m + n
    for d in range(n):
        vec[t, o + d] = 0.0
    for j in range(n_joints):
        if is_free_scalar(robot_i, 1 + L + j, task_i, Lt):
            qs = robot_i[1 + L + j, 1]
            vec[t, o + robot_i[1 + L + j, 2]] = weight * (task_f[1 + Lt + qs, 0] - q[t, qs])
    for a in range(m):
        v = 0.0
        for d in range(n):
            v += J[t, a, d] * vec[t, o + d]
        vec[t, a] = v
    cholesky_substitute(t, A, vec, m)
    for d in range(n):
        jt = 0.0
        for a in range(m):
            jt += J[t, a, d] * vec[t, a]
        vec[t, o + d] -= jt


@ti.func
def apply_step(t, q: ti.template(), vec: ti.template(), robot_i: ti.template(), robot_f: ti.template(), m,
               respect_limits):
    """q[t] += dq (vec[t, m:]), integrating ball/free rotations in the body frame; clamp to limits."""
    L = robot_i[0, 0]
    n_joints = robot_i[0, 1]
    for j in range(n_joints):
        jr = 1 + L + j
        kind = robot_i[jr, 0]
        qs = robot_i[jr, 1]
        d0 = m + robot_i[jr, 2]
        if (kind == HINGE or kind == SLIDE) and robot_i[jr, 3] < 0:
            v = q[t, qs] + vec[t, d0]
            if respect_limits == 1:
                v = ti.min(ti.max(v, robot_f[L + n_joints + qs, 0]), robot_f[L + n_joints + qs, 1])
            q[t, qs] = v
        elif kind == BALL or kind == FREE:
            qa = qs
            da = d0
            if kind == FREE:
                for k in ti.static(range(3)):
                    q[t, qs + k] += vec[t, d0 + k]
                qa = qs + 3
                da = d0 + 3
            cur = ti.Vector([q[t, qa], q[t, qa + 1], q[t, qa + 2], q[t, qa + 3]])
            new = qnormalize(qmul(cur, qexp(ti.Vector([vec[t, da], vec[t, da + 1], vec[t, da + 2]]))))
            for k in ti.static(range(4)):
                q[t, qa + k] = new[k]


@ti.func
def lm_direction(t, q: ti.template(), J: ti.template(), A: ti.template(), vec: ti.template(),
                 robot_i: ti.template(), task_i: ti.template(), task_f: ti.template(), m, n, Lt, lam):
    """dq (vec[t, m:m+n]) = J^T (J J^T + lam I)^-1 e, e read from its copy at vec[t, m+n:m+n+m]; the
    factor stays in A[t]."""
    for a in range(m):
        vec[t, a] = vec[t, m + n + a]
    for a in range(m):
        for b in range(a + 1):
            v = 0.0
            for d in range(n):
                v += J[t, a, d] * J[t, b, d]
            A[t, a, b] = v
        A[t, a, a] += lam
    cholesky_factor(t, A, m)
    cholesky_substitute(t, A, vec, m)
    for d in range(n):
        v = 0.0
        for a in range(m):
            v += J[t, a, d] * vec[t, a]
        vec[t, m + d] = v


@ti.func
def block_limits(t, q: ti.template(), J: ti.template(), vec: ti.template(), robot_i: ti.template(),
                 robot_f: ti.template(), m, o, zero_columns):
    """Dofs resting on a joint limit whose step (vec[t, o:o+n]) points outward: zero it (and, with
    ``zero_columns``, their Jacobian column, so that a new solve lets the other joints do their
    share). Returns how many were found."""
    L = robot_i[0, 0]
    n_joints = robot_i[0, 1]
    blocked = 0
    for j in range(n_joints):
        jr = 1 + L + j
        kind = robot_i[jr, 0]
        if (kind == HINGE or kind == SLIDE) and robot_i[jr, 3] < 0:
            qs = robot_i[jr, 1]
            d = robot_i[jr, 2]
            lo = robot_f[L + n_joints + qs, 0]
            hi = robot_f[L + n_joints + qs, 1]
            tol = 1e-5 * (1.0 + ti.abs(q[t, qs]))
            step = vec[t, o + d]
            if (q[t, qs] <= lo + tol and step < 0) or (q[t, qs] >= hi - tol and step > 0):
                blocked += 1
                vec[t, o + d] = 0.0
                if zero_columns == 1:
                    for a in range(m):
                        J[t, a, d] = 0.0
    return blocked


@ti.func
def solve_step(t, q: ti.template(), J: ti.template(), A: ti.template(), vec: ti.template(), robot_i: ti.template(),
               robot_f: ti.template(), task_i: ti.template(), task_f: ti.template(), m, n, Lt, it):
    """One damped Gauss-Newton step from the rows task_rows filled in. With joint limits on, dofs
    held at a limit are dropped and the step solved again (an active set), so that a target at
    the edge of the workspace is reached instead of stalling against the clamp."""
    e2 = 0.0
    for a in range(m):
        e2 += vec[t, a] * vec[t, a]
        vec[t, m + n + a] = vec[t, a]
    lam = task_f[0, 0] * ti.min(e2, 1.0) + 1e-6
    lm_direction(t, q, J, A, vec, robot_i, task_i, task_f, m, n, Lt, lam)
    limits = task_i[0, 4]
    if limits == 1:
        if block_limits(t, q, J, vec, robot_i, robot_f, m, m, 1) > 0:
            lm_direction(t, q, J, A, vec, robot_i, task_i, task_f, m, n, Lt, lam)
            block_limits(t, q, J, vec, robot_i, robot_f, m, m, 0)
    max_step = task_f[0, 3]
    big = 0.0
    for d in range(n):
        big = ti.max(big, ti.abs(vec[t, m + d]))
    if big > max_step:
        for d in range(n):
            vec[t, m + d] *= max_step / big
        big = max_step
    # the posture pull (task priority): in the task's null space, within what the step has left and
    # shrinking over the iterations, so that the last ones converge on the task (a null-space move
    # is only null to first order)
    if task_f[0, 4] > 0 and big < max_step:
        o = 2 * m + n
        rest_pull(t, q, J, A, vec, robot_i, task_i, task_f, task_f[0, 4], m, n, Lt)
        if limits == 1:
            block_limits(t, q, J, vec, robot_i, robot_f, m, o, 0)
        pull = 0.0
        for d in range(n):
            pull = ti.max(pull, ti.abs(vec[t, o + d]))
        left = 1.0 - ti.cast(it + 1, ti.f32) / ti.cast(task_i[0, 0], ti.f32)
        budget = (max_step - big) * left * left
        scale = 1.0
        if pull > budget:
            scale = budget / pull
        for d in range(n):
            vec[t, m + d] += scale * vec[t, o + d]
    apply_step(t, q, vec, robot_i, robot_f, m, task_i[0, 4])


@ti.func
def reset_kept(t, best_q: ti.template(), best_i: ti.template(), n_qs):
    """Empty the thread's kept solution (no success, infinite score, no samples run)."""
    best_i[t, 0] = -1
    best_i[t, 1] = 0
    best_i[t, 2] = 0
    best_q[t, n_qs] = 1e30
    best_q[t, n_qs + 1] = 1e30


@ti.func
def keep_if_better(t, s, it, ok, score, rest_dist, exhaustive, best_q: ti.template(), best_i: ti.template(), n_qs):
    """Whether this iterate replaces the thread's kept one (any success beats failure; among
    successes the nearest rest when ``exhaustive``; among failures the lowest score). If so its
    sample (when a first success), iteration, score and rest distance are recorded; the caller
    copies its qpos and error."""
    better = False
    if ok == 1:
        if best_i[t, 0] < 0 or (exhaustive == 1 and rest_dist < best_q[t, n_qs + 1] - 1e-12):
            better = True
    elif best_i[t, 0] < 0 and score < best_q[t, n_qs]:
        better = True
    if better:
        if ok == 1 and best_i[t, 0] < 0:
            best_i[t, 0] = s
        best_i[t, 1] = it
        best_q[t, n_qs] = score
        best_q[t, n_qs + 1] = rest_dist
    return better


@ti.func
def stalled(exhaustive, s, n_samples, it, score, lag2):
    """A sample that stalls far from its target (a local minimum or a limit) gives way to the next
    restart instead of spending its remaining iterations."""
    return exhaustive == 0 and s + 1 < n_samples and it >= STALL_MIN_ITERS and score > STALL_RATIO * lag2 and \
        score > STALL_NEAR


@ti.func
def skip_sample(t, e, s, exhaustive, best_i: ti.template(), done: ti.template()):
    """Whether thread ``t`` (env ``e``) need not run sample ``s``: unless every sample must run,
    once the thread itself succeeded, or once a lower sample of its env did (the ``done`` hint)."""
    return exhaustive == 0 and (best_i[t, 0] >= 0 or done[e] < s)


@ti.func
def sample_over(e, s, it, ok, score, lag2, exhaustive, n_samples, max_iters, done: ti.template()):
    """Whether the current sample stops after this iterate: it met its targets (then env ``e``'s
    ``done`` hint is lowered to ``s``, unless every sample must run), it used its iterations, or it
    stalled."""
    over = 0
    if ok == 1 and exhaustive == 0:
        if s < done[e]:  # a plain store: see the module docstring
            done[e] = s
        over = 1
    elif it == max_iters or stalled(exhaustive, s, n_samples, it, score, lag2):
        over = 1
    return over


@fast
@ti.kernel
def solve(q0: ti.types.ndarray(), task_i: ti.types.ndarray(), task_f: ti.types.ndarray(),
          targets: ti.types.ndarray(), robot_i: ti.types.ndarray(), robot_f: ti.types.ndarray(),
          q: ti.types.ndarray(), pose: ti.types.ndarray(), J: ti.types.ndarray(), A: ti.types.ndarray(),
          vec: ti.types.ndarray(), best_q: ti.types.ndarray(), best_err: ti.types.ndarray(),
          best_i: ti.types.ndarray(), done: ti.types.ndarray(), m_fixed: ti.template(), n_fixed: ti.template(),
          lt_fixed: ti.template()):
    """``m`` (6 Lt rows), ``n`` (dofs) and ``Lt`` (task links): compile-time sizes for small robots
    (one compiled solver per structure, fixed trip counts in the dense loops, ~25 % faster), or 0
    to read them from the arrays at run time (large robots: no compile per structure)."""
    B = q0.shape[0]
    n_qs = q.shape[1]
    m = J.shape[1]
    n = J.shape[2]
    Lt = targets.shape[1]
    if ti.static(m_fixed > 0):
        m = m_fixed
    if ti.static(n_fixed > 0):
        n = n_fixed
    if ti.static(lt_fixed > 0):
        Lt = lt_fixed
    max_iters = task_i[0, 0]
    n_samples = task_i[0, 1]
    K = task_i[0, 2]
    seed = task_i[0, 3]
    exhaustive = task_i[0, 5]
    rest_weight = task_f[0, 4]
    ti.loop_config(block_dim=ti.static(loop_block_dim()))
    for t in range(q.shape[0]):
        e = t % B
        reset_kept(t, best_q, best_i, n_qs)
        s = t // B
        while s < n_samples:
            if skip_sample(t, e, s, exhaustive, best_i, done):
                break
            best_i[t, 2] += 1
            init_sample(t, e, s, q0, q, robot_i, robot_f, task_i, seed, Lt)
            lag1 = 1e30  # scores of the two previous iterations, for the stall test
            lag2 = 1e30
            for it in range(max_iters + 1):
                fk_row(t, q, robot_i, robot_f, pose)
                ok, score = task_rows(t, e, task_i, task_f, targets, robot_i, robot_f, pose, J, vec, Lt, n)
                rest_dist = 0.0
                if rest_weight > 0:
                    for i in range(n_qs):
                        rest_dist += (q[t, i] - task_f[1 + Lt + i, 0]) ** 2
                if keep_if_better(t, s, it, ok, score, rest_dist, exhaustive, best_q, best_i, n_qs):
                    for i in range(n_qs):
                        best_q[t, i] = q[t, i]
                    for i in range(Lt):
                        for k in ti.static(range(6)):
                            best_err[t, i, k] = vec[t, 6 * i + k]
                if sample_over(e, s, it, ok, score, lag2, exhaustive, n_samples, max_iters, done):
                    break
                lag2 = lag1
                lag1 = score
                solve_step(t, q, J, A, vec, robot_i, robot_f, task_i, task_f, m, n, Lt, it)
            s += K
