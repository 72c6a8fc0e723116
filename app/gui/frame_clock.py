"""How long the GUI thread went between frames, and how much of that it was held up.

A gap between two frames' starts is the frame's own work (CPU time), its closing sleep (wanted),
time waiting for a CPU (runnable but not running: a busy machine) and time blocked on something
else: the GIL held by another thread (a taichi compile or kernel load in this process), a lock,
the X server. Linux counts a thread's CPU time and its run-queue wait (``/proc/thread-self/
schedstat``), so the blocked part is what is left; it is what the app controls, while the wait
for a CPU is the machine's. Elsewhere only the gap is measured (blocked = the gap less the sleep).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

SCHEDSTAT = "/proc/thread-self/schedstat"


def _sched() -> tuple[float, float] | None:
    """(CPU time s, run-queue wait s) of the calling thread, or None where Linux does not say."""
    try:
        with open(SCHEDSTAT) as f:
            cpu_ns, wait_ns, _ = f.read().split()
        return int(cpu_ns) * 1e-9, int(wait_ns) * 1e-9
    except (OSError, ValueError):
        return None


@dataclass
class Gap:
    """One frame-to-frame gap, s: ``wall`` in all, ``blocked`` of it and ``queued`` (waiting for a
    CPU; see the module doc); ``frame``: the number of the frame that ended it."""

    wall: float = 0.0
    blocked: float = 0.0
    queued: float = 0.0
    frame: int = 0

    @property
    def unqueued(self) -> float:
        """The gap less its wait for a CPU: what it would be on an idle machine, near enough."""
        return self.wall - self.queued


class FrameClock:
    """Call :meth:`start` at each frame's start (from the GUI thread) with the sleep the previous
    frame asked for; :attr:`longest`, :attr:`most_blocked` and :attr:`longest_unqueued` keep
    the worst gaps so far."""

    def __init__(self):
        self.longest = Gap()
        self.most_blocked = Gap()
        self.longest_unqueued = Gap()
        self._last: tuple | None = None  # (perf_counter, schedstat) at the last frame's start

    def start(self, frame: int, slept: float = 0.0) -> None:
        now, sched = time.perf_counter(), _sched()
        if self._last is not None:
            t0, s0 = self._last
            wall = now - t0
            known = sched is not None and s0 is not None
            cpu, queued = (sched[0] - s0[0], sched[1] - s0[1]) if known else (0.0, 0.0)
            gap = Gap(wall, max(0.0, wall - cpu - queued - max(0.0, slept)), queued, frame)
            if gap.wall > self.longest.wall:
                self.longest = gap
            if gap.blocked > self.most_blocked.blocked:
                self.most_blocked = gap
            if gap.unqueued > self.longest_unqueued.unqueued:
                self.longest_unqueued = gap
        self._last = (now, sched)

    def report(self) -> dict:
        """For the window's JSON report, in ms."""
        return {"ms": 1e3 * self.longest.wall, "frame": self.longest.frame,
                "blocked_ms": 1e3 * self.most_blocked.blocked, "blocked_frame": self.most_blocked.frame,
                "unqueued_ms": 1e3 * self.longest_unqueued.unqueued, "unqueued_frame": self.longest_unqueued.frame}
