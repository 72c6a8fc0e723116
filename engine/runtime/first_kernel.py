"""The first kernel :func:`engine.runtime.backend.init` runs, in the thread that called it.

A module of its own without ``from __future__ import annotations``: taichi reads a kernel's
argument annotations as objects.
"""

import taichi as ti


@ti.kernel
def touch(a: ti.types.ndarray()):
    """Writes 1 to ``a[0]`` (an int32 array of one or more elements)."""
    a[0] = 1
