"""Batched damped-least-squares IK, one thread per (env, restart slot).

Thread ``t`` serves env ``e = t % B`` and restart slot ``k = t // B``; it runs samples
``k, k + K, k + 2K, ...`` (K slots in all). Sample 0 starts from the env's initial qpos; others
from a uniform draw within the joint limits made by a counter-based hash of (seed, env, sample,
qpos index), so results do not depend on thread scheduling. ``done[e]`` holds the lowest sample
index that met the tolerances (atomic min); a sample above it is skipped, and the env's answer is
the lowest successful sample (or, if none, the lowest-score one), so the output is deterministic.

Per iteration: FK of the thread's row, the masked error and Jacobian rows of every task, then
``dq = J^T (J J^T + damping I)^-1 e`` by Cholesky, optionally plus a null-space pull toward
``rest``; the step is scaled so that no dof moves more than ``max_step``, then clamped to limits.

Array arguments (B = envs, T = B * K threads, L = task links, m = 6 L rows, n = dofs):

- ``q0`` (B, n_qs): initial qpos per env.       - ``tasks_i`` (L, 3): link, has_pos, rot_mode
  (rot_mode -1 free, 3 full, 0/1/2 align that local axis with the target's).
- ``tasks_f`` (L, 3): local point of each task. - ``targets`` (B, L, 7): target pos xyz + quat wxyz.
- ``params_f`` (8,): damping, pos_tol, rot_tol, max_step, rest_weight, pos_mask xyz.
- ``params_i`` (6,): max_iters, n_samples, K, seed, respect_limits, exhaustive (1 = no early stop).
- ``q_limits`` (n_qs, 2); ``dof_active`` (n,) int; ``rest`` (n_qs,).
- scratch per thread: ``q`` (T, n_qs), ``links_pos`` (T, n_links, 3), ``links_quat`` (T, n_links, 4),
  ``frames`` (T, n_joints, 7), ``J`` (T, m, n), ``A`` (T, m, m), ``err`` (T, m), ``dq`` (T, n).
- outputs per thread: ``best_q`` (T, n_qs), ``best_err`` (T, L, 6), ``best_i`` (T, 3): success sample
  (-1 none), iterations of the kept solution, samples run; ``best_f`` (T, 2): score, rest distance.
- ``done`` (B,) int, initialised to a large value.
"""

import taichi as ti

from .fk import BALL, FREE, HINGE, SLIDE, fk_row, jacobian_row
from .quat import qcolumn, qconj, qexp, qlog, qmul, qnormalize, qrot

BIG = 1 << 30
STALL_MIN_ITERS = 6    # never give up on a sample before this many iterations
STALL_RATIO = 0.95      # stalled: the score fell by less than 20% over two iterations ...
STALL_NEAR = 20.0      # ... while still this far (in tolerances) from the target


def loop_block_dim() -> int:
    """Threads per block of the solve loop. On the CPU a small block keeps the two workers on
    nearby (env, sample) items, so a restart of an env rarely starts before its earlier samples
    finished (coarse CPU chunks would run samples 0 and 1 of one env side by side)."""
    from ..backend import STATE

    return 4 if STATE.arch == "cpu" else 128
PI = 3.141592653589793


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
def init_sample(t, e, s, q0: ti.template(), q: ti.template(), joint_i: ti.template(), q_limits: ti.template(),
                dof_active: ti.template(), seed):
    for i in range(q.shape[1]):
        q[t, i] = q0[e, i]
    if s > 0:
        for j in range(joint_i.shape[0]):
            kind = joint_i[j, 0]
            if (kind == HINGE or kind == SLIDE) and joint_i[j, 3] < 0 and dof_active[joint_i[j, 2]] == 1:
                qs = joint_i[j, 1]
                lo = q_limits[qs, 0]
                hi = q_limits[qs, 1]
                u = hash_uniform(seed, e, s, qs)
                if lo > -1e30 and hi < 1e30:
                    q[t, qs] = lo + u * (hi - lo)
                elif kind == HINGE:
                    q[t, qs] = -PI + 2.0 * PI * u


