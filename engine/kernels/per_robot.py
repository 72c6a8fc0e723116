"""The per-robot IK solver: :mod:`engine.kernels.solver`'s algorithm compiled for one robot and
one task structure.

Same algorithm, arguments (minus the global scratch) and outputs; what changes is where the work
lives (the *form*): the tree is unrolled from a :class:`~engine.kernels.spec.RobotSpec`
(:func:`~engine.kernels.traced.trace_fk`), and every per-iteration quantity is a local matrix of
compile-time size in the thread's state ``S = (qv, J, err, Lc, dq, z)``: the iterate, the Jacobian
(m = 6 Lt, n), the error (m,), the damped system's Cholesky factor, the step and the posture pull.
The system is the smaller of ``(J J^T + lambda I)`` (m x m, as in the generic kernel) and the equal
``(J^T J + lambda I)`` (n x n). On a CPU an iteration runs several times faster than the generic one.

The task structure (each task's kind, link and reference link) is compile-time too, so FK runs
over the lineage of the links the tasks use only, and the Jacobian, the system and its factor span
only the dofs that move them (:meth:`RobotSpec.moving_dofs`): for the Panda's hand, 7 of 9. The
other dofs get no task step; the posture pull, which moves them freely, still applies. A new task
structure compiles its own solver (seconds, once; then taichi's disk cache)."""

from collections import namedtuple

import taichi as ti

from ..runtime.launch import CompiledCache, fast
from ..runtime.span import block_dim, thread_span
from . import kinds
from .avoid import link_ball
from .fk import HINGE
from .kinds import kind_of
from .per_robot_fk import UNROLLED_COMPILE
from .quat import qrot, square
from .solver import STEP, loop_block_dim, run_thread, start_value
from .spec import RobotSpec
from .tables import AVOID_HEAD, COLLIDE, DOF_I, QPOS_REST_F, SOLVE_I, TASK_F, box_col, dof_row, rest_row, task_row
from .traced import trace_fk, vector

_CACHE = CompiledCache()
# the dof mask (n,), this iteration's traced FK (P, Q, AX, AN), with a COLLIDE task every link's pose
# (L, 7) indexable at run time (else None), the collision tables (coll_i, coll_f, shape_pose), and the
# start configurations q0 (with a box on the dofs, its bounds after them: engine.kernels.tables.box_col)
Ctx = namedtuple("Ctx", "active fk lp coll q0 boxed")


def ik_kernel(spec: RobotSpec, structure: tuple[tuple[int, int, int], ...]):
    """The solver for ``spec`` with this task structure, one ``(kind, link, ref)`` per task
    (:data:`engine.kernels.tables.FRAME` / ``COM``, local link indices, -1 for none); cached per
    process. Its argument ``boxed`` (an int, read at run time): 1 where the dofs' bounds are a box
    per env after the starts in ``q0`` (a limit of :mod:`engine.ik.limits` other than the joint
    limits), else 0: placing and tracking share one compile (~2 s cold on 2 cores). Its last,
    ``offset``: the launch's first thread on a software Vulkan device (:mod:`engine.runtime.span`), else 0."""
    structure = tuple(structure)
    return _CACHE.get((spec.key, structure), lambda: fast(_build(spec, structure), UNROLLED_COMPILE,
                                                          trace_helpers=True))


def used_links(spec: RobotSpec, structure) -> tuple[int, ...]:
    """The links the solver moves the dofs of (:func:`engine.kernels.kinds.used_links` on the spec)."""
    return kinds.used_links(structure, spec.massive_links, spec.n_links)


