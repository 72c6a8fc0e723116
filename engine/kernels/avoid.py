"""The collision-avoidance task of the IK solver: the rows of a COLLIDE task (:mod:`engine.kernels.solver`).

The robot is its sphere model (:mod:`engine.collision`): the counted self-collision pairs and the
obstacles of the scene (:mod:`engine.collision_world`), in the tables named in
:mod:`engine.kernels.tables` (``coll_i``, ``coll_f``, ``shape_pose``; packed by
:mod:`engine.avoidance`). Each iteration, at the iterate's link poses:

1. **Search.** Every counted link pair and every (checked link, obstacle) whose bounding balls are
   within ``margin + SLACK`` of each other is searched sphere by sphere for its closest spheres
   (bounding balls farther apart than that prove every sphere of the pair farther too, so the
   culling loses nothing below that distance). The :data:`ROWS` closest such pairs are kept, one
   entry per link pair or link-obstacle pair.
2. **Rows.** Each kept pair closer than ``margin + SLACK`` owns one row: its error is ``weight *
   (margin + SLACK - d)`` (m) and its Jacobian ``weight * n^T (J_p(a, c_a) - J_p(b, c_b))``, the
   rate of the distance ``d`` between the two spheres (``n``: unit vector from b's centre to
   a's; an obstacle does not move, and its ``n`` is the gradient of its signed distance at a's
   centre). Rows of pairs farther away are zero: the task costs nothing away from contact, and
   near contact it pushes the pair apart until it is ``margin + SLACK`` apart, a one-sided
   constraint in the least-squares step.
3. **Met.** The task is met when the smallest distance over *every* pair is at least ``margin``
   (exact: a culled pair is farther than that); its score is the shortfall in units of the
   task's position tolerance.

Sphere distances are at most mesh distances (the spheres contain the meshes), so an answer the
task accepts is collision-free at mesh level by at least ``margin``.
"""

import taichi as ti

from .collide import shape_distance
from .quat import qconj, qrot
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
NO_PAIR = 1e30    # the distance of an empty slot, and of a robot with nothing to check
# a slot of the kept pairs: its distance, the links (b -1: an obstacle), the points whose velocities
# the row takes (sphere centres, world), the unit direction the distance grows along
SLOT_D, SLOT_A, SLOT_B, SLOT_CA, SLOT_CB, SLOT_N, SLOT_WIDTH = 0, 1, 2, 3, 6, 9, 12


@ti.func
def _vec3(a: ti.template(), row, col: ti.template()):
    return ti.Vector([a[row, col + k] for k in ti.static(range(3))])


@ti.func
def _keep(slots: ti.template(), d, a, b, ca, cb, n):
    """Insert a pair into the slots, kept sorted by distance (the farthest falls off the end)."""
    cand = ti.Vector([d, ti.cast(a, float), ti.cast(b, float), ca[0], ca[1], ca[2], cb[0], cb[1], cb[2],
                      n[0], n[1], n[2]])
    for k in ti.static(range(ROWS)):
        if cand[SLOT_D] < slots[k, SLOT_D]:
            for c in ti.static(range(SLOT_WIDTH)):
                held = slots[k, c]
                slots[k, c] = cand[c]
                cand[c] = held


@ti.func
def _sphere(form: ti.template(), ctx: ti.template(), S: ti.template(), t, coll_f: ti.template(), s):
    """(world centre, radius) of robot sphere ``s`` at the iterate."""
    link = ti.cast(coll_f[s, SPHERE_F.link], ti.i32)
    p, q = form.link_pose_at(ctx, S, t, link)
    return p + qrot(q, _vec3(coll_f, s, SPHERE_F.center)), coll_f[s, SPHERE_F.radius]


@ti.func
def link_ball(p, q, coll_f: ti.template(), n_spheres, link):
    """(world centre, radius) of ``link``'s bounding ball for the link pose ``p``, ``q``."""
    row = bound_row(n_spheres, link)
    return p + qrot(q, _vec3(coll_f, row, BOUND_F.center)), coll_f[row, BOUND_F.radius]


