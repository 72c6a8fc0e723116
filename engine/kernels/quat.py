"""Quaternion and vector helpers as taichi functions. Quaternions are (w, x, y, z) ``ti.Vector``s."""

import taichi as ti

from .. import backend

# atan(t) ~ t * sum(c_i t^(2i)) on [0, 1]: least squares on 4001 Chebyshev-spaced points (numpy),
# max error 6e-9; used in float32 only (see atan2_upper)
ATAN_COEFFS = (0.9999999055342196, -0.3333265778286678, 0.19986536343216565, -0.14164325191284932,
               0.10507289386135855, -0.07247887440860717, 0.03989881858073517, -0.014458239196711242,
               0.0024681309253040823)


@ti.func
def atan2_upper(y, x):
    """atan2(y, x) for y >= 0, in [0, pi]. float64: libm's. float32: the polynomial above after
    octant reduction, inline: a libm call inside the IK iteration costs its own latency plus the
    spill of every live vector register around it (all are caller-saved)."""
    out = 0.0
    if ti.static(backend.STATE.precision == "64"):
        out = ti.atan2(y, x)
    else:
        ax = ti.abs(x)
        t = ti.min(y, ax) / ti.max(ti.max(y, ax), 1e-30)
        u = t * t
        p = ATAN_COEFFS[8]
        for i in ti.static(range(7, -1, -1)):
            p = p * u + ATAN_COEFFS[i]
        a = t * p
        if y > ax:
            a = 0.5 * 3.141592653589793 - a
        if x < 0:
            a = 3.141592653589793 - a
        out = a
    return out


@ti.func
def qmul(a, b):
    """Hamilton product a * b."""
    return ti.Vector([
        a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
        a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
        a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
        a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0],
    ])


@ti.func
def qconj(q):
    return ti.Vector([q[0], -q[1], -q[2], -q[3]])


@ti.func
def qrot(q, v):
    """Rotate 3-vector v by unit quaternion q."""
    u = ti.Vector([q[1], q[2], q[3]])
    t = 2.0 * u.cross(v)
    return v + q[0] * t + u.cross(t)


@ti.func
def qnormalize(q):
    n = q.norm()
    out = ti.Vector([1.0, 0.0, 0.0, 0.0])
    if n > 1e-12:
        out = q / n
    return out


@ti.func
def qaxis_angle(axis, angle):
    """Quaternion rotating by ``angle`` (rad) about unit ``axis``."""
    h = 0.5 * angle
    s = ti.sin(h)
    return ti.Vector([ti.cos(h), axis[0] * s, axis[1] * s, axis[2] * s])


@ti.func
def qexp(w):
    """Quaternion of rotation vector w (axis * angle, rad)."""
    angle = w.norm()
    out = ti.Vector([1.0, 0.0, 0.0, 0.0])
    if angle > 1e-12:
        out = qaxis_angle(w / angle, angle)
    else:
        out = ti.Vector([1.0, 0.5 * w[0], 0.5 * w[1], 0.5 * w[2]])
        out = out / out.norm()
    return out


@ti.func
def qlog(q):
    """Rotation vector (axis * angle, angle in [0, pi]) of unit quaternion q."""
    qq = q
    if qq[0] < 0:
        qq = -q
    v = ti.Vector([qq[1], qq[2], qq[3]])
    s = v.norm()
    angle = 2.0 * atan2_upper(s, qq[0])
    out = 2.0 * v
    if s > 1e-12:
        out = v * (angle / s)
    return out


@ti.func
def qcolumn(q, k: ti.template()):
    """Column k (0, 1, 2) of the rotation matrix of q: the rotated unit axis."""
    e = ti.Vector([0.0, 0.0, 0.0])
    e[k] = 1.0
    return qrot(q, e)
