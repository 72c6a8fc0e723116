"""Taichi start-up: backend choice with an honest GPU fallback, and precision.

Never ``ti.init(arch=ti.gpu)``: with no GPU it segfaults or silently picks software OpenGL.
"gpu" asks for CUDA, then a *hardware* Vulkan device, and otherwise runs on the CPU with one
warning line. A software Vulkan device (Mesa's lavapipe, SwiftShader: what the Vulkan loader
offers on a machine without a GPU) is skipped by "gpu", because it is the CPU again, only slower;
"vulkan" still uses it (the test suite does). Devices are read from the drivers
(:mod:`engine.runtime.devices`), so ``precision="64"`` on a device without float64 is refused before
anything is reset.
"""

from __future__ import annotations

import atexit
import inspect
import logging
import os
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidTypeError, InvalidValueError, StateError

os.environ.setdefault("TI_SKIP_VERSION_CHECK", "ON")
os.environ.setdefault("TI_ENABLE_TELEMETRY", "0")
# While taichi is imported, each ti.func it defines asks inspect for the source of the frame that
# imports it: importlib's frozen code, which has none. inspect then scans every module loaded, ~90
# times (~60 ms of CPU per process), to answer "no module". These entries give that same answer at once:
# no module has such a file, and only objects without a __module__ (frames, code) are looked up by it.
FROZEN_IMPORTLIB = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")
for _name in FROZEN_IMPORTLIB:
    inspect.modulesbyfile.setdefault(_name, "<frozen importlib: no module>")

import taichi as ti  # noqa: E402  (the environment must be set first)

from . import devices, frontend, kernel_cache, locking, memory, randomness, spirv_cache  # noqa: E402
from .state import LOCK, STATE  # noqa: E402

frontend.install()  # before the engine's kernels are defined: their definitions ask taichi a costly question

BACKENDS = ("gpu", "cuda", "vulkan", "cpu")
# Genesis' and Python's level names -> taichi's
LOGGING_LEVELS = {"debug": "debug", "info": "info", "warning": "warn", "warn": "warn", "error": "error",
                  "critical": "critical", "trace": "trace"}
PRECISIONS = ("32", "64")


class Backend(str):
    """What :func:`init` chose. Compares and prints as the arch ("cuda", "vulkan" or "cpu"), so
    ``init(...) == "cpu"`` reads as before; ``device`` names the device (a GPU's name, or the
    CPU's model), ``software`` is True for a Vulkan device that runs on the CPU."""

    arch: str
    device: str
    software: bool

    def __new__(cls, arch: str, device: str, software: bool = False):
        obj = super().__new__(cls, arch)
        obj.arch, obj.device, obj.software = arch, device, software
        return obj

    def __repr__(self) -> str:
        return f"Backend({self.arch!r}, device={self.device!r})"

    def __reduce__(self):  # copy and pickle keep the device
        return Backend, (self.arch, self.device, self.software)

    def describe(self) -> str:
        """One line for readouts: ``"vulkan: llvmpipe (LLVM 15.0.6, 256 bits), software"``."""
        return f"{self.arch}: {self.device}" + (", software" if self.software else "")

    def timing_note(self) -> str:
        """What timings on this backend mean, for benchmark output: "" for hardware."""
        return ("software Vulkan device: figures show correctness and relative cost, not GPU speed"
                if self.software else "")




_PY_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
              "error": logging.ERROR, "critical": logging.CRITICAL}


def _python_logging(level: str) -> None:
    """The engine's own log lines (logger "engine": the FPS of ``show_FPS``) follow ``logging_level``;
    they go to stderr unless the application configured logging (a handler) of its own."""
    logger = logging.getLogger("engine")
    logger.setLevel(_PY_LEVELS[level])
    if not logger.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[IK Studio] %(message)s"))
        logger.addHandler(handler)


# Compile settings per arch. On the CPU, taichi's control-flow-graph optimisation (store forwarding
# and dead-store removal across a kernel's blocks) is most of a large kernel's compile and buys
# nothing LLVM's own -O3 does not: off, the generic solver compiles cold in 10 s instead of 36 s
# (with avoidance 19 s instead of 76 s) and solves as fast or faster (bench/compile.py, bench/ik.py:
# docs/backends.md). A software Vulkan device (lavapipe: the CPU again, where the tests run) gets
# the same: its compiles halve (the Vulkan tests of the generic solver: 157 s -> 91 s cold) and its
# solves run 18 % slower. A GPU keeps taichi's default: nothing measured there says otherwise.
CPU_COMPILE = {"cfg_optimization": False}
ARCH_COMPILE = {ti.cpu: CPU_COMPILE}


def _compile_settings(arch, device) -> dict:
    """The taichi config fields :func:`init` sets for ``arch`` on ``device`` (see ARCH_COMPILE)."""
    if arch == ti.vulkan and getattr(device, "software", False):
        return CPU_COMPILE
    return ARCH_COMPILE.get(arch, {})


