"""The generic IK solver: :mod:`engine.kernels.solver`'s algorithm with the robot read from arrays.

One compiled kernel serves every robot and every task structure: the tree comes from
``robot_i`` / ``robot_f`` (:mod:`engine.kernels.tables`), the tasks from ``task_i`` / ``task_f``,
and the working set lives in global scratch arrays, one row per thread (T = B x K threads, Lt
tasks, m = 6 Lt rows, n dofs):

- ``q`` (T, n_qs): the iterate; ``pose`` (T, L + J, 7): its link poses and joint frames;
- ``J`` (T, m, n): the task rows; ``A`` (T, m, m): ``J J^T + lambda I``, then its Cholesky factor;
- ``vec`` (T, 2m + 2n): the error / solve vector (0..m), dq (m..m+n), a copy of the error
  (m+n..2m+n), the posture pull (2m+n..2m+2n).

This module is the form's hooks (see :mod:`engine.kernels.solver`) and the kernel.
"""

from collections import namedtuple

import taichi as ti

from ..runtime.launch import fast
from ..runtime.span import block_dim, thread_span
from ..runtime.state import STATE
from .avoid import link_ball
from .fk import BALL, FREE, HINGE, SLIDE, add_point_jacobian, fk_row, jacobian_row, link_com, vec3, vec4, zero_rows
from .kinds import KINDS
from .quat import qexp, qmul, qnormalize, qrot, square
from .solver import BIG, STEP, loop_block_dim, run_thread, start_value
from .tables import (
    AVOID_HEAD,
    COLLIDE,
    DOF_I,
    JOINT_I,
    LINK_F,
    POSE,
    QPOS_F,
    QPOS_REST_F,
    ROBOT_HEAD,
    SOLVE_I,
    TASK_F,
    TASK_I,
    box_col,
    dof_row,
    joint_row_i,
    qpos_row_f,
    rest_row,
    task_row,
)

__all__ = ["BIG", "solve"]

# coll: (coll_i, coll_f, shape_pose); kinds: the on-demand task kinds the kernel holds (a bitmask); boxed:
# 1 where the dofs' bounds are a box per env in ``q0`` (engine.ik.limits), 0: the joint limits (read at run time)
Ctx = namedtuple("Ctx", "robot_i robot_f task_i q pose J A vec m n Lt coll kinds boxed q0")


@ti.func
def free_scalar(ctx: ti.template(), task_i: ti.template(), j):
    """(whether joint j is a 1-dof, non-mimic joint whose dof the solver may move, its qpos
    index, its dof index)."""
    L = ctx.robot_i[0, ROBOT_HEAD.n_links]
    jr = joint_row_i(L, j)
    kind = ctx.robot_i[jr, JOINT_I.kind]
    d = ctx.robot_i[jr, JOINT_I.dof]
    free = (kind == HINGE or kind == SLIDE) and ctx.robot_i[jr, JOINT_I.lead_q] < 0
    if free:
        free = task_i[dof_row(ctx.Lt, d), DOF_I.active] == 1
    return free, ctx.robot_i[jr, JOINT_I.q], d


@ti.func
def limits_of(ctx: ti.template(), q):
    row = qpos_row_f(ctx.robot_i[0, ROBOT_HEAD.n_links], ctx.robot_i[0, ROBOT_HEAD.n_joints], q)
    return ctx.robot_f[row, QPOS_F.lower], ctx.robot_f[row, QPOS_F.upper]


@ti.func
def bounds_of(ctx: ti.template(), t, q):
    """The bounds of qpos entry ``q`` for thread ``t``: the joint limits, or with ``ctx.boxed`` the
    box of the thread's env (:func:`engine.kernels.tables.box_col`)."""
    lo, hi = limits_of(ctx, q)
    if ctx.boxed:
        e = t % ctx.q0.shape[0]
        lo = ctx.q0[e, box_col(ctx.q.shape[1], 0, q)]
        hi = ctx.q0[e, box_col(ctx.q.shape[1], 1, q)]
    return lo, hi


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


