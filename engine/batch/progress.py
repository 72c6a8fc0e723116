"""Progress of a batch job while it runs (:class:`Progress`, :class:`Bar`) and its summary at the
end (:class:`SolveSummary`)."""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field


@dataclass
class Progress:
    """A job's state after each chunk, as a progress callback receives it.

    ``rows_done`` counts the rows of finished chunks, this run's and those a resumed run skipped
    (``rows_skipped``); ``rate`` is this run's rows per second since its first chunk was handed
    out; ``eta_s`` the seconds left at that rate (None before the first chunk); ``workers`` maps
    each worker's process id to its backend (one entry for an in-process run).
    """

    rows_total: int
    chunks_total: int
    rows_done: int = 0
    chunks_done: int = 0
    rows_skipped: int = 0
    chunks_skipped: int = 0
    started: float = field(default_factory=time.perf_counter)
    rate: float = 0.0
    eta_s: float | None = None
    workers: dict = field(default_factory=dict)

    def add(self, rows: int, pid: int | None = None, backend: str = "") -> None:
        """Count one finished chunk of ``rows`` rows, solved by process ``pid``."""
        self.rows_done += rows
        self.chunks_done += 1
        if pid is not None:
            self.workers[pid] = backend
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        self.rate = (self.rows_done - self.rows_skipped) / elapsed
        self.eta_s = (self.rows_total - self.rows_done) / self.rate if self.rate > 0 else None


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Bar:
    """A one-line bar on stderr, redrawn in place at most every ``interval`` s on a terminal (a
    new line every ``log_interval`` s elsewhere, e.g. a log file):
    ``[######........] 12,288/40,000 rows 31% 205,113 rows/s ETA 00:01``."""

    def __init__(self, stream=None, width: int = 24, interval: float = 0.2, log_interval: float = 10.0):
        self.stream = stream or sys.stderr
        tty = getattr(self.stream, "isatty", lambda: False)()
        self.width, self.interval = width, interval if tty else log_interval
        self._last = 0.0
        self._drawn = False

    def __call__(self, p: Progress) -> None:
        now = time.perf_counter()
        if now - self._last < self.interval and p.rows_done < p.rows_total:
            return
        self._last = now
        filled = int(self.width * p.rows_done / max(p.rows_total, 1))
        tty = getattr(self.stream, "isatty", lambda: False)()
        line = (f"[{'#' * filled}{'.' * (self.width - filled)}] {p.rows_done:,}/{p.rows_total:,} rows "
                f"{100 * p.rows_done / max(p.rows_total, 1):.0f}% {p.rate:,.0f} rows/s ETA {_clock(p.eta_s)}")
        self.stream.write(("\r" + line + "\x1b[K") if tty else line + "\n")
        self.stream.flush()
        self._drawn = tty

    def close(self) -> None:
        """End the bar's line (a terminal's bar is redrawn in place)."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


@dataclass
class SolveSummary:
    """What a job did. Rows and success are over the whole dataset in ``out`` (a resumed run's
    skipped chunks included); times are this run's, in seconds.

    ``wall_s``: the whole call; ``setup_s``: before the first chunk (reading the input, starting
    workers, building their scenes, compiling); ``run_s``: from the first chunk handed out to the
    last part written; ``solve_s``: inside the IK calls, summed over workers; ``read_s`` /
    ``write_s``: reading and checking the input, writing parts (on a background thread, so it
    overlaps solving); ``solves_per_s``: this run's rows over ``wall_s``; ``run_rate``: over
    ``run_s``. ``planned``: in a plan job, the dataset's rows with a valid path (else None).
    """

    out: str
    rows: int
    rows_solved: int
    rows_skipped: int
    chunks: int
    chunks_solved: int
    chunks_skipped: int
    succeeded: int
    wall_s: float
    setup_s: float
    run_s: float
    solve_s: float
    read_s: float
    write_s: float
    chunk: int
    workers: int
    backend: str
    ray: str | None = None
    retried: int = 0
    planned: int | None = None

    @property
    def success_rate(self) -> float:
        """Fraction of the dataset's rows whose IK met every tolerance."""
        return self.succeeded / self.rows if self.rows else 0.0

    @property
    def solves_per_s(self) -> float:
        return self.rows_solved / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def run_rate(self) -> float:
        return self.rows_solved / self.run_s if self.run_s > 0 else 0.0

    @property
    def io_fraction(self) -> float:
        """(read_s + write_s) / wall_s."""
        return (self.read_s + self.write_s) / self.wall_s if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict:
        """JSON-ready: every field plus success_rate, solves_per_s, run_rate and io_fraction."""
        d = asdict(self)
        d.update(success_rate=self.success_rate, solves_per_s=self.solves_per_s, run_rate=self.run_rate,
                 io_fraction=self.io_fraction)
        return d

    def line(self) -> str:
        """The one-line summary: rows, success %, wall time, solves/s."""
        skipped = f", {self.rows_skipped:,} skipped ({self.chunks_skipped} finished chunks)" \
            if self.chunks_skipped else ""
        where = f" on Ray ({self.workers} workers)" if self.ray else ""
        planned = "" if self.planned is None else \
            f", {100 * self.planned / self.rows if self.rows else 0.0:.1f}% planned"
        return (f"{self.rows:,} rows ({self.rows_solved:,} solved{skipped}), {100 * self.success_rate:.1f}% success"
                f"{planned}, "
                f"{self.wall_s:.2f} s wall, {self.solves_per_s:,.0f} solves/s{where} -> {self.out}")