def _try_arch(arch, **kwargs) -> bool:
    """Initialise taichi on ``arch``; False when the arch is unavailable here. Taichi's own
    "not supported, falling back" messages are silenced: :func:`init` warns once itself."""
    level = kwargs.get("log_level", "warn")
    try:
        ti.init(arch=arch, **{**kwargs, "log_level": "error"})
    except Exception:  # taichi raises a bare RuntimeError for a missing driver
        return False
    ti.set_logging_level(level)
    return ti.lang.impl.current_cfg().arch == arch


def init(backend: str = "gpu", precision: str = "32", seed: int | None = None, debug: bool = False,
         logging_level: str = "warn") -> Backend:
    """Initialise (or re-initialise) the engine. Returns the :class:`Backend` in use ("cuda",
    "vulkan" or "cpu", with the device's name).

    ``backend``: "gpu" (CUDA, else a hardware Vulkan device, else the CPU with one warning line),
    "cuda", "vulkan" (any Vulkan device, software ones included) or "cpu". ``precision`` "32" or
    "64" sets the float type of every buffer and kernel; "64" on a Vulkan device without float64
    is a ValueError, raised before anything is reset. Calling ``init`` again starts the engine
    anew: scenes built before it must be built again. Taichi's runtime is reset (its compiled
    kernels and device memory freed) unless the call asks for the backend already in use by name
    ("cpu", "vulkan" or "cuda"), with the same precision and ``debug``: then the runtime and its
    compiled kernels are kept, and the call takes milliseconds instead of loading every kernel
    again (taichi's ``TI_*`` environment variables are read only when the runtime starts).
    ``engine.destroy()`` always resets it. ``seed`` seeds the engine's one random generator
    (:mod:`engine.runtime.randomness`), from which every later ``seed=None`` IK call draws: the same seed
    gives the same answers in any process, on every backend; None seeds it from the OS.
    """
    logging_level = LOGGING_LEVELS.get(str(logging_level).lower(), logging_level)
    if logging_level not in LOGGING_LEVELS.values():
        raise InvalidValueError(f"logging_level: expected one of {sorted(LOGGING_LEVELS)}, got {logging_level!r}")
    if backend not in BACKENDS:
        raise InvalidValueError(f"backend: expected one of {BACKENDS}, got {backend!r}")
    precision = str(precision)
    if precision not in PRECISIONS:
        raise InvalidValueError(f"precision: expected one of {PRECISIONS}, got {precision!r}")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | np.integer)):
        raise InvalidTypeError(f"seed: expected an int or None, got {seed!r}")
    if seed is not None and not 0 <= int(seed) <= 2**31 - 1:  # taichi's random_seed is an int32
        raise InvalidValueError(f"seed: expected 0 to {2**31 - 1}, got {seed!r}")
    if not isinstance(debug, bool | np.bool_):
        raise InvalidTypeError(f"debug: expected a bool, got {debug!r}")
    candidates, notes = _candidates(backend, precision)
    _python_logging(logging_level)
    frontend.install()  # taichi's front end, memoised where it repeats (warm starts ~2x sooner)
    fp = ti.f64 if precision == "64" else ti.f32
    kwargs = dict(default_fp=fp, default_ip=ti.i32, debug=debug, log_level=logging_level,
                  offline_cache=True)
    # the seed is the engine's own generator's (engine.runtime.randomness), not taichi's random_seed: no
    # kernel draws with ti.random, and taichi keys its offline cache on random_seed, so each new
    # seed would compile every kernel again (~2.5 min on 2 cores for the generic solver)
    with LOCK:
        busy = locking.calls_in_progress()
        if busy:
            raise StateError(f"init: {busy} engine call(s) are running in other threads; init() resets taichi and "
                               "would pull their arrays from under them. Call it before starting threads, or after "
                               "they finish")
        if _keeps_runtime(backend, precision, bool(debug)):
            ti.set_logging_level(logging_level)
            STATE.seed = seed
            randomness.reseed(seed)
            STATE.generation += 1  # the scenes built before refuse further calls; the kernels stay
            return current()
        if STATE.initialised:
            memory.orphan_device_arrays()  # before the reset: their memory goes with this program
            reset_taichi()
        chosen = None
        for arch, device in candidates:
            if arch == ti.vulkan and isinstance(device, devices.VulkanDevice):
                # run on the device named (and checked) here; taichi reads this once per process
                os.environ.setdefault("TI_VISIBLE_DEVICE", str(device.index))
            if _try_arch(arch, **{**kwargs, **_compile_settings(arch, device)}):
                chosen = arch
                break
        if chosen is None:
            ti.init(arch=ti.cpu, **{**kwargs, **_compile_settings(ti.cpu, None)})
            chosen = ti.cpu
            if backend != "cpu":
                if candidates:
                    notes.append(f"backend {backend!r} did not start")
                elif not notes:
                    notes.append(f"backend {backend!r} is not available here")
                warnings.warn("init: " + "; ".join(notes) + "; running on the CPU", RuntimeWarning, stacklevel=2)
        device = dict(candidates).get(chosen)
        STATE.initialised = True
        frontend.remember_messages(ti.lang.impl.current_cfg().offline_cache_file_path)  # (see its doc)
        STATE.arch = {ti.cuda: "cuda", ti.vulkan: "vulkan"}.get(chosen, "cpu")
        STATE.device = devices.cpu_name() if chosen == ti.cpu else (device.name if device else "unknown device")
        STATE.software = bool(device is not None and getattr(device, "software", False))
        STATE.precision = precision
        STATE.seed = seed
        randomness.reseed(seed)  # every later seed=None draw of the engine follows from it
        STATE.debug = debug
        STATE.generation += 1
        STATE.runtime += 1
        folder = kernel_cache.cache_folder()
        # the first kernel reads taichi's cache index (taking its lock, where there is one): not while
        # another process holds the lock, which taichi would take for "no cache"
        kernel_cache.settle(folder, wait_s=kernel_cache.STALE_S if kernel_cache.has_index(folder) else 0.0)
        if chosen == ti.vulkan:  # the kernels written since the last runtime: loaded in seconds, not tens
            spirv_cache.drop_debug_names(folder)
        with kernel_cache.holding(folder):
            _materialize()
    return current()


