"""Small helpers shared by the bench scripts: timing and plain-text tables.

A bench script run as ``python bench/<name>.py`` has ``bench/`` on ``sys.path`` and imports this
module as ``_common``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def median_time(fn: Callable[[], object], *, min_repeats: int = 3, max_repeats: int = 200, budget_s: float = 1.0,
                warmup: int = 1, times: list | None = None) -> float:
    """Median wall time (s) of one ``fn()`` call.

    ``warmup`` untimed calls first (the first call of a taichi kernel compiles it), then timed
    calls until ``budget_s`` is spent, at least ``min_repeats`` and at most ``max_repeats``; their
    times are appended to ``times`` when given.
    """
    if min_repeats < 1 or max_repeats < min_repeats:
        raise ValueError(f"repeats: need 1 <= min_repeats <= max_repeats, got {min_repeats}, {max_repeats}")
    for _ in range(warmup):
        fn()
    timed: list[float] = []
    start = time.perf_counter()
    while len(timed) < min_repeats or (len(timed) < max_repeats and time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        fn()
        timed.append(time.perf_counter() - t0)
    if times is not None:
        times.extend(timed)
    return statistics.median(timed)


def fmt_ms(seconds: float | None, digits: int = 3) -> str:
    """``seconds`` as milliseconds with ``digits`` significant digits ("-" for None)."""
    if seconds is None:
        return "-"
    ms = seconds * 1e3
    return f"{ms:.{max(digits - len(str(int(ms))), 0)}f}" if ms >= 1 else f"{ms:.{digits}g}"


def fmt_rate(per_s: float | None) -> str:
    """A rate with a k / M suffix: 1234567 -> "1.23M" ("-" for None)."""
    if per_s is None:
        return "-"
    for scale, suffix in ((1e6, "M"), (1e3, "k")):
        if per_s >= scale:
            return f"{per_s / scale:.3g}{suffix}"
    return f"{per_s:.3g}"


def fmt_pct(fraction: float | None) -> str:
    """0.9975 -> "99.8%" ("-" for None)."""
    return "-" if fraction is None else f"{100 * fraction:.1f}%"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], left: int = 1) -> None:
    """Print ``rows`` under ``headers`` in aligned columns: the first ``left`` columns
    left-aligned, the others right-aligned. Cells are printed with ``str``."""
    cells = [[str(c) for c in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]

    def line(row: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))

    print(line(headers))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print(line(row))
