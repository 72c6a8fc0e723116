"""Forward kinematics of one robot over SIMD lanes: each CPU thread runs ``LANES`` rows at once.

The per-robot FK of :mod:`engine.kernels.static_fk` runs one row per loop iteration, and taichi's
CPU range-for calls its body through a function pointer per row, so LLVM never vectorises across
rows: that kernel is bound by scalar arithmetic (~90 ns per Panda configuration here). This one
holds every scalar of the FK (joint values, sines, link positions and quaternions) as a taichi
vector whose entries are consecutive rows, and compiles with taichi's ``real_matrix_scalarize``
off, so that each vector operation becomes one AVX instruction over 8 float32 (4 float64) rows.
Results are then written back row by row. Measured on the Panda at 16384 rows, float32: ~0.6 ms
against ~2 ms for the one-row kernel (``python bench/fk.py`` shows both).

The tree is traced by plain Python helpers that fold the robot's constants at trace time: a value
is either a Python float (the same in every lane, e.g. a link offset or a zero quaternion entry)
or a taichi lane vector, so products with 0 or 1 cost nothing. Taichi 1.7's non-scalarised code
generation lacks a few operations on vectors (unary minus, casts, ``ti.select`` on vector
conditions, stores of float64 vectors), so the helpers avoid them: negation is ``0 - x`` and the
quadrant of sin/cos is chosen by arithmetic, not by selects.

CPU only: on a GPU one thread per row is already the right shape, and :func:`run_fk` uses
:func:`engine.kernels.static_fk.fk_kernel` there.
"""

import numpy as np
import taichi as ti
from taichi.lang import impl

from .. import backend
from .fk import HINGE
from .launch import fast
from .spec import RobotSpec
from .static_fk import COS_COEFFS, HALF_PI, SIN_COEFFS, UNROLLED_COMPILE, fk_kernel

_CACHE: dict = {}
LANES = {"32": 8, "64": 4}  # rows per thread: one 256-bit AVX register of the engine's floats
LANE_COMPILE = {**UNROLLED_COMPILE, "real_matrix_scalarize": False}


# --- trace-time arithmetic on lane values (Python float = the same constant in every lane) -----

def _const(a) -> bool:
    return isinstance(a, (float, int))


def _var(a):
    """Bind a lane value to a kernel variable, so later uses share it rather than re-emit it."""
    return a if _const(a) else impl.expr_init(a)


def _mul(a, b):
    if _const(a) and _const(b):
        return float(a * b)
    if _const(a):
        a, b = b, a
    if _const(b):
        if b == 0.0:
            return 0.0
        if b == 1.0:
            return a
        if b == -1.0:
            return _neg(a)
    return a * b


def _add(a, b):
    if _const(a) and _const(b):
        return float(a + b)
    if _const(a) and a == 0.0:
        return b
    if _const(b) and b == 0.0:
        return a
    return a + b


def _neg(a):
    return float(-a) if _const(a) else 0.0 - a  # unary minus on a vector breaks taichi's codegen


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
    return tuple(_var(_dot(a, row)) for row in ((bw, _neg(bx), _neg(by), _neg(bz)), (bx, bw, bz, _neg(by)),
                                                 (by, _neg(bz), bw, bx), (bz, by, _neg(bx), bw)))


def _cross(u, v) -> tuple:
    return (_sub(_mul(u[1], v[2]), _mul(u[2], v[1])), _sub(_mul(u[2], v[0]), _mul(u[0], v[2])),
            _sub(_mul(u[0], v[1]), _mul(u[1], v[0])))


def _qrot(q, v) -> tuple:
    """Rotate the lane 3-vector v by the unit lane quaternion q: v + w t + u x t, t = 2 u x v."""
    u = q[1:]
    t = tuple(_var(_mul(2.0, c)) for c in _cross(u, v))
    ut = _cross(u, t)
    return tuple(_var(_add(_add(v[i], _mul(q[0], t[i])), ut[i])) for i in range(3))


def _sincos_half(angle):
    """(sin, cos) of angle / 2 per lane: the reduction and polynomials of
    :func:`engine.kernels.static_fk.sincos_half`, with the quadrant applied by arithmetic."""
    h = 0.5 * angle
    k = _var(ti.floor(h * (1.0 / HALF_PI) + 0.5))
    r = _var(h - k * HALF_PI)
    r2 = _var(r * r)
    top = 6 if backend.STATE.precision == "64" else 3
    ps, pc = SIN_COEFFS[top], COS_COEFFS[top]
    for i in range(top - 1, -1, -1):
        ps = ps * r2 + SIN_COEFFS[i]
        pc = pc * r2 + COS_COEFFS[i]
    s = _var(r + r * r2 * ps)
    c = _var(1.0 + r2 * pc)
    quadrant = _var(k - 4.0 * ti.floor(k * 0.25))          # k mod 4, as a float 0..3
    odd = quadrant - 2.0 * ti.floor(quadrant * 0.5)         # 1 in quadrants 1 and 3
    sin_sign = 1.0 - 2.0 * ti.floor(quadrant * 0.5)         # -1 in quadrants 2, 3
    cos_sign = 1.0 - 2.0 * (ti.floor((quadrant + 1.0) * 0.5) - 2.0 * ti.floor((quadrant + 1.0) * 0.25))  # -1 in 1, 2
    return _var((s + odd * (c - s)) * sin_sign), _var((c + odd * (s - c)) * cos_sign)