class Generic:
    """The hooks of the generic form (``S`` is unused: every quantity is in ``ctx``'s arrays)."""

    STATIC_ROWS = False  # row indices are run-time values (the COLLIDE task loops over its rows)

    @staticmethod
    @ti.func
    def new_state(ctx: ti.template()):
        return (0,)

    @staticmethod
    @ti.func
    def start(ctx: ti.template(), S: ti.template(), t, e, s, q0: ti.template(), task_i: ti.template(), seed):
        for i in range(ctx.q.shape[1]):
            ctx.q[t, i] = q0[e, i]
        if s > 0:
            for j in range(ctx.robot_i[0, ROBOT_HEAD.n_joints]):
                free, qs, d = free_scalar(ctx, task_i, j)
                if free:
                    lo, hi = bounds_of(ctx, t, qs)
                    kind = ctx.robot_i[joint_row_i(ctx.robot_i[0, ROBOT_HEAD.n_links], j), JOINT_I.kind]
                    ctx.q[t, qs] = start_value(seed, e, s, qs, lo, hi, kind == HINGE, ctx.q[t, qs])

    @staticmethod
    @ti.func
    def rows(ctx: ti.template(), S: ti.template(), t, e, task_i: ti.template(), task_f: ti.template(),
             targets: ti.template()):
        fk_row(t, ctx.q, ctx.robot_i, ctx.robot_f, ctx.pose)
        plain = task_i[0, SOLVE_I.plain]
        ok = 1
        score = 0.0
        for i in range(ctx.Lt):
            row = task_row(i)
            met = 1
            task = 0.0
            code = task_i[row, TASK_I.kind]
            link = task_i[row, TASK_I.link]
            ref = task_i[row, TASK_I.ref]
            for kind in ti.static(KINDS):  # the rows of the task's kind (on-demand kinds: only when asked)
                if ti.static(not kind.on_demand or (ctx.kinds >> kind.code) & 1):
                    if code == kind.code:
                        met, task = kind.rows(Generic, ctx, S, t, e, i, link, ref, plain, task_i, task_f, targets)
            ok = ok * met
            score += task
        return ok, score

    @staticmethod
    @ti.func
    def link_pose(ctx: ti.template(), S: ti.template(), t, link):
        return vec3(ctx.pose, t, link, POSE.pos), vec4(ctx.pose, t, link, POSE.quat)

    @staticmethod
    @ti.func
    def link_pose_at(ctx: ti.template(), S: ti.template(), t, link):
        return vec3(ctx.pose, t, link, POSE.pos), vec4(ctx.pose, t, link, POSE.quat)

    @staticmethod
    @ti.func
    def link_balls(ctx: ti.template(), S: ti.template(), t):
        return ti.Vector([0.0])  # none kept: link_ball computes each when asked

    @staticmethod
    @ti.func
    def link_ball(ctx: ti.template(), S: ti.template(), t, balls: ti.template(), link):
        p, q = Generic.link_pose_at(ctx, S, t, link)
        return link_ball(p, q, ctx.coll[1], ctx.coll[0][0, AVOID_HEAD.n_spheres], link)

    @staticmethod
    @ti.func
    def add_distance_row(ctx: ti.template(), S: ti.template(), t, r, link, point, direction, scale):
        """Row r += ``scale`` times the rate of the world ``point`` fixed to ``link`` along ``direction``."""
        add_point_jacobian(t, link, point, r, scale, ctx.robot_i, ctx.robot_f, ctx.pose, ctx.J, True, direction)

    @staticmethod
    @ti.func
    def zero_rows(ctx: ti.template(), S: ti.template(), t, r0):
        zero_rows(ctx.J, t, r0, ctx.n)

    @staticmethod
    @ti.func
    def set_jacobian(ctx: ti.template(), S: ti.template(), t, link, point, r0):
        jacobian_row(t, link, point, r0, ctx.robot_i, ctx.robot_f, ctx.pose, ctx.J, ctx.n)

    @staticmethod
    @ti.func
    def add_jacobian(ctx: ti.template(), S: ti.template(), t, link, point, r0, scale):
        add_point_jacobian(t, link, point, r0, scale, ctx.robot_i, ctx.robot_f, ctx.pose, ctx.J)

    @staticmethod
    @ti.func
    def com(ctx: ti.template(), S: ti.template(), t):
        total = ti.Vector([0.0, 0.0, 0.0])
        mass = 0.0
        for l in range(ctx.robot_i[0, ROBOT_HEAD.n_links]):
            w = ctx.robot_f[l, LINK_F.mass]
            if w > 0:
                total += w * link_com(t, l, ctx.robot_f, ctx.pose)
                mass += w
        return total / ti.max(mass, 1e-30)

    @staticmethod
    @ti.func
    def add_com_jacobian(ctx: ti.template(), S: ti.template(), t, r0):
        mass = 0.0
        for l in range(ctx.robot_i[0, ROBOT_HEAD.n_links]):
            mass += ctx.robot_f[l, LINK_F.mass]
        for l in range(ctx.robot_i[0, ROBOT_HEAD.n_links]):
            w = ctx.robot_f[l, LINK_F.mass]
            if w > 0:
                add_point_jacobian(t, l, link_com(t, l, ctx.robot_f, ctx.pose), r0, w / mass, ctx.robot_i,
                                   ctx.robot_f, ctx.pose, ctx.J)

    @staticmethod
    @ti.func
    def transform_rows(ctx: ti.template(), S: ti.template(), t, r0, relative: ti.template(), inv, axis, lin_scale,
                       ang_scale):
        """Rows r0..r0+5: the angular rows lose their component about ``axis`` (world; zero for
        none), both into the reference frame (``inv``: world to reference) with ``relative``, then
        scaled (``lin_scale`` per axis, ``ang_scale``); dofs the solver may not move get zero."""
        for d in range(ctx.n):
            active = ti.cast(ctx.task_i[dof_row(ctx.Lt, d), DOF_I.active], float)
            lin = ti.Vector([ctx.J[t, r0, d], ctx.J[t, r0 + 1, d], ctx.J[t, r0 + 2, d]])
            ang = ti.Vector([ctx.J[t, r0 + 3, d], ctx.J[t, r0 + 4, d], ctx.J[t, r0 + 5, d]])
            ang = ang - axis * axis.dot(ang)
            if ti.static(relative):
                lin = qrot(inv, lin)
                ang = qrot(inv, ang)
            for k in ti.static(range(3)):
                ctx.J[t, r0 + k, d] = lin[k] * lin_scale[k] * active
                ctx.J[t, r0 + 3 + k, d] = ang[k] * ang_scale * active

    @staticmethod
    @ti.func
    def mix_rows(ctx: ti.template(), S: ti.template(), t, r0, Gv, Gw):
        """Rows r0..r0+5 per dof: the linear rows ``lin`` and angular rows ``ang`` become zero and
        ``Gv lin + Gw ang`` (3 x 3 each); dofs the solver may not move get zero."""
        for d in range(ctx.n):
            active = ti.cast(ctx.task_i[dof_row(ctx.Lt, d), DOF_I.active], float)
            lin = ti.Vector([ctx.J[t, r0, d], ctx.J[t, r0 + 1, d], ctx.J[t, r0 + 2, d]])
            ang = ti.Vector([ctx.J[t, r0 + 3, d], ctx.J[t, r0 + 4, d], ctx.J[t, r0 + 5, d]])
            mixed = (Gv @ lin + Gw @ ang) * active
            for k in ti.static(range(3)):
                ctx.J[t, r0 + k, d] = 0.0
                ctx.J[t, r0 + 3 + k, d] = mixed[k]

    @staticmethod
    @ti.func
    def set_error(ctx: ti.template(), S: ti.template(), t, r0, ep, er):
        for k in ti.static(range(3)):
            ctx.vec[t, r0 + k] = ep[k]
            ctx.vec[t, r0 + 3 + k] = er[k]

    @staticmethod
    @ti.func
    def distance(ctx: ti.template(), S: ti.template(), t, e, task_f: ti.template(), start: ti.template()):
        out = 0.0
        for i in range(ctx.q.shape[1]):
            if ti.static(start):
                out += task_f[rest_row(ctx.Lt, i), QPOS_REST_F.span] * square(ctx.q[t, i] - ctx.q0[e, i])
            else:
                out += square(ctx.q[t, i] - task_f[rest_row(ctx.Lt, i), QPOS_REST_F.rest])
        return out

    @staticmethod
    @ti.func
    def keep(ctx: ti.template(), S: ti.template(), t, best_q: ti.template(), best_err: ti.template(),
             task_f: ti.template()):
        for i in range(ctx.q.shape[1]):
            best_q[t, i] = ctx.q[t, i]
        for i in range(ctx.Lt):
            unweight = 1.0 / task_f[task_row(i), TASK_F.weight]
            for k in ti.static(range(6)):
                best_err[t, i, k] = ctx.vec[t, 6 * i + k] * unweight

    # -- the step --------------------------------------------------------------------------------
    @staticmethod
    @ti.func
    def error_sq(ctx: ti.template(), S: ti.template(), t):
        m, n = ctx.m, ctx.n
        e2 = 0.0
        for a in range(m):
            e2 += ctx.vec[t, a] * ctx.vec[t, a]
            ctx.vec[t, m + n + a] = ctx.vec[t, a]  # kept: the solve overwrites vec[0:m]
        return e2

    @staticmethod
    @ti.func
    def direction(ctx: ti.template(), S: ti.template(), t, lam):
        """dq (vec[m:m+n]) = J^T (J J^T + lam I)^-1 e; the factor stays in A[t]."""
        m = ctx.m
        n = ctx.n
        for a in range(m):
            ctx.vec[t, a] = ctx.vec[t, m + n + a]
        for a in range(m):
            for b in range(a + 1):
                v = 0.0
                for d in range(n):
                    v += ctx.J[t, a, d] * ctx.J[t, b, d]
                ctx.A[t, a, b] = v
            ctx.A[t, a, a] += lam
        cholesky_factor(t, ctx.A, m)
        cholesky_substitute(t, ctx.A, ctx.vec, m)
        for d in range(n):
            v = 0.0
            for a in range(m):
                v += ctx.J[t, a, d] * ctx.vec[t, a]
            ctx.vec[t, m + d] = v

    @staticmethod
    @ti.func
    def block(ctx: ti.template(), S: ti.template(), t, which: ti.template(), zero_columns):
        """Dofs resting on a joint limit whose ``which`` vector points outward: zeroed there (and,
        with ``zero_columns``, in J). Returns how many. In a box (``ctx.boxed``) the step's dofs
        are first judged by the error's gradient ``J^T e`` (the side their multiplier is on), so
        that the step's fixed points are the box-constrained optimum's."""
        o = ctx.m if ti.static(which == STEP) else 2 * ctx.m + ctx.n
        L = ctx.robot_i[0, ROBOT_HEAD.n_links]
        blocked = 0
        for j in range(ctx.robot_i[0, ROBOT_HEAD.n_joints]):
            jr = joint_row_i(L, j)
            kind = ctx.robot_i[jr, JOINT_I.kind]
            if (kind == HINGE or kind == SLIDE) and ctx.robot_i[jr, JOINT_I.lead_q] < 0:
                qs = ctx.robot_i[jr, JOINT_I.q]
                d = ctx.robot_i[jr, JOINT_I.dof]
                lo, hi = bounds_of(ctx, t, qs)
                v = ctx.q[t, qs]
                tol = 1e-5 * (1.0 + ti.abs(v))
                move = ctx.vec[t, o + d]
                if ti.static(which == STEP):  # (zero_columns is read at run time)
                    if zero_columns == 1 and ctx.boxed:
                        move = 0.0
                        for a in range(ctx.m):
                            move += ctx.J[t, a, d] * ctx.vec[t, ctx.m + ctx.n + a]
                if (v <= lo + tol and move < 0) or (v >= hi - tol and move > 0):
                    blocked += 1
                    ctx.vec[t, o + d] = 0.0
                    if ti.static(which == STEP):
                        if zero_columns == 1:
                            for a in range(ctx.m):
                                ctx.J[t, a, d] = 0.0
        return blocked

    @staticmethod
    @ti.func
    def largest(ctx: ti.template(), S: ti.template(), t, which: ti.template()):
        o = ctx.m if ti.static(which == STEP) else 2 * ctx.m + ctx.n
        big = 0.0
        for d in range(ctx.n):
            big = ti.max(big, ti.abs(ctx.vec[t, o + d]))
        return big

    @staticmethod
    @ti.func
    def scale(ctx: ti.template(), S: ti.template(), t, which: ti.template(), factor):
        o = ctx.m if ti.static(which == STEP) else 2 * ctx.m + ctx.n
        for d in range(ctx.n):
            ctx.vec[t, o + d] *= factor

    @staticmethod
    @ti.func
    def posture(ctx: ti.template(), S: ti.template(), t, weight, task_i: ti.template(), task_f: ti.template()):
        """Null-space projection of ``weight * (rest - q)`` (free 1-dof joints) into the pull
        vector; A[t] holds the factor of the last direction and vec[0:m] is free."""
        m = ctx.m
        n = ctx.n
        o = 2 * m + n
        for d in range(n):
            ctx.vec[t, o + d] = 0.0
        for j in range(ctx.robot_i[0, ROBOT_HEAD.n_joints]):
            free, qs, d = free_scalar(ctx, task_i, j)
            if free:
                ctx.vec[t, o + d] = weight * (task_f[rest_row(ctx.Lt, qs), QPOS_REST_F.rest] - ctx.q[t, qs])
        for a in range(m):
            v = 0.0
            for d in range(n):
                v += ctx.J[t, a, d] * ctx.vec[t, o + d]
            ctx.vec[t, a] = v
        cholesky_substitute(t, ctx.A, ctx.vec, m)
        for d in range(n):
            jt = 0.0
            for a in range(m):
                jt += ctx.J[t, a, d] * ctx.vec[t, a]
            ctx.vec[t, o + d] -= jt

    @staticmethod
    @ti.func
    def add_pull(ctx: ti.template(), S: ti.template(), t, factor):
        o = 2 * ctx.m + ctx.n
        for d in range(ctx.n):
            ctx.vec[t, ctx.m + d] += factor * ctx.vec[t, o + d]

    @staticmethod
    @ti.func
    def apply(ctx: ti.template(), S: ti.template(), t, respect_limits):
        """q[t] += dq, integrating ball/free rotations in the body frame; clamped to the limits. A
        dof the solver does not move keeps its bits: its step is exactly 0 (a zero Jacobian column)
        and its start is within the limits, and a ball or free joint is not renormalised."""
        m = ctx.m
        L = ctx.robot_i[0, ROBOT_HEAD.n_links]
        for j in range(ctx.robot_i[0, ROBOT_HEAD.n_joints]):
            jr = joint_row_i(L, j)
            kind = ctx.robot_i[jr, JOINT_I.kind]
            qs = ctx.robot_i[jr, JOINT_I.q]
            d0 = m + ctx.robot_i[jr, JOINT_I.dof]
            if (kind == HINGE or kind == SLIDE) and ctx.robot_i[jr, JOINT_I.lead_q] < 0:
                v = ctx.q[t, qs] + ctx.vec[t, d0]
                if respect_limits == 1:
                    lo, hi = bounds_of(ctx, t, qs)
                    v = ti.min(ti.max(v, lo), hi)
                ctx.q[t, qs] = v
            elif (kind == BALL or kind == FREE) and \
                    ctx.task_i[dof_row(ctx.Lt, ctx.robot_i[jr, JOINT_I.dof]), DOF_I.active] == 1:
                qa = qs
                da = d0
                if kind == FREE:
                    for k in ti.static(range(3)):
                        ctx.q[t, qs + k] += ctx.vec[t, d0 + k]
                    qa = qs + 3
                    da = d0 + 3
                cur = ti.Vector([ctx.q[t, qa], ctx.q[t, qa + 1], ctx.q[t, qa + 2], ctx.q[t, qa + 3]])
                new = qnormalize(qmul(cur, qexp(ti.Vector([ctx.vec[t, da], ctx.vec[t, da + 1], ctx.vec[t, da + 2]]))))
                for k in ti.static(range(4)):
                    ctx.q[t, qa + k] = new[k]


