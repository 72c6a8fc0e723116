"""Cheap repeated kernel launches.

Taichi 1.7's Python launch path spends ~5-10 us per array argument (dtype checks, ctypes
look-ups) on top of a fixed cost, which dominates small batches (a 16-env IK call is ~30 us of
kernel work). :class:`FastKernel` compiles and launches the first call of each argument
signature through taichi's normal path, keeps the compiled kernel and a launch context for that
signature, and afterwards only re-points the context at the current arrays. Re-pointing is itself
~5 us per array (``ndarray.ctypes`` and the binding call), so an array that is the very object
bound at the previous launch of the signature is not re-bound: callers that reuse their buffers
(the IK front end's plans, scratch outputs) launch in a few microseconds. A live numpy array never
moves its memory, and the check is by identity through a weak reference, so it neither keeps
arrays alive nor mistakes a new array for a dead one.

Arguments are numpy arrays, taichi device arrays (``ti.Ndarray``, which stay on a GPU between
calls: :mod:`engine.runtime.memory`), Python ints and Python floats (what our kernels take). taichi is
pinned to 1.7.4 (see pyproject), whose internals this relies on; the first call of every
signature goes through the public path.

Contexts are kept only on the CPU. Taichi's CUDA launcher rewrites the context it launches: its
argument buffer and array pointers are replaced by device copies that it frees after the kernel,
so a second launch of a kept context would write its arguments through a dangling device
pointer. On any other arch each launch binds a fresh context (the per-array binding cost is small
next to a GPU launch and its host-device copies); Vulkan runs that same path in the tests.

Thread safety: a launch binds arguments into a context kept per signature, so every call holds
:data:`engine.LOCK` from binding to launch (and through a first call's compile). Taichi
holds the GIL while a kernel runs, so this costs no parallelism.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
import warnings
import weakref
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from taichi.lang import impl
from taichi.lang._ndarray import Ndarray
from taichi.types import template

from ..errors import InvalidValueError
from .state import LOCK, STATE

_PREPARED = {"count": 0}  # kernels compiled or loaded from taichi's cache in this process (first launches)
_RECENT: collections.deque = collections.deque(maxlen=256)  # the newest of them, as Preparation records


class Preparation(NamedTuple):
    """One kernel signature compiled or loaded from taichi's disk cache in this process (its first
    launch). ``number``: 1 for the process's first, counting up (:func:`kernels_prepared` is the
    newest's); ``kernel``: the kernel's module and name; ``seconds``: wall time of the first launch
    (tracing, compiling or loading, and the launch itself); ``thread``: the name of the thread that
    launched it."""

    number: int
    kernel: str
    seconds: float
    thread: str


def kernels_prepared() -> int:
    """How many :class:`FastKernel` signatures this process has compiled or loaded from taichi's
    disk cache so far: a call that raised it spent part of its time on that, not on its work."""
    return _PREPARED["count"]


def prepared_since(number: int) -> list[Preparation]:
    """The kernel preparations after the ``number``-th (as counted by :func:`kernels_prepared`),
    oldest first; of the newest 256 only. Each holds the GIL for its tracing and taichi's front end
    (up to seconds), so a process whose other threads must keep running (the app's window) reads
    here which of its kernels were prepared late."""
    return [p for p in list(_RECENT) if p.number > number]


class FastKernel:
    """Wrap a ``@ti.kernel`` whose arguments are numpy arrays, taichi device arrays, ints and floats.

    ``compile_config``: taichi config fields set while this kernel compiles (and restored after),
    e.g. ``{"advanced_optimization": False}`` for large unrolled kernels, where taichi's own IR
    optimisation costs 3-4x the compile time and LLVM does the same work anyway; or a function of
    a signature's compile-time (template) arguments, by name, giving those fields for it.
    ``trace_helpers``: the kernel calls plain Python functions on purpose (they build its IR at
    trace time, local matrices among it); taichi's warnings about each such call and about large
    local matrices are silenced while it compiles.
    """

    def __init__(self, kernel, compile_config: dict | Callable[[dict], dict] | None = None,
                 trace_helpers: bool = False):
        self.kernel = kernel
        self.compile_config = compile_config if callable(compile_config) else dict(compile_config or {})
        self.trace_helpers = trace_helpers
        self._primal = kernel._primal
        func = self._primal.func
        self.name = f"{func.__module__}.{func.__qualname__}"  # e.g. engine.kernels.generic._solve
        self._cache: dict = {}
        self.__doc__ = kernel.__doc__
        # template (compile-time) arguments key the compiled kernel and take no launch slot
        self._is_template = [isinstance(a.annotation, template) for a in self._primal.arguments]
        self._names = [a.name for a in self._primal.arguments]
        # ndarrays of vectors / matrices: taichi's launch passes the shape without the element dims
        self._element_dims = [_element_ndim(a.annotation) for a in self._primal.arguments]

    def _signature(self, args) -> tuple:
        return (STATE.runtime,) + tuple(
            a if tmpl else ((a.dtype.num, a.ndim) if isinstance(a, np.ndarray) else
                            ("device", a.dtype, len(a.shape)) if isinstance(a, Ndarray) else type(a))
            for a, tmpl in zip(args, self._is_template))

    def __call__(self, *args):
        with LOCK:  # the launch contexts, and taichi's runtime, are shared by all threads
            self._launch(args)

    def _launch(self, args) -> None:
        key = self._signature(args)
        entry = self._cache.get(key)
        if entry is None:
            t0 = time.perf_counter()
            with self._compiling(args):
                self.kernel(*args)  # compiles this signature through the public path
                self._cache[key] = self._prepare(args)
            number = _PREPARED["count"] = _PREPARED["count"] + 1  # under LOCK (__call__)
            _RECENT.append(Preparation(number, self.name, time.perf_counter() - t0, threading.current_thread().name))
            return
        compiled, t_kernel, ctx, bound = entry
        if STATE.arch != "cpu":  # a launch there rewrites its context: never reuse one
            ctx, bound = t_kernel.make_launch_context(), [None] * len(bound)
        slot = 0
        for i, a in enumerate(args):
            if self._is_template[i]:
                continue
            if isinstance(a, np.ndarray):
                last = bound[slot]
                if last is None or last() is not a:
                    if not a.flags.c_contiguous:
                        raise InvalidValueError(f"kernel argument {i}: expected a C-contiguous array")
                    shape = a.shape[:a.ndim - self._element_dims[i]]
                    ctx.set_arg_external_array_with_shape((slot,), a.ctypes.data, a.nbytes, shape, 0)
                    bound[slot] = weakref.ref(a)
            elif isinstance(a, Ndarray):
                last = bound[slot]
                if last is None or last() is not a:
                    ctx.set_arg_ndarray((slot,), a.arr)
                    bound[slot] = weakref.ref(a)
            elif isinstance(a, float):
                ctx.set_arg_float((slot,), a)
                bound[slot] = None
            else:
                ctx.set_arg_int((slot,), int(a))
                bound[slot] = None
            slot += 1
        impl.get_runtime().prog.launch_kernel(compiled, ctx)

    def config_for(self, args) -> dict:
        """The taichi config fields set while the signature of ``args`` compiles."""
        if not callable(self.compile_config):
            return self.compile_config
        return dict(self.compile_config({name: a for name, a, tmpl in zip(self._names, args, self._is_template)
                                         if tmpl}))

    @contextlib.contextmanager
    def _compiling(self, args):
        cfg = impl.current_cfg()
        config = self.config_for(args)
        saved = {name: getattr(cfg, name) for name in config}
        try:
            for name, value in config.items():
                setattr(cfg, name, value)
            with warnings.catch_warnings():
                if self.trace_helpers:
                    warnings.filterwarnings("ignore", message=".*Calling non-taichi function", category=SyntaxWarning)
                    # the unrolled kernels keep their working set in local matrices on purpose
                    warnings.filterwarnings("ignore", message=".*Taichi matrices/vectors with", category=UserWarning)
                yield
        finally:
            for name, value in saved.items():
                setattr(cfg, name, value)

    def _prepare(self, args):
        primal = self._primal
        key = primal.ensure_compiled(*args)
        t_kernel = primal.compiled_kernels[key]
        prog = impl.get_runtime().prog
        compiled = prog.compile_kernel(prog.config(), prog.get_device_caps(), t_kernel)
        n_slots = sum(not tmpl for tmpl in self._is_template)
        return compiled, t_kernel, t_kernel.make_launch_context(), [None] * n_slots  # nothing bound yet


def _element_ndim(annotation) -> int:
    """Dims of one element of an ndarray argument: 0 for scalars, 1 for vectors, 2 for matrices."""
    dtype = getattr(annotation, "dtype", None)
    return int(getattr(dtype, "ndim", 0) or 0)


def fast(kernel, compile_config: dict | Callable[[dict], dict] | None = None,
         trace_helpers: bool = False) -> FastKernel:
    """Decorator form: ``solve = fast(ti.kernel(solve_fn))``."""
    return FastKernel(kernel, compile_config, trace_helpers)


class CompiledCache:
    """Kernels compiled per robot (or per robot and task structure), kept for this process.

    ``get(key, build)`` returns the kernel under ``key`` for the current taichi program and
    precision, building it once (under :data:`engine.LOCK`, so two threads asking at once
    get one kernel). Kernels of an earlier taichi runtime (before an ``engine.init`` that reset it,
    or ``engine.destroy``) are dropped as soon as a later one is asked for (they belong to a taichi
    program that no longer exists), and beyond ``max_size``
    the least recently used goes (a long session solving robot after robot keeps a bounded set).
    """

    def __init__(self, max_size: int = 32):
        self.max_size = max_size
        self._kernels: dict = {}
        self._runtime = None  # STATE.runtime the kernels were built in

    def __len__(self) -> int:
        return len(self._kernels)

    def get(self, key, build):
        state = STATE
        with LOCK:
            if self._runtime != state.runtime:
                self._kernels.clear()
                self._runtime = state.runtime
            full = (key, state.precision)
            kernel = self._kernels.pop(full, None)
            if kernel is None:
                kernel = build()
            self._kernels[full] = kernel  # (re)inserted last: the most recently used
            while len(self._kernels) > self.max_size:
                self._kernels.pop(next(iter(self._kernels)))
            return kernel
