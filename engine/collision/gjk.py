"""A lower bound of the distance between two convex sets, by GJK, in numpy: the twin of
:mod:`engine.kernels.gjk` (the kernels' exact tier of the collision checks), used where a software
Vulkan device would stop the kernel's loops, and as the tests' reference of that kernel.

The sets are given by their support maps (``support(d)``: the point of the set farthest along
``d``). GJK walks a simplex of points of the difference ``C = A - B`` toward the origin; at any
point ``v`` of it, every ``x`` of ``C`` has ``u . x >= u . w`` for ``u = v / |v|`` and ``w`` the
support of ``C`` along ``-u``, so ``u . w`` is a lower bound of the distance ``min |x|`` *whatever*
``v`` is. That is what makes the result safe to prove clearance with: a poor simplex step costs
tightness, never soundness. The search stops when the bound is within :data:`TOLERANCE` of
``|v|`` (an upper bound), reaches ``stop`` (the caller needs no more), or after :data:`ITERATIONS`.
When the sets overlap it is at most 0 (rounding aside); the checks then take the spheres'
distance, which says how deep (a bound at or below 0 proves nothing: :func:`pair_bound`).

Shapes (m): a hull is its vertices ``(n, 3)``; an obstacle primitive is a *core* (a box, a
cylinder, a point, a segment) and a radius (a sphere is a point and its radius, a capsule a
segment and its radius), the sizes packed as :mod:`engine.obstacle_kinds` packs them.
"""

from __future__ import annotations

import numpy as np

from ..obstacle_kinds import BOX, CAPSULE, CYLINDER, SPHERE
from ..transforms import quat_rotate_unit

ITERATIONS = 32   # GJK steps at most per pair
TOLERANCE = 2e-5  # m: stop once the lower bound is within this of the upper one
TINY = 1e-12      # m^2: a simplex point this close to the origin: the sets touch
SAFETY = 1e-5     # m: taken off every hull bound, for the float32 link poses and vertices of the kernels
# a tetrahedron flatter than this (volume over the cube of its largest coordinate) counts as flat:
# its closest point is the nearest of its faces' (float32 cannot tell the origin's side of a face
# through a nearly flat one, which happens as the search converges)
FLAT = 1e-4


def _conj(q):
    return np.asarray(q, float) * np.array([1.0, -1.0, -1.0, -1.0])


def hull_support(vertices: np.ndarray, pos, quat):
    """Support map of the hull of ``vertices (n, 3)`` (link frame) posed at ``pos``, ``quat``."""
    inverse = _conj(quat)

    def support(d):
        local = quat_rotate_unit(inverse, np.asarray(d, float))
        far = vertices[int(np.argmax(vertices @ local))]
        return np.asarray(pos, float) + quat_rotate_unit(np.asarray(quat, float), far)
    return support


def core_support(code: int, size, pos, quat):
    """(support map of an obstacle's core, its radius (m)) for obstacle code ``code`` (not a plane)."""
    size = np.asarray(size, float)
    inverse = _conj(quat)

    def support(d):
        local = quat_rotate_unit(inverse, np.asarray(d, float))
        sign = np.where(local >= 0.0, 1.0, -1.0)
        if code == BOX:
            p = sign * size
        elif code == CYLINDER:
            rho = np.hypot(local[0], local[1])
            radial = local[:2] / rho * size[0] if rho > 1e-12 else np.zeros(2)
            p = np.array([radial[0], radial[1], sign[2] * size[1]])
        elif code == CAPSULE:
            p = np.array([0.0, 0.0, sign[2] * size[1]])
        else:  # SPHERE: its centre
            p = np.zeros(3)
        return np.asarray(pos, float) + quat_rotate_unit(np.asarray(quat, float), p)
    radius = float(size[0]) if code in (SPHERE, CAPSULE) else 0.0
    return support, radius


def _closest_triangle(a, b, c):
    """(closest point to the origin of triangle a b c, its barycentric weights (3,))."""
    ab, ac = b - a, c - a
    d1, d2 = ab @ -a, ac @ -a
    if d1 <= 0 and d2 <= 0:
        return a, np.array([1.0, 0.0, 0.0])
    d3, d4 = ab @ -b, ac @ -b
    if d3 >= 0 and d4 <= d3:
        return b, np.array([0.0, 1.0, 0.0])
    vc = d1 * d4 - d3 * d2
    if vc <= 0 and d1 >= 0 and d3 <= 0:
        t = d1 / max(d1 - d3, 1e-30)
        return a + t * ab, np.array([1 - t, t, 0.0])
    d5, d6 = ab @ -c, ac @ -c
    if d6 >= 0 and d5 <= d6:
        return c, np.array([0.0, 0.0, 1.0])
    vb = d5 * d2 - d1 * d6
    if vb <= 0 and d2 >= 0 and d6 <= 0:
        t = d2 / max(d2 - d6, 1e-30)
        return a + t * ac, np.array([1 - t, 0.0, t])
    va = d3 * d6 - d5 * d4
    if va <= 0 and d4 - d3 >= 0 and d5 - d6 >= 0:
        t = (d4 - d3) / max((d4 - d3) + (d5 - d6), 1e-30)
        return b + t * (c - b), np.array([0.0, 1 - t, t])
    total = va + vb + vc
    if total <= 0:  # degenerate (a sliver): the best vertex
        k = int(np.argmin([a @ a, b @ b, c @ c]))
        w = np.zeros(3)
        w[k] = 1.0
        return (a, b, c)[k], w
    v, w = vb / total, vc / total
    return a + v * ab + w * ac, np.array([1 - v - w, v, w])


