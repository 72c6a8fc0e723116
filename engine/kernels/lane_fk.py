"""Forward kinematics of one robot over SIMD lanes: each CPU thread runs ``LANES`` rows at once.

The per-robot FK of :mod:`engine.kernels.static_fk` runs one row per loop iteration, and taichi's
CPU range-for calls its body through a function pointer per row, so LLVM never vectorises across
rows: that kernel is bound by scalar arithmetic (~90 ns per Panda configuration here). This one
holds every scalar of the FK (joint values, sines, link positions and quaternions) as a taichi
vector whose entries are consecutive rows, and compiles with taichi's ``real_matrix_scalarize``
off, so that each vector operation becomes one AVX instruction over 8 float32 (4 float64) rows.
Results are then written back row by row. Measured on the Panda at 16384 rows, float32: ~0.6 ms
against ~2 ms for the one-row kernel (``python bench/fk.py`` shows both).

The tree is traced by :func:`engine.kernels.traced.trace_fk`, which folds the robot's constants
(a constant is the same in every lane) and avoids the vector operations taichi 1.7 cannot emit
unscalarised; stores of float64 vectors are one more, so float64 results are written per scalar.

CPU only: on a GPU one thread per row is already the right shape, and :func:`run_fk` uses
:func:`engine.kernels.static_fk.fk_kernel` there.
"""

import numpy as np
import taichi as ti
from taichi.lang import impl

from .. import backend
from .launch import fast
from .spec import RobotSpec
from .static_fk import UNROLLED_COMPILE, fk_kernel
from .traced import const, trace_fk

_CACHE: dict = {}
LANES = {"32": 8, "64": 4}  # rows per thread: one 256-bit AVX register of the engine's floats
LANE_COMPILE = {**UNROLLED_COMPILE, "real_matrix_scalarize": False}


def _lane(value, w: int):
    """Lane ``w`` of a lane value (constants and scalars are the same in every lane)."""
    if const(value) or not value.is_tensor():
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
            P, Q = trace_fk(spec, qs)
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
