"""The exact tier of the collision checks: a lower bound of the distance between a link's pieces
(convex hulls whose union holds its geometry: :mod:`engine.collision.pieces`) and another link's
pieces or an obstacle, by GJK per pair of pieces (:mod:`engine.collision.gjk` is the same in numpy,
and says why the bound holds whatever the simplex does).

The pieces' vertices are rows of ``coll_f`` (:data:`~engine.kernels.tables.HULL_F`, link frame),
each piece's range ``[h0, h1)`` in its ``coll_i`` row (:data:`~engine.kernels.tables.PIECE_I`),
its bounding ball and the radius it is grown by (a reduced hull's: :mod:`engine.collision.hulls`)
in its ``coll_f`` row (:data:`~engine.kernels.tables.PIECE_F`), and each link's pieces ``[p0, p1)``
in its :data:`~engine.kernels.tables.LINK_C` row (empty: none). Obstacles are the primitives of
:mod:`engine.obstacle_kinds`: a plane is exact in one pass over a piece's vertices; the others are
a core (box, cylinder, point, segment) and a radius.
"""

import taichi as ti

from ..collision.gjk import FLAT, ITERATIONS, SAFETY, TINY, TOLERANCE
from ..obstacle_kinds import BOX, CAPSULE, CYLINDER, PLANE
from .collide import shape_distance, sign
from .quat import qconj, qrot
from .tables import (
    AVOID_HEAD,
    BOUND_F,
    HULL_F,
    LINK_C,
    PIECE_F,
    PIECE_I,
    bound_row,
    link_row_c,
    piece_row_f,
    piece_row_i,
)

FAR = 1e30        # m: the bound of a pair that has no hull is -FAR (the sphere distance stands alone)
# loop iterations of one GJK step beyond its pass over the vertices: the step's own, and the
# faces of its simplex (_closest)
STEP_LOOPS = 6
EXITS = 3  # loop exit tests of one bound beyond its budget (its two passes' and its last GJK's)


@ti.func
def _vertex(coll_f: ti.template(), row):
    return ti.Vector([coll_f[row, HULL_F.vertex + k] for k in ti.static(range(3))])


@ti.func
def _core_support(kind, size, p, q, d):
    """The point of an obstacle's core (posed at p, q) farthest along ``d`` (world)."""
    local = qrot(qconj(q), d)
    s = ti.Vector([0.0, 0.0, 0.0])
    if kind == BOX:
        s = ti.Vector([sign(local[0]) * size[0], sign(local[1]) * size[1], sign(local[2]) * size[2]])
    elif kind == CYLINDER:
        rho = ti.sqrt(local[0] * local[0] + local[1] * local[1])
        if rho > 1e-12:
            s[0] = local[0] / rho * size[0]
            s[1] = local[1] / rho * size[0]
        s[2] = sign(local[2]) * size[1]
    elif kind == CAPSULE:
        s[2] = sign(local[2]) * size[1]
    return p + qrot(q, s)


@ti.func
def _support(coll_f: ti.template(), a0, a1, pa, qa, kind, size, b0, b1, pb, qb, d):
    """Support of A - B along ``d``: A the hull [a0, a1); B the hull [b0, b1) when ``kind`` < 0,
    else the core of an obstacle of ``kind``. One loop over both hulls' rows (the kernels inline
    this, so one copy of the loop keeps their code small)."""
    la = qrot(qconj(qa), d)
    lb = qrot(qconj(qb), -d)
    na = a1 - a0
    nb = 0
    if kind < 0:
        nb = b1 - b0
    best_a = -FAR
    best_b = -FAR
    at_a = a0
    at_b = b0
    for r in range(ti.max(na, nb)):
        if r < na:
            s = la.dot(_vertex(coll_f, a0 + r))
            if s > best_a:
                best_a = s
                at_a = a0 + r
        if r < nb:
            s = lb.dot(_vertex(coll_f, b0 + r))
            if s > best_b:
                best_b = s
                at_b = b0 + r
    sb = ti.Vector([0.0, 0.0, 0.0])
    if kind < 0:
        sb = pb + qrot(qb, _vertex(coll_f, at_b))
    else:
        sb = _core_support(kind, size, pb, qb, -d)
    return pa + qrot(qa, _vertex(coll_f, at_a)) - sb