def closest_on_simplex(points: list) -> tuple[np.ndarray, list, bool]:
    """(closest point to the origin of the hull of 1-4 ``points``, the points that span it, whether
    the origin is inside a tetrahedron)."""
    n = len(points)
    if n == 1:
        return points[0], points, False
    if n == 2:
        a, b = points
        ab = b - a
        denom = ab @ ab
        t = 0.0 if denom <= 0 else min(max(-(a @ ab) / denom, 0.0), 1.0)
        kept = [p for p, w in zip(points, (1 - t, t)) if w > 0]
        return a + t * ab, kept, False
    if n == 3:
        p, w = _closest_triangle(*points)
        return p, [q for q, k in zip(points, w) if k > 0], False
    best, kept, outside = None, None, False
    p0, p1, p2, p3 = points
    volume = np.cross(p1 - p0, p2 - p0) @ (p3 - p0)
    scale = max(float(np.abs(np.asarray(points)).max()), 1e-9)
    flat = abs(volume) <= FLAT * scale ** 3  # a flat tetrahedron: its faces are all that count
    for face, opposite in (((0, 1, 2), 3), ((0, 1, 3), 2), ((0, 2, 3), 1), ((1, 2, 3), 0)):
        a, b, c = (points[i] for i in face)
        normal = np.cross(b - a, c - a)
        if flat or (normal @ -a) * (normal @ (points[opposite] - a)) < 0:  # the origin beyond this face
            outside = True
            p, w = _closest_triangle(a, b, c)
            if best is None or p @ p < best @ best:
                best, kept = p, [q for q, k in zip((a, b, c), w) if k > 0]
    if not outside:
        return np.zeros(3), points, True
    return best, kept, False


def lower_bound(support_a, support_b, start, stop: float = np.inf) -> float:
    """A lower bound (m) of the distance between convex sets A and B given by support maps (at most
    0 when they overlap), tight to :data:`TOLERANCE` unless it reached ``stop`` first. ``start``: a
    direction from A toward B (a good first guess shortens the search)."""

    def support(d):  # of A - B
        return support_a(d) - support_b(-d)

    v = support(np.asarray(start, float))
    simplex = [v]
    lower = -np.inf
    for _ in range(ITERATIONS):
        vv = float(v @ v)
        if vv <= TINY:  # the sets touch: what was proven stands
            return lower
        norm = np.sqrt(vv)
        u = v / norm
        w = support(-u)
        lower = max(lower, float(u @ w))
        if lower >= stop or norm - lower <= TOLERANCE:
            break
        v, simplex, inside = closest_on_simplex(simplex + [w])
        if inside:  # the origin inside a tetrahedron: the sets overlap, or rounding says so
            return lower
    return lower


def pair_bound(hull_a, pose_a: np.ndarray, hull_b, pose_b: np.ndarray) -> float:
    """A lower bound (m) of the distance between two hulls (:class:`~engine.collision.hulls.Hull`,
    link frames) at link poses ``(7,)`` (pos, quat wxyz), less :data:`SAFETY`, or -inf where it
    does not prove them apart: the kernels' bound of a link pair."""
    pa, pb = np.asarray(pose_a, float), np.asarray(pose_b, float)
    low = lower_bound(hull_support(hull_a.vertices, pa[:3], pa[3:]), hull_support(hull_b.vertices, pb[:3], pb[3:]),
                      pb[:3] - pa[:3])
    return _separated(low - hull_a.radius - hull_b.radius - SAFETY)


def _separated(bound: float) -> float:
    """``bound`` where it proves the shapes apart, else -inf: in contact the spheres' distance
    stands alone (a bound at or below 0 depends on where GJK stopped; the spheres' does not)."""
    return bound if bound > 0 else -np.inf


def shape_bound(hull, pose: np.ndarray, code: int, size, shape_pose: np.ndarray) -> float:
    """A lower bound (m) of the distance between a hull (:class:`~engine.collision.hulls.Hull`) at
    link pose ``pose (7,)`` and an obstacle
    of code ``code`` and packed ``size`` at ``shape_pose (7,)``, less :data:`SAFETY` (a plane:
    exact, its lowest vertex), or -inf where it does not prove them apart: the kernels' bound of a
    link and an obstacle."""
    from ..obstacle_kinds import PLANE

    p, sp = np.asarray(pose, float), np.asarray(shape_pose, float)
    vertices = hull.vertices
    if code == PLANE:
        normal = quat_rotate_unit(sp[3:], np.asarray(size, float))
        world = p[:3] + quat_rotate_unit(np.broadcast_to(p[3:], (len(vertices), 4)), vertices)
        return _separated(float(((world - sp[:3]) @ normal).min()) - hull.radius - SAFETY)
    support, radius = core_support(code, size, sp[:3], sp[3:])
    low = lower_bound(hull_support(vertices, p[:3], p[3:]), support, sp[:3] - p[:3])
    return _separated(low - radius - hull.radius - SAFETY)


