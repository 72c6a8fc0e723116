"""Serial or parallel CPU launches, chosen by timing both.

Taichi's CPU range-for hands its iterations to a pool of one thread per core, which pays when the
cores are free. When they are not (a VM whose host often takes its second vCPU, a desktop where
the GUI, a recorder and the solver compete), waking the pool can cost more than the second core
brings. Measured on this project's 2-vCPU VM, the Panda FK over 16384 rows (``bench/fk.py``)
took 0.37 ms in parallel against 0.53 ms in the calling thread in calm phases, and 0.68 ms
against 0.57 ms in busy ones; the phases last from seconds to minutes.

:class:`ThreadChoice` keeps the last few launch times of each mode per key (a kernel and a batch
size class, :func:`size_class`), runs the faster mode, and every ``explore_every``-th launch the other one, so that it
follows the machine as it changes. The first launches try parallel, then serial; the first launch
of each mode is not counted (it may include compiling that mode). A launch's results do not depend
on the mode. Each mode is a separate compiled kernel (taichi's ``serialize`` is a compile-time
constant), so the first serial launch of a kernel compiles it: use this for kernels that compile
fast or whose serial form small batches compile anyway (the lane FK: ~1 s once per robot, then
taichi's disk cache; the generic FK and Jacobian), not for the per-robot IK solvers (5-15 s each).
Batches of up to ``max_rows`` rows always run serially (the pool costs more than their work) and
GPU launches always in parallel; neither is timed. At most ``MAX_KEYS`` keys are kept (the oldest
goes first), so scenes built and destroyed one after another do not grow it.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable

from .dispatch import SERIAL_MAX_ROWS
from .dispatch import serial as serial_for
from .state import LOCK, STATE

EXPLORE_EVERY = 16  # one launch in this many runs the mode not currently preferred
WINDOW = 5  # launch times kept per mode and key
MIN_SAMPLES = 2  # launches of each mode before the choice is made by their times
MAX_KEYS = 64


def _median(times: deque) -> float:
    """The median of ``times`` (the lower middle one of an even count)."""
    ordered = sorted(times)
    return ordered[(len(ordered) - 1) // 2]


class ThreadChoice:
    """Chooses serial or parallel for each launch of a keyed CPU kernel from measured times."""

    def __init__(self, explore_every: int = EXPLORE_EVERY, window: int = WINDOW):
        self.explore_every = explore_every
        self.window = window
        self._times: dict[Hashable, dict[bool, deque]] = {}
        self._launches: dict[Hashable, int] = {}
        self._uncounted: set = set()  # (key, mode) whose first launch is still to come
        self._lock = threading.Lock()  # callers may be on several threads

    def serial(self, key: Hashable) -> bool:
        """The mode for the next launch under ``key``: True for the calling thread."""
        with self._lock:
            return self._serial(key)

    def _serial(self, key: Hashable) -> bool:
        times = self._times.get(key)
        if times is None:
            if len(self._times) >= MAX_KEYS:
                self._forget(next(iter(self._times)))
            times = self._times[key] = {False: deque(maxlen=self.window), True: deque(maxlen=self.window)}
            self._uncounted.update(((key, False), (key, True)))
        launches = self._launches[key] = self._launches.get(key, 0) + 1
        for mode in (False, True):
            if len(times[mode]) < MIN_SAMPLES:
                return mode
        faster = _median(times[True]) < _median(times[False])
        return (not faster) if launches % self.explore_every == 0 else faster

    def _forget(self, key: Hashable) -> None:
        del self._times[key]
        self._launches.pop(key, None)
        self._uncounted.difference_update(((key, False), (key, True)))

    def record(self, key: Hashable, serial: bool, seconds: float) -> None:
        """Note that a launch under ``key`` in mode ``serial`` took ``seconds`` (a mode's first launch
        is left out)."""
        with self._lock:
            times = self._times.get(key)
            if (key, serial) in self._uncounted:
                self._uncounted.discard((key, serial))
            elif times is not None:
                times[serial].append(seconds)

    def preferred(self, key: Hashable) -> bool | None:
        """The mode the times so far favour (True: serial), or None before both were tried."""
        with self._lock:
            times = self._times.get(key)
            if times is None or min(len(t) for t in times.values()) < MIN_SAMPLES:
                return None
            return _median(times[True]) < _median(times[False])

    def launch(self, kernel: Hashable, rows: int, run: Callable[[bool], None],
               max_rows: int = SERIAL_MAX_ROWS) -> None:
        """Call ``run(serial)`` for a batch of ``rows`` rows of ``kernel`` (any hashable naming the
        kernel and what it runs for), in the mode chosen for its :func:`size_class`."""
        if STATE.arch != "cpu" or rows <= max_rows:  # not timed: the fixed rule decides
            run(serial_for(rows, max_rows))
            return
        key = size_class(kernel, rows)
        serial = self.serial(key)
        with LOCK:  # time the launch, not a wait for another thread's
            start = time.perf_counter()
            run(serial)
            elapsed = time.perf_counter() - start
        self.record(key, serial, elapsed)


def size_class(kernel: Hashable, rows: int) -> tuple:
    """The key under which launches of ``kernel`` over ``rows`` rows are timed: batches within a
    factor of two of each other share it."""
    return kernel, rows.bit_length()


CHOICE = ThreadChoice()  # the engine's: keys are size classes of kernels
