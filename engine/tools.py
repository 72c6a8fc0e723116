"""Genesis' ``gs.tools`` names that an IK script uses: :class:`Rate`, a loop held at a fixed
frequency. Any other Genesis tool (``animate``, timers, image savers) is a clear
:class:`~engine.errors.NotCoveredError`; record videos with ``scene.visualizer.start_recording``.
"""

from __future__ import annotations

import time

from . import inputs

__all__ = ["Rate"]


class Rate:
    """Hold a loop at ``rate`` Hz: call :meth:`sleep` once per iteration. A late iteration does not
    sleep, and the schedule restarts from then (no catching up)."""

    def __init__(self, rate: float):
        self.period = 1.0 / inputs.as_positive("rate", rate)
        self._next = time.perf_counter() + self.period

    def sleep(self) -> None:
        """Wait until this iteration's period is over (s of wall time)."""
        now = time.perf_counter()
        if self._next > now:
            time.sleep(self._next - now)
            self._next += self.period
        else:
            self._next = now + self.period


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from .genesis_names import not_covered

    raise not_covered("engine.tools", name, f"tool {name!r}")
