"""The app's messages and its one status line.

Every message goes to the log (``messages``, newest last, for tests and the report). The status
line shows, in this order: the newest *problem* (an error with a cause, ``key``: a solver field,
the env count, a widget, the recording) until that cause is gone (the next success of the same
key resolves it); else the newest one-off note (an error for ``ERROR_SHOW_S`` seconds, info for
``INFO_SHOW_S``); else a warning while some envs' answers collide, or some envs cannot reach
their targets. :func:`fit` cuts a
text to the lines the status line has, so nothing runs past the window's edge.
"""

from __future__ import annotations

import time
from collections import deque

ERROR_SHOW_S = 12.0
INFO_SHOW_S = 6.0


class StatusMixin:
    """Messages for the controller (``self.view`` gives the failed envs of the last frame)."""

    def init_status(self) -> None:
        self.messages: deque[tuple[str, str]] = deque(maxlen=50)  # (level, text), newest last
        self.problems: dict[str, str] = {}  # key -> text of errors whose cause is still there
        self._note: tuple[str, str, float] | None = None  # (level, text, time) of the last one-off

    def info(self, text: str) -> None:
        self.messages.append(("info", text))
        self._note = ("info", text, time.monotonic())

    def error(self, text: str, key: str | None = None) -> None:
        """An error; with ``key`` it stays on the status line until :meth:`resolve` ``(key)``."""
        self.messages.append(("error", text))
        if key is None:
            self._note = ("error", text, time.monotonic())
        else:
            self.problems.pop(key, None)  # re-inserted last: the newest problem shows
            self.problems[key] = text

    def resolve(self, key: str) -> None:
        """The cause of ``key``'s error is gone (a later success of the same thing)."""
        self.problems.pop(key, None)

    def status(self) -> tuple[str, str] | None:
        """(level "error" | "info" | "warning", text) for the status line, or None (empty)."""
        problems = list(self.problems.values())
        if problems:
            return "error", problems[-1]
        note = self._note
        if note is not None and time.monotonic() - note[2] < (ERROR_SHOW_S if note[0] == "error" else INFO_SHOW_S):
            return note[0], note[1]
        view = getattr(self, "view", None)
        colliding = view.colliding if view is not None else None
        if colliding is not None and colliding.any():
            hint = "" if self.spec.solver.avoid_collisions else ", or turn on 'avoid collisions' in the solver panel"
            return "warning", (f"{int(colliding.sum())} of {colliding.size} envs collide (tinted magenta): "
                               f"move the obstacle{hint}")
        frame = view.frame if view is not None else None
        lagging = None if frame is None else frame.lagging
        if frame is not None and not frame.success.all():
            failed = int((~frame.success).sum()) - (0 if lagging is None else int(lagging.sum()))
            if frame.plan_reason is not None:  # planned motion: moving is the normal way there
                return _plan_status(frame, failed)
            if failed == 0:
                return "warning", (f"{int(lagging.sum())} of {frame.success.size} envs lag behind their targets "
                                   "(tinted amber): their joints move at their velocity limits (smooth is on)")
            return "warning", (f"{failed} of {frame.success.size} envs do not reach their targets (tinted red): "
                               "move the target back, or press T to reset targets to the robots")
        return None


def _plan_status(frame, failed: int) -> tuple[str, str] | None:
    """The status line under planned motion: envs on their way (info), or whose planning failed and why."""
    n = frame.success.size
    if failed == 0:
        return "info", f"{int(frame.lagging.sum())} of {n} envs move along planned paths (tinted amber)"
    reasons = sorted({r for r in frame.plan_reason if r not in (None, "ok")})
    why = ", ".join(r.replace("_", " ") for r in reasons) or "not at their targets"
    return "warning", (f"{failed} of {n} envs found no path (tinted red: {why}): move the target or the "
                       "obstacle")


def fit(text: str, width_px: float, lines: int, measure) -> tuple[str, bool]:
    """``text`` cut (with "...") so that, wrapped at ``width_px``, it takes at most ``lines``
    lines; ``measure(s, wrap)`` gives (width, height) px of ``s`` wrapped (dearpygui's
    get_text_size), or None before the first frame. Returns (text to show, whether it was cut)."""
    if not text:
        return "", False
    line_h = (measure("Ag", 0) or (0, 13))[1]
    limit = line_h * lines + 0.5 * line_h

    def fits(s: str) -> bool:
        size = measure(s, width_px)
        return size is None or size[1] <= limit

    text = " ".join(text.split())  # one paragraph: newlines would waste the lines we have
    if fits(text):
        return text, False
    lo, hi = 0, len(text)
    while lo < hi:  # the longest prefix that fits with the ellipsis
        mid = (lo + hi + 1) // 2
        if fits(text[:mid].rstrip() + "..."):
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "...", True
