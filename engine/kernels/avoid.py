"""The collision-avoidance task of the IK solver: the rows of a COLLIDE task (:mod:`engine.kernels.solver`).

The robot is its sphere model (:mod:`engine.collision`): the counted self-collision pairs and the
obstacles of the scene (:mod:`engine.collision.world`), in the tables named in
:mod:`engine.kernels.tables` (``coll_i``, ``coll_f``, ``shape_pose``; packed by
:mod:`engine.collision.checks`). Each iteration, at the iterate's link poses:

1. **Search.** Every counted link pair and every (checked link, obstacle) whose bounding balls are
   within ``margin + SLACK`` of each other is searched sphere by sphere for its closest spheres
   (bounding balls farther apart than that prove every sphere of the pair farther too, so the
   culling loses nothing below that distance). The :data:`ROWS` closest such pairs are kept, one
   entry per link pair or link-obstacle pair; then each is measured on the links' pieces (convex
   hulls: :mod:`engine.kernels.gjk`, all together within :data:`HULL_WORK` loop iterations), and its
   distance is the larger of the two lower bounds (the spheres stand a few millimetres out of the
   meshes, the hulls of convex meshes not at all): a pair the hulls prove clear leaves the kept
   ones.
2. **Rows.** Each kept pair closer than ``margin + SLACK`` owns one row: its error is ``weight *
   (margin + SLACK - d)`` (m) and its Jacobian ``weight * n^T (J_p(a, c_a) - J_p(b, c_b))``, the
   rate of the distance ``d`` between the two spheres (``n``: unit vector from b's centre to
   a's; an obstacle does not move, and its ``n`` is the gradient of its signed distance at a's
   centre). Rows of pairs farther away are zero: the task costs nothing away from contact, and
   near contact it pushes the pair apart until it is ``margin + SLACK`` apart, a one-sided
   constraint in the least-squares step.
3. **Met.** The task is met when the smallest distance over *every* pair is at least ``margin``
   (exact: a culled pair is farther than that). Unmet, its score is the solver's "far from the
   goal" level (``STALL_NEAR``) plus the shortfall in units of the position tolerance: a sample
   that stays in collision stalls and gives way to the next restart, and among failures a
   collision-free answer is preferred.

Sphere and hull distances are at most mesh distances (both contain the meshes), so an answer the
task accepts is collision-free at mesh level by at least ``margin``. The answers' checks
(:func:`answer_distance`) run the same search over every pair, with no bound on the hulls' work.
"""

from collections import namedtuple

import taichi as ti

from ..runtime.launch import fast
from ..runtime.span import block_dim, thread_offsets, thread_span
from . import gjk
from .collide import shape_distance
from .quat import qconj, qmul, qrot
from .solver import STALL_NEAR
from .tables import (
    AVOID_HEAD,
    BOUND_F,
    LINK_C,
    PAIR_I,
    POSE,
    SHAPE_F,
    SHAPE_I,
    SPHERE_F,
    TASK_F,
    bound_row,
    link_row_c,
    pair_row,
    shape_row_f,
    shape_row_i,
    task_row,
)

ROWS = 6          # the closest pairs that get a row (a task owns 6 rows)
SLACK = 1e-4      # m: the rows push a pair to margin + SLACK, so that one a hair inside still meets margin
# m: met means at least margin + ROUNDING apart, here and in the host's check of the answers: the
# float32 distances of the same spheres from two kernels (sums in another order) differ by a few 1e-7
ROUNDING = 2e-6
NO_PAIR = 1e30    # the distance of an empty slot, and of a robot with nothing to check
# rows (spheres and group balls) one search of the solver visits at most, all pairs together: what
# is left past it reads as near as the link balls allow (a lower bound, so still conservative).
# It bounds the search's loops, which a software Vulkan device caps per launch (docs/backends.md;
# with HULL_WORK, docs/collision.md says how the two were split). Tables packed from then on carry
# the value (AVOID_HEAD.search_rows): the kernels read it there, at run time
SEARCH_ROWS = 16384
KEEP_LOOPS = ROWS + 1  # loop iterations of one _keep at most (exit test included)
# loop iterations the solver's hull bounds (engine.kernels.gjk) run at most per search, all pairs
# together: the GJK of a few pairs in contact on the Panda or Baxter; a pair left over keeps its
# sphere distance (a lower bound still). With SEARCH_ROWS it keeps the Panda's and Baxter's solver
# iteration under a software Vulkan device's loop limit (docs/collision.md: at 6000 the bound
# starved Baxter's fingertips and lost a target there). The exact checks have no such bound
HULL_WORK = 20000
EXACT_WORK = 1 << 30
# a slot of the kept pairs: its distance, the links (b -1: an obstacle), the points whose velocities
# the row takes (sphere centres, world), the unit direction the distance grows along
SLOT_D, SLOT_A, SLOT_B, SLOT_CA, SLOT_CB, SLOT_N, SLOT_O, SLOT_WIDTH = 0, 1, 2, 3, 6, 9, 12, 13


