"""Start-up (issue 17, item 8): the window comes at once, with a progress note over the view while
the scene is built and the IK kernels are prepared; the robots are drawn before the kernels are
ready; the app says "compiled" only when it knows kernels were compiled (taichi's kernel cache was
empty), and how long each part took."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import engine as ik
from app.sim.loop import Sim, kernel_cache_files

ROOT = Path(__file__).resolve().parent.parent
BAR = np.array([90, 160, 255])  # the progress bar's sweep (app.view)


def test_window_first_then_robots_then_solving(launch, display):
    from _appwindow import grab_screen

    ik.init(backend="cpu")
    cache_empty = not kernel_cache_files()  # the app's process uses the same kernel cache
    app = launch()
    early = app.wait_report(lambda r: r["frames"] >= 3, timeout=120)
    assert early["images"] == 0 and early["state"]["busy"], early["state"]  # a window, and what it waits on
    # the robots, with the note over them while the IK kernels are prepared
    r = app.wait_report(lambda r: r["images"] >= 1, timeout=120)
    seen_bar = False
    while "IK kernels" in (r["state"]["busy"] or ""):
        (ox, oy), (w, h) = r["view_origin"], r["view_size"]
        view = grab_screen(display, (int(ox), int(oy), int(ox) + w, int(oy) + h))
        seen_bar |= bool((np.abs(view - BAR).sum(axis=2) < 40).sum() > 30)
        assert ("compiling" in r["state"]["busy"]) == cache_empty, r["state"]["busy"]
        r = app.wait_frames(2)
    assert seen_bar, "no progress bar while the IK kernels were prepared"
    r = app.wait_report(lambda r: any(m[1].startswith("solving") for m in r["messages"]), timeout=300)
    lines = [m[1] for m in r["messages"] if m[1].startswith(("robots on screen", "solving"))]
    assert len(lines) == 2 and lines[0].startswith("robots on screen") and " s after start" in lines[0], lines
    assert ("compiled" in lines[1]) == cache_empty, lines[1]
    assert r["state"]["busy"] is None
    assert "Traceback" not in app.log(), app.log()


class _Stub:
    startup: dict


def test_compiled_is_said_only_when_the_kernel_cache_was_empty():
    note = Sim.startup_note
    stub = _Stub()
    stub.startup = {"build_s": 0.3, "cache_empty": False, "solve_s": 2.4, "image_s": 1.1}
    assert "compiled" not in note(stub) and "ready in 2.4 s" in note(stub)
    stub.startup["cache_empty"] = True
    assert "compiled" in note(stub)
    stub.startup = {"build_s": 0.3, "cache_empty": True, "image_s": 1.1}  # not solved yet
    assert note(stub) is None


def test_solving_waits_for_an_image_that_shows_the_answers():
    """The "solving" line is the first image with IK answers on screen, not the solve itself: after
    the first solve, the image of the robots at rest drawn before it does not count; the next
    image, of the solved state, does."""
    from app.control.controller import AppController

    ik.init(backend="cpu")
    c = AppController(res=(320, 180))  # inline: the test runs the sim's steps itself
    try:
        assert c.wait_frame() is not None  # the robots at rest, before any solve
        assert c.sim.first_answers_image() is None and not c.answers_shown
        assert c.sim.tick() is not None  # the first solve (the scene plays)
        assert c.sim.startup_note() is not None  # what used to be said here already
        assert c.sim.first_answers_image() is None and not c.answers_shown
        c.wait_frame()  # an image of the solved state, handed to the GUI
        assert c.answers_shown and c.sim.first_answers_image() == c.sim.latest_image()[0]
    finally:
        c.close()


def test_fk_is_compiled_before_the_window_draws_and_never_again():
    """The app's own process compiles FK (both forms: serial, and parallel past 256 rows) in its sim
    thread before the window shows (:func:`engine.configuration.prepare_fk`; taichi holds the GIL
    while it compiles, which stopped the GUI's frames 3-5 for 0.2-0.6 s in a cold start). After
    it, building scenes of 16 and 1024 envs and reading their poses prepares no kernel (a new
    process: this one has FK already)."""
    import subprocess
    import sys

    code = ("import engine; from engine.runtime import launch; engine.init(backend='cpu');"
            "from engine.configuration import prepare_fk; from engine import scenefile;\n"
            "def built(n):\n"
            "    before = launch.kernels_prepared()\n"
            "    _, runner = scenefile.build(scenefile.load('scenes/batched_panda.yaml'), n_envs=n)\n"
            "    runner.robot.set_qpos(runner.robot.get_qpos()); runner.robot.get_links_pos()\n"
            "    return launch.kernels_prepared() - before\n"
            "print('unprepared', built(1024)); engine.init(backend='cpu'); prepare_fk();"
            "print('prepared', built(16), built(1024))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    assert int(lines["unprepared"]) >= 1, out.stdout  # without it, the build compiles FK
    assert lines["prepared"].split() == ["0", "0"], out.stdout
