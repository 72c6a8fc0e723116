"""The exact tier of the collision checks: a lower bound of the distance between a link's convex
hull and another link's hull or an obstacle, by GJK (:mod:`engine.collision.gjk` is the same in
numpy, and says why the bound holds whatever the simplex does).

The hulls' vertices are rows of ``coll_f`` (:data:`~engine.kernels.tables.HULL_F`, link frame),
each link's range ``[h0, h1)`` in its ``coll_i`` row (:data:`~engine.kernels.tables.LINK_C`; empty:
no hull) and the radius it is grown by in its bounding ball's row (a reduced hull's:
:mod:`engine.collision.hulls`). Obstacles are the primitives of :mod:`engine.obstacle_kinds`: a plane is exact in one
pass over the hull's vertices; the others are a core (box, cylinder, point, segment) and a radius.
"""

import taichi as ti

from ..collision.gjk import FLAT, ITERATIONS, SAFETY, TINY, TOLERANCE
from ..obstacle_kinds import BOX, CAPSULE, CYLINDER, PLANE
from .quat import qconj, qrot
from .tables import AVOID_HEAD, BOUND_F, HULL_F, LINK_C, bound_row, link_row_c

FAR = 1e30        # m: the bound of a pair that has no hull is -FAR (the sphere distance stands alone)


@ti.func
def _vertex(coll_f: ti.template(), row):
    return ti.Vector([coll_f[row, HULL_F.vertex + k] for k in ti.static(range(3))])


@ti.func
def _hull_support(coll_f: ti.template(), h0, h1, p, q, d):
    """The vertex of the hull in rows [h0, h1) (posed at p, q) farthest along ``d`` (world)."""
    local = qrot(qconj(q), d)
    best = -FAR
    at = h0
    for r in range(h0, h1):
        s = local.dot(_vertex(coll_f, r))
        if s > best:
            best = s
            at = r
    return p + qrot(q, _vertex(coll_f, at))


@ti.func
def _sign(v):
    out = 1.0
    if v < 0:
        out = -1.0
    return out


@ti.func
def _core_support(kind, size, p, q, d):
    """The point of an obstacle's core (posed at p, q) farthest along ``d`` (world)."""
    local = qrot(qconj(q), d)
    s = ti.Vector([0.0, 0.0, 0.0])
    if kind == BOX:
        s = ti.Vector([_sign(local[0]) * size[0], _sign(local[1]) * size[1], _sign(local[2]) * size[2]])
    elif kind == CYLINDER:
        rho = ti.sqrt(local[0] * local[0] + local[1] * local[1])
        if rho > 1e-12:
            s[0] = local[0] / rho * size[0]
            s[1] = local[1] / rho * size[0]
        s[2] = _sign(local[2]) * size[1]
    elif kind == CAPSULE:
        s[2] = _sign(local[2]) * size[1]
    return p + qrot(q, s)


@ti.func
def _support(coll_f: ti.template(), a0, a1, pa, qa, kind, size, b0, b1, pb, qb, d):
    """Support of A - B along ``d``: A the hull [a0, a1); B the hull [b0, b1) when ``kind`` < 0,
    else the core of an obstacle of ``kind``."""
    sb = ti.Vector([0.0, 0.0, 0.0])
    if kind < 0:
        sb = _hull_support(coll_f, b0, b1, pb, qb, -d)
    else:
        sb = _core_support(kind, size, pb, qb, -d)
    return _hull_support(coll_f, a0, a1, pa, qa, d) - sb


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
def _closest(S: ti.template(), n):
    """(closest point to the origin of the hull of the first ``n`` (1-4) rows of ``S``, the rows
    that span it, their count, 1 when the origin is inside a tetrahedron)."""
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
    elif n == 3:
        p3, w3 = _triangle(a, b, c)
        p = p3
        w = ti.Vector([w3[0], w3[1], w3[2], 0.0])
    elif n == 4:
        scale = ti.max(ti.max(ti.abs(a).max(), ti.abs(b).max()), ti.max(ti.abs(c).max(), ti.abs(d).max()))
        scale = ti.max(scale, 1e-9)
        flat = ti.abs((b - a).cross(c - a).dot(d - a)) <= FLAT * scale * scale * scale
        best = FAR
        outside = 0
        for f in ti.static(range(4)):  # faces (0 1 2 | 3), (0 1 3 | 2), (0 2 3 | 1), (1 2 3 | 0)
            i0, i1, i2, io = ti.static([(0, 1, 2, 3), (0, 1, 3, 2), (0, 2, 3, 1), (1, 2, 3, 0)][f])
            fa = _row(S, i0)
            fb = _row(S, i1)
            fc = _row(S, i2)
            normal = (fb - fa).cross(fc - fa)
            if flat or normal.dot(-fa) * normal.dot(_row(S, io) - fa) < 0:  # the origin beyond this face
                outside = 1
                pf, wf = _triangle(fa, fb, fc)
                if pf.dot(pf) < best:
                    best = pf.dot(pf)
                    p = pf
                    w = ti.Vector([0.0, 0.0, 0.0, 0.0])
                    w[i0] = wf[0]
                    w[i1] = wf[1]
                    w[i2] = wf[2]
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
    v = _support(coll_f, a0, a1, pa, qa, kind, size, b0, b1, pb, qb, start)
    S = ti.Matrix.zero(float, 4, 3)
    for c in ti.static(range(3)):
        S[0, c] = v[c]
    n = 1
    lower = -FAR
    done = 0
    it = 0
    while it < ti.min(steps, ITERATIONS) and done == 0:
        vv = v.dot(v)
        if vv <= TINY:  # the sets touch: what was proven stands (at most 0, rounding aside)
            done = 1
        else:
            norm = ti.sqrt(vv)
            u = v / norm
            w = _support(coll_f, a0, a1, pa, qa, kind, size, b0, b1, pb, qb, -u)
            lower = ti.max(lower, u.dot(w))
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
        it += 1
    return lower, it + 1