@ti.func
def _vec3(a: ti.template(), row, col: ti.template()):
    return ti.Vector([a[row, col + k] for k in ti.static(range(3))])


@ti.func
def _keep(form: ti.template(), slots: ti.template(), d, a, b, ca, cb, n, o):
    """Insert a pair into the slots, kept sorted by distance (the farthest falls off the end);
    returns the distance of the one that fell off (NO_PAIR: none). ``o``: the obstacle (-1: a
    self pair). Unrolled where the form's rows are compile-time (``form.STATIC_ROWS``), else
    run-time loops: the generic solver compiles the task once in a form ~30x quicker to compile."""
    cand = ti.Vector([d, ti.cast(a, float), ti.cast(b, float), ca[0], ca[1], ca[2], cb[0], cb[1], cb[2],
                      n[0], n[1], n[2], ti.cast(o, float)])
    if ti.static(form.STATIC_ROWS):
        for k in ti.static(range(ROWS)):
            if cand[SLOT_D] < slots[k, SLOT_D]:
                for c in ti.static(range(SLOT_WIDTH)):
                    held = slots[k, c]
                    slots[k, c] = cand[c]
                    cand[c] = held
    else:  # the slots at run time, each slot's swap unrolled: ROWS + 1 loop iterations (KEEP_LOOPS)
        for k in range(ROWS):
            if cand[SLOT_D] < slots[k, SLOT_D]:
                for c in ti.static(range(SLOT_WIDTH)):
                    held = slots[k, c]
                    slots[k, c] = cand[c]
                    cand[c] = held
    return cand[SLOT_D]


@ti.func
def _skip(coll_f: ti.template(), row):
    """Rows to step past ``row`` when it is not searched: 1 for a sphere, 1 + its members for a
    group's ball (:mod:`engine.collision.groups`)."""
    return 1 + ti.cast(coll_f[row, SPHERE_F.count], ti.i32)


@ti.func
def link_ball(p, q, coll_f: ti.template(), n_spheres, link):
    """(world centre, radius) of ``link``'s bounding ball for the link pose ``p``, ``q``."""
    row = bound_row(n_spheres, link)
    return p + qrot(q, _vec3(coll_f, row, BOUND_F.center)), coll_f[row, BOUND_F.radius]


