"""Threads per launch on a software Vulkan device (docs/backends.md, rule 5).

Taichi's SPIR-V code runs a loop whose trip count is read at run time over a fixed 131,072
invocations (a grid-stride loop), however few items there are. On a GPU the idle ones cost next to
nothing; on lavapipe each costs ~0.5 us in a solver-sized shader, so every launch of the generic
solver took 55-75 ms whether it ran 32 threads or one iteration (2-core VM). There the heavy
kernels (the IK solvers, FK, the Jacobian, the collision distance) loop over a span of threads
fixed at compile time from an ``offset`` argument, and a larger batch is launched span by span.
"""

from __future__ import annotations

from .state import STATE

SOFTWARE_SPAN = 1024  # threads per launch on a software Vulkan device
# threads per workgroup there: one SIMD row of lavapipe (8 float32 lanes of AVX2). With workgroups
# of 128, a span whose first workgroup was only partly busy (32 solver threads) ran wrong on Mesa
# 22.3's lavapipe: every IK solve of 1 to 4 envs failed, as if the busy lanes' loops ended early
# (the same family of fault as docs/backends.md rule 1); with workgroups of 8 they answer as the CPU.
SOFTWARE_BLOCK = 8


def thread_span() -> int:
    """Threads one launch runs on a software Vulkan device (:data:`SOFTWARE_SPAN`), or 0 elsewhere
    (all of them, in taichi's run-time loop). Read while a kernel is compiled."""
    return SOFTWARE_SPAN if STATE.software else 0


def block_dim(default: int | None = None) -> int | None:
    """Threads per workgroup for a kernel's loop: :data:`SOFTWARE_BLOCK` on a software Vulkan
    device, else ``default`` (None: taichi's own choice). Read while a kernel is compiled."""
    return SOFTWARE_BLOCK if STATE.software else default


def thread_offsets(n_threads: int) -> range:
    """The first thread of each launch covering ``n_threads`` threads: one launch at 0 unless
    :func:`thread_span` bounds a launch."""
    span = thread_span()
    return range(0, max(n_threads, 1), span) if span else range(1)