@ti.func
def _triangle(a, b, c):
    """(closest point to the origin of triangle a b c, its barycentric weights)."""
    ab = b - a
    ac = c - a
    d1 = -ab.dot(a)
    d2 = -ac.dot(a)
    d3 = -ab.dot(b)
    d4 = -ac.dot(b)
    d5 = -ab.dot(c)
    d6 = -ac.dot(c)
    vc = d1 * d4 - d3 * d2
    vb = d5 * d2 - d1 * d6
    va = d3 * d6 - d5 * d4
    p = a
    w = ti.Vector([1.0, 0.0, 0.0])
    if d1 <= 0 and d2 <= 0:
        pass
    elif d3 >= 0 and d4 <= d3:
        p = b
        w = ti.Vector([0.0, 1.0, 0.0])
    elif vc <= 0 and d1 >= 0 and d3 <= 0:
        t = d1 / ti.max(d1 - d3, 1e-30)
        p = a + t * ab
        w = ti.Vector([1.0 - t, t, 0.0])
    elif d6 >= 0 and d5 <= d6:
        p = c
        w = ti.Vector([0.0, 0.0, 1.0])
    elif vb <= 0 and d2 >= 0 and d6 <= 0:
        t = d2 / ti.max(d2 - d6, 1e-30)
        p = a + t * ac
        w = ti.Vector([1.0 - t, 0.0, t])
    elif va <= 0 and d4 - d3 >= 0 and d5 - d6 >= 0:
        t = (d4 - d3) / ti.max((d4 - d3) + (d5 - d6), 1e-30)
        p = b + t * (c - b)
        w = ti.Vector([0.0, 1.0 - t, t])
    else:
        total = va + vb + vc
        if total > 0:
            v = vb / total
            u = vc / total
            p = a + v * ab + u * ac
            w = ti.Vector([1.0 - v - u, v, u])
        else:  # a sliver: its nearest vertex
            if b.dot(b) < a.dot(a) and b.dot(b) <= c.dot(c):
                p = b
                w = ti.Vector([0.0, 1.0, 0.0])
            elif c.dot(c) < a.dot(a):
                p = c
                w = ti.Vector([0.0, 0.0, 1.0])
    return p, w


@ti.func
def _row(S: ti.template(), k: ti.template()):
    return ti.Vector([S[k, c] for c in ti.static(range(3))])


@ti.func
def _compact(S: ti.template(), w, n):
    """The rows of ``S`` (the first ``n``) whose weight in ``w`` is positive, in order, and their count."""
    out = ti.Matrix.zero(float, 4, 3)
    m = 0
    for k in ti.static(range(4)):
        if k < n and w[k] > 0:
            for j in ti.static(range(4)):
                if m == j:
                    for c in ti.static(range(3)):
                        out[j, c] = S[k, c]
            m += 1
    return out, m


@ti.func
def _pick(S: ti.template(), i):
    """Row ``i`` (0-3, at run time) of ``S``."""
    out = _row(S, 0)
    if i == 1:
        out = _row(S, 1)
    elif i == 2:
        out = _row(S, 2)
    elif i == 3:
        out = _row(S, 3)
    return out