@ti.func
def closest_pairs(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, reach, slots: ti.template(),
                  exact: ti.template()):
    """Fill ``slots`` (ROWS, SLOT_WIDTH) with the closest pairs nearer than ``reach`` (m) by their
    spheres; returns (the smallest distance over every pair, :data:`NO_PAIR` when all are farther
    than ``reach``; what sets it: link a, link b (-1: an obstacle), the obstacle (-1: a self pair);
    the smallest sphere distance of the pairs nearer than ``reach`` that the slots could not hold,
    NO_PAIR when none). With
    ``exact`` the slots are left alone and the culling is by the smallest distance so far, so the
    distance is every pair's least (call it with ``reach`` = NO_PAIR), and a pair the spheres find
    nearer than the least so far gets its hulls' bound too (:mod:`engine.kernels.gjk`)."""
    coll_i, coll_f, shape_pose = ti.static(ctx.coll[0], ctx.coll[1], ctx.coll[2])
    balls = form.link_balls(ctx, S, t)  # the form's cache of the links' bounding balls, if it keeps one
    n_pairs = coll_i[0, AVOID_HEAD.n_pairs]
    n_links = coll_i[0, AVOID_HEAD.n_links]
    n_spheres = coll_i[0, AVOID_HEAD.n_spheres]
    search_rows = coll_i[0, AVOID_HEAD.search_rows]  # SEARCH_ROWS as the tables were packed
    dmin = NO_PAIR
    which = ti.Vector([-1, -1, -1])
    cut = reach  # pairs at least this far apart are not searched
    work = 0  # rows the solver's search visited (search_rows); the exact search does not count
    rest = NO_PAIR  # the nearest pair that fell off the slots (the solver's search)
    for p in range(n_pairs):
        pr = pair_row(p)
        la = coll_i[pr, PAIR_I.link_a]
        lb = coll_i[pr, PAIR_I.link_b]
        ca, ra = form.link_ball(ctx, S, t, balls, la)
        cb, rb = form.link_ball(ctx, S, t, balls, lb)
        if ti.static(exact):
            cut = ti.min(reach, dmin)
        if (ca - cb).norm() - ra - rb < cut:
            # a's spheres are brought into b's frame (one rotation each), where b's are constants
            pa, qa = form.link_pose_at(ctx, S, t, la)
            pb, qb = form.link_pose_at(ctx, S, t, lb)
            to_b = qconj(qb)
            cb_local = _vec3(coll_f, bound_row(n_spheres, lb), BOUND_F.center)
            ca_local = _vec3(coll_f, bound_row(n_spheres, la), BOUND_F.center)
            best = NO_PAIR
            best_i = -1
            best_j = -1
            # a cheap bound first: row i (offset v from a's ball centre, a's frame) is at least
            # |cb - ca| - u . v - r_i - rb from anything in b's ball, u the unit vector ca -> cb
            gap_ab = (cb - ca).norm()
            u = qrot(qconj(qa), cb - ca) / ti.max(gap_ab, 1e-12)
            short = 0  # the solver's search ran out of rows (search_rows) before this pair's end
            if ti.static(not exact):
                work += 1  # the loop's exit test
            i = coll_i[pr, PAIR_I.a0]
            while i < coll_i[pr, PAIR_I.a1]:  # a's rows: a far group is skipped whole, a near one opened
                if ti.static(not exact):
                    if work >= search_rows:
                        short = 1
                        break
                    work += 1
                skip = _skip(coll_f, i)
                ci = _vec3(coll_f, i, SPHERE_F.center)
                ri = coll_f[i, SPHERE_F.radius]
                if gap_ab - u.dot(ci - ca_local) - ri - rb < ti.min(best, cut):
                    wi = qrot(to_b, pa + qrot(qa, ci) - pb)
                    if (wi - cb_local).norm() - ri - rb < ti.min(best, cut):  # else nothing of b is nearer
                        if skip > 1:
                            skip = 1  # a near group: its members next
                        else:
                            j = coll_i[pr, PAIR_I.b0]
                            if ti.static(not exact):
                                work += 1
                            while j < coll_i[pr, PAIR_I.b1]:  # b's rows, the same way
                                if ti.static(not exact):
                                    if work >= search_rows:
                                        short = 1
                                        break
                                    work += 1
                                step = _skip(coll_f, j)
                                d = (wi - _vec3(coll_f, j, SPHERE_F.center)).norm() - ri - coll_f[j, SPHERE_F.radius]
                                if step > 1:
                                    if d < ti.min(best, cut):
                                        step = 1
                                elif d < best:
                                    best = d
                                    best_i = i
                                    best_j = j
                                j += step
                i += skip
            if short == 1 and gap_ab - ra - rb < best:  # what was not searched is no nearer than the balls
                best = gap_ab - ra - rb
                best_i = -1
            # near contact (the checks) the hulls' bound too: the larger of two lower bounds
            d_pair = best
            if ti.static(exact):
                if best < cut:
                    h, _ = gjk.pair_bound(coll_i, coll_f, n_pairs, la, pa, qa, lb, pb, qb, cut, EXACT_WORK)
                    d_pair = ti.max(best, h)
            if d_pair < dmin:
                dmin = d_pair
                which = ti.Vector([la, lb, -1])
            if ti.static(not exact):
                if best < reach:  # kept: the solver's hull bounds (refine_slots), then its row
                    wa = ca  # the balls' centres where the balls set the distance
                    wb = cb
                    if best_i >= 0:
                        wa = pa + qrot(qa, _vec3(coll_f, best_i, SPHERE_F.center))
                        wb = pb + qrot(qb, _vec3(coll_f, best_j, SPHERE_F.center))
                    gap = wa - wb
                    rest = ti.min(rest, _keep(form, slots, best, la, lb, wa, wb, gap / ti.max(gap.norm(), 1e-12),
                                              -1))
    n_shapes = coll_i[0, AVOID_HEAD.n_shapes]
    for o in range(n_shapes):  # obstacle by obstacle: its pose is read once per iteration
        fr = shape_row_f(n_spheres, n_links, o)
        sp = ti.Vector([shape_pose[e, o, POSE.pos + k] for k in ti.static(range(3))])
        bound = coll_f[fr, SHAPE_F.bound]
        for l in range(n_links):
            cl, rl = form.link_ball(ctx, S, t, balls, l)
            lr = link_row_c(n_pairs, l)
            # the balls first (one norm; a link without spheres has radius < 0 and is not checked)
            if ti.static(exact):
                cut = ti.min(reach, dmin)
            if rl >= 0 and (cl - sp).norm() - rl - bound < cut and coll_i[lr, LINK_C.world] == 1:
                kind = coll_i[shape_row_i(n_pairs, n_links, o), SHAPE_I.kind]
                size = _vec3(coll_f, fr, SHAPE_F.size)
                sq = ti.Vector([shape_pose[e, o, POSE.quat + k] for k in ti.static(range(4))])
                inv = qconj(sq)
                # then the link's ball against the exact shape; a sphere lies within ball radius
                # of the ball's centre, so the shape's distance there bounds each sphere's
                d_ball, g_ball = shape_distance(kind, size, qrot(inv, cl - sp))
                if d_ball - rl < cut:
                    # the link's spheres straight into the shape's frame: one rotation each
                    pl, ql = form.link_pose_at(ctx, S, t, l)
                    rot = qmul(inv, ql)
                    shift = qrot(inv, pl - sp)
                    # the shapes are convex, so is their signed distance: at a sphere (offset v from
                    # the ball's centre, link frame) it is at least d_ball + g . v (g its gradient there)
                    g_link = qrot(qconj(rot), g_ball)
                    cl_local = _vec3(coll_f, bound_row(n_spheres, l), BOUND_F.center)
                    best = NO_PAIR
                    best_s = -1
                    best_g = ti.Vector([0.0, 0.0, 1.0])
                    short = 0
                    if ti.static(not exact):
                        work += 1
                    s = coll_i[lr, LINK_C.s0]
                    while s < coll_i[lr, LINK_C.s1]:  # the link's rows: a far group skipped whole
                        if ti.static(not exact):
                            if work >= search_rows:
                                short = 1
                                break
                            work += 1
                        skip = _skip(coll_f, s)
                        cs = _vec3(coll_f, s, SPHERE_F.center)
                        rs = coll_f[s, SPHERE_F.radius]
                        if d_ball + g_link.dot(cs - cl_local) - rs < ti.min(best, cut):
                            d, g = shape_distance(kind, size, shift + qrot(rot, cs))
                            d -= rs
                            if skip > 1:
                                if d < ti.min(best, cut):
                                    skip = 1  # a near group: its members next
                            elif d < best:
                                best = d
                                best_s = s
                                best_g = g
                        s += skip
                    if short == 1 and d_ball - rl < best:  # the rest: no nearer than the link's ball
                        best = d_ball - rl
                        best_s = -1
                        best_g = g_ball
                    d_pair = best  # near contact (the checks) the hull's bound too
                    if ti.static(exact):
                        if best < cut:
                            h, _ = gjk.shape_bound(coll_i, coll_f, n_pairs, l, pl, ql, kind, size, sp, sq, cut,
                                                   EXACT_WORK)
                            d_pair = ti.max(best, h)
                    if d_pair < dmin:
                        dmin = d_pair
                        which = ti.Vector([l, -1, o])
                    if ti.static(not exact):
                        if best < reach:  # kept: the solver's hull bounds (refine_slots), then its row
                            c = cl  # the ball's centre where the ball sets the distance
                            if best_s >= 0:
                                c = pl + qrot(ql, _vec3(coll_f, best_s, SPHERE_F.center))
                            rest = ti.min(rest, _keep(form, slots, best, l, -1, c, c, qrot(sq, best_g), o))
    return dmin, which, rest