def _least(gaps: np.ndarray, piece_bound, stop: float) -> float:
    """The kernels' search for the least bound over piece pairs: ``gaps (n,)`` each pair's
    bounding-ball gap (m, a lower bound of its distance), ``piece_bound(m, stop)`` pair ``m``'s GJK
    bound (radii taken off) searched up to ``stop``; the search cut at ``stop`` raised to
    :data:`TOLERANCE`; the nearest pair by its balls first, then the others in order, those no
    nearer than the least so far passed over. -inf where it does not prove them apart."""
    best = max(stop, TOLERANCE)
    if not len(gaps) or gaps.min() >= best:
        return _separated(best)
    first = int(np.argmin(gaps))
    near = np.flatnonzero(gaps < best)  # best only falls: the others never qualify
    for m in [first, *near[near != first].tolist()]:
        if gaps[m] < best:
            best = min(best, max(float(gaps[m]), piece_bound(m, best)))
            if best <= 0:
                return -np.inf
    return _separated(best)


def _world_balls(balls, pose) -> np.ndarray:
    """Piece ball centres ``(n, 3)`` (world) from ``balls`` (centres (n, 3), radii (n,); link frame)."""
    p = np.asarray(pose, float)
    return p[:3] + quat_rotate_unit(np.broadcast_to(p[3:], (len(balls[0]), 4)), np.asarray(balls[0], float))


def pieces_pair_bound(pieces_a, balls_a, pose_a, pieces_b, balls_b, pose_b, stop: float = np.inf) -> float:
    """A lower bound (m) of the distance between two links' pieces (``[Hull]``, link frames, with
    their bounding balls ``(centres (n, 3), radii (n,))``: :func:`engine.collision.pieces.balls`) at
    link poses ``(7,)``, less :data:`SAFETY`, or -inf where it does not prove them apart: the
    kernels' bound of a link pair (:func:`engine.kernels.gjk.bound`), cut at ``stop``."""
    pa, pb = np.asarray(pose_a, float), np.asarray(pose_b, float)
    ca, cb = _world_balls(balls_a, pa), _world_balls(balls_b, pb)
    diff = cb[None, :, :] - ca[:, None, :]
    gaps = np.linalg.norm(diff, axis=-1) - np.asarray(balls_a[1])[:, None] - np.asarray(balls_b[1])[None, :]
    nb = len(pieces_b)

    def piece_bound(m, best):
        i, j = divmod(m, nb)
        grown = pieces_a[i].radius + pieces_b[j].radius
        low = lower_bound(hull_support(pieces_a[i].vertices, pa[:3], pa[3:]),
                          hull_support(pieces_b[j].vertices, pb[:3], pb[3:]), diff[i, j], best + grown + SAFETY)
        return low - grown - SAFETY
    return _least(gaps.ravel(), piece_bound, stop)


def pieces_shape_bound(pieces, balls, pose, code: int, size, shape_pose, stop: float = np.inf) -> float:
    """A lower bound (m) of the distance between a link's pieces (as :func:`pieces_pair_bound`) at
    link pose ``pose (7,)`` and an obstacle of code ``code`` and packed ``size`` at ``shape_pose
    (7,)``, less :data:`SAFETY` (a plane: exact per piece, its lowest vertex), or -inf where it does
    not prove them apart: the kernels' bound of a link and an obstacle, cut at ``stop``."""
    from ..obstacle_kinds import BY_CODE, PLANE

    p, sp = np.asarray(pose, float), np.asarray(shape_pose, float)
    centres = _world_balls(balls, p)
    local = quat_rotate_unit(np.broadcast_to(_conj(sp[3:]), (len(centres), 4)), centres - sp[:3])
    gaps = BY_CODE[code].distance(np.asarray(size, float), local) - np.asarray(balls[1])
    support, radius = (None, 0.0) if code == PLANE else core_support(code, size, sp[:3], sp[3:])

    def piece_bound(m, best):
        piece = pieces[m]
        if code == PLANE:
            normal = quat_rotate_unit(sp[3:], np.asarray(size, float))
            world = p[:3] + quat_rotate_unit(np.broadcast_to(p[3:], (len(piece.vertices), 4)), piece.vertices)
            return float(((world - sp[:3]) @ normal).min()) - piece.radius - SAFETY
        low = lower_bound(hull_support(piece.vertices, p[:3], p[3:]), support, sp[:3] - centres[m],
                          best + radius + piece.radius + SAFETY)
        return low - radius - piece.radius - SAFETY
    return _least(gaps, piece_bound, stop)


__all__ = ["FLAT", "ITERATIONS", "SAFETY", "TOLERANCE", "closest_on_simplex", "core_support", "hull_support",
           "lower_bound", "pair_bound", "pieces_pair_bound", "pieces_shape_bound", "shape_bound"]
