"""Time from the ``ikstudio`` command to the robots on screen, cold and warm.

    python bench/startup.py              # the default scene; needs a display (DISPLAY or Xvfb)
    python bench/startup.py --runs 3     # three warm runs after the cold one

``ikstudio`` runs as a user starts it (the console script, else ``python -m app``), with this
checkout first on ``PYTHONPATH`` and taichi's kernel cache (``TI_OFFLINE_CACHE_FILE_PATH``) in a
new empty folder: the first run is cold (every kernel compiles), the next ones are warm (they
load what the first run wrote when it exited). Each run is timed from just before the command
starts to the app's "robots on screen" line on stderr (the first image of the robots drawn in
the window) and to its "solving" line (the first IK solve's image); then the app is sent SIGINT,
which closes it the way closing its window does (taichi writes its cache then). The app's own
lines (its time from process start, per part) are printed too. Also run by ``bench/gui.py``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROBOTS_LINE = "IK Studio: robots on screen"
SOLVING_LINE = "IK Studio: solving"


def command() -> list[str]:
    """The ``ikstudio`` console script when installed, else ``python -m app``."""
    found = shutil.which("ikstudio")
    return [found] if found else [sys.executable, "-m", "app"]


def time_start(cache_dir: str, timeout: float = 600.0) -> dict:
    """One launch of ``ikstudio`` with taichi's cache in ``cache_dir``: seconds from the command to
    the robots on screen (``robots_s``) and to the first solve (``solving_s``), the app's own
    stderr lines (``lines``) and its exit status (``rc``)."""
    env = dict(os.environ, TI_OFFLINE_CACHE_FILE_PATH=cache_dir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    seen: dict = {"lines": []}
    t0 = time.perf_counter()
    proc = subprocess.Popen(command(), cwd=tempfile.gettempdir(), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    done = threading.Event()

    def read() -> None:
        for line in proc.stderr:
            now = time.perf_counter() - t0
            if line.startswith(ROBOTS_LINE):
                seen["robots_s"] = now
            elif line.startswith(SOLVING_LINE):
                seen["solving_s"] = now
                done.set()
            seen["lines"].append(line.rstrip())
        done.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    finished = done.wait(timeout)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # closes the app as its window's close button does
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    seen["rc"] = proc.returncode
    if not finished or "solving_s" not in seen:
        tail = "\n".join(seen["lines"][-20:])
        raise SystemExit(f"ikstudio did not reach its first solve within {timeout:.0f} s "
                         f"(rc {proc.returncode}):\n{tail}")
    return seen


def _wait_for_warmup(cache: str, timeout: float = 300.0) -> float:
    """Wait until no generic-solver warm-up holds the cache's lock (the one the previous start began
    outlives its app: app/sim/warmup.GenericWarmup), so that a warm start is timed on an idle
    machine, as a user's next start meets it. Returns the seconds waited."""
    import fcntl
    import time

    lock = Path(cache) / "ikstudio-generic-ready-lock"
    t0 = time.monotonic()
    while lock.exists() and time.monotonic() - t0 < timeout:
        with open(lock) as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                time.sleep(0.5)
    return time.monotonic() - t0


def print_startup(runs: int = 1) -> list[dict]:
    """Cold then ``runs`` warm starts of ``ikstudio``; prints one line each and returns the results."""
    cache = tempfile.mkdtemp(prefix="ikstudio-ticache-")
    results = []
    try:
        print(f"ikstudio start-up: {' '.join(command())} (default scene), taichi kernel cache in {cache}, "
              f"{os.cpu_count()} CPUs, load avg {os.getloadavg()[0]:.2f}")
        for k in range(1 + runs):
            kind = "cold" if k == 0 else "warm"
            cached = sum(len(files) for _, _, files in os.walk(cache))
            if kind == "warm" and not cached:
                raise SystemExit("the cold run left taichi's kernel cache empty: a warm run cannot be timed")
            waited = _wait_for_warmup(cache) if kind == "warm" else 0.0
            r = time_start(cache)
            results.append(r)
            own = [line.removeprefix("IK Studio: ") for line in r["lines"] if line.startswith("IK Studio:")]
            print(f"  {kind}: robots on screen {r['robots_s']:.1f} s, solving {r['solving_s']:.1f} s after the command "
                  f"(cache files before: {cached}; load avg {os.getloadavg()[0]:.2f}; exit {r['rc']}"
                  + (f"; waited {waited:.0f} s for the generic solver's warm-up" if waited >= 0.5 else "") + ")")
            for line in own:
                print(f"      app: {line}")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="warm runs after the cold one (default 1)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error(f"--runs: expected 1 or more, got {args.runs}")
    xvfb = None
    if not os.environ.get("DISPLAY"):
        from xvfbwrapper import Xvfb

        xvfb = Xvfb(width=1920, height=1080, colordepth=24)
        xvfb.start()
    try:
        print_startup(args.runs)
    finally:
        if xvfb is not None:
            xvfb.stop()


if __name__ == "__main__":
    main()