@ti.func
def _distance_row(form: ti.template(), ctx: ti.template(), S: ti.template(), t, i: ti.template(), k: ti.template(),
                  slots: ti.template(), reach, weight):
    """Row ``6 i + k`` for the pair in slot ``k`` (its Jacobian added; nothing when the slot is
    farther than ``reach``); returns the row's error."""
    err = 0.0
    if slots[k, SLOT_D] < reach:
        err = weight * (reach - slots[k, SLOT_D])
        n = ti.Vector([slots[k, SLOT_N + c] for c in ti.static(range(3))])
        ca = ti.Vector([slots[k, SLOT_CA + c] for c in ti.static(range(3))])
        form.add_distance_row(ctx, S, t, 6 * i + k, ti.cast(slots[k, SLOT_A], ti.i32), ca, n, weight)
        lb = ti.cast(slots[k, SLOT_B], ti.i32)
        if lb >= 0:
            cb = ti.Vector([slots[k, SLOT_CB + c] for c in ti.static(range(3))])
            form.add_distance_row(ctx, S, t, 6 * i + k, lb, cb, n, -weight)
    return err


@ti.func
def _refine_slots(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, slots: ti.template(), reach):
    """Raise each kept pair's sphere distance to its hulls' bound (:func:`engine.kernels.gjk.bound`,
    all pairs together within :data:`HULL_WORK` loop iterations); a pair the hulls prove at least
    ``reach`` apart leaves the slots (no row). A pair whose spheres overlap by more than twice its
    links' larger protrusion (:func:`engine.collision.hulls.protrusion`) is in contact by its hulls
    too, and keeps its sphere distance without a GJK. Returns the smallest distance of the pairs kept
    (NO_PAIR: none). One run-time loop over the slots: one copy of GJK in the solver."""
    coll_i, coll_f, shape_pose = ti.static(ctx.coll[0], ctx.coll[1], ctx.coll[2])
    n_pairs = coll_i[0, AVOID_HEAD.n_pairs]
    n_links = coll_i[0, AVOID_HEAD.n_links]
    n_spheres = coll_i[0, AVOID_HEAD.n_spheres]
    work = 0
    near = NO_PAIR
    for k in range(ROWS):
        d = slots[k, SLOT_D]
        la = ti.cast(slots[k, SLOT_A], ti.i32)
        lb = ti.cast(slots[k, SLOT_B], ti.i32)
        deep = -NO_PAIR  # spheres overlapping by more than this share a point inside both hulls
        if d < reach:
            deep = -2.0 * coll_f[bound_row(n_spheres, la), BOUND_F.protrusion]
            if lb >= 0:
                deep = ti.min(deep, -2.0 * coll_f[bound_row(n_spheres, lb), BOUND_F.protrusion])
        if d < reach and d < deep:
            near = ti.min(near, d)  # GJK cannot prove such a pair apart (hulls.protrusion)
        elif d < reach:
            pa, qa = form.link_pose_at(ctx, S, t, la)
            pb = ti.Vector([0.0, 0.0, 0.0])
            qb = ti.Vector([1.0, 0.0, 0.0, 0.0])
            kind = -1
            size = ti.Vector([0.0, 0.0, 0.0])
            if lb >= 0:
                pb, qb = form.link_pose_at(ctx, S, t, lb)
            else:
                o = ti.cast(slots[k, SLOT_O], ti.i32)
                pb = ti.Vector([shape_pose[e, o, POSE.pos + c] for c in ti.static(range(3))])
                qb = ti.Vector([shape_pose[e, o, POSE.quat + c] for c in ti.static(range(4))])
                kind = coll_i[shape_row_i(n_pairs, n_links, o), SHAPE_I.kind]
                size = _vec3(coll_f, shape_row_f(n_spheres, n_links, o), SHAPE_F.size)
            h, used = gjk.bound(coll_i, coll_f, n_pairs, la, pa, qa, lb, pb, qb, kind, size, reach, HULL_WORK - work)
            work += used
            d = ti.max(d, h)
            if d >= reach:
                slots[k, SLOT_D] = NO_PAIR
            near = ti.min(near, d)
    return near


