"""Quaternion and vector helpers as taichi functions. Quaternions are (w, x, y, z) ``ti.Vector``s."""

import taichi as ti


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
    angle = 2.0 * ti.atan2(s, qq[0])
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
