"""Where kernel arrays live: in host memory on the CPU, in device memory on a GPU.

Taichi launches a kernel on a numpy array in place on the CPU. On CUDA and Vulkan it copies each
numpy argument to the device before the launch and back after it (every array the kernel
writes), on every call. That is right for what the caller sends and reads (targets, start
configurations, answers) and wasteful for the rest: the generic IK solver's per-thread working
set (4096 envs x 16 restart slots: ~70 MB), the per-thread results it reduces to one answer per
env, the robot's constant tables. Those live in :func:`scratch` / :func:`constant` arrays: numpy
arrays on the CPU (no copy either way) and ``ti.ndarray`` device arrays elsewhere, which stay
on the device between calls. :class:`engine.kernels.launch.FastKernel` takes both kinds.
"""

from __future__ import annotations

import numpy as np
import taichi as ti

from .. import backend

_TI_DTYPES = {np.dtype(np.float32): ti.f32, np.dtype(np.float64): ti.f64, np.dtype(np.int32): ti.i32}


def on_device() -> bool:
    """Whether the engine runs on a GPU (kernel arrays then live in device memory)."""
    return backend.STATE.arch != "cpu"


def scratch(shape: tuple[int, ...], dtype) -> np.ndarray | ti.Ndarray:
    """Zeroed working memory of ``shape`` that only kernels read and write: numpy on the CPU, a
    device ``ti.ndarray`` on a GPU."""
    shape = tuple(int(s) for s in shape)
    if not on_device():
        return np.zeros(shape, dtype)
    with backend.LOCK:  # filling launches a taichi kernel (compiled on first use)
        arr = ti.ndarray(_TI_DTYPES[np.dtype(dtype)], shape)
        arr.fill(0)
    return arr


def constant(values: np.ndarray) -> np.ndarray | ti.Ndarray:
    """``values`` as kernels read them: the array itself on the CPU, a device copy (made once) on a
    GPU."""
    values = np.ascontiguousarray(values)
    if not on_device():
        return values
    with backend.LOCK:  # the copy is a taichi kernel launch
        arr = ti.ndarray(_TI_DTYPES[values.dtype], values.shape)
        arr.from_numpy(values)
    return arr