def _trace_fk(spec: RobotSpec, qs: list) -> tuple[list, list]:
    """Link positions and quaternions (lists of L tuples of lane values) for lane joint values
    ``qs`` (n_qs lane vectors)."""
    P, Q = [], []
    for link in spec.links:
        p, r = tuple(link.pos), tuple(link.quat)
        if link.parent >= 0:
            p = tuple(_add(a, b) for a, b in zip(P[link.parent], _qrot(Q[link.parent], p)))
            r = _qmul(Q[link.parent], r)
        for joint in link.joints:
            value = qs[joint.q]
            if joint.is_mimic:
                value = _var(joint.mult * qs[joint.lead_q] + joint.offset)
            if joint.kind == HINGE:
                s, c = _sincos_half(value - joint.ref)
                if joint.has_anchor:  # rotate about the anchor: it stays put
                    anchor = tuple(_add(a, b) for a, b in zip(p, _qrot(r, joint.anchor)))
                r = _qmul(r, (c,) + tuple(_mul(a, s) for a in joint.axis))
                if joint.has_anchor:
                    p = tuple(_sub(a, b) for a, b in zip(anchor, _qrot(r, joint.anchor)))
            else:
                shift = _var(value - joint.ref)
                p = tuple(_add(a, _mul(x, shift)) for a, x in zip(p, _qrot(r, joint.axis)))
        P.append(p)
        Q.append(r)
    return P, Q


def _lane(value, w: int):
    """Lane ``w`` of a lane value (constants and scalars are the same in every lane)."""
    if _const(value) or not value.is_tensor():
        return value
    return impl.subscript(impl.get_runtime().compiling_callable.ast_builder(), value, w)


def _row_vector(values, w: int):
    return ti.Vector([_lane(v, w) for v in values])


def lane_fk_kernel(spec: RobotSpec):
    """``kernel(q, pos, quat, serial)``: q (B * n_qs,) flat; in float32 ``pos`` (B * L, 3) and
    ``quat`` (B * L, 4) are written one row vector at a time, in float64 (whose vector stores
    taichi 1.7 cannot emit) they are flat (B * L * 3,) / (B * L * 4,)."""
    precision = backend.STATE.precision
    key = ("lane_fk", spec.key, backend.STATE.generation, precision)
    if key in _CACHE:
        return _CACHE[key]
    W, L, n_qs = LANES[precision], spec.n_links, spec.n_qs
    vector_stores = precision == "32"
    vec3 = ti.types.vector(3, float) if vector_stores else None
    vec4 = ti.types.vector(4, float) if vector_stores else None

    @ti.kernel
    def run(q: ti.types.ndarray(), pos: ti.types.ndarray(dtype=vec3), quat: ti.types.ndarray(dtype=vec4),
            serial: ti.template()):
        ti.loop_config(serialize=serial)
        n = q.shape[0] // n_qs
        for block in range((n + W - 1) // W):
            last = n - 1
            qs = [ti.Vector([q[ti.min(block * W + w, last) * n_qs + i] for w in ti.static(range(W))])
                  for i in ti.static(range(n_qs))]
            P, Q = _trace_fk(spec, qs)
            for w in ti.static(range(W)):
                row = block * W + w
                if row < n:
                    for l in ti.static(range(L)):
                        if ti.static(vector_stores):
                            pos[row * L + l] = _row_vector(P[l], w)
                            quat[row * L + l] = _row_vector(Q[l], w)
                        else:
                            for k in ti.static(range(3)):
                                pos[(row * L + l) * 3 + k] = _lane(P[l][k], w)
                            for k in ti.static(range(4)):
                                quat[(row * L + l) * 4 + k] = _lane(Q[l][k], w)

    _CACHE[key] = fast(run, LANE_COMPILE, trace_helpers=True)
    return _CACHE[key]


def run_fk(spec: RobotSpec, q: np.ndarray, pos: np.ndarray, quat: np.ndarray, serial: bool) -> None:
    """FK of the rows of ``q`` (B, n_qs) into ``pos`` (B, L, 3) and ``quat`` (B, L, 4), all
    C-contiguous in the engine's precision: the lane kernel on a CPU, one row per thread elsewhere."""
    if backend.STATE.arch != "cpu":
        fk_kernel(spec)(q.reshape(-1), pos.reshape(-1), quat.reshape(-1), serial)
    elif backend.STATE.precision == "32":
        lane_fk_kernel(spec)(q.reshape(-1), pos.reshape(-1, 3), quat.reshape(-1, 4), serial)
    else:
        lane_fk_kernel(spec)(q.reshape(-1), pos.reshape(-1), quat.reshape(-1), serial)