@ti.func
def _closest(S: ti.template(), n):
    """(closest point to the origin of the hull of the first ``n`` (1-4) rows of ``S``, the rows
    that span it, their count, 1 when the origin is inside a tetrahedron). A triangle is a
    tetrahedron's one face, so one copy of the triangle code serves both."""
    a = _row(S, 0)
    b = _row(S, 1)
    c = _row(S, 2)
    d = _row(S, 3)
    w = ti.Vector([1.0, 0.0, 0.0, 0.0])
    p = a
    inside = 0
    if n == 2:
        ab = b - a
        denom = ab.dot(ab)
        t = 0.0
        if denom > 0:
            t = ti.min(ti.max(-a.dot(ab) / denom, 0.0), 1.0)
        p = a + t * ab
        w = ti.Vector([1.0 - t, t, 0.0, 0.0])
    elif n >= 3:
        scale = ti.max(ti.max(ti.abs(a).max(), ti.abs(b).max()), ti.max(ti.abs(c).max(), ti.abs(d).max()))
        scale = ti.max(scale, 1e-9)
        flat = 1  # a triangle: its one face
        faces = 1
        if n == 4:
            faces = 4
            flat = 0
            if ti.abs((b - a).cross(c - a).dot(d - a)) <= FLAT * scale * scale * scale:
                flat = 1
        best = FAR
        outside = 0
        for f in range(faces):  # faces (0 1 2 | 3), (0 1 3 | 2), (0 2 3 | 1), (1 2 3 | 0)
            i0 = 0
            if f == 3:
                i0 = 1
            i1 = 1
            if f >= 2:
                i1 = 2
            i2 = 3
            if f == 0:
                i2 = 2
            fa = _pick(S, i0)
            fb = _pick(S, i1)
            fc = _pick(S, i2)
            normal = (fb - fa).cross(fc - fa)
            if flat == 1 or normal.dot(-fa) * normal.dot(_pick(S, 3 - f) - fa) < 0:  # the origin beyond it
                outside = 1
                pf, wf = _triangle(fa, fb, fc)
                if pf.dot(pf) < best:
                    best = pf.dot(pf)
                    p = pf
                    for k in ti.static(range(4)):
                        wk = 0.0
                        if k == i0:
                            wk = wf[0]
                        elif k == i1:
                            wk = wf[1]
                        elif k == i2:
                            wk = wf[2]
                        w[k] = wk
        if outside == 0:
            inside = 1
            p = ti.Vector([0.0, 0.0, 0.0])
    out, m = _compact(S, w, n)
    return p, out, m, inside


@ti.func
def lower_bound(coll_f: ti.template(), a0, a1, pa, qa, kind, size, b0, b1, pb, qb, start, stop, steps):
    """(A lower bound (m) of the distance between the hull [a0, a1) posed at pa, qa and the hull
    [b0, b1) at pb, qb (``kind`` < 0) or an obstacle core of ``kind`` (its radius not taken off):
    at most 0 when they overlap; tight to TOLERANCE unless it reached ``stop`` first or ran its
    ``steps`` (at most ITERATIONS); the support evaluations it made). ``start``: a direction from
    A toward B."""
    S = ti.Matrix.zero(float, 4, 3)
    v = ti.Vector([0.0, 0.0, 0.0])
    n = 0
    lower = -FAR
    done = 0
    it = 0  # support evaluations: the first along ``start``, then one per step
    while it < ti.min(steps, ITERATIONS) + 1 and done == 0:
        d = start
        norm = 0.0
        if it > 0:
            vv = v.dot(v)
            if vv <= TINY:  # the sets touch: what was proven stands (at most 0, rounding aside)
                done = 1
            norm = ti.sqrt(ti.max(vv, TINY))
            d = -v / norm
        if done == 0:
            w = _support(coll_f, a0, a1, pa, qa, kind, size, b0, b1, pb, qb, d)
            it += 1
            if n == 0:
                v = w
                for c in ti.static(range(3)):
                    S[0, c] = w[c]
                n = 1
            else:
                lower = ti.max(lower, -d.dot(w))
                if lower >= stop or norm - lower <= TOLERANCE:
                    done = 1
                else:
                    for k in ti.static(range(4)):
                        if n == k:
                            for c in ti.static(range(3)):
                                S[k, c] = w[c]
                    n += 1
                    p, S2, m, inside = _closest(S, n)
                    v = p
                    S = S2
                    n = m
                    if inside == 1:  # the origin inside a tetrahedron: the sets overlap, or rounding says so
                        done = 1
    return lower, it


@ti.func
def _ball_center(coll_f: ti.template(), row):
    return ti.Vector([coll_f[row, PIECE_F.center + k] for k in ti.static(range(3))])