@ti.func
def closest_pairs(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, reach, slots: ti.template()):
    """Fill ``slots`` (ROWS, SLOT_WIDTH) with the closest pairs nearer than ``reach`` (m); returns
    the smallest distance over every pair (:data:`NO_PAIR` when all are farther than ``reach``)."""
    coll_i, coll_f, shape_pose = ti.static(ctx.coll[0], ctx.coll[1], ctx.coll[2])
    balls = form.link_balls(ctx, S, t)  # the form's cache of the links' bounding balls, if it keeps one
    n_pairs = coll_i[0, AVOID_HEAD.n_pairs]
    n_links = coll_i[0, AVOID_HEAD.n_links]
    n_spheres = coll_i[0, AVOID_HEAD.n_spheres]
    dmin = NO_PAIR
    for p in range(n_pairs):
        pr = pair_row(p)
        la = coll_i[pr, PAIR_I.link_a]
        lb = coll_i[pr, PAIR_I.link_b]
        ca, ra = form.link_ball(ctx, S, t, balls, la)
        cb, rb = form.link_ball(ctx, S, t, balls, lb)
        if (ca - cb).norm() - ra - rb < reach:
            best = NO_PAIR
            best_a = ca
            best_b = cb
            for i in range(coll_i[pr, PAIR_I.a0], coll_i[pr, PAIR_I.a1]):
                wi, ri = _sphere(form, ctx, S, t, coll_f, i)
                if (wi - cb).norm() - ri - rb < ti.min(best, reach):  # else no sphere of b is nearer
                    for j in range(coll_i[pr, PAIR_I.b0], coll_i[pr, PAIR_I.b1]):
                        wj, rj = _sphere(form, ctx, S, t, coll_f, j)
                        d = (wi - wj).norm() - ri - rj
                        if d < best:
                            best = d
                            best_a = wi
                            best_b = wj
            dmin = ti.min(dmin, best)
            if best < reach:
                gap = best_a - best_b
                _keep(slots, best, la, lb, best_a, best_b, gap / ti.max(gap.norm(), 1e-12))
    n_shapes = coll_i[0, AVOID_HEAD.n_shapes]
    for l in range(n_links):
        lr = link_row_c(n_pairs, l)
        if coll_i[lr, LINK_C.world] == 1 and coll_i[lr, LINK_C.s1] > coll_i[lr, LINK_C.s0]:
            cl, rl = form.link_ball(ctx, S, t, balls, l)
            for o in range(n_shapes):
                kind = coll_i[shape_row_i(n_pairs, n_links, o), SHAPE_I.kind]
                fr = shape_row_f(n_spheres, n_links, o)
                size = _vec3(coll_f, fr, SHAPE_F.size)
                sp = ti.Vector([shape_pose[e, o, POSE.pos + k] for k in ti.static(range(3))])
                sq = ti.Vector([shape_pose[e, o, POSE.quat + k] for k in ti.static(range(4))])
                inv = qconj(sq)
                # the balls first (one norm), then the link's ball against the exact shape
                if (cl - sp).norm() - rl - coll_f[fr, SHAPE_F.bound] < reach and \
                        shape_distance(kind, size, qrot(inv, cl - sp))[0] - rl < reach:
                    best = NO_PAIR
                    best_c = cl
                    best_g = ti.Vector([0.0, 0.0, 1.0])
                    for s in range(coll_i[lr, LINK_C.s0], coll_i[lr, LINK_C.s1]):
                        c, r = _sphere(form, ctx, S, t, coll_f, s)
                        d, g = shape_distance(kind, size, qrot(inv, c - sp))
                        if d - r < best:
                            best = d - r
                            best_c = c
                            best_g = g
                    dmin = ti.min(dmin, best)
                    if best < reach:
                        _keep(slots, best, l, -1, best_c, best_c, qrot(sq, best_g))
    return dmin


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
    dmin = closest_pairs(form, ctx, S, t, e, reach, slots)
    form.zero_rows(ctx, S, t, 6 * i)
    err = ti.Vector([0.0] * ROWS)
    for k in ti.static(range(ROWS)):
        if slots[k, SLOT_D] < reach:
            err[k] = weight * (reach - slots[k, SLOT_D])
            n = ti.Vector([slots[k, SLOT_N + c] for c in ti.static(range(3))])
            ca = ti.Vector([slots[k, SLOT_CA + c] for c in ti.static(range(3))])
            form.add_distance_row(ctx, S, t, 6 * i + k, ti.cast(slots[k, SLOT_A], ti.i32), ca, n, weight)
            lb = ti.cast(slots[k, SLOT_B], ti.i32)
            if lb >= 0:
                cb = ti.Vector([slots[k, SLOT_CB + c] for c in ti.static(range(3))])
                form.add_distance_row(ctx, S, t, 6 * i + k, lb, cb, n, -weight)
    zero = ti.Vector([0.0, 0.0, 0.0])
    # the dofs the solver may not move leave the rows
    form.transform_rows(ctx, S, t, 6 * i, False, ti.Vector([1.0, 0.0, 0.0, 0.0]), zero, ti.Vector([1.0, 1.0, 1.0]),
                        1.0)
    form.set_error(ctx, S, t, 6 * i, ti.Vector([err[0], err[1], err[2]]), ti.Vector([err[3], err[4], err[5]]))
    met = 1
    if dmin < margin:
        met = 0
    return met, ti.max(margin - dmin, 0.0) / task_f[row, TASK_F.pos_tol]