@ti.func
def collision_task(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, i: ti.template(),
                   task_i: ti.template(), task_f: ti.template()):
    """Rows ``6 i .. 6 i + 5`` of a COLLIDE task (see the module docstring); returns (met, score)."""
    row = task_row(i)
    weight = task_f[row, TASK_F.weight]
    margin = task_f[row, TASK_F.margin]
    reach = margin + SLACK
    slots = ti.Matrix.zero(float, ROWS, SLOT_WIDTH)
    for k in ti.static(range(ROWS)):
        slots[k, SLOT_D] = NO_PAIR
    dmin, _, rest = closest_pairs(form, ctx, S, t, e, reach, slots, False)
    if dmin < reach:  # pairs in contact by their spheres: their hulls settle them where they can
        dmin = ti.min(rest, _refine_slots(form, ctx, S, t, e, slots, reach))
    form.zero_rows(ctx, S, t, 6 * i)
    err = ti.Vector([0.0] * ROWS)
    if ti.static(form.STATIC_ROWS):  # the per-robot form's rows are compile-time indices
        for k in ti.static(range(ROWS)):
            err[k] = _distance_row(form, ctx, S, t, i, k, slots, reach, weight)
    else:  # one copy of the row code, not ROWS
        for k in range(ROWS):
            err[k] = _distance_row(form, ctx, S, t, i, k, slots, reach, weight)
    zero = ti.Vector([0.0, 0.0, 0.0])
    # the dofs the solver may not move leave the rows
    form.transform_rows(ctx, S, t, 6 * i, False, ti.Vector([1.0, 0.0, 0.0, 0.0]), zero, ti.Vector([1.0, 1.0, 1.0]),
                        1.0)
    form.set_error(ctx, S, t, 6 * i, ti.Vector([err[0], err[1], err[2]]), ti.Vector([err[3], err[4], err[5]]))
    # met: every pair at least margin apart; else the score counts as far from the goal
    # (STALL_NEAR tolerances plus the shortfall), so that a sample stuck in collision gives way to
    # the next restart as a stalled one does, and a collision-free failure is preferred to it
    met = 1
    score = 0.0
    if dmin < margin + ROUNDING:
        met = 0
        score = STALL_NEAR + (margin - dmin) / task_f[row, TASK_F.pos_tol]
    return met, score