@ti.func
def align_error(a, b):
    """Rotation vector turning unit vector a onto unit vector b (world frame)."""
    c = a.cross(b)
    s = c.norm()
    d = a.dot(b)
    out = ti.Vector([0.0, 0.0, 0.0])
    if s > 1e-9:
        out = c * (ti.atan2(s, d) / s)
    elif d < 0:  # opposite: any axis perpendicular to a
        perp = a.cross(ti.Vector([1.0, 0.0, 0.0]))
        if perp.norm() < 1e-3:
            perp = a.cross(ti.Vector([0.0, 1.0, 0.0]))
        out = perp.normalized() * PI
    return out


@ti.func
def task_rows(t, e, tasks_i: ti.template(), tasks_f: ti.template(), targets: ti.template(),
              params_f: ti.template(), link_i: ti.template(), joint_i: ti.template(), joint_f: ti.template(),
              links_pos: ti.template(), links_quat: ti.template(), frames: ti.template(), J: ti.template(),
              err: ti.template(), dof_active: ti.template(), pos_tol, rot_tol):
    """Fill the masked error and Jacobian rows of every task; return (all met, score)."""
    ok = 1
    score = 0.0
    for i in range(tasks_i.shape[0]):
        link = tasks_i[i, 0]
        lq = ti.Vector([links_quat[t, link, 0], links_quat[t, link, 1], links_quat[t, link, 2],
                        links_quat[t, link, 3]])
        point = ti.Vector([links_pos[t, link, 0], links_pos[t, link, 1], links_pos[t, link, 2]]) + qrot(
            lq, ti.Vector([tasks_f[i, 0], tasks_f[i, 1], tasks_f[i, 2]]))
        r0 = 6 * i
        jacobian_row(t, link, point, r0, link_i, joint_i, joint_f, frames, J)
        tq = ti.Vector([targets[e, i, 3], targets[e, i, 4], targets[e, i, 5], targets[e, i, 6]])
        ep = ti.Vector([0.0, 0.0, 0.0])
        if tasks_i[i, 1] == 1:
            ep = ti.Vector([targets[e, i, 0], targets[e, i, 1], targets[e, i, 2]]) - point
            for k in ti.static(range(3)):
                ep[k] *= params_f[5 + k]
        er = ti.Vector([0.0, 0.0, 0.0])
        mode = tasks_i[i, 2]
        if mode == 3:
            er = qlog(qmul(tq, qconj(lq)))
        elif mode >= 0:
            a = ti.Vector([0.0, 0.0, 0.0])
            b = ti.Vector([0.0, 0.0, 0.0])
            for k in ti.static(range(3)):
                if mode == k:
                    a = qcolumn(lq, k)
                    b = qcolumn(tq, k)
            er = align_error(a, b)
            for d in range(J.shape[2]):  # drop the angular rows' component about the free axis
                w = ti.Vector([J[t, r0 + 3, d], J[t, r0 + 4, d], J[t, r0 + 5, d]])
                w = w - a * a.dot(w)
                for k in ti.static(range(3)):
                    J[t, r0 + 3 + k, d] = w[k]
        for d in range(J.shape[2]):
            for k in ti.static(range(3)):
                J[t, r0 + k, d] *= params_f[5 + k] * tasks_i[i, 1]
                if mode < 0:
                    J[t, r0 + 3 + k, d] = 0.0
            if dof_active[d] == 0:
                for k in range(6):
                    J[t, r0 + k, d] = 0.0
        for k in ti.static(range(3)):
            err[t, r0 + k] = ep[k]
            err[t, r0 + 3 + k] = er[k]
        pe = ep.norm()
        re = er.norm()
        if pe > pos_tol or re > rot_tol:
            ok = 0
        score += pe / pos_tol + re / rot_tol
    return ok, score


@ti.func
def cholesky_solve(t, A: ti.template(), x: ti.template(), m):
    """In-place Cholesky of A[t] (m x m, SPD; lower factor kept), then solve A x = x in place."""
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
    cholesky_substitute(t, A, x, m)


