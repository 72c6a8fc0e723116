"""The GUI never freezes (issue 27, item 1): through a cold start (an empty taichi kernel cache:
every kernel compiles) and a robot switch, the GUI thread runs frame after frame. The window
measures the time between its frames' starts itself (``longest_frame_gap`` in its report, with
the part of it the GUI thread was blocked rather than running or waiting for a CPU:
:mod:`app.frame_clock`); no gap may exceed 250 ms on an idle machine. Before the IK solves ran in
a process of their own, taichi held the GIL for the whole first compile (~37 s for the generic
solver) and the window stood still.

On a busy machine the GUI thread gets a CPU less often: the bound grows with the load average per
core (at a load of 4 on 2 cores, 500 ms), which still fails a freeze for a compile by far."""

from __future__ import annotations

import os

MAX_GAP_MS = 250.0


def _limit_ms(loads) -> float:
    """250 ms, times the run's highest 1-minute load average per core when above 1."""
    return MAX_GAP_MS * max(1.0, max(loads) / (os.cpu_count() or 1))


def _solving(r) -> bool:
    return any(m[1].startswith("solving") for m in r["messages"])


def test_no_frame_gap_through_a_cold_start_and_a_robot_switch(launch, display, tmp_path, monkeypatch):
    from _appwindow import inside_left

    cache = tmp_path / "ticache"
    monkeypatch.setenv("TI_OFFLINE_CACHE_FILE_PATH", str(cache))  # the app's and its children's: empty
    loads = [os.getloadavg()[0]]
    app = launch()
    gaps = []  # (longest gap so far in ms, frames run) as the test saw the report

    def seen(r) -> dict:
        gaps.append((r["longest_frame_gap"]["ms"], r["frames"]))
        loads.append(os.getloadavg()[0])
        return r

    def check(gap: dict, when: str) -> None:
        limit = _limit_ms(loads)
        assert max(gap["ms"], gap["blocked_ms"]) <= limit, (
            f"the GUI stopped {gap['ms']:.0f} ms at frame {gap['frame']}, and was blocked {gap['blocked_ms']:.0f} ms "
            f"at frame {gap['blocked_frame']} ({when}; limit {limit:.0f} ms at load averages up to {max(loads):.1f})")

    r = app.wait_report(lambda r: seen(r) and _solving(r), timeout=300)
    assert "compiled" in next(m[1] for m in r["messages"] if m[1].startswith("solving"))  # it did compile
    check(r["longest_frame_gap"], "cold start")
    answers = r["qpos"]
    # a robot switch: type "ur5" into the catalog search, load it, and wait for its answers
    app.click_widget("robot_filter", at=inside_left)
    app.type("ur5")
    app.wait_report(lambda r: seen(r) and r["robot_choice"].startswith("ur5"))
    app.click_widget("robot_load")
    r = app.wait_report(lambda r: seen(r) and r.get("robot", "").startswith("ur5") and r["state"]["busy"] is None
                        and any("loaded robot ur5" in m[1] for m in r["messages"]), timeout=300)
    generation = r["solved"]["generation"]
    r = app.wait_report(lambda r: seen(r) and r["solved"]["generation"] == generation  # ur5 solved, frame
                        and r["solved"]["frames"] >= 30, timeout=120)  # after frame
    assert len(r["qpos"][0]) != len(answers[0])  # a UR5's answers (6 joints), not a Panda's (9)
    check(r["longest_frame_gap"], "robot switch")
    assert len(gaps) > 50 and gaps[-1][1] > 100, gaps[-5:]  # the report was sampled all along
    assert "Traceback" not in app.log(), app.log()
