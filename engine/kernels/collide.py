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
            w = _world(pose, e, ti.cast(spheres[s, 0], ti.i32), ti.Vector([spheres[s, 1], spheres[s, 2], spheres[s, 3]]))
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
