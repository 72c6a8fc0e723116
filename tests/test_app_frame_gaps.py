"""The GUI never freezes (issue 27, item 1): through a cold start (an empty taichi kernel cache:
every kernel compiles) and a robot switch, the GUI thread runs frame after frame. The window
measures the time between its frames' starts itself (``longest_frame_gap`` in its report, with
the part of it the GUI thread was blocked rather than running or waiting for a CPU:
:mod:`app.gui.frame_clock`); no gap may exceed 250 ms on an idle machine. Before the IK solves ran in
a process of their own, taichi held the GIL for the whole first compile (~37 s for the generic
solver) and the window stood still.

On a busy machine the GUI thread waits for a CPU, and whatever holds the GIL waits for one too:
so the test bounds each gap less the GUI thread's own wait for a CPU (Linux counts it), and the
bound grows with the load average per core (at a load of 4 on 2 cores, 500 ms); on an idle
machine that is the gap itself against 250 ms, and on any machine it fails a freeze for a compile
by far. The gap in all is in the failure message."""

from __future__ import annotations

import os

from app.sim.preload import ALLOWED_LATE

MAX_GAP_MS = 250.0


def _limit_ms(loads) -> float:
    """250 ms, times the run's highest 1-minute load average per core when above 1."""
    return MAX_GAP_MS * max(1.0, max(loads) / (os.cpu_count() or 1))


def _no_late_kernels(r) -> None:
    """No kernel was compiled or loaded in the window's process after its first frame (taichi holds
    the GIL while it traces one); its FK was, before it: the count works in that process."""
    assert r["late_kernels"] == [], f"prepared in the window's process after its first frame: {r['late_kernels']}"
    assert r["kernels_prepared"] >= 1, r["kernels_prepared"]


def _solving(r) -> bool:
    return any(m[1].startswith("solving") for m in r["messages"])


class _Watch:
    """The app with an empty kernel cache, its report sampled as the test waits on it."""

    def __init__(self, launch, tmp_path, monkeypatch, cold_kernels: bool = True):
        if cold_kernels:
            monkeypatch.setenv("TI_OFFLINE_CACHE_FILE_PATH", str(tmp_path / "ticache"))  # the app's and its children's
        monkeypatch.setenv("IKSTUDIO_CACHE_DIR", str(tmp_path / "cache"))  # meshes decimated, spheres fitted anew
        self.loads = [os.getloadavg()[0]]
        self.seen = []  # (longest gap so far in ms, frames run) as the test saw the report
        self.app = launch()

    def wait(self, ok, timeout: float = 300.0) -> dict:
        def sampled(r) -> bool:
            self.seen.append((r["longest_frame_gap"]["ms"], r["frames"]))
            self.loads.append(os.getloadavg()[0])
            return ok(r)

        return self.app.wait_report(sampled, timeout=timeout)

    def check(self, gap: dict, when: str) -> None:
        limit = _limit_ms(self.loads)
        assert max(gap["unqueued_ms"], gap["blocked_ms"]) <= limit, (
            f"the GUI stopped {gap['unqueued_ms']:.0f} ms besides waiting for a CPU at frame {gap['unqueued_frame']} "
            f"(blocked {gap['blocked_ms']:.0f} ms at frame {gap['blocked_frame']}; longest gap in all {gap['ms']:.0f} "
            f"ms at frame {gap['frame']}) ({when}; limit {limit:.0f} ms at load averages up to {max(self.loads):.1f})")

    def cold_start(self) -> dict:
        r = self.wait(_solving)
        assert "compiled" in next(m[1] for m in r["messages"] if m[1].startswith("solving"))  # it did compile
        return self.started(r)

    def started(self, r) -> dict:
        self.check(r["longest_frame_gap"], "cold start")
        return r


def test_no_frame_gap_through_a_cold_start(launch, display, tmp_path, monkeypatch):
    watch = _Watch(launch, tmp_path, monkeypatch)
    r = watch.cold_start()
    # the scene names the generic solver, not compiled yet: the per-robot one answers, and the field says so
    assert r["state"]["kernel"] == "generic" and r["state"]["kernel_label"] == "kernel (auto answers)", r["state"]
    r = watch.wait(lambda r: r["solved"]["frames"] >= 30)  # and while it solves
    watch.check(r["longest_frame_gap"], "solving")
    # the report was sampled all along: often, and over 50 frames of the GUI at least (the frame rate
    # itself is not judged: on a busy machine it falls, and the gap check above allows for that)
    assert len(watch.seen) > 50 and watch.seen[-1][1] - watch.seen[0][1] >= 50, (watch.seen[:3], watch.seen[-3:])
    # the first scene's imports (each holds the GIL: scipy's alone held it up to 1 s on a busy machine)
    # came before the first frame, not during the frames (app.sim.preload)
    late = set(r["late_imports"]) - ALLOWED_LATE
    assert not late, f"imported after the window's first frame: {sorted(late)}; add them to app.sim.preload.MODULES"
    _no_late_kernels(r)
    assert "Traceback" not in watch.app.log(), watch.app.log()


def test_no_frame_gap_through_a_robot_switch(launch, display, tmp_path, monkeypatch):
    """The default scene, then Baxter from the catalog (the heaviest meshes of the catalog: 100k-face
    COLLADA shells, decimated on first use) with a cold mesh cache: the new robot is loaded, drawn
    and solved, and the GUI never stops for it. (The kernels are the suite's: cold kernels are the
    test above's, and a cold compile of Baxter's solvers adds minutes, not gaps: they compile in
    the solver's process.)"""
    from _appwindow import inside_left

    watch = _Watch(launch, tmp_path, monkeypatch, cold_kernels=False)
    app = watch.app
    watch.started(watch.wait(_solving))
    app.click_widget("robot_filter", at=inside_left)
    app.type("baxter")
    watch.wait(lambda r: r["robot_choice"].startswith("baxter"))
    frames = watch.seen[-1][1]
    app.click_widget("robot_load")
    r = watch.wait(lambda r: r.get("robot", "").startswith("baxter") and r["state"]["busy"] is None
                   and r["solved"]["generation"] > 1 and r["solved"]["frames"] >= 10)
    r = watch.wait(lambda r: r["frames"] > frames + 100)
    assert any("loaded robot baxter" in m[1] for m in r["messages"]), r["messages"]
    watch.check(r["longest_frame_gap"], "robot switch")
    late = set(r["late_imports"]) - ALLOWED_LATE  # Baxter's COLLADA meshes' loaders came with the preload too
    assert not late, f"imported after the window's first frame: {sorted(late)}; add them to app.sim.preload.MODULES"
    _no_late_kernels(r)
    assert "Traceback" not in app.log(), app.log()