def _build(spec: RobotSpec, structure):
    Lt = len(structure)
    LINKS = used_links(spec, structure)
    COLLIDES = any(kind == COLLIDE for kind, _, _ in structure)
    LINEAGE = tuple(range(spec.n_links)) if COLLIDES else spec.lineage(LINKS)  # avoidance reads every link
    n_qs = max(spec.n_qs, 1)
    n = max(spec.n_dofs, 1)
    m = 6 * Lt
    movable = tuple(j for j in spec.joints if not j.is_mimic)  # the joints the solver moves
    COLS = spec.moving_dofs(LINKS)  # the Jacobian's nonzero columns
    NC = max(len(COLS), 1)
    TASK_SPACE = m < NC  # factor J J^T (m x m) rather than J^T J (NC x NC)
    SYSTEM = min(m, NC)
    MOVERS = {l: tuple(j for j in spec.joints if spec.ancestor_mask(l) >> j.index & 1) for l in LINKS}
    MASSIVE = spec.massive_links
    TOTAL_MASS = max(spec.total_mass, 1e-30)

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
    def bounds(ctx: ti.template(), t, q: ti.template(), lower, upper):
        """Qpos entry ``q``'s bounds in thread ``t``: its joint's ``lower`` / ``upper``, or with
        ``boxed`` the box of the thread's env."""
        lo, hi = lower, upper
        if ctx.boxed:
            e = t % ctx.q0.shape[0]
            lo, hi = ctx.q0[e, box_col(n_qs, 0, q)], ctx.q0[e, box_col(n_qs, 1, q)]
        return lo, hi

    @ti.func
    def outward(ctx: ti.template(), t, qv, move, respect_limits):
        """1 for each dof resting on a joint limit (or its box) whose ``move`` points outward (limits on)."""
        blocked = ti.Vector([0.0] * n)
        if respect_limits == 1:
            for joint in ti.static(movable):
                if ti.static(joint.bounded) or ctx.boxed:  # an unbounded joint (+-1e30) only in a box
                    v = qv[joint.q]
                    tol = 1e-5 * (1.0 + ti.abs(v))
                    d = ti.static(joint.dof)
                    lo, hi = bounds(ctx, t, joint.q, joint.lower, joint.upper)
                    if (v <= lo + tol and move[d] < 0) or (v >= hi - tol and move[d] > 0):
                        blocked[d] = 1.0
        return blocked

    @ti.func
    def add_columns(S: ti.template(), fk: ti.template(), l: ti.template(), point, r0, scale):
        """Adds ``scale`` times the Jacobian of the world ``point`` fixed to link ``l`` to rows r0..r0+5."""
        AX, AN = fk[2], fk[3]
        for joint in ti.static(MOVERS[l]):
            axis = vector(AX[joint.index])
            lin = axis
            ang = ti.Vector([0.0, 0.0, 0.0])
            if ti.static(joint.kind == HINGE):
                lin = axis.cross(point - vector(AN[joint.index]))
                ang = axis
            d = ti.static(joint.lead_dof if joint.is_mimic else joint.dof)
            w = ti.static(joint.mult if joint.is_mimic else 1.0)
            for k in ti.static(range(3)):
                S[1][r0 + k, d] += scale * w * lin[k]
                S[1][r0 + 3 + k, d] += scale * w * ang[k]

    @ti.func
    def ancestors(link):
        """The ancestor mask of a link given at run time (:meth:`RobotSpec.ancestor_mask`)."""
        masks = ti.static(spec.ancestor_masks)  # (``mask = ti.static(..)`` below would bind a new
        mask = 0  # compile-time name local to the branch and return 0: no row would move a dof)
        for l in ti.static(range(spec.n_links)):
            if link == l:
                mask = masks[l]
        return mask

    def at(ctx, P, Q, AX, AN, lp):
        """``ctx`` with this iteration's FK (called while tracing, inline in a call's arguments: taichi
        would turn a tuple holding arrays into a local variable if it were assigned)."""
        return ctx._replace(fk=(P, Q, AX, AN), lp=lp)

    def traced_fk(qs):
        """The iterate's FK traced (P, Q, AX, AN), and with a COLLIDE task every link's pose as an
        (L, 7) matrix for reads at a run-time link index (else None); called while tracing, like
        :func:`vector`, so that the poses are taken as trace_fk makes them."""
        raw = {}
        P, Q, AX, AN = trace_fk(spec, qs, LINEAGE, axes=True, on_link=lambda l, p, r: raw.__setitem__(l, (p, r)))
        lp = None
        if COLLIDES:
            lp = ti.Matrix([[*raw[l][0], *raw[l][1]] for l in range(spec.n_links)])
        return P, Q, AX, AN, lp

    @ti.func
    def link_com(fk: ti.template(), l: ti.template()):
        return vector(fk[0][l]) + qrot(vector(fk[1][l]), ti.Vector(list(spec.links[l].com)))

    class PerRobot:
        """The hooks of the per-robot form (see :mod:`engine.kernels.solver`)."""

        STATIC_ROWS = True  # rows index the local Jacobian: compile-time

        @staticmethod
        @ti.func
        def new_state(ctx: ti.template()):
            return (ti.Vector([0.0] * n_qs), ti.Matrix.zero(float, m, n), ti.Vector([0.0] * m),
                    ti.Matrix.zero(float, SYSTEM, SYSTEM), ti.Vector([0.0] * n), ti.Vector([0.0] * n))

        @staticmethod
        @ti.func
        def start(ctx: ti.template(), S: ti.template(), t, e, s, q0: ti.template(), task_i: ti.template(), seed):
            for i in ti.static(range(n_qs)):
                S[0][i] = q0[e, i]
            if s > 0:
                for joint in ti.static(movable):
                    if ctx.active[joint.dof] > 0:
                        lo, hi = bounds(ctx, t, joint.q, joint.lower, joint.upper)
                        S[0][joint.q] = start_value(seed, e, s, joint.q, lo, hi, joint.kind == HINGE, S[0][joint.q])

        @staticmethod
        @ti.func
        def rows(ctx: ti.template(), S: ti.template(), t, e, task_i: ti.template(), task_f: ti.template(),
                 targets: ti.template()):
            P, Q, AX, AN, lp = traced_fk([S[0][k] for k in ti.static(range(n_qs))])
            plain = task_i[0, SOLVE_I.plain]
            ok = 1
            score = 0.0
            for i in ti.static(range(Lt)):
                code, link, ref = ti.static(structure[i])
                met, task = kind_of(code).rows(PerRobot, at(ctx, P, Q, AX, AN, lp), S, t, e, i, link, ref, plain,
                                               task_i, task_f, targets)
                ok = ok * met
                score += task
            return ok, score

        @staticmethod
        @ti.func
        def link_pose(ctx: ti.template(), S: ti.template(), t, link: ti.template()):
            return vector(ctx.fk[0][link]), vector(ctx.fk[1][link])

        @staticmethod
        @ti.func
        def link_pose_at(ctx: ti.template(), S: ti.template(), t, link):
            return (ti.Vector([ctx.lp[link, k] for k in ti.static(range(3))]),
                    ti.Vector([ctx.lp[link, 3 + k] for k in ti.static(range(4))]))

        @staticmethod
        @ti.func
        def link_balls(ctx: ti.template(), S: ti.template(), t):
            """Every link's bounding ball (L, 4: world centre, radius) at the iterate, computed once."""
            out = ti.Matrix.zero(float, spec.n_links, 4)
            n_spheres = ctx.coll[0][0, AVOID_HEAD.n_spheres]
            for l in ti.static(range(spec.n_links)):
                c, r = link_ball(vector(ctx.fk[0][l]), vector(ctx.fk[1][l]), ctx.coll[1], n_spheres, l)
                for k in ti.static(range(3)):
                    out[l, k] = c[k]
                out[l, 3] = r
            return out

        @staticmethod
        @ti.func
        def link_ball(ctx: ti.template(), S: ti.template(), t, balls: ti.template(), link):
            return ti.Vector([balls[link, k] for k in ti.static(range(3))]), balls[link, 3]

        @staticmethod
        @ti.func
        def add_distance_row(ctx: ti.template(), S: ti.template(), t, r: ti.template(), link, point, direction,
                             scale):
            """Row r += ``scale`` times the rate of the world ``point`` fixed to ``link`` (a run-time
            index) along ``direction``, over the dofs the step spans."""
            AX, AN = ctx.fk[2], ctx.fk[3]
            mask = ancestors(link)
            for joint in ti.static(spec.joints):
                d = ti.static(joint.lead_dof if joint.is_mimic else joint.dof)
                if ti.static(d in COLS):
                    if (mask >> joint.index) & 1:
                        axis = vector(AX[joint.index])
                        lin = axis
                        if ti.static(joint.kind == HINGE):
                            lin = axis.cross(point - vector(AN[joint.index]))
                        S[1][r, d] += ti.static(joint.mult if joint.is_mimic else 1.0) * scale * direction.dot(lin)

        @staticmethod
        @ti.func
        def zero_rows(ctx: ti.template(), S: ti.template(), t, r0: ti.template()):
            for k in ti.static(range(6)):
                for d in ti.static(COLS):
                    S[1][r0 + k, d] = 0.0

        @staticmethod
        @ti.func
        def set_jacobian(ctx: ti.template(), S: ti.template(), t, link: ti.template(), point, r0: ti.template()):
            PerRobot.zero_rows(ctx, S, t, r0)
            add_columns(S, ctx.fk, link, point, r0, 1.0)

        @staticmethod
        @ti.func
        def add_jacobian(ctx: ti.template(), S: ti.template(), t, link: ti.template(), point, r0: ti.template(),
                         scale: ti.template()):
            add_columns(S, ctx.fk, link, point, r0, scale)

        @staticmethod
        @ti.func
        def com(ctx: ti.template(), S: ti.template(), t):
            total = ti.Vector([0.0, 0.0, 0.0])
            for l in ti.static(MASSIVE):
                total += ti.static(spec.links[l].mass / TOTAL_MASS) * link_com(ctx.fk, l)
            return total

        @staticmethod
        @ti.func
        def add_com_jacobian(ctx: ti.template(), S: ti.template(), t, r0: ti.template()):
            for l in ti.static(MASSIVE):
                add_columns(S, ctx.fk, l, link_com(ctx.fk, l), r0, ti.static(spec.links[l].mass / TOTAL_MASS))

        @staticmethod
        @ti.func
        def transform_rows(ctx: ti.template(), S: ti.template(), t, r0: ti.template(), relative: ti.template(),
                           inv, axis, lin_scale, ang_scale):
            for d in ti.static(COLS):
                lin = ti.Vector([S[1][r0 + k, d] for k in ti.static(range(3))])
                ang = ti.Vector([S[1][r0 + 3 + k, d] for k in ti.static(range(3))])
                ang = ang - axis * axis.dot(ang)
                if ti.static(relative):
                    lin = qrot(inv, lin)
                    ang = qrot(inv, ang)
                for k in ti.static(range(3)):
                    S[1][r0 + k, d] = lin[k] * lin_scale[k] * ctx.active[d]
                    S[1][r0 + 3 + k, d] = ang[k] * ang_scale * ctx.active[d]

        @staticmethod
        @ti.func
        def mix_rows(ctx: ti.template(), S: ti.template(), t, r0: ti.template(), Gv, Gw):
            for d in ti.static(COLS):
                lin = ti.Vector([S[1][r0 + k, d] for k in ti.static(range(3))])
                ang = ti.Vector([S[1][r0 + 3 + k, d] for k in ti.static(range(3))])
                mixed = (Gv @ lin + Gw @ ang) * ctx.active[d]
                for k in ti.static(range(3)):
                    S[1][r0 + k, d] = 0.0
                    S[1][r0 + 3 + k, d] = mixed[k]

        @staticmethod
        @ti.func
        def set_error(ctx: ti.template(), S: ti.template(), t, r0: ti.template(), ep, er):
            for k in ti.static(range(3)):
                S[2][r0 + k] = ep[k]
                S[2][r0 + 3 + k] = er[k]

        @staticmethod
        @ti.func
        def distance(ctx: ti.template(), S: ti.template(), t, e, task_f: ti.template(), start: ti.template()):
            out = 0.0
            for i in ti.static(range(spec.n_qs)):
                if ti.static(start):
                    out += task_f[rest_row(Lt, i), QPOS_REST_F.span] * square(S[0][i] - ctx.q0[e, i])
                else:
                    out += square(S[0][i] - task_f[rest_row(Lt, i), QPOS_REST_F.rest])
            return out

        @staticmethod
        @ti.func
        def keep(ctx: ti.template(), S: ti.template(), t, best_q: ti.template(), best_err: ti.template(),
                 task_f: ti.template()):
            for i in ti.static(range(n_qs)):
                best_q[t, i] = S[0][i]
            for i in ti.static(range(Lt)):
                unweight = 1.0 / task_f[task_row(i), TASK_F.weight]
                for k in ti.static(range(6)):
                    best_err[t, i, k] = S[2][6 * i + k] * unweight

        @staticmethod
        @ti.func
        def error_sq(ctx: ti.template(), S: ti.template(), t):
            return S[2].dot(S[2])

        @staticmethod
        @ti.func
        def direction(ctx: ti.template(), S: ti.template(), t, lam):
            """dq = (J^T J + lam I)^-1 J^T err over the COLS dofs (zero elsewhere), factoring the
            smaller of the task-space (m) and dof-space (NC) systems into Lc. Dofs held out of the
            step come as zero columns of J."""
            J = S[1]
            if ti.static(TASK_SPACE):  # dq = J^T (J J^T + lam I)^-1 err
                A = ti.Matrix.zero(float, m, m)
                for a in ti.static(range(m)):
                    for b in ti.static(range(a + 1)):
                        w = 0.0
                        for d in ti.static(COLS):
                            w += J[a, d] * J[b, d]
                        A[a, b] = w
                        A[b, a] = w
                factor(A, lam, S[3])
                S[4] = times_transposed(J, substitute(S[3], S[2]))
            else:
                A = ti.Matrix.zero(float, NC, NC)
                for a in ti.static(range(NC)):
                    for b in ti.static(range(a + 1)):
                        w = 0.0
                        for r in ti.static(range(m)):
                            w += J[r, COLS[a]] * J[r, COLS[b]]
                        A[a, b] = w
                        A[b, a] = w
                factor(A, lam, S[3])
                S[4] = scatter(substitute(S[3], gather(times_transposed(J, S[2]))))

        @staticmethod
        @ti.func
        def block(ctx: ti.template(), S: ti.template(), t, which: ti.template(), zero_columns):
            k = ti.static(4 if which == STEP else 5)
            move = S[k]
            if ti.static(which == STEP):  # (zero_columns is read at run time: one copy serves both passes)
                if zero_columns == 1 and ctx.boxed:  # a box: by the gradient (ik.Generic.block)
                    move = times_transposed(S[1], S[2])
            blocked = outward(ctx, t, S[0], move, 1)
            S[k] *= 1.0 - blocked
            if ti.static(which == STEP):
                if zero_columns == 1:
                    for d in ti.static(COLS):
                        for r in ti.static(range(m)):
                            S[1][r, d] *= 1.0 - blocked[d]
            return blocked.sum()

        @staticmethod
        @ti.func
        def largest(ctx: ti.template(), S: ti.template(), t, which: ti.template()):
            return ti.abs(S[ti.static(4 if which == STEP else 5)]).max()

        @staticmethod
        @ti.func
        def scale(ctx: ti.template(), S: ti.template(), t, which: ti.template(), factor_):
            S[ti.static(4 if which == STEP else 5)] *= factor_

        @staticmethod
        @ti.func
        def posture(ctx: ti.template(), S: ti.template(), t, weight, task_i: ti.template(), task_f: ti.template()):
            """z minus its part that moves the tasks: z - (J^T J + lam I)^-1 J^T J z, with the factor
            of the last direction (entries outside COLS move no task: kept)."""
            z = ti.Vector([0.0] * n)
            for joint in ti.static(movable):
                z[joint.dof] = weight * (task_f[rest_row(Lt, joint.q), QPOS_REST_F.rest] - S[0][joint.q]) * \
                    ctx.active[joint.dof]
            moved = times(S[1], z)
            if ti.static(TASK_SPACE):
                S[5] = z - times_transposed(S[1], substitute(S[3], moved))
            else:
                S[5] = z - scatter(substitute(S[3], gather(times_transposed(S[1], moved))))

        @staticmethod
        @ti.func
        def add_pull(ctx: ti.template(), S: ti.template(), t, factor_):
            S[4] += factor_ * S[5]

        @staticmethod
        @ti.func
        def apply(ctx: ti.template(), S: ti.template(), t, respect_limits):
            for joint in ti.static(movable):  # a dof the solver does not move has a zero step
                v = S[0][joint.q] + S[4][joint.dof]
                if ti.static(joint.bounded) or ctx.boxed:
                    if respect_limits == 1:
                        lo, hi = bounds(ctx, t, joint.q, joint.lower, joint.upper)
                        v = ti.min(ti.max(v, lo), hi)
                S[0][joint.q] = v

    @ti.kernel
    def solve(q0: ti.types.ndarray(), task_i: ti.types.ndarray(), task_f: ti.types.ndarray(),
              targets: ti.types.ndarray(), best_q: ti.types.ndarray(), best_err: ti.types.ndarray(),
              best_i: ti.types.ndarray(), done: ti.types.ndarray(), coll_i: ti.types.ndarray(),
              coll_f: ti.types.ndarray(), shape_pose: ti.types.ndarray(), serial: ti.template(), boxed: ti.i32,
              offset: ti.i32):
        B = q0.shape[0]
        K = task_i[0, SOLVE_I.slots]
        active = ti.Vector([ti.cast(task_i[dof_row(Lt, d), DOF_I.active], float) for d in ti.static(range(n))])
        ti.loop_config(block_dim=ti.static(block_dim(loop_block_dim())), serialize=serial)
        for i in range(ti.static(thread_span()) if ti.static(thread_span() > 0) else B * K):
            t = offset + i
            if t < B * K:
                run_thread(PerRobot, Ctx(active, None, None, (coll_i, coll_f, shape_pose), q0, boxed), t, B, n_qs,
                           q0, task_i, task_f, targets, best_q, best_err, best_i, done, None)

    return solve
