"""Forward kinematics and Jacobian columns unrolled over one robot (a :class:`RobotSpec`).

:func:`make_fk_func` returns a ``ti.func`` that runs the whole tree with the robot's constants
folded in and leaves everything in local matrices (registers): link poses ``P`` (L, 3) / ``Q``
(L, 4, wxyz) and each joint's world axis ``AX`` (J, 3) and anchor ``AN`` (J, 3), from which a
Jacobian column is one cross product. :func:`fk_kernel` is the batched FK built on it.
Kernels are cached per (spec, precision), so each robot compiles once per process (and taichi's
offline cache keeps the machine code across processes).
"""


import taichi as ti

from .. import backend
from .fk import HINGE
from .launch import fast
from .quat import qmul, qrot
from .spec import RobotSpec

_CACHE: dict = {}
# taichi's own IR optimisation triples the compile time of these unrolled kernels for no speed-up
# (LLVM optimises them anyway): measured on the Panda IK solver, 20 s -> 5-8 s cold
UNROLLED_COMPILE = {"advanced_optimization": False}


HALF_PI = 1.5707963267948966
# Taylor coefficients of sin and cos on [-pi/4, pi/4]: all of them truncate at < 1e-15
SIN_COEFFS = (-1.0 / 6, 1.0 / 120, -1.0 / 5040, 1.0 / 362880, -1.0 / 39916800, 1.0 / 6227020800,
              -1.0 / 1307674368000)
COS_COEFFS = (-1.0 / 2, 1.0 / 24, -1.0 / 720, 1.0 / 40320, -1.0 / 3628800, 1.0 / 479001600,
              -1.0 / 87178291200)


@ti.func
def sincos_half(angle):
    """(sin, cos) of angle / 2 by quadrant reduction and polynomials: inlined and branch-free.
    Measured in the Panda FK at 16384 rows: f64 FK 5.2 -> 2.3 ms against libm's sin and cos, f32
    about the same as libm (1.5 vs 1.6 ms of compute)."""
    h = 0.5 * angle
    k = ti.floor(h * (1.0 / HALF_PI) + 0.5)
    # one-part reduction: under taichi's fast math LLVM would fold a two-part (Cody-Waite) one back;
    # the error is ~k ulp(h), below 1e-6 in float32 for |angle| <= 4 pi, 1e-15 in float64
    r = h - k * HALF_PI
    r2 = r * r
    top = ti.static(6 if backend.STATE.precision == "64" else 3)  # float32: error < 3e-8 from degree 9 / 8
    ps = SIN_COEFFS[top]
    pc = COS_COEFFS[top]
    for i in ti.static(range(top - 1, -1, -1)):
        ps = ps * r2 + SIN_COEFFS[i]
        pc = pc * r2 + COS_COEFFS[i]
    s = r + r * r2 * ps
    c = 1.0 + r2 * pc
    # quadrant k mod 4 -> (sin, cos) = (s, c), (c, -s), (-s, -c), (-c, s); selects, not branches
    quadrant = ti.cast(k, ti.i32) & 3
    odd = (quadrant & 1) != 0
    sin_base = ti.select(odd, c, s)
    cos_base = ti.select(odd, s, c)
    sin_out = ti.select((quadrant & 2) != 0, -sin_base, sin_base)
    cos_out = ti.select(((quadrant + 1) & 2) != 0, -cos_base, cos_base)
    return sin_out, cos_out


def make_fk_func(spec: RobotSpec, needed=None):
    """``fk(q, P, Q, AX, AN)``: FK of the local qpos vector ``q`` (n_qs,) into the local matrices
    ``P`` (L, 3), ``Q`` (L, 4), ``AX`` (J, 3), ``AN`` (J, 3) (world frame; see module doc).
    ``needed``: the links to compute, closed under ancestors (:meth:`RobotSpec.lineage`); the
    others are left as they are. None: every link."""
    indices = range(spec.n_links) if needed is None else sorted(needed)
    links = tuple((l, spec.links[l]) for l in indices)

    @ti.func
    def fk(q, P: ti.template(), Q: ti.template(), AX: ti.template(), AN: ti.template()):
        for l, link in ti.static(links):
            pos = ti.Vector(link.pos)
            quat = ti.Vector(link.quat)
            if ti.static(link.parent >= 0):
                pq = ti.Vector([Q[link.parent, 0], Q[link.parent, 1], Q[link.parent, 2], Q[link.parent, 3]])
                pos = ti.Vector([P[link.parent, 0], P[link.parent, 1], P[link.parent, 2]]) + qrot(pq, pos)
                quat = qmul(pq, quat)
            for joint in ti.static(link.joints):
                value = q[joint.q]
                if ti.static(joint.is_mimic):
                    value = joint.mult * q[joint.lead_q] + joint.offset
                axis = ti.Vector(joint.axis)
                axis_w = qrot(quat, axis)
                anchor_w = pos
                if ti.static(joint.has_anchor):
                    anchor_w = pos + qrot(quat, ti.Vector(joint.anchor))
                if ti.static(joint.kind == HINGE):
                    s, c = sincos_half(value - joint.ref)
                    quat = qmul(quat, ti.Vector([c, axis[0] * s, axis[1] * s, axis[2] * s]))
                    if ti.static(joint.has_anchor):
                        pos = anchor_w - qrot(quat, ti.Vector(joint.anchor))
                else:
                    pos = pos + axis_w * (value - joint.ref)
                for k in ti.static(range(3)):
                    AX[joint.index, k] = axis_w[k]
                    AN[joint.index, k] = anchor_w[k]
            for k in ti.static(range(3)):
                P[l, k] = pos[k]
            for k in ti.static(range(4)):
                Q[l, k] = quat[k]

    return fk


def local_buffers(spec: RobotSpec):
    """(rows of ``P`` / ``Q``, rows of ``AX`` / ``AN``) for :func:`make_fk_func`: at least 1 each, since
    taichi has no empty local matrices."""
    return max(spec.n_links, 1), max(spec.n_joints, 1)


def fk_kernel(spec: RobotSpec):
    """Batched FK for ``spec``: ``kernel(q, pos, quat, serial)`` with flat arrays ``q`` (B * n_qs),
    ``pos`` (B * L * 3) and ``quat`` (B * L * 4, wxyz), in the engine's precision; ``serial``
    (compile-time) runs in the calling thread."""
    key = ("fk", spec.key, backend.STATE.generation, backend.STATE.precision)
    if key not in _CACHE:
        fk = make_fk_func(spec)
        L, J = local_buffers(spec)
        n_qs = max(spec.n_qs, 1)

        @ti.kernel
        def run(q: ti.types.ndarray(), pos: ti.types.ndarray(), quat: ti.types.ndarray(), serial: ti.template()):
            ti.loop_config(serialize=serial)
            for r in range(q.shape[0] // n_qs):
                qv = ti.Vector([q[r * n_qs + i] for i in ti.static(range(n_qs))])
                P = ti.Matrix.zero(float, L, 3)
                Q = ti.Matrix.zero(float, L, 4)
                AX = ti.Matrix.zero(float, J, 3)
                AN = ti.Matrix.zero(float, J, 3)
                fk(qv, P, Q, AX, AN)
                for l in ti.static(range(L)):
                    for k in ti.static(range(3)):
                        pos[(r * L + l) * 3 + k] = P[l, k]
                    for k in ti.static(range(4)):
                        quat[(r * L + l) * 4 + k] = Q[l, k]

        _CACHE[key] = fast(run, UNROLLED_COMPILE)
    return _CACHE[key]