@ti.func
def hull_range(coll_i: ti.template(), coll_f: ti.template(), n_pairs, link):
    """(first row, end row, radius (m)) of ``link``'s hull in ``coll_f``."""
    row = link_row_c(n_pairs, link)
    grown = coll_f[bound_row(coll_i[0, AVOID_HEAD.n_spheres], link), BOUND_F.hull_radius]
    return coll_i[row, LINK_C.h0], coll_i[row, LINK_C.h1], grown


@ti.func
def pair_bound(coll_i: ti.template(), coll_f: ti.template(), n_pairs, la, pa, qa, lb, pb, qb, stop, budget):
    """(A lower bound (m) of the distance between links ``la`` and ``lb``'s hulls, less
    :data:`SAFETY` (-FAR when either has none, ``budget`` does not allow one step, or it does
    not prove them apart); the loop
    iterations it ran, at most ``budget``)."""
    a0, a1, ga = hull_range(coll_i, coll_f, n_pairs, la)
    b0, b1, gb = hull_range(coll_i, coll_f, n_pairs, lb)
    out = -FAR
    work = 0
    per_step = (a1 - a0) + (b1 - b0) + 2  # one support of each hull, and the step itself
    steps = budget // per_step - 1  # the first support is a step's worth too
    if a1 > a0 and b1 > b0 and steps >= 1:
        low, used = lower_bound(coll_f, a0, a1, pa, qa, -1, ti.Vector([0.0, 0.0, 0.0]), b0, b1, pb, qb, pb - pa,
                                stop + ga + gb + SAFETY, steps)
        out = _separated(low - ga - gb - SAFETY)
        work = used * per_step
    return out, work


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
    """(A lower bound (m) of the distance between ``link``'s hull and an obstacle, less
    :data:`SAFETY` (-FAR when the link has none, ``budget`` does not allow one step, or it does
    not prove them apart); the loop
    iterations it ran, at most ``budget``). A plane (unit normal ``size`` in its frame, through
    ``sp``) is exact: the lowest vertex."""
    h0, h1, grown = hull_range(coll_i, coll_f, n_pairs, link)
    out = -FAR
    work = 0
    per_step = (h1 - h0) + 2
    if h1 > h0:
        if kind == PLANE:
            if budget >= per_step:
                normal = qrot(sq, size)
                low = FAR
                for r in range(h0, h1):
                    low = ti.min(low, normal.dot(pl + qrot(ql, _vertex(coll_f, r)) - sp))
                out = _separated(low - grown - SAFETY)
                work = per_step
        else:
            steps = budget // per_step - 1
            if steps >= 1:
                radius = 0.0
                if kind != BOX and kind != CYLINDER:  # a sphere's or a capsule's radius
                    radius = size[0]
                low, used = lower_bound(coll_f, h0, h1, pl, ql, kind, size, 0, 0, sp, sq, sp - pl,
                                        stop + radius + grown + SAFETY, steps)
                out = _separated(low - radius - grown - SAFETY)
                work = used * per_step
    return out, work
