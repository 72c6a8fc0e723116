"""Forward kinematics traced at compile time with the robot's constants folded in.

Plain Python functions that build a kernel's IR while taichi traces it (call them from inside a
``ti.kernel`` / ``ti.func``). A value is either a Python float (a constant, e.g. a link offset or
a zero quaternion entry) or a taichi expression, scalar or vector (then one entry per SIMD lane,
see :mod:`engine.kernels.lane_fk`). Products with 0 or 1 and sums with 0 are folded away here:
taichi's fast math keeps NaN semantics, so LLVM would not fold ``x * 0.0`` itself. Against the
generic quaternion code of :mod:`engine.kernels.per_robot_fk` a z-axis hinge composes in 12 flops
instead of 28.

Taichi 1.7's non-scalarised code generation lacks a few operations on vectors (unary minus,
casts, ``ti.select`` on vector conditions), so the helpers avoid them: negation is ``0 - x`` and
the sign of sin/cos after range reduction comes from arithmetic.
"""

import taichi as ti
from taichi.lang import impl

from ..runtime.state import STATE
from .fk import HINGE
from .quat import COS_COEFFS, PI, SIN_COEFFS, SINCOS_TERMS
from .spec import RobotSpec


def const(a) -> bool:
    return isinstance(a, (float, int))


def bind(a):
    """Bind a lane value to a kernel variable, so later uses share it rather than re-emit it."""
    return a if const(a) else impl.expr_init(a)


def _mul(a, b):
    if const(a) and const(b):
        return float(a * b)
    if const(a):
        a, b = b, a
    if const(b):
        if b == 0.0:
            return 0.0
        if b == 1.0:
            return a
        if b == -1.0:
            return _neg(a)
    return a * b


def _add(a, b):
    if const(a) and const(b):
        return float(a + b)
    if const(a) and a == 0.0:
        return b
    if const(b) and b == 0.0:
        return a
    return a + b


def _neg(a):
    return float(-a) if const(a) else 0.0 - a  # unary minus on a vector breaks taichi's codegen


def _sub(a, b):
    return _add(a, _neg(b))


def _dot(xs, ys):
    out = 0.0
    for x, y in zip(xs, ys):
        out = _add(out, _mul(x, y))
    return out


def _qmul(a, b) -> tuple:
    """Hamilton product of (w, x, y, z) lane quaternions."""
    bw, bx, by, bz = b
    return tuple(bind(_dot(a, row)) for row in ((bw, _neg(bx), _neg(by), _neg(bz)), (bx, bw, bz, _neg(by)),
                                                 (by, _neg(bz), bw, bx), (bz, by, _neg(bx), bw)))


def _cross(u, v) -> tuple:
    return (_sub(_mul(u[1], v[2]), _mul(u[2], v[1])), _sub(_mul(u[2], v[0]), _mul(u[0], v[2])),
            _sub(_mul(u[0], v[1]), _mul(u[1], v[0])))


def _qrot(q, v) -> tuple:
    """Rotate the lane 3-vector v by the unit lane quaternion q: v + w t + u x t, t = 2 u x v."""
    u = q[1:]
    t = tuple(bind(_mul(2.0, c)) for c in _cross(u, v))
    ut = _cross(u, t)
    return tuple(bind(_add(_add(v[i], _mul(q[0], t[i])), ut[i])) for i in range(3))


def sincos_half(angle):
    """(sin, cos) of angle / 2 (per lane for a vector): inlined and branch-free. The half angle is
    reduced by the nearest multiple m of pi (one-part: under fast math LLVM would fold a two-part
    Cody-Waite one back; the error is ~m ulp(pi), below 1e-6 in float32 for |angle| <= 4 pi,
    1e-15 in float64), Taylor polynomials give sin and cos on [-pi/2, pi/2], and both take the
    sign (-1)^m. Against a reduction by pi/2, which must then pick sine or cosine per quadrant, this
    spends two more polynomial terms and saves about twice that in quadrant arithmetic. Measured
    in the Panda FK at 16384 rows: f64 FK 5.2 -> 2.3 ms against libm's sin and cos (with the pi/2
    reduction)."""
    h = 0.5 * angle
    m = bind(ti.floor(h * (1.0 / PI) + 0.5))
    r = bind(ti.min(ti.max(h - m * PI, -0.5 * PI), 0.5 * PI))  # huge angles: noise, but finite (see quat.sincos_half)
    r2 = bind(r * r)
    n_sin, n_cos = SINCOS_TERMS[STATE.precision]
    ps, pc = SIN_COEFFS[n_sin - 1], COS_COEFFS[n_cos - 1]
    for i in range(n_sin - 2, -1, -1):
        ps = ps * r2 + SIN_COEFFS[i]
    for i in range(n_cos - 2, -1, -1):
        pc = pc * r2 + COS_COEFFS[i]
    sign = bind(1.0 - 2.0 * (m - 2.0 * ti.floor(0.5 * m)))  # (-1)^m
    return bind((r + r * r2 * ps) * sign), bind((1.0 + r2 * pc) * sign)


def trace_fk(spec: RobotSpec, qs: list, needed=None, axes: bool = False, on_link=None) -> tuple:
    """FK for joint values ``qs`` (n_qs values): ``(P, Q)``, each link's position (3-tuple) and
    quaternion (4-tuple, wxyz), world frame; with ``axes`` also ``(AX, AN)``, each joint's world
    axis and anchor (3-tuples, by joint index), from which a Jacobian column is a cross product.
    ``needed``: the links to compute, closed under ancestors (:meth:`RobotSpec.lineage`); the others
    are None. None: every link. ``on_link(l, p, r)``, when given, is called as soon as link l's
    pose is known (a kernel that stores it there keeps fewer lane values alive)."""
    P, Q = [None] * spec.n_links, [None] * spec.n_links
    AX, AN = [None] * spec.n_joints, [None] * spec.n_joints
    for l in range(spec.n_links) if needed is None else sorted(needed):
        link = spec.links[l]
        p, r = tuple(link.pos), tuple(link.quat)
        if link.parent >= 0:
            p = tuple(_add(a, b) for a, b in zip(P[link.parent], _qrot(Q[link.parent], p)))
            r = _qmul(Q[link.parent], r)
        for joint in link.joints:
            value = qs[joint.q]
            if joint.is_mimic:
                value = bind(joint.mult * qs[joint.lead_q] + joint.offset)
            anchor = p
            if joint.has_anchor:
                anchor = tuple(_add(a, b) for a, b in zip(p, _qrot(r, joint.anchor)))
            if axes:
                AX[joint.index], AN[joint.index] = _qrot(r, joint.axis), anchor
            if joint.kind == HINGE:  # rotate about the anchor: it stays put
                s, c = sincos_half(value - joint.ref)
                r = _qmul(r, (c,) + tuple(_mul(a, s) for a in joint.axis))
                if joint.has_anchor:
                    p = tuple(_sub(a, b) for a, b in zip(anchor, _qrot(r, joint.anchor)))
            else:
                shift = bind(value - joint.ref)
                axis_w = AX[joint.index] if axes else _qrot(r, joint.axis)
                p = tuple(_add(a, _mul(x, shift)) for a, x in zip(p, axis_w))
        P[l], Q[l] = p, r
        if on_link is not None:
            on_link(l, p, r)
    return (P, Q, AX, AN) if axes else (P, Q)


def vector(values):
    """A taichi vector of traced values (constants and expressions); called while tracing."""
    return ti.Vector(list(values))
