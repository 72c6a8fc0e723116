"""Rolling readouts of the live app: frame rate, IK and render time, convergence, worst errors."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass
class FrameReadout:
    """One frame's figures. Times in ms, errors in m / rad, ``converged`` in percent of envs;
    ``collided``: percent of envs whose answer collides (None: no collision check ran, see
    :mod:`app.sim.collision_view`); ``worst_step``: the largest joint move of any env in this frame
    (rad or m); ``lagging``: envs behind their targets under velocity-limited tracking, or moving
    along their paths under planned motion (counted apart from ``failed``); ``plan_failed``: under
    planned motion, envs whose last planning failed (None without planned motion)."""

    t: float
    ik_ms: float
    render_ms: float
    converged: float
    failed: int
    worst_pos: float
    worst_rot: float
    collided: float | None = None
    worst_step: float = 0.0
    lagging: int = 0
    plan_failed: int | None = None

    @classmethod
    def of(cls, frame, t: float, render_ms: float, colliding: np.ndarray | None) -> FrameReadout:
        """The readout of a solved :class:`~engine.scenefile.runner.RunnerFrame` ``frame`` at time ``t``."""
        lagging = np.zeros(frame.success.shape, bool) if frame.lagging is None else frame.lagging
        return cls(t, frame.ik_ms, render_ms, 100.0 * frame.success_rate, int((~frame.success & ~lagging).sum()),
                   worst(frame.pos_error), worst(frame.rot_error),
                   None if colliding is None else 100.0 * float(colliding.mean()),
                   worst(frame.step) if frame.step is not None else 0.0, int(lagging.sum()),
                   None if frame.plan_reason is None else sum(r not in (None, "ok") for r in frame.plan_reason))


class Metrics:
    """Keeps the last ``history_s`` seconds of :class:`FrameReadout`s and an FPS estimate.

    The sim thread adds, the GUI thread reads: readers copy a deque first (``list(deque)`` runs
    without releasing the GIL, so it never sees one mid-change)."""

    def __init__(self, history_s: float = 10.0):
        self.history_s = history_s
        self.frames: deque[FrameReadout] = deque()
        self._frame_times: deque[float] = deque(maxlen=60)

    def add(self, readout: FrameReadout) -> None:
        self.frames.append(readout)
        self._frame_times.append(readout.t)
        while self.frames and readout.t - self.frames[0].t > self.history_s:
            self.frames.popleft()

    def reset(self) -> None:
        self.frames.clear()
        self._frame_times.clear()

    @property
    def fps(self) -> float:
        """Frames per second over the last (up to) 60 frames."""
        times = list(self._frame_times)
        if len(times) < 2:
            return 0.0
        span = times[-1] - times[0]
        return (len(times) - 1) / span if span > 0 else 0.0

    @property
    def last(self) -> FrameReadout | None:
        frames = list(self.frames)
        return frames[-1] if frames else None

    def recent_max(self, name: str, span_s: float = 2.0) -> float | None:
        """The largest value of one field over the last ``span_s`` seconds (None before a frame):
        a one-frame event such as a joint jump stays readable for that long."""
        frames = list(self.frames)
        if not frames:
            return None
        now = frames[-1].t
        return max(float(getattr(f, name)) for f in frames if now - f.t <= span_s)

    def series(self, name: str) -> tuple[list[float], list[float]]:
        """``(seconds relative to now, values)`` of one field, for the live plot."""
        frames = list(self.frames)
        if not frames:
            return [], []
        now = frames[-1].t
        return [f.t - now for f in frames], [float(getattr(f, name)) for f in frames]


def worst(values: np.ndarray) -> float:
    """Largest finite entry (0 for an empty array)."""
    values = np.asarray(values, float)
    return float(values.max()) if values.size else 0.0
