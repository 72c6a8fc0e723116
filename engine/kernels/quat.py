"""Quaternion and vector helpers as taichi functions. Quaternions are (w, x, y, z) ``ti.Vector``s.

No kernel calls a transcendental function of taichi's (``ti.sin``, ``ti.cos``, ``ti.atan2``):
SPIR-V's GLSL.std.450 instructions take 32-bit operands only, so on Vulkan a float64 kernel that
used them would not compile, and their float32 accuracy there is the driver's. The polynomials
below (sine and cosine after reduction by pi, arctangent after octant reduction) are the same
code on every backend, accurate to ~1 ulp in either precision.
"""

import math

import taichi as ti

from ..runtime.state import STATE

PI = 3.141592653589793
# Taylor coefficients of sin(r) / r - 1 and cos(r) - 1 in powers of r^2 (r^2, r^4, ...): on
# [-pi/2, pi/2] the first 6 truncate below 7e-9 (float32), all of them below 3e-16 (float64)
SIN_COEFFS = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(1, 10))
COS_COEFFS = tuple((-1) ** k / math.factorial(2 * k) for k in range(1, 11))
SINCOS_TERMS = {"32": (6, 6), "64": (9, 10)}  # coefficients used per precision: sine, cosine

# atan(t) ~ t * sum(c_i t^(2i)) on [0, 1]: least squares on 4001 Chebyshev-spaced points (numpy),
# max error 6e-9; float32
ATAN_COEFFS = (0.9999999055342196, -0.3333265778286678, 0.19986536343216565, -0.14164325191284932,
               0.10507289386135855, -0.07247887440860717, 0.03989881858073517, -0.014458239196711242,
               0.0024681309253040823)


# float64: atan(t) ~ t * sum(c_i t^(2i)) on [0, tan(pi/8)], a Chebyshev fit (numpy, mpmath as the
# reference) with max error 1.7e-16; t in (tan(pi/8), 1] is first moved there by
# atan(t) = pi/4 + atan((t - 1) / (t + 1))
ATAN64_COEFFS = (1.0, -0.3333333333332997, 0.1999999999921436, -0.1428571421199622, 0.11111107498707423,
                 -0.09090804560950104, 0.07690404615961735, -0.06644193947008656, 0.05709206916511483,
                 -0.044085598125094105, 0.02187845867592842)
TAN_PI_8 = 0.41421356237309503


@ti.func
def square(x):
    """x * x. Kernels write this, never ``x ** 2``: taichi lowers a power with an integer exponent
    to a loop (exponentiation by squaring) that SPIR-V keeps, and on lavapipe every loop counts
    against its per-invocation loop limit on every pass, branches not taken included
    (docs/backends.md, item 4)."""
    return x * x


@ti.func
def _poly(u, coeffs: ti.template()):
    """sum(coeffs[i] * u^i) by Horner's rule."""
    n = ti.static(len(coeffs))
    p = coeffs[n - 1] + 0.0 * u
    for i in ti.static(range(n - 2, -1, -1)):
        p = p * u + coeffs[i]
    return p


@ti.func
def atan2_upper(y, x):
    """atan2(y, x) for y >= 0, in [0, pi]: a polynomial after octant reduction, inline (a libm call
    inside the IK iteration cost its own latency plus the spill of every live vector register
    around it, all being caller-saved; and SPIR-V has no float64 atan2)."""
    ax = ti.abs(x)
    t = ti.min(y, ax) / ti.max(ti.max(y, ax), 1e-30)
    a = 0.0 * t
    if ti.static(STATE.precision == "64"):
        shifted = t > TAN_PI_8
        if shifted:
            t = (t - 1.0) / (t + 1.0)
        a = t * _poly(t * t, ATAN64_COEFFS)
        if shifted:
            a += 0.25 * PI
    else:
        a = t * _poly(t * t, ATAN_COEFFS)
    if y > ax:
        a = 0.5 * PI - a
    if x < 0:
        a = PI - a
    return a


@ti.func
def sincos_half(angle):
    """(sin, cos) of angle / 2. The half angle is reduced by the nearest multiple m of pi (error
    ~m ulp(pi): below 1e-6 in float32 for |angle| <= 4 pi), Taylor polynomials give sin and cos on
    [-pi/2, pi/2], and both take the sign (-1)^m. :func:`engine.kernels.traced.sincos_half` is the
    same computation traced with constants folded, per SIMD lane."""
    h = 0.5 * angle
    m = ti.floor(h * (1.0 / PI) + 0.5)
    r = ti.min(ti.max(h - m * PI, -0.5 * PI), 0.5 * PI)  # past ~1e7 rad (float32) the reduction is noise: stay finite
    r2 = r * r
    n_sin, n_cos = ti.static(SINCOS_TERMS[STATE.precision])
    ps = _poly(r2, ti.static(SIN_COEFFS[:n_sin]))
    pc = _poly(r2, ti.static(COS_COEFFS[:n_cos]))
    sign = 1.0 - 2.0 * (m - 2.0 * ti.floor(0.5 * m))  # (-1)^m
    return (r + r * r2 * ps) * sign, (1.0 + r2 * pc) * sign


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
    s, c = sincos_half(angle)
    return ti.Vector([c, axis[0] * s, axis[1] * s, axis[2] * s])


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
