"""Processes and threads as Linux's ``/proc`` shows them, for tests about the app's CPU priorities."""

from __future__ import annotations

import os
from pathlib import Path


def _stat_fields(path: Path) -> list[str] | None:
    """The fields of a ``stat`` file after the command name (None: the task ended)."""
    try:
        text = path.read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text[text.rindex(")") + 2:].split()


def descendants(pid: int) -> list[int]:
    """``pid`` and every process it started, and they started, that is still running."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                pass
    return found


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def _mesa_cache_writer(task: Path) -> bool:
    """Mesa's shader disk-cache writer threads ("<name>:disk$0"), which Mesa itself starts at the
    lowest priority: not the app's."""
    try:
        return ":disk$" in (task / "comm").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True


def niced_threads(pid: int, tree: bool = False, but: str | None = None) -> dict[int, int]:
    """The threads of process ``pid`` (and of its descendants with ``tree``, but those whose command
    line holds ``but``) whose nice value differs from this process's: {thread id: nice}. Mesa's
    shader-cache writers are left out (:func:`_mesa_cache_writer`). Raises where ``/proc`` has no
    threads of ``pid`` (not Linux, or the process is gone): an empty answer must mean none niced."""
    if not Path(f"/proc/{pid}/task").is_dir():
        raise RuntimeError(f"no /proc/{pid}/task: process {pid} is gone, or this is not Linux")
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    out = {}
    for p in descendants(pid) if tree else [pid]:
        if but is not None and p != pid and but in _cmdline(p):
            continue
        for task in Path(f"/proc/{p}/task").glob("*"):
            fields = _stat_fields(task / "stat")
            if fields is None or _mesa_cache_writer(task):
                continue
            if int(fields[16]) != ours:
                out[int(task.name)] = int(fields[16])
    return out