@ti.func
def cholesky_substitute(t, A: ti.template(), x: ti.template(), m):
    """Solve L L^T y = x in place with the lower factor already in A[t]."""
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
def rest_pull(t, q: ti.template(), dq: ti.template(), J: ti.template(), A: ti.template(), tmp: ti.template(),
              joint_i: ti.template(), dof_active: ti.template(), rest: ti.template(), weight, m):
    """Add the null-space projection of ``weight * (rest - q)`` (1-dof joints) to dq[t]; A[t] holds
    the Cholesky factor of J J^T + damping I and tmp[t] (m,) is free scratch."""
    for a in range(m):
        v = 0.0
        for j in range(joint_i.shape[0]):
            kind = joint_i[j, 0]
            d = joint_i[j, 2]
            if (kind == HINGE or kind == SLIDE) and joint_i[j, 3] < 0 and dof_active[d] == 1:
                qs = joint_i[j, 1]
                v += J[t, a, d] * weight * (rest[qs] - q[t, qs])
        tmp[t, a] = v
    cholesky_substitute(t, A, tmp, m)
    for j in range(joint_i.shape[0]):
        kind = joint_i[j, 0]
        d = joint_i[j, 2]
        if (kind == HINGE or kind == SLIDE) and joint_i[j, 3] < 0 and dof_active[d] == 1:
            qs = joint_i[j, 1]
            jt = 0.0
            for a in range(m):
                jt += J[t, a, d] * tmp[t, a]
            dq[t, d] += weight * (rest[qs] - q[t, qs]) - jt


@ti.func
def apply_step(t, q: ti.template(), dq: ti.template(), joint_i: ti.template(), q_limits: ti.template(),
               respect_limits):
    for j in range(joint_i.shape[0]):
        kind = joint_i[j, 0]
        qs = joint_i[j, 1]
        d0 = joint_i[j, 2]
        if (kind == HINGE or kind == SLIDE) and joint_i[j, 3] < 0:
            v = q[t, qs] + dq[t, d0]
            if respect_limits == 1:
                v = ti.min(ti.max(v, q_limits[qs, 0]), q_limits[qs, 1])
            q[t, qs] = v
        elif kind == BALL or kind == FREE:
            qa = qs
            da = d0
            if kind == FREE:
                for k in ti.static(range(3)):
                    q[t, qs + k] += dq[t, d0 + k]
                qa = qs + 3
                da = d0 + 3
            cur = ti.Vector([q[t, qa], q[t, qa + 1], q[t, qa + 2], q[t, qa + 3]])
            new = qnormalize(qmul(cur, qexp(ti.Vector([dq[t, da], dq[t, da + 1], dq[t, da + 2]]))))
            for k in ti.static(range(4)):
                q[t, qa + k] = new[k]


