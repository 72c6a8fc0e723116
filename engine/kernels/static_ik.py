"""The IK solver of :mod:`engine.kernels.ik`, compiled for one robot and one tuple of task links.

Same algorithm, same arguments minus the global scratch, same outputs and the same rules (samples,
hash-seeded restarts, stall hand-over, active-set limits, posture pull, best kept; see
:mod:`engine.kernels.ik`), so both solvers pick the same winning sample for nearly every env.
What changes is where the work lives. The robot's tree is unrolled from a
:class:`~engine.kernels.spec.RobotSpec` (:func:`~engine.kernels.traced.trace_fk`), and every
per-iteration quantity is a local matrix of compile-time size: the Jacobian ``J`` (m = 6 Lt, n),
the damped system and its Cholesky factor. The system is the smaller of the task-space one,
``dq = J^T (J J^T + lambda I)^-1 e`` (m x m, as in the generic kernel), and the equal dof-space
one, ``dq = (J^T J + lambda I)^-1 J^T e`` (n x n). A dof held at a limit leaves the step (its
Jacobian column is zeroed, as the generic kernel does). On a CPU an iteration runs several times
faster than in the generic kernel, which keeps the same quantities in global memory.

The task links are compile-time too, so FK runs over their lineage only (not, say, the fingers
when the hand is the task) and the Jacobian, the system and its factor span only the dofs that
move them (:meth:`RobotSpec.moving_dofs`): for the Panda's hand, 7 of 9. The other dofs get no
task step; the posture pull, which moves them freely, still applies. A new set of task links
compiles its own solver (seconds, once; then taichi's disk cache).
"""

import taichi as ti

from .. import backend
from .fk import HINGE
from .ik import (
    PI,
    hash_uniform,
    keep_if_better,
    loop_block_dim,
    reset_kept,
    rotation_error,
    sample_over,
    skip_sample,
    task_score,
)
from .launch import fast
from .quat import qrot
from .spec import RobotSpec
from .static_fk import UNROLLED_COMPILE
from .traced import trace_fk

_CACHE: dict = {}


def ik_kernel(spec: RobotSpec, task_links: tuple[int, ...]):
    """The solver for ``spec`` with these task links (local link indices, in task order; cached
    per process)."""
    key = ("ik", spec.key, tuple(task_links), backend.STATE.generation, backend.STATE.precision)
    with backend.LOCK:  # two threads asking at once get one kernel
        if key not in _CACHE:
            _CACHE[key] = fast(_build(spec, tuple(task_links)), UNROLLED_COMPILE, trace_helpers=True)
        return _CACHE[key]


def vector(values):
    """A taichi vector of traced values (constants and expressions); called while tracing."""
    return ti.Vector(list(values))


