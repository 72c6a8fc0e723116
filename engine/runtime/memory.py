"""Where kernel arrays live: in host memory on the CPU, in device memory on a GPU.

Taichi launches a kernel on a numpy array in place on the CPU. On CUDA and Vulkan it copies each
numpy argument to the device before the launch and back after it (every array the kernel
writes), on every call. That is right for what the caller sends and reads (targets, start
configurations, answers) and wasteful for the rest: the generic IK solver's per-thread working
set (4096 envs x 16 restart slots: ~70 MB), the per-thread results it reduces to one answer per
env, the robot's constant tables. Those live in :func:`scratch` / :func:`constant` arrays: numpy
arrays on the CPU (no copy either way) and ``ti.ndarray`` device arrays elsewhere, which stay
on the device between calls. :class:`engine.runtime.launch.FastKernel` takes both kinds.
"""

from __future__ import annotations

import weakref

import numpy as np
import taichi as ti
from taichi.lang._ndarray import ScalarNdarray

from .state import LOCK, STATE

_TI_DTYPES = {np.dtype(np.float32): ti.f32, np.dtype(np.float64): ti.f64, np.dtype(np.int32): ti.i32}


_live: weakref.WeakSet = weakref.WeakSet()  # device arrays made here that may outlive a taichi reset


class _Orphaned(ScalarNdarray):
    """A device array whose taichi program was reset: its memory went with the program. Taichi's
    own ``__del__`` would hand the stale C++ pointer to the *new* program, which frees whatever
    array now sits at that address ("argument not found" at the next launch, or worse)."""

    def __del__(self):
        pass


def orphan_device_arrays() -> None:
    """Called by :func:`engine.runtime.backend.init` just before ``ti.reset()``: the device arrays still
    alive (held by scenes built before) will never free anything of the next program."""
    for arr in list(_live):
        if type(arr) is ScalarNdarray:
            arr.__class__ = _Orphaned
    _live.clear()


def on_device() -> bool:
    """Whether the engine runs on a GPU (kernel arrays then live in device memory)."""
    return STATE.arch != "cpu"


def scratch(shape: tuple[int, ...], dtype) -> np.ndarray | ti.Ndarray:
    """Zeroed working memory of ``shape`` that only kernels read and write: numpy on the CPU, a
    device ``ti.ndarray`` on a GPU."""
    shape = tuple(int(s) for s in shape)
    if not on_device():
        return np.zeros(shape, dtype)
    with LOCK:  # filling launches a taichi kernel (compiled on first use)
        arr = ti.ndarray(_TI_DTYPES[np.dtype(dtype)], shape)
        arr.fill(0)
        _live.add(arr)
    return arr


def constant(values: np.ndarray) -> np.ndarray | ti.Ndarray:
    """``values`` as kernels read them: the array itself on the CPU, a device copy (made once) on a
    GPU."""
    values = np.ascontiguousarray(values)
    if not on_device():
        return values
    with LOCK:  # the copy is a taichi kernel launch
        arr = ti.ndarray(_TI_DTYPES[values.dtype], values.shape)
        arr.from_numpy(values)
        _live.add(arr)
    return arr