@ti.kernel
def solve(q0: ti.types.ndarray(), tasks_i: ti.types.ndarray(), tasks_f: ti.types.ndarray(),
          targets: ti.types.ndarray(), params_f: ti.types.ndarray(), params_i: ti.types.ndarray(),
          link_i: ti.types.ndarray(), link_f: ti.types.ndarray(), joint_i: ti.types.ndarray(),
          joint_f: ti.types.ndarray(), q_limits: ti.types.ndarray(), dof_active: ti.types.ndarray(),
          rest: ti.types.ndarray(), q: ti.types.ndarray(), links_pos: ti.types.ndarray(),
          links_quat: ti.types.ndarray(), frames: ti.types.ndarray(), J: ti.types.ndarray(),
          A: ti.types.ndarray(), err: ti.types.ndarray(), dq: ti.types.ndarray(), best_q: ti.types.ndarray(),
          best_err: ti.types.ndarray(), best_i: ti.types.ndarray(), best_f: ti.types.ndarray(),
          done: ti.types.ndarray()):
    B = q0.shape[0]
    m = J.shape[1]
    n = J.shape[2]
    n_qs = q.shape[1]
    damping = params_f[0]
    pos_tol = params_f[1]
    rot_tol = params_f[2]
    max_step = params_f[3]
    rest_weight = params_f[4]
    max_iters = params_i[0]
    n_samples = params_i[1]
    K = params_i[2]
    seed = params_i[3]
    respect_limits = params_i[4]
    exhaustive = params_i[5]
    ti.loop_config(block_dim=ti.static(loop_block_dim()))
    for t in range(q.shape[0]):
        e = t % B
        best_i[t, 0] = -1
        best_i[t, 1] = 0
        best_i[t, 2] = 0
        best_f[t, 0] = 1e30
        best_f[t, 1] = 1e30
        s = t // B
        while s < n_samples:
            if exhaustive == 0 and ti.atomic_min(done[e], BIG) < s:
                break
            best_i[t, 2] += 1
            init_sample(t, e, s, q0, q, joint_i, q_limits, dof_active, seed)
            lag1 = 1e30  # scores of the two previous iterations, for the stall test
            lag2 = 1e30
            for it in range(max_iters + 1):
                fk_row(t, q, link_i, link_f, joint_i, joint_f, links_pos, links_quat, frames)
                ok, score = task_rows(t, e, tasks_i, tasks_f, targets, params_f, link_i, joint_i, joint_f,
                                      links_pos, links_quat, frames, J, err, dof_active, pos_tol, rot_tol)
                rest_dist = 0.0
                for i in range(n_qs):
                    if rest_weight > 0:
                        rest_dist += (q[t, i] - rest[i]) ** 2
                # keep: any success beats failure; among successes the nearest rest (exhaustive)
                better = False
                if ok == 1:
                    if best_i[t, 0] < 0 or (exhaustive == 1 and rest_dist < best_f[t, 1] - 1e-12):
                        better = True
                elif best_i[t, 0] < 0 and score < best_f[t, 0]:
                    better = True
                if better:
                    if ok == 1 and best_i[t, 0] < 0:
                        best_i[t, 0] = s
                    best_i[t, 1] = it
                    best_f[t, 0] = score
                    best_f[t, 1] = rest_dist
                    for i in range(n_qs):
                        best_q[t, i] = q[t, i]
                    for i in range(tasks_i.shape[0]):
                        for k in ti.static(range(6)):
                            best_err[t, i, k] = err[t, 6 * i + k]
                if ok == 1:
                    if exhaustive == 0:
                        ti.atomic_min(done[e], s)
                        break
                if it == max_iters:
                    break
                # a sample that stalls far from the target (a local minimum or a limit) gives way to
                # the next restart instead of spending its remaining iterations
                if exhaustive == 0 and s + 1 < n_samples and it >= STALL_MIN_ITERS and \
                        score > STALL_RATIO * lag2 and score > STALL_NEAR:
                    break
                lag2 = lag1
                lag1 = score
                # A = J J^T + lambda I, lambda shrinking with the error (Levenberg-Marquardt, Sugihara 2011)
                e2 = 0.0
                for a in range(m):
                    e2 += err[t, a] * err[t, a]
                lam = damping * ti.min(e2, 1.0) + 1e-6
                for a in range(m):
                    for b in range(a + 1):
                        v = 0.0
                        for d in range(n):
                            v += J[t, a, d] * J[t, b, d]
                        A[t, a, b] = v
                        A[t, b, a] = v
                    A[t, a, a] += lam
                cholesky_solve(t, A, err, m)
                for d in range(n):
                    v = 0.0
                    for a in range(m):
                        v += J[t, a, d] * err[t, a]
                    dq[t, d] = v
                if rest_weight > 0:
                    rest_pull(t, q, dq, J, A, err, joint_i, dof_active, rest, rest_weight, m)
                big = 0.0
                for d in range(n):
                    big = ti.max(big, ti.abs(dq[t, d]))
                if big > max_step:
                    for d in range(n):
                        dq[t, d] *= max_step / big
                apply_step(t, q, dq, joint_i, q_limits, respect_limits)
            s += K