def _build(spec: RobotSpec, task_links: tuple[int, ...]):
    Lt = len(task_links)
    LINEAGE = spec.lineage(task_links)
    n_qs = max(spec.n_qs, 1)
    n = max(spec.n_dofs, 1)
    m = 6 * Lt
    movable = tuple(j for j in spec.joints if not j.is_mimic)  # the joints the solver moves
    COLS = spec.moving_dofs(task_links)  # the Jacobian's nonzero columns
    NC = max(len(COLS), 1)
    TASK_SPACE = m < NC  # factor J J^T (m x m) rather than J^T J (NC x NC)
    SYSTEM = min(m, NC)
    TASK_JOINTS = tuple(tuple(j for j in spec.joints if spec.ancestor_mask(link) >> j.index & 1)
                        for link in task_links)  # the joints that move each task link

    @ti.func
    def rows(e, qv, targets: ti.template(), task_i: ti.template(), task_f: ti.template(), active,
             J: ti.template(), err: ti.template()):
        """FK of ``qv``, then the masked error ``err`` (m,) and Jacobian ``J`` (m, n) of every task;
        returns (all met, score)."""
        P, Q, AX, AN = trace_fk(spec, [qv[k] for k in ti.static(range(n_qs))], LINEAGE, axes=True)
        ok = 1
        score = 0.0
        pos_tol = task_f[0, 1]
        rot_tol = task_f[0, 2]
        pos_mask = ti.Vector([task_f[0, 5], task_f[0, 6], task_f[0, 7]])
        for i in ti.static(range(Lt)):
            link = ti.static(task_links[i])
            has_pos = task_i[1 + i, 1]
            mode = task_i[1 + i, 2]
            lp = vector(P[link])
            lq = vector(Q[link])
            point = lp + qrot(lq, ti.Vector([task_f[1 + i, 0], task_f[1 + i, 1], task_f[1 + i, 2]]))
            for joint in ti.static(TASK_JOINTS[i]):
                axis = vector(AX[joint.index])
                lin = axis
                ang = ti.Vector([0.0, 0.0, 0.0])
                if ti.static(joint.kind == HINGE):
                    lin = axis.cross(point - vector(AN[joint.index]))
                    ang = axis
                d = ti.static(joint.lead_dof if joint.is_mimic else joint.dof)
                w = ti.static(joint.mult if joint.is_mimic else 1.0)
                for k in ti.static(range(3)):
                    J[6 * i + k, d] += w * lin[k]
                    J[6 * i + 3 + k, d] += w * ang[k]
            ep = ti.Vector([0.0, 0.0, 0.0])
            if has_pos == 1:
                ep = (ti.Vector([targets[e, i, 0], targets[e, i, 1], targets[e, i, 2]]) - point) * pos_mask
            tq = ti.Vector([targets[e, i, 3], targets[e, i, 4], targets[e, i, 5], targets[e, i, 6]])
            er, a = rotation_error(mode, lq, tq)
            if mode >= 0 and mode < 3:
                for d in ti.static(COLS):  # drop the angular rows' component about the free axis
                    wv = ti.Vector([J[6 * i + 3, d], J[6 * i + 4, d], J[6 * i + 5, d]])
                    wv = wv - a * a.dot(wv)
                    for k in ti.static(range(3)):
                        J[6 * i + 3 + k, d] = wv[k]
            rot_on = ti.cast(mode >= 0, float)
            for d in ti.static(COLS):
                for k in ti.static(range(3)):
                    J[6 * i + k, d] *= pos_mask[k] * has_pos * active[d]
                    J[6 * i + 3 + k, d] *= rot_on * active[d]
            for k in ti.static(range(3)):
                err[6 * i + k] = ep[k]
                err[6 * i + 3 + k] = er[k]
            met, task = task_score(ep, er, pos_tol, rot_tol)
            ok = ok * met
            score += task
        return ok, score

    @ti.func
    def factor(A, lam, Lc: ti.template()):
        """Lower Cholesky factor of A + lam I into Lc (both k x k), its diagonal stored as reciprocals
        (substitution then multiplies: no divisions on its dependency chain)."""
        k_dim = ti.static(A.n)
        for j in ti.static(range(k_dim)):
            s = A[j, j] + lam
            for k in ti.static(range(j)):
                s -= Lc[j, k] * Lc[j, k]
            inv = ti.rsqrt(ti.max(s, 1e-12))
            Lc[j, j] = inv
            for i in ti.static(range(j + 1, k_dim)):
                v = A[i, j]
                for k in ti.static(range(j)):
                    v -= Lc[i, k] * Lc[j, k]
                Lc[i, j] = v * inv

    @ti.func
    def substitute(Lc, x):
        """(Lc Lc^T)^-1 x for a factor from :func:`factor` (reciprocal diagonal)."""
        k_dim = ti.static(Lc.n)
        y = x
        for i in ti.static(range(k_dim)):
            v = y[i]
            for k in ti.static(range(i)):
                v -= Lc[i, k] * y[k]
            y[i] = v * Lc[i, i]
        for ii in ti.static(range(k_dim)):
            i = ti.static(k_dim - 1 - ii)
            v = y[i]
            for k in ti.static(range(i + 1, k_dim)):
                v -= Lc[k, i] * y[k]
            y[i] = v * Lc[i, i]
        return y

    @ti.func
    def times(J, x):
        """J x: (m,)."""
        out = ti.Vector([0.0] * m)
        for r in ti.static(range(m)):
            v = 0.0
            for d in ti.static(COLS):
                v += J[r, d] * x[d]
            out[r] = v
        return out

    @ti.func
    def times_transposed(J, y):
        """J^T y: (n,), zero outside COLS."""
        out = ti.Vector([0.0] * n)
        for d in ti.static(COLS):
            v = 0.0
            for r in ti.static(range(m)):
                v += J[r, d] * y[r]
            out[d] = v
        return out

    @ti.func
    def gather(x):
        """The COLS entries of an (n,) vector: (NC,)."""
        return ti.Vector([x[d] for d in ti.static(COLS)])

    @ti.func
    def scatter(y):
        """An (n,) vector holding the (NC,) vector y at COLS, zero elsewhere."""
        out = ti.Vector([0.0] * n)
        for c in ti.static(range(NC)):
            out[COLS[c]] = y[c]
        return out

    @ti.func
    def damped_solve(J, err, lam, Lc: ti.template()):
        """dq = (J^T J + lam I)^-1 J^T err over the COLS dofs (zero elsewhere), factoring the
        smaller of the task-space (m) and dof-space (NC) systems into Lc. Dofs held out of the
        step come as zero columns of J."""
        dq = ti.Vector([0.0] * n)
        if ti.static(TASK_SPACE):  # dq = J^T (J J^T + lam I)^-1 err
            A = ti.Matrix.zero(float, m, m)
            for a in ti.static(range(m)):
                for b in ti.static(range(a + 1)):
                    w = 0.0
                    for d in ti.static(COLS):
                        w += J[a, d] * J[b, d]
                    A[a, b] = w
                    A[b, a] = w
            factor(A, lam, Lc)
            dq = times_transposed(J, substitute(Lc, err))
        else:
            A = ti.Matrix.zero(float, NC, NC)
            for a in ti.static(range(NC)):
                for b in ti.static(range(a + 1)):
                    w = 0.0
                    for r in ti.static(range(m)):
                        w += J[r, COLS[a]] * J[r, COLS[b]]
                    A[a, b] = w
                    A[b, a] = w
            factor(A, lam, Lc)
            dq = scatter(substitute(Lc, gather(times_transposed(J, err))))
        return dq

    @ti.func
    def null_space(J, Lc, z):
        """z minus its part that moves the tasks: z - (J^T J + lam I)^-1 J^T J z, with the factor
        ``Lc`` of :func:`damped_solve` for the same J (entries outside COLS move no task: kept)."""
        moved = times(J, z)
        out = z
        if ti.static(TASK_SPACE):
            out = z - times_transposed(J, substitute(Lc, moved))
        else:
            out = z - scatter(substitute(Lc, gather(times_transposed(J, moved))))
        return out

    @ti.func
    def outward(qv, step, respect_limits):
        """1 for each dof resting on a joint limit whose ``step`` points outward (limits on)."""
        blocked = ti.Vector([0.0] * n)
        if respect_limits == 1:
            for joint in ti.static(movable):
                if ti.static(joint.bounded):
                    v = qv[joint.q]
                    tol = 1e-5 * (1.0 + ti.abs(v))
                    d = ti.static(joint.dof)
                    if (v <= joint.lower + tol and step[d] < 0) or (v >= joint.upper - tol and step[d] > 0):
                        blocked[d] = 1.0
        return blocked

    @ti.func
    def step(qv, J, err, task_i: ti.template(), task_f: ti.template(), active, it):
        """One damped Gauss-Newton step with the active set and the posture pull; returns new qv."""
        e2 = err.dot(err)
        lam = task_f[0, 0] * ti.min(e2, 1.0) + 1e-6
        respect_limits = task_i[0, 4]
        Lc = ti.Matrix.zero(float, SYSTEM, SYSTEM)
        dq = damped_solve(J, err, lam, Lc)
        Jk = J  # the Jacobian of the last solve: dofs held at a limit get zero columns
        blocked = outward(qv, dq, respect_limits)
        if blocked.sum() > 0:
            for d in ti.static(COLS):
                for r in ti.static(range(m)):
                    Jk[r, d] *= 1.0 - blocked[d]
            dq = damped_solve(Jk, err, lam, Lc)
            dq *= 1.0 - outward(qv, dq, respect_limits)
        max_step = task_f[0, 3]
        big = ti.abs(dq).max()
        if big > max_step:
            dq *= max_step / big
            big = max_step
        weight = task_f[0, 4]
        if weight > 0 and big < max_step:
            z = ti.Vector([0.0] * n)
            for joint in ti.static(movable):
                z[joint.dof] = weight * (task_f[1 + Lt + joint.q, 0] - qv[joint.q]) * active[joint.dof]
            z = null_space(Jk, Lc, z)
            z *= 1.0 - outward(qv, z, respect_limits)
            pull = ti.abs(z).max()
            left = 1.0 - ti.cast(it + 1, float) / ti.cast(task_i[0, 0], float)
            budget = (max_step - big) * left * left
            if pull > budget:
                z *= budget / pull
            dq += z
        out = qv
        for joint in ti.static(movable):
            v = qv[joint.q] + dq[joint.dof]
            if ti.static(joint.bounded):
                if respect_limits == 1:
                    v = ti.min(ti.max(v, joint.lower), joint.upper)
            out[joint.q] = v
        return out

    @ti.func
    def initial(e, s, q0: ti.template(), seed, active):
        qv = ti.Vector([q0[e, i] for i in ti.static(range(n_qs))])
        if s > 0:
            for joint in ti.static(movable):
                if active[joint.dof] > 0:
                    u = hash_uniform(seed, e, s, joint.q)
                    if ti.static(joint.bounded):
                        qv[joint.q] = joint.lower + u * (joint.upper - joint.lower)
                    elif ti.static(joint.kind == HINGE):
                        qv[joint.q] = -PI + 2.0 * PI * u
        return qv

    @ti.kernel
    def solve(q0: ti.types.ndarray(), task_i: ti.types.ndarray(), task_f: ti.types.ndarray(),
              targets: ti.types.ndarray(), best_q: ti.types.ndarray(), best_err: ti.types.ndarray(),
              best_i: ti.types.ndarray(), done: ti.types.ndarray(), serial: ti.template()):
        B = q0.shape[0]
        max_iters = task_i[0, 0]
        n_samples = task_i[0, 1]
        K = task_i[0, 2]
        seed = task_i[0, 3]
        exhaustive = task_i[0, 5]
        rest_weight = task_f[0, 4]
        active = ti.Vector([ti.cast(task_i[1 + Lt + d, 0], float) for d in ti.static(range(n))])
        ti.loop_config(block_dim=ti.static(loop_block_dim()), serialize=serial)
        for t in range(B * K):
            e = t % B
            reset_kept(t, best_q, best_i, n_qs)
            s = t // B
            while s < n_samples:
                if skip_sample(t, e, s, exhaustive, best_i, done):
                    break
                best_i[t, 2] += 1
                qv = initial(e, s, q0, seed, active)
                lag1 = 1e30
                lag2 = 1e30
                for it in range(max_iters + 1):
                    J = ti.Matrix.zero(float, m, n)
                    err = ti.Vector([0.0] * m)
                    ok, score = rows(e, qv, targets, task_i, task_f, active, J, err)
                    rest_dist = 0.0
                    if rest_weight > 0:
                        for i in ti.static(range(spec.n_qs)):
                            rest_dist += (qv[i] - task_f[1 + Lt + i, 0]) ** 2
                    if keep_if_better(t, s, it, ok, score, rest_dist, exhaustive, best_q, best_i, n_qs):
                        for i in ti.static(range(n_qs)):
                            best_q[t, i] = qv[i]
                        for i in ti.static(range(Lt)):
                            for k in ti.static(range(6)):
                                best_err[t, i, k] = err[6 * i + k]
                    if sample_over(e, s, it, ok, score, lag2, exhaustive, n_samples, max_iters, done):
                        break
                    lag2 = lag1
                    lag1 = score
                    qv = step(qv, J, err, task_i, task_f, active, it)
                s += K

    return solve
