"""Self-collision distance of the sphere model, one thread per env (see :mod:`engine.collision`).

Tables (numpy arrays in the engine's float dtype unless said):

- ``spheres`` (S, 5): link (as a float), centre xyz in the link frame (m), radius (m); grouped by
  link, so a link's spheres are one index range;
- ``bounds`` (L, 4): each link's bounding ball of its spheres (centre in the link frame, radius;
  radius < 0 for a link without spheres);
- ``pairs`` int32 (P, 6): link a, link b, a's sphere range [start, end), b's sphere range;
- ``pose`` (B, L, 7) link poses (pos, quat wxyz); ``world`` (B, S, 3) scratch: the sphere
  centres in the world.

Outputs ``dist`` (B,) the smallest sphere distance over the pairs (m; 1e30 without pairs) and
``which`` int32 (B,) the pair index that sets it (-1 without pairs). A pair whose bounding balls
are farther apart than the best distance so far is skipped (culling: the result is the same).
"""

import taichi as ti

from .launch import fast
from .quat import qrot

PAIR_LINK_A, PAIR_LINK_B, PAIR_A0, PAIR_A1, PAIR_B0, PAIR_B1 = range(6)


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
            local = ti.Vector([spheres[s, 1], spheres[s, 2], spheres[s, 3]])
            w = _world(pose, e, ti.cast(spheres[s, 0], ti.i32), local)
            for k in ti.static(range(3)):
                world[e, s, k] = w[k]
        best = 1e30
        arg = -1
        for p in range(pairs.shape[0]):
            la = pairs[p, PAIR_LINK_A]
            lb = pairs[p, PAIR_LINK_B]
            ca = _world(pose, e, la, ti.Vector([bounds[la, 0], bounds[la, 1], bounds[la, 2]]))
            cb = _world(pose, e, lb, ti.Vector([bounds[lb, 0], bounds[lb, 1], bounds[lb, 2]]))
            if (ca - cb).norm() - bounds[la, 3] - bounds[lb, 3] < best:
                for i in range(pairs[p, PAIR_A0], pairs[p, PAIR_A1]):
                    wi = ti.Vector([world[e, i, 0], world[e, i, 1], world[e, i, 2]])
                    for j in range(pairs[p, PAIR_B0], pairs[p, PAIR_B1]):
                        wj = ti.Vector([world[e, j, 0], world[e, j, 1], world[e, j, 2]])
                        d = (wi - wj).norm() - spheres[i, 4] - spheres[j, 4]
                        if d < best:
                            best = d
                            arg = p
        dist[e] = best
        which[e] = arg


BOX, SPHERE, CYLINDER, PLANE = 0, 1, 2, 3  # obstacle kinds (engine.collision_world.KINDS order)


@ti.func
def signed_distance(kind, size, p):
    """Signed distance (m) of point ``p`` (the shape's frame) to a shape of ``kind``: box (half
    extents), sphere (radius), cylinder (radius, half height; axis z), plane (unit normal)."""
    d = 0.0
    if kind == SPHERE:
        d = p.norm() - size[0]
    elif kind == PLANE:
        d = p.dot(size)
    else:
        q = ti.abs(p) - size
        if kind == CYLINDER:
            q = ti.Vector([ti.sqrt(p[0] * p[0] + p[1] * p[1]) - size[0], ti.abs(p[2]) - size[1], -1e30])
        outside = ti.max(q, 0.0)
        d = outside.norm() + ti.min(ti.max(q[0], ti.max(q[1], q[2])), 0.0)
    return d


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
                local = ti.Vector([spheres[s, 1], spheres[s, 2], spheres[s, 3]])
                c = _world(pose, e, ti.cast(spheres[s, 0], ti.i32), local)
                for o in range(shapes.shape[0]):
                    p = ti.Vector([shape_pose[e, o, 0], shape_pose[e, o, 1], shape_pose[e, o, 2]])
                    q = ti.Vector([shape_pose[e, o, 3], -shape_pose[e, o, 4], -shape_pose[e, o, 5],
                                   -shape_pose[e, o, 6]])  # world to the shape's frame
                    size = ti.Vector([shapes[o, 1], shapes[o, 2], shapes[o, 3]])
                    d = signed_distance(ti.cast(shapes[o, 0], ti.i32), size, qrot(q, c - p)) - spheres[s, 4]
                    if d < best:
                        best = d
                        arg_s = s
                        arg_o = o
        dist[e] = best
        which[e, 0] = arg_s
        which[e, 1] = arg_o
