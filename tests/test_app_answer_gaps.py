"""The answers keep coming (issue 27, item 2): with the generic solver in taichi's cache (as the app's
background warm-up leaves it, once per machine), adding a target and switching robots stop the
IK answers in the window for at most 2 s, also for a robot never drawn on this machine (an empty
mesh cache: its meshes are decimated while the full ones are drawn, engine.vis.link_sets; before,
the switch to the UR5 stopped the answers 2.6 s on an idle VM, waiting for the decimation, since
the sim runs one frame ahead of the renderer at most). The window's report says which frame was solved last
(``solved``: the scene's generation and its frame count); the test samples it and measures the
longest time without a new answer around each edit. On a machine busier than one job per core
the bound grows with the load average per core, as the frame-gap test's does."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from _appwindow import ROOT, inside_left
from _procs import niced_threads

MAX_STOP_S = 2.0


def _limit_s(loads) -> float:
    return MAX_STOP_S * max(1.0, max(loads) / (os.cpu_count() or 1))


def _warm_generic(timeout: float = 900.0) -> None:
    """The generic solver compiled into this machine's taichi cache (the app's own warm-up; rc 3:
    another process is warming it up, so wait and try again)."""
    t0 = time.monotonic()
    while True:
        rc = subprocess.run([sys.executable, "-m", "app.sim.solver_child", "--warm-generic"], cwd=ROOT,
                            timeout=timeout).returncode
        if rc == 0:
            return
        assert rc == 3 and time.monotonic() - t0 < timeout, f"the generic solver's warm-up failed (rc {rc})"
        time.sleep(1.0)


class _Answers:
    """The report sampled: (time, generation, frames solved) each time the test reads it."""

    def __init__(self, app):
        self.app, self.seen, self.loads = app, [], [os.getloadavg()[0]]

    def wait(self, ok, timeout: float = 300.0) -> dict:
        def sampled(r) -> bool:
            if "solved" in r:
                self.seen.append((time.monotonic(), r["solved"]["generation"], r["solved"]["frames"]))
            self.loads.append(os.getloadavg()[0])
            return ok(r)

        return self.app.wait_report(sampled, timeout=timeout)

    def longest_stop(self, since: float) -> float:
        """The longest time (s) between new answers (a frame count or generation that changed) seen from
        ``since`` (monotonic s) on."""
        answers = [t for (t, g, f), (_, g0, f0) in zip(self.seen[1:], self.seen[:-1]) if (g, f) != (g0, f0)]
        times = [since, *[t for t in answers if t > since]]
        return max(b - a for a, b in zip(times[:-1], times[1:]))


def test_adding_a_target_and_switching_robots_keep_the_answers_coming(launch, tmp_path, monkeypatch):
    _warm_generic()
    monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path / "cache"))  # no robot drawn here before
    app = launch()
    w = _Answers(app)
    r = w.wait(lambda r: r.get("solved", {}).get("frames", 0) >= 20 and r["state"]["playing"])
    assert r["state"]["kernel_label"] == "kernel", r["state"]  # the generic solver answers, not "auto"

    # a second target: a new task structure, the same compiled generic solver
    t_click = time.monotonic()
    app.click_widget("add_target")
    r = w.wait(lambda r: len(r["links"]) == 2)
    frames = r["solved"]["frames"]
    w.wait(lambda r: r["solved"]["frames"] >= frames + 20)
    stop = w.longest_stop(t_click)
    print(f"answers stopped {stop:.2f} s at most (load {max(w.loads):.1f})")
    assert stop <= _limit_s(w.loads), (f"the answers stopped {stop:.2f} s around adding a target (limit "
                                       f"{_limit_s(w.loads):.1f} s at load averages up to {max(w.loads):.1f})")

    # another robot from the catalog: a new scene, built in a spare child while this one answers
    app.click_widget("robot_filter", at=inside_left)
    app.type("ur5")
    w.wait(lambda r: r["robot_choice"].startswith("ur5"))
    generation = r["solved"]["generation"]
    t_click = time.monotonic()
    app.click_widget("robot_load")
    r = w.wait(lambda r: r.get("robot", "").startswith("ur5") and r["solved"]["generation"] != generation
               and r["solved"]["frames"] >= 10)
    stop = w.longest_stop(t_click)
    print(f"answers stopped {stop:.2f} s at most (load {max(w.loads):.1f})")
    assert stop <= _limit_s(w.loads), (f"the answers stopped {stop:.2f} s around a robot switch (limit "
                                       f"{_limit_s(w.loads):.1f} s at load averages up to {max(w.loads):.1f})")
    # and no thread of the app or its children runs below the priority it was started with: one
    # that lowered it could never raise it again, and on a busy machine other programs' work at
    # that priority starved it (a robot switch waited 72-92 s beside four busy loops). The generic
    # solver's cache warm-up is the exception: a compile into the cache at the lowest priority,
    # which answers nothing
    niced = niced_threads(app.proc.pid, tree=True, but="--warm-generic")
    assert not niced, niced
    assert "Traceback" not in app.log(), app.log()