@ti.func
def _near(coll_f: ti.template(), ff, ia, lb, pa, qa, pb, qb, kind, size, cb, reach_b):
    """(The centre of piece ``ia``'s ball (its link posed at pa, qa) in the frame of what it is
    measured against (posed at pb, qb), and a lower bound (m) of its distance to it: link ``lb``'s
    pieces, all within ``reach_b`` of ``cb`` (b's frame), or, when ``lb`` < 0, an obstacle of
    ``kind`` and ``size`` (its distance at the ball's centre less the ball's radius).) ``ff``: the
    first piece row of coll_f."""
    local = qrot(qconj(qb), pa + qrot(qa, _ball_center(coll_f, ff + ia)) - pb)
    out = 0.0
    if lb >= 0:
        out = (local - cb).norm() - coll_f[ff + ia, PIECE_F.radius] - reach_b
    else:
        dist, _ = shape_distance(kind, size, local)
        out = dist - coll_f[ff + ia, PIECE_F.radius]
    return local, out


@ti.func
def _piece_bound(coll_i: ti.template(), coll_f: ti.template(), fi, ff, ia, ib, lb, pa, qa, pb, qb, kind, size,
                 radius, start, stop, budget):
    """(A lower bound (m) of the distance between piece ``ia`` and piece ``ib`` of link ``lb`` or,
    when ``lb`` < 0, an obstacle (see :func:`_near`; ``radius``: the obstacle's radius, taken off
    with the pieces' grown radii and :data:`SAFETY`), -FAR where it ran no step; its loop
    iterations; 1 when ``budget`` allowed it to run.) ``fi``, ``ff``: the first piece rows of
    coll_i, coll_f; ``start``: a direction from the piece toward the other. A plane is exact in
    one pass over the piece's vertices."""
    a0 = coll_i[fi + ia, PIECE_I.h0]
    a1 = coll_i[fi + ia, PIECE_I.h1]
    grown = coll_f[ff + ia, PIECE_F.grown]
    b0 = 0
    b1 = 0
    shape = kind
    if lb >= 0:
        shape = -1
        b0 = coll_i[fi + ib, PIECE_I.h0]
        b1 = coll_i[fi + ib, PIECE_I.h1]
        grown += coll_f[ff + ib, PIECE_F.grown]
    per_step = ti.max(a1 - a0, b1 - b0) + STEP_LOOPS
    out = -FAR
    work = 0
    ran = 0
    if shape == PLANE:
        if budget >= per_step:
            normal = qrot(qb, size)
            low = FAR
            for r in range(a0, a1):
                low = ti.min(low, normal.dot(pa + qrot(qa, _vertex(coll_f, r)) - pb))
            out = low - grown - SAFETY
            work = per_step
            ran = 1
    else:
        steps = budget // per_step - 1  # the first support is a step's worth too
        if steps >= 1:
            low, used = lower_bound(coll_f, a0, a1, pa, qa, shape, size, b0, b1, pb, qb, start,
                                    stop + radius + grown + SAFETY, steps)
            out = low - radius - grown - SAFETY
            work = used * per_step
            ran = 1
    return out, work, ran