EXIT_WAIT_S = 5.0  # s an ending process waits for taichi's cache lock before taichi writes the cache


def reset_taichi() -> None:
    """``ti.reset()``, which writes taichi's cache (its index and new kernels): once its lock is free,
    and marked as a holder meanwhile (engine.runtime.kernel_cache)."""
    folder = kernel_cache.cache_folder()
    kernel_cache.settle(folder)
    with kernel_cache.holding(folder):
        ti.reset()


@atexit.register  # (before taichi's program is torn down, which is when it writes its cache)
def _settle_cache_at_exit() -> None:
    if STATE.initialised:
        kernel_cache.settle(wait_s=EXIT_WAIT_S)
        kernel_cache.mark_holding_until_exit()


def _keeps_runtime(backend: str, precision: str, debug: bool) -> bool:
    """Whether ``init(backend, precision, debug=debug)`` keeps taichi's runtime: one is running, on
    the arch named (not "gpu", whose choice could differ), in that precision and debug mode."""
    return (STATE.initialised and backend == STATE.arch and precision == STATE.precision
            and debug == bool(STATE.debug))


def _materialize() -> None:
    """Compile and run one trivial kernel in the thread that called init: taichi builds its runtime
    on the first compile, and on the CPU that must happen in the initialising thread (a scene
    first built in a worker thread failed an assertion in taichi's LLVM context)."""
    from .first_kernel import touch  # ti.kernel reads annotations as objects: no postponed ones there

    touch(np.zeros(1, np.int32))


def _candidates(backend: str, precision: str) -> tuple[list, list[str]]:
    """The archs to try in order, each with its device (a :class:`devices.VulkanDevice`, a
    :class:`_Named` for CUDA, or None when the driver could not be asked), and notes on what was
    skipped. Raises ValueError for float64 on the only GPU on offer when it has none."""
    notes: list[str] = []
    out: list = []
    if backend in ("gpu", "cuda"):
        name = devices.cuda_device_name()
        if name or backend == "cuda":
            out.append((ti.cuda, _Named(name or "CUDA device")))
    if backend not in ("gpu", "vulkan"):
        return out, notes
    found = devices.vulkan_devices()
    if found is None:  # the Vulkan loader could not be asked: let taichi try
        out.append((ti.vulkan, None))
        return out, notes
    device = devices.best_vulkan_device(found)  # what taichi's Vulkan backend would run on
    if device is None:
        if backend == "vulkan":
            notes.append("no Vulkan device here")
        return out, notes
    if backend == "gpu" and device.software:
        if not out:
            soft = ", ".join(f"'{d.name}'" for d in found if d.software)
            notes.append(f"backend 'gpu' skipped the software Vulkan device {soft} (it runs on the CPU, "
                         "slower than the CPU backend; backend='vulkan' uses it anyway)")
        return out, notes
    if precision == "64" and not device.float64:
        if out:  # CUDA comes first; should it fail, the CPU, not this device
            return out, notes
        raise InvalidValueError(f"precision: '64' needs float64 shaders, which the Vulkan device '{device.name}' "
                                "lacks; use precision='32' (or backend='cpu')")
    out.append((ti.vulkan, device))
    return out, notes


@dataclass(frozen=True)
class _Named:
    name: str
    software: bool = False


def current() -> Backend:
    """The backend in use (initialising on the CPU first if :func:`init` was never called)."""
    ensure_init()
    return Backend(STATE.arch, STATE.device, STATE.software)


def ensure_init() -> None:
    """Initialise on the CPU with defaults if the user never called :func:`init` (once, whatever
    the number of threads asking)."""
    if not STATE.initialised:
        with LOCK:
            if not STATE.initialised:
                init(backend="cpu")
