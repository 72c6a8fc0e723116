"""Forward kinematics of one robot over SIMD lanes: each CPU thread runs ``LANES`` rows at once.

The per-robot FK of :mod:`engine.kernels.per_robot_fk` runs one row per loop iteration, and taichi's
CPU range-for calls its body through a function pointer per row, so LLVM never vectorises across
rows: that kernel is bound by scalar arithmetic (~90 ns per Panda configuration here). This one
holds every scalar of the FK (joint values, sines, link positions and quaternions) as a taichi
vector whose entries are consecutive rows, and compiles with taichi's ``real_matrix_scalarize``
off, so that each vector operation becomes one AVX instruction over 8 float32 (4 float64) rows.
Each link's pose is written back row by row as soon as it is known (:func:`trace_fk`'s
``on_link``), so only the lane values of a link's ancestors stay alive; this and branch-free 64-bit
row offsets took the store phase from ~0.5 to ~0.3 ms in one thread. Measured on the Panda at
16384 rows, float32: ~0.37 ms on taichi's thread pool (calm machine) and ~0.52 ms in one thread,
against ~1.45 ms for the one-row kernel (``python bench/fk.py`` shows them all).

The tree is traced by :func:`engine.kernels.traced.trace_fk`, which folds the robot's constants
(a constant is the same in every lane) and avoids the vector operations taichi 1.7 cannot emit
unscalarised. Its vector stores claim the alignment of the next power of two of the vector's size
(16 B for 3 or 4 floats, 32 B for 3 or 4 doubles) and fault where the address lacks it: numpy
arrays are 16-B aligned, rows of 3 doubles are 24 B apart, so float64 results are written per
scalar (a float32 vec3 store is split into 8 + 4 bytes, which need no alignment).

CPU only: on a GPU one thread per row is already the right shape, and :func:`run_fk` uses
:func:`engine.kernels.per_robot_fk.fk_kernel` there.
"""

import functools

import numpy as np
import taichi as ti
from taichi.lang import impl

from ..runtime.launch import CompiledCache, fast
from ..runtime.state import STATE
from .per_robot_fk import UNROLLED_COMPILE, fk_kernel
from .spec import RobotSpec
from .traced import bind, const, trace_fk

_CACHE = CompiledCache()
LANES = {"32": 8, "64": 4}  # rows per thread: one 256-bit AVX register of the engine's floats
LANE_COMPILE = {**UNROLLED_COMPILE, "real_matrix_scalarize": False}


def _lane(value, w: int):
    """Lane ``w`` of a lane value (constants and scalars are the same in every lane)."""
    if const(value) or not value.is_tensor():
        return value
    return impl.subscript(impl.get_runtime().compiling_callable.ast_builder(), value, w)


def _row_vector(values, w: int):
    return ti.Vector([_lane(v, w) for v in values])


def _store_link(pos, quat, firsts: list, vector_stores: bool, l: int, p: tuple, r: tuple) -> None:
    """Store link ``l``'s lane pose ``p`` (3 lane values), ``r`` (4) into the rows whose first link
    sits at ``firsts`` (one index per lane): a row vector each in float32, scalars in float64."""
    builder = impl.get_runtime().compiling_callable.ast_builder()
    for w, first in enumerate(firsts):
        if vector_stores:
            impl.subscript(builder, pos, first + l)._assign(_row_vector(p, w))
            impl.subscript(builder, quat, first + l)._assign(_row_vector(r, w))
        else:
            for k in range(3):
                impl.subscript(builder, pos, (first + l) * 3 + k)._assign(_lane(p[k], w))
            for k in range(4):
                impl.subscript(builder, quat, (first + l) * 4 + k)._assign(_lane(r[k], w))


def lane_fk_kernel(spec: RobotSpec):
    """``kernel(q, pos, quat, rows, serial)``: q (B * n_qs,) flat, ``rows`` = B; in float32 ``pos``
    (B * L, 3) and ``quat`` (B * L, 4) are written one row vector at a time, in float64 (whose
    vector stores would need 32-B alignment, see above) they are flat (B * L * 3,) / (B * L * 4,)."""
    precision = STATE.precision
    return _CACHE.get(spec.key, lambda: _build(spec, precision))


def _build(spec: RobotSpec, precision: str):
    W, L, n_qs = LANES[precision], spec.n_links, spec.n_qs
    vector_stores = precision == "32"
    vec3 = ti.types.vector(3, float) if vector_stores else None
    vec4 = ti.types.vector(4, float) if vector_stores else None

    @ti.kernel
    def run(q: ti.types.ndarray(), pos: ti.types.ndarray(dtype=vec3), quat: ti.types.ndarray(dtype=vec4),
            n: ti.i32, serial: ti.template()):
        ti.loop_config(serialize=serial)
        for block in range((n + W - 1) // W):
            # the rows of this block; past the end, lanes repeat the last row, so their (identical)
            # results can be stored without a branch. 64-bit offsets: constants fold into addresses
            rows = [bind(ti.cast(ti.min(block * W + w, n - 1), ti.i64)) for w in ti.static(range(W))]
            qs = [ti.Vector([q[rows[w] * n_qs + i] for w in ti.static(range(W))]) for i in ti.static(range(n_qs))]
            firsts = [bind(rows[w] * L) for w in ti.static(range(W))]  # each row's first link
            trace_fk(spec, qs, on_link=functools.partial(_store_link, pos, quat, firsts, vector_stores))

    return fast(run, LANE_COMPILE, trace_helpers=True)


def run_fk(spec: RobotSpec, q: np.ndarray, pos: np.ndarray, quat: np.ndarray, serial: bool) -> None:
    """FK of the rows of ``q`` (B, n_qs) into ``pos`` (B, L, 3) and ``quat`` (B, L, 4), all
    C-contiguous in the engine's precision: the lane kernel on a CPU, one row per thread elsewhere."""
    rows = q.shape[0]
    if STATE.arch != "cpu":
        fk_kernel(spec)(q.reshape(-1), pos.reshape(-1), quat.reshape(-1), rows, serial)
    elif STATE.precision == "32":
        lane_fk_kernel(spec)(q.reshape(-1), pos.reshape(-1, 3), quat.reshape(-1, 4), rows, serial)
    else:
        lane_fk_kernel(spec)(q.reshape(-1), pos.reshape(-1), quat.reshape(-1), rows, serial)