@ti.kernel
def _solve(q0: ti.types.ndarray(), task_i: ti.types.ndarray(), task_f: ti.types.ndarray(),
          targets: ti.types.ndarray(), robot_i: ti.types.ndarray(), robot_f: ti.types.ndarray(),
          q: ti.types.ndarray(), pose: ti.types.ndarray(), J: ti.types.ndarray(), A: ti.types.ndarray(),
          vec: ti.types.ndarray(), best_q: ti.types.ndarray(), best_err: ti.types.ndarray(),
          best_i: ti.types.ndarray(), done: ti.types.ndarray(), coll_i: ti.types.ndarray(),
          coll_f: ti.types.ndarray(), shape_pose: ti.types.ndarray(), resume_i: ti.types.ndarray(),
          resume_f: ti.types.ndarray(), first: ti.i32, budget: ti.i32, m_fixed: ti.template(), n_fixed: ti.template(),
          lt_fixed: ti.template(), kinds: ti.template(), boxed: ti.i32, offset: ti.i32):
    """``m`` (6 Lt rows), ``n`` (dofs) and ``Lt`` (tasks): compile-time sizes (one compiled solver
    per size, fixed trip counts in the dense loops; see :mod:`engine.runtime.dispatch`), or 0 to read them
    from the arrays at run time (one solver for everything). ``coll_i`` / ``coll_f`` / ``shape_pose``:
    the collision tables of a COLLIDE task (:mod:`engine.kernels.avoid`; placeholders without
    one). ``kinds``: the on-demand task kinds compiled in, a bitmask (:func:`engine.kernels.kinds.on_demand_mask`:
    the COLLIDE task's search is most of the solver's code, so a solver without it compiles ~8x
    faster; requests without avoidance or a look-at get one without them).
    ``boxed``: 1 where the dofs' bounds are a box per env after the starts in ``q0`` (a velocity
    limit), else 0; read at run time, so that placing and tracking share one compiled solver (one
    kernel to load from taichi's cache at start-up, not two: ~1.2 s each on a 2-core CPU).
    ``resume_i`` / ``resume_f``, ``first``,
    ``budget``: a solve split over launches (:func:`engine.kernels.solver.run_thread`; budget 0:
    one launch). ``offset``: the first thread of this launch where a launch runs a fixed span of
    threads (:func:`engine.runtime.span.thread_span`: a software Vulkan device), else 0."""
    B = q0.shape[0]
    m = J.shape[1]
    n = J.shape[2]
    Lt = targets.shape[1]
    if ti.static(m_fixed > 0):
        m = m_fixed
    if ti.static(n_fixed > 0):
        n = n_fixed
    if ti.static(lt_fixed > 0):
        Lt = lt_fixed
    ti.loop_config(block_dim=ti.static(block_dim(loop_block_dim())))
    for i in range(ti.static(thread_span()) if ti.static(thread_span() > 0) else q.shape[0]):
        t = offset + i
        if t < q.shape[0]:
            run_thread(Generic, Ctx(robot_i, robot_f, task_i, q, pose, J, A, vec, m, n, Lt,
                                    (coll_i, coll_f, shape_pose), kinds, boxed, q0),
                       t, B, q.shape[1], q0, task_i, task_f, targets, best_q, best_err, best_i, done,
                       (resume_i, resume_f, first, budget))


AVOIDING_CPU_COMPILE = {"advanced_optimization": False}


def compile_config(templates: dict) -> dict:
    """On the CPU the solver with collision avoidance compiles without taichi's IR optimiser: a first
    avoiding call (which compiles the plain form too) 41.7 -> 20.6 s cold (Panda, 256 envs), its solves
    as fast (the search dominates them; docs/backends.md). The other forms keep the arch's settings."""
    avoiding = (templates["kinds"] >> COLLIDE) & 1
    return AVOIDING_CPU_COMPILE if avoiding and STATE.arch == "cpu" else {}


solve = fast(_solve, compile_config, trace_helpers=True)  # Ctx(...) is built while tracing: a plain Python call