@ti.func
def bound(coll_i: ti.template(), coll_f: ti.template(), n_pairs, la, pa, qa, lb, pb, qb, kind, size, stop, budget):
    """(A lower bound (m) of the distance between link ``la``'s pieces (posed at pa, qa) and link
    ``lb``'s (at pb, qb) or, when ``lb`` < 0, an obstacle of ``kind`` and packed ``size`` (posed
    at pb, qb), less :data:`SAFETY`; -FAR when a link has no pieces, ``budget`` does not allow
    every piece pair it needs its steps, or it does not prove them apart. The loop iterations it
    ran, at most ``budget`` + :data:`EXITS`.)

    The bound is the least over the piece pairs of their GJK bounds, searched only as far as
    ``stop`` (raised to :data:`TOLERANCE`: a bound at or below 0 proves nothing, so a pair is
    searched until it is proven apart even where the caller's cut is below 0). A first pass finds
    the piece pair nearest by its balls, which is searched first; then every other pair whose balls
    are nearer than the least bound so far (their gap is a lower bound too, so the others cannot
    lower it), a piece of ``la`` passed over whole where its ball is that far from the ball about
    ``lb``'s link ball centre that holds all its pieces (``BOUND_F.reach``). One call site of GJK
    for both kinds of pair, so the kernels that inline it stay small."""
    n_links = coll_i[0, AVOID_HEAD.n_links]
    n_shapes = coll_i[0, AVOID_HEAD.n_shapes]
    n_spheres = coll_i[0, AVOID_HEAD.n_spheres]
    fi = piece_row_i(n_pairs, n_links, n_shapes, 0)
    ff = piece_row_f(n_spheres, n_links, n_shapes, 0)
    row = link_row_c(n_pairs, la)
    a0 = coll_i[row, LINK_C.p0]
    a1 = coll_i[row, LINK_C.p1]
    b0 = 0
    b1 = 1  # an obstacle: one piece
    radius = 0.0
    cb = ti.Vector([0.0, 0.0, 0.0])
    reach_b = 0.0
    if lb >= 0:
        row = link_row_c(n_pairs, lb)
        b0 = coll_i[row, LINK_C.p0]
        b1 = coll_i[row, LINK_C.p1]
        brow = bound_row(n_spheres, lb)
        cb = ti.Vector([coll_f[brow, BOUND_F.center + k] for k in ti.static(range(3))])
        reach_b = coll_f[brow, BOUND_F.reach]
    elif kind != BOX and kind != CYLINDER and kind != PLANE:  # a sphere's or a capsule's radius
        radius = size[0]
    best = ti.max(stop, TOLERANCE)  # proven at least this far apart: enough
    work = 0
    failed = 0
    if a1 <= a0 or b1 <= b0:
        failed = 1
    first_a = -1  # the piece pair nearest by its balls, where nearer than ``best``
    first_b = -1
    near = best
    na = a1 - a0
    for t in range(2 * na + 1):  # pass 1: t < na; pass 2: the first pair (t = na), then the others
        if failed == 1:
            break
        second = 0
        ia = a0 + t
        lo = b0
        hi = b1
        if t >= na:
            second = 1
            ia = a0 + t - na - 1
            if t == na:
                ia = first_a
                lo = first_b
                hi = first_b + 1
        if second == 1 and first_a < 0:
            break  # every piece pair is at least ``best`` apart by its balls
        if work >= budget:
            failed = 1
            break
        work += 1
        local, g = _near(coll_f, ff, ia, lb, pa, qa, pb, qb, kind, size, cb, reach_b)
        if g < ti.select(second == 1, best, near):
            ra = coll_f[ff + ia, PIECE_F.radius]
            for ib in range(lo, hi):
                if work >= budget:
                    failed = 1
                    break
                work += 1
                gb = g
                to = -local  # toward the obstacle's origin
                if lb >= 0:
                    to = _ball_center(coll_f, ff + ib) - local
                    gb = to.norm() - ra - coll_f[ff + ib, PIECE_F.radius]
                if second == 0:
                    if gb < near:
                        near = gb
                        first_a = ia
                        first_b = ib
                elif gb < best and (t == na or ia != first_a or ib != first_b):
                    h, used, ran = _piece_bound(coll_i, coll_f, fi, ff, ia, ib, lb, pa, qa, pb, qb, kind, size,
                                                radius, qrot(qb, to), best, budget - work)
                    work += used
                    best = ti.min(best, ti.max(gb, h))
                    if ran == 0 or best <= 0:  # out of budget, or a piece pair not proven apart
                        failed = 1
                        break
    out = -FAR
    if failed == 0:
        out = _separated(best)
    return out, work


@ti.func
def pair_bound(coll_i: ti.template(), coll_f: ti.template(), n_pairs, la, pa, qa, lb, pb, qb, stop, budget):
    """:func:`bound` of links ``la`` and ``lb``."""
    return bound(coll_i, coll_f, n_pairs, la, pa, qa, lb, pb, qb, -1, ti.Vector([0.0, 0.0, 0.0]), stop, budget)


@ti.func
def _separated(bound):
    """``bound`` where it proves the shapes apart, else -FAR: in contact the spheres' distance
    stands alone (a bound at or below 0 depends on where GJK stopped; the spheres' does not)."""
    out = -FAR
    if bound > 0:
        out = bound
    return out


@ti.func
def shape_bound(coll_i: ti.template(), coll_f: ti.template(), n_pairs, link, pl, ql, kind, size, sp, sq, stop,
                budget):
    """:func:`bound` of ``link`` and an obstacle of ``kind`` and ``size`` posed at sp, sq."""
    return bound(coll_i, coll_f, n_pairs, link, pl, ql, -1, sp, sq, kind, size, stop, budget)
