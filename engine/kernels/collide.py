"""Self-collision distance of the sphere model, one thread per env (see :mod:`engine.collision`).

Tables (numpy arrays in the engine's float dtype unless said):

- ``spheres`` (S, SPHERE_F.width): link (as a float), centre in the link frame (m), radius (m);
  grouped by link, so a link's spheres are one index range;
- ``bounds`` (L, BOUND_F.width): each link's bounding ball of its spheres (centre in the link
  frame, radius; radius < 0 for a link without spheres);
- ``pairs`` int32 (P, PAIR_I.width): link a, link b, a's sphere range [start, end), b's;
- ``pose`` (B, L, 7) link poses (pos, quat wxyz); ``world`` (B, S, 3) scratch: the sphere
  centres in the world.

Outputs ``dist`` (B,) the smallest sphere distance over the pairs (m; 1e30 without pairs) and
``which`` int32 (B,) the pair index that sets it (-1 without pairs). A pair whose bounding balls
are farther apart than the best distance so far is skipped (culling: the result is the same).
"""

import taichi as ti

from .launch import fast
from .quat import qrot
from .tables import BOUND_F, PAIR_I, SPHERE_F


@ti.func
def _world(pose: ti.template(), e, link, c):
    p = ti.Vector([pose[e, link, 0], pose[e, link, 1], pose[e, link, 2]])
    q = ti.Vector([pose[e, link, 3], pose[e, link, 4], pose[e, link, 5], pose[e, link, 6]])
    return p + qrot(q, c)


@fast
@ti.kernel
def self_distance(pose: ti.types.ndarray(), spheres: ti.types.ndarray(), bounds: ti.types.ndarray(),
                  pairs: ti.types.ndarray(), world: ti.types.ndarray(), dist: ti.types.ndarray(),
                  which: ti.types.ndarray(), serial: ti.template()):
    """See the module docstring."""
    ti.loop_config(serialize=serial)
    for e in range(pose.shape[0]):
        for s in range(spheres.shape[0]):
            local = ti.Vector([spheres[s, SPHERE_F.center + k] for k in ti.static(range(3))])
            w = _world(pose, e, ti.cast(spheres[s, SPHERE_F.link], ti.i32), local)
            for k in ti.static(range(3)):
                world[e, s, k] = w[k]
        best = 1e30
        arg = -1
        for p in range(pairs.shape[0]):
            la = pairs[p, PAIR_I.link_a]
            lb = pairs[p, PAIR_I.link_b]
            ca = _world(pose, e, la, ti.Vector([bounds[la, BOUND_F.center + k] for k in ti.static(range(3))]))
            cb = _world(pose, e, lb, ti.Vector([bounds[lb, BOUND_F.center + k] for k in ti.static(range(3))]))
            if (ca - cb).norm() - bounds[la, BOUND_F.radius] - bounds[lb, BOUND_F.radius] < best:
                for i in range(pairs[p, PAIR_I.a0], pairs[p, PAIR_I.a1]):
                    wi = ti.Vector([world[e, i, 0], world[e, i, 1], world[e, i, 2]])
                    for j in range(pairs[p, PAIR_I.b0], pairs[p, PAIR_I.b1]):
                        wj = ti.Vector([world[e, j, 0], world[e, j, 1], world[e, j, 2]])
                        d = (wi - wj).norm() - spheres[i, SPHERE_F.radius] - spheres[j, SPHERE_F.radius]
                        if d < best:
                            best = d
                            arg = p
        dist[e] = best
        which[e] = arg


BOX, SPHERE, CYLINDER, PLANE = 0, 1, 2, 3  # obstacle kinds (engine.collision_world.KINDS order)


@ti.func
def _sign(v):
    out = 1.0
    if v < 0:
        out = -1.0
    return out


@ti.func
def shape_distance(kind, size, p):
    """(signed distance (m), its gradient: a unit vector) of point ``p`` (the shape's frame) to a
    shape of ``kind``: box (half extents), sphere (radius), cylinder (radius, half height; axis z),
    plane (unit normal; the half-space behind it is inside). Negative inside; inside a box or a
    cylinder the gradient points to the nearest face."""
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
        s = ti.Vector([_sign(p[0]), _sign(p[1]), _sign(p[2])])
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
    else:  # CYLINDER
        rho = ti.sqrt(p[0] * p[0] + p[1] * p[1])
        radial = ti.Vector([1.0, 0.0])
        if rho > 1e-12:
            radial = ti.Vector([p[0], p[1]]) / rho
        q0 = rho - size[0]
        q1 = ti.abs(p[2]) - size[1]
        sz = _sign(p[2])
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


@fast
@ti.kernel
def world_distance(pose: ti.types.ndarray(), spheres: ti.types.ndarray(), checked: ti.types.ndarray(),
                   shapes: ti.types.ndarray(), shape_pose: ti.types.ndarray(), dist: ti.types.ndarray(),
                   which: ti.types.ndarray(), serial: ti.template()):
    """Smallest distance ``dist`` (B,) m between the robot's spheres (``spheres`` as above; only
    those with ``checked`` int32 (S,) 1) and obstacles ``shapes`` (O, 4): kind, size (3), posed per
    env at ``shape_pose`` (B, O, 7); ``which`` int32 (B, 2): the sphere and obstacle that set it
    (-1 without any; dist 1e30)."""
    ti.loop_config(serialize=serial)
    for e in range(pose.shape[0]):
        best = 1e30
        arg_s = -1
        arg_o = -1
        for s in range(spheres.shape[0]):
            if checked[s] == 1:
                local = ti.Vector([spheres[s, SPHERE_F.center + k] for k in ti.static(range(3))])
                c = _world(pose, e, ti.cast(spheres[s, SPHERE_F.link], ti.i32), local)
                for o in range(shapes.shape[0]):
                    p = ti.Vector([shape_pose[e, o, 0], shape_pose[e, o, 1], shape_pose[e, o, 2]])
                    q = ti.Vector([shape_pose[e, o, 3], -shape_pose[e, o, 4], -shape_pose[e, o, 5],
                                   -shape_pose[e, o, 6]])  # world to the shape's frame
                    size = ti.Vector([shapes[o, 1], shapes[o, 2], shapes[o, 3]])
                    d = shape_distance(ti.cast(shapes[o, 0], ti.i32), size, qrot(q, c - p))[0]
                    d -= spheres[s, SPHERE_F.radius]
                    if d < best:
                        best = d
                        arg_s = s
                        arg_o = o
        dist[e] = best
        which[e, 0] = arg_s
        which[e, 1] = arg_o
