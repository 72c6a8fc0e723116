"""Forward kinematics of one robot, one row per thread (what a GPU runs; the CPU runs
:mod:`engine.kernels.lane_fk`).

The tree is traced by :func:`engine.kernels.traced.trace_fk` with the robot's constants folded
in; every intermediate stays in registers. Kernels are cached per (spec, precision), so each
robot compiles once per process (and taichi's offline cache keeps the machine code across
processes).
"""


import taichi as ti

from ..runtime.launch import CompiledCache, fast
from .spec import RobotSpec
from .traced import trace_fk

_CACHE = CompiledCache()
# taichi's own IR optimisation triples the compile time of these unrolled kernels for no speed-up
# (LLVM optimises them anyway): measured on the Panda IK solver, 20 s -> 5-8 s cold
UNROLLED_COMPILE = {"advanced_optimization": False}


def fk_kernel(spec: RobotSpec):
    """Batched FK for ``spec``: ``kernel(q, pos, quat, rows, serial)`` with flat arrays ``q``
    (B * n_qs), ``pos`` (B * L * 3) and ``quat`` (B * L * 4, wxyz), in the engine's precision, and
    ``rows`` = B; ``serial`` (compile-time) runs in the calling thread. The row count is an
    argument because taichi's SPIR-V code generator cannot take a loop bound computed from an
    array's shape (``q.shape[0] // n_qs``: "Not supported" on Vulkan)."""
    return _CACHE.get(spec.key, lambda: _build(spec))


def _build(spec: RobotSpec):
    L, n_qs = spec.n_links, spec.n_qs

    @ti.kernel
    def run(q: ti.types.ndarray(), pos: ti.types.ndarray(), quat: ti.types.ndarray(), rows: ti.i32,
            serial: ti.template()):
        ti.loop_config(serialize=serial)
        for r in range(rows):
            P, Q = trace_fk(spec, [q[r * n_qs + i] for i in ti.static(range(n_qs))])
            for l in ti.static(range(L)):
                for k in ti.static(range(3)):
                    pos[(r * L + l) * 3 + k] = P[l][k]
                for k in ti.static(range(4)):
                    quat[(r * L + l) * 4 + k] = Q[l][k]

    return fast(run, UNROLLED_COMPILE, trace_helpers=True)
