"""Signed distances to the obstacle shapes, in taichi (the collision avoidance search of
:mod:`engine.kernels.avoid` reads them; :func:`engine.collision.world.signed_distance` is the same in
numpy)."""

import taichi as ti

from ..obstacle_kinds import BOX, CAPSULE, PLANE, SPHERE  # the else branch is CYLINDER


@ti.func
def sign(v):
    out = 1.0
    if v < 0:
        out = -1.0
    return out


@ti.func
def shape_distance(kind, size, p):
    """(signed distance (m), its gradient: a unit vector) of point ``p`` (the shape's frame) to a
    shape of ``kind``: box (half extents), sphere (radius), cylinder (radius, half height; axis z),
    plane (unit normal; the half-space behind it is inside), capsule (radius, half length of the
    segment between its caps' centres; axis z). Negative inside; inside a box or a cylinder the
    gradient points to the nearest face."""
    d = 0.0
    g = ti.Vector([0.0, 0.0, 1.0])
    if kind == SPHERE:
        r = p.norm()
        d = r - size[0]
        if r > 1e-12:
            g = p / r
    elif kind == PLANE:
        d = p.dot(size)
        g = size
    elif kind == BOX:
        q = ti.abs(p) - size
        s = ti.Vector([sign(p[0]), sign(p[1]), sign(p[2])])
        outside = ti.max(q, 0.0)
        gap = outside.norm()
        if gap > 0:
            d = gap
            g = s * outside / gap
        elif q[0] >= q[1] and q[0] >= q[2]:
            d = q[0]
            g = ti.Vector([s[0], 0.0, 0.0])
        elif q[1] >= q[2]:
            d = q[1]
            g = ti.Vector([0.0, s[1], 0.0])
        else:
            d = q[2]
            g = ti.Vector([0.0, 0.0, s[2]])
    elif kind == CAPSULE:  # a ball swept along z from -size[1] to size[1]
        off = p - ti.Vector([0.0, 0.0, ti.min(ti.max(p[2], -size[1]), size[1])])
        r = off.norm()
        d = r - size[0]
        if r > 1e-12:
            g = off / r
    else:  # CYLINDER
        rho = ti.sqrt(p[0] * p[0] + p[1] * p[1])
        radial = ti.Vector([1.0, 0.0])
        if rho > 1e-12:
            radial = ti.Vector([p[0], p[1]]) / rho
        q0 = rho - size[0]
        q1 = ti.abs(p[2]) - size[1]
        sz = sign(p[2])
        if q0 > 0 or q1 > 0:
            a = ti.max(q0, 0.0)
            b = ti.max(q1, 0.0)
            d = ti.sqrt(a * a + b * b)
            g = ti.Vector([a * radial[0], a * radial[1], b * sz]) / d
        elif q0 > q1:
            d = q0
            g = ti.Vector([radial[0], radial[1], 0.0])
        else:
            d = q1
            g = ti.Vector([0.0, 0.0, sz])
    return d, g