class Posed:
    """The hooks :func:`closest_pairs` needs, over given link poses ``ctx.pose`` (B, L, 7) (the
    answers' checks: :func:`answer_distance`)."""

    STATIC_ROWS = False

    @staticmethod
    @ti.func
    def link_pose_at(ctx: ti.template(), S: ti.template(), t, link):
        return (ti.Vector([ctx.pose[t, link, POSE.pos + k] for k in ti.static(range(3))]),
                ti.Vector([ctx.pose[t, link, POSE.quat + k] for k in ti.static(range(4))]))

    @staticmethod
    @ti.func
    def link_balls(ctx: ti.template(), S: ti.template(), t):
        return ti.Vector([0.0])

    @staticmethod
    @ti.func
    def link_ball(ctx: ti.template(), S: ti.template(), t, balls: ti.template(), link):
        p, q = Posed.link_pose_at(ctx, S, t, link)
        return link_ball(p, q, ctx.coll[1], ctx.coll[0][0, AVOID_HEAD.n_spheres], link)


PosedCtx = namedtuple("PosedCtx", "pose coll")


@ti.kernel
def _answer_distance(pose: ti.types.ndarray(), coll_i: ti.types.ndarray(), coll_f: ti.types.ndarray(),
                     shape_pose: ti.types.ndarray(), dist: ti.types.ndarray(), which: ti.types.ndarray(),
                     reach: ti.f32, serial: ti.template(), offset: ti.i32):
    """Each row's smallest distance ``dist`` (B,) m over every counted pair and obstacle of the
    tables (the spheres', and near contact the larger of it and the hulls': module
    :mod:`engine.kernels.gjk`), at link poses ``pose`` (B, L, 7), and what sets it ``which`` int32
    (B, 3): link a, link b (-1: an obstacle), obstacle (-1: a self pair); all -1 and NO_PAIR with
    nothing to check. Pairs ``reach`` (m) apart or more are not searched: a distance below
    ``reach`` is exact, one at or above it (NO_PAIR when no pair was searched) only says so
    (:data:`NO_PAIR`: every distance exact). On a software Vulkan device only the rows ``offset``
    to ``offset`` + the span (:func:`engine.runtime.span.thread_span`)."""
    ti.loop_config(block_dim=ti.static(block_dim()), serialize=serial)
    for i in range(ti.static(thread_span()) if ti.static(thread_span() > 0) else pose.shape[0]):
        e = offset + i
        if e < pose.shape[0]:
            slots = ti.Matrix.zero(float, 1, 1)
            d, w, _ = closest_pairs(Posed, PosedCtx(pose, (coll_i, coll_f, shape_pose)), 0, e, e, reach, slots,
                                    True)
            dist[e] = d
            for k in ti.static(range(3)):
                which[e, k] = w[k]


answer_distance_kernel = fast(_answer_distance, trace_helpers=True)  # PosedCtx(...) is built while tracing


def answer_distance(pose, coll_i, coll_f, shape_pose, dist, which, serial: bool, reach: float = NO_PAIR) -> None:
    """:func:`_answer_distance` over every row of ``pose`` (B, L, 7): one launch, or span by span on
    a software Vulkan device (:func:`engine.runtime.span.thread_offsets`)."""
    for offset in thread_offsets(pose.shape[0]):
        answer_distance_kernel(pose, coll_i, coll_f, shape_pose, dist, which, float(reach), serial, offset)
