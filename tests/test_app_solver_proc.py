"""The app's solver process (issue 27, item 1): a child that builds the same scene and solves each
frame gives the answers the same runner gives in this process, follows the GUI's edits, and says
clearly when it fails; the generic solver is replaced by the per-robot one until it is cached."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

import engine as ik
from app.sim import children, solver_proc, warmup
from engine import scenefile
from engine.runtime import kernel_cache

SCENE = "scenes/batched_panda.yaml"


@pytest.fixture
def pool():
    ik.init(backend="cpu")
    p = solver_proc.SolverPool()
    yield p
    p.close()


def _runner(kernel: str):
    spec = scenefile.load(SCENE)
    spec.solver.kernel = kernel
    spec.envs.n_envs = 4
    _, runner = scenefile.build(spec, debug_frames=False)
    return runner


def test_the_child_answers_as_this_process_does_and_follows_edits(pool):
    here, there = _runner("auto"), _runner("auto")  # `there` only applies what the child solves
    child = pool.take()
    try:
        child.build(there.spec, there.n_envs)
        for k in range(3):
            if k == 2:  # an edit: the circle's centre moves, in both specs
                for r in (here, there):
                    r.spec.targets[0].pos = (0.45, 0.1, 0.3)
                    r.retarget()
            expected = here.step(0.05)
            got = child.step(there, 0.05, edits=k // 2)
            there.apply(got, 0.05)
            np.testing.assert_array_equal(got.qpos, expected.qpos)  # same kernel, seed and inputs: same bits
            np.testing.assert_array_equal(got.success, expected.success)
            assert got.index == expected.index == k and there.t == pytest.approx(here.t)
            np.testing.assert_array_equal(there.robot.get_qpos(), here.robot.get_qpos())
        assert (expected.success | expected.lagging).all()  # smooth: an env reached, or follows at its limits
    finally:
        child.close()


def test_generic_runs_per_robot_until_cached(pool, monkeypatch):
    monkeypatch.setattr(solver_proc, "generic_ready", lambda: False)
    per_robot, there = _runner("auto"), _runner("generic")
    child = pool.take()
    try:
        child.build(there.spec, there.n_envs)
        got = child.step(there, 0.05, edits=0)
        np.testing.assert_array_equal(got.qpos, per_robot.step(0.05).qpos)
        assert child.answering_kernel("generic") == "auto"  # what the app's kernel field says
        assert child.answering_kernel("per_robot") == "per_robot"
    finally:
        child.close()
    monkeypatch.setattr(solver_proc, "generic_ready", lambda: True)
    child = pool.take()
    try:
        child.build(there.spec, there.n_envs)
        assert child.answering_kernel("generic") == "generic"
    finally:
        child.close()


def test_the_kernel_field_says_which_solver_answers():
    from app.gui.panels.solver import kernel_label

    assert kernel_label("generic", "generic") == kernel_label("auto", "auto") == kernel_label("auto", None) == "kernel"
    assert kernel_label("generic", "auto") == "kernel (auto answers)"


def test_a_failure_names_the_command_and_the_child_goes_on(pool):
    runner = _runner("auto")
    child = pool.take()
    try:
        child.send("frobnicate")
        with pytest.raises(solver_proc.SolverProcessError, match="unknown command 'frobnicate'"):
            child.receive()
        child.build(runner.spec, runner.n_envs)
        assert child.step(runner, 0.05, edits=0).success.all()
    finally:
        child.close()


def test_a_dead_child_is_an_error_not_a_hang(pool):
    runner = _runner("auto")
    child = pool.take()
    child.proc.kill()
    child.proc.wait()
    with pytest.raises(solver_proc.SolverProcessError, match="solver process"):
        child.build(runner.spec, runner.n_envs)
        child.step(runner, 0.05, edits=0)
    child.close()


def test_the_generic_marker_is_per_cache_folder_and_code(tmp_path, monkeypatch):
    """The marker lives in taichi's cache folder and names a digest of the solver's source: a cache
    warmed for other kernel code does not count, nor one emptied since (taichi's index gone)."""
    ik.init(backend="cpu")
    from taichi.lang import impl

    monkeypatch.setattr(impl.current_cfg(), "offline_cache_file_path", str(tmp_path / "cache"))
    assert not warmup.generic_ready()
    marker = warmup.marker_path()
    assert marker.parent == tmp_path / "cache"
    marker.parent.mkdir()
    marker.write_text("ok\n")
    assert not warmup.generic_ready(), "a marker in a cache without taichi's index (ti cache clean)"
    (marker.parent / kernel_cache.INDEX_NAME).write_bytes(b"index")
    assert warmup.generic_ready()
    marker.write_text("ok\nTsolver.tic\n")  # the kernel files the warm-up wrote: one was dropped since
    assert not warmup.generic_ready()
    (marker.parent / "Tsolver.tic").write_bytes(b"kernel")
    assert warmup.generic_ready()
    code = tmp_path / "pkg"
    (code / "engine" / "kernels").mkdir(parents=True)
    (code / "engine" / "kernels" / "ik.py").write_text("# other kernel code\n")
    monkeypatch.setattr(warmup, "PACKAGE_ROOT", code)
    assert warmup.marker_path() != marker and not warmup.generic_ready()


def test_the_child_is_started_where_it_finds_the_app():
    """The child runs ``python -m app.sim.solver_proc`` from PACKAGE_ROOT with it on PYTHONPATH:
    that folder must hold the ``app`` and ``engine`` packages (a module move once broke it)."""
    for package in ("app", "engine"):
        assert (children.PACKAGE_ROOT / package / "__init__.py").is_file(), children.PACKAGE_ROOT
    assert children.child_env()["PYTHONPATH"].split(os.pathsep)[0] == str(children.PACKAGE_ROOT)


def test_children_turn_mujocos_gl_off_unless_the_user_set_it(monkeypatch):
    """A solver child only compiles models with mujoco: its GL (a GLFW probe at import) is off, unless
    the user's MUJOCO_GL says otherwise."""
    monkeypatch.delenv("MUJOCO_GL", raising=False)
    assert children.child_env()["MUJOCO_GL"] == "disable"
    monkeypatch.setenv("MUJOCO_GL", "egl")
    assert children.child_env()["MUJOCO_GL"] == "egl"


def test_the_child_prepares_the_first_frames_kernels_before_they_are_asked_for(pool):
    """A new child solves frame 0 once on its own after the build and goes back to time 0, so the
    parent's first steps load no kernel (frame 1, tracked, runs the same compiled solver) and give
    the answers this process gives."""
    here, there = _runner("auto"), _runner("auto")
    assert there.spec.solver.track
    child = pool.take()
    try:
        child.build(there.spec, there.n_envs)
        for k in range(2):
            got = child.step(there, 0.05, edits=0)
            there.apply(got, 0.05)
            expected = here.step(0.05)
            assert not got.kernels_prepared, f"frame {k} waited for a kernel in the child"
            np.testing.assert_array_equal(got.qpos, expected.qpos)
            assert got.index == k
    finally:
        child.close()


def test_an_early_child_is_taken_by_the_first_pool():
    early = solver_proc.start_early()
    assert solver_proc.start_early() is early and solver_proc.early_child() is early
    ik.init(backend="cpu")
    p = solver_proc.SolverPool()
    try:
        assert solver_proc.early_child() is None
        child = p.take()
        assert child is early and child.initialised
        runner = _runner("auto")
        child.build(runner.spec, runner.n_envs)
        assert child.step(runner, 0.05, edits=0).success.any()
        child.close()
    finally:
        p.close()


def test_the_cli_ends_an_early_child_no_gui_took(monkeypatch, tmp_path, capsys):
    """``ikstudio BAD_SCENE`` on a display: the child started with the command ends with it."""
    from app.cli import commands

    started = []
    real = solver_proc.start_early
    monkeypatch.setattr(commands, "display_problem", lambda: None)
    monkeypatch.setattr(solver_proc, "start_early", lambda: started.append(real()) or started[-1])
    assert commands.main([str(tmp_path / "missing.yaml")]) != 0
    assert "missing.yaml" in capsys.readouterr().err
    assert len(started) == 1 and solver_proc.early_child() is None
    assert started[0].proc.wait(timeout=60) is not None  # its stdin closed: it exited
    assert commands.main(["--help"]) == 0
    assert commands.main(["check", "scenes/batched_panda.yaml"]) == 0
    assert len(started) == 1  # no child for help or another command


def test_the_first_child_builds_the_commands_scene_ahead_and_the_pool_takes_it(monkeypatch):
    """``ikstudio [SCENE]`` starts the first child first and then names it the scene: it builds and
    prepares that scene while the parent starts. The pool's init (the same engine) keeps it, the same scene's
    build takes it (no kernel to prepare at the first step, the same answers as in-process), and
    another scene is built afresh. It answers with the per-robot solver even where the generic one
    is cached (here: said to be), which loads faster (the warm start's critical path)."""
    monkeypatch.setattr(solver_proc, "generic_ready", lambda: True)
    early = solver_proc.start_early()
    solver_proc.preload_early(SCENE, "cpu")
    ik.init(backend="cpu")
    p = solver_proc.SolverPool()
    here, there = _runner("auto"), _runner("auto")
    try:
        child = p.take()
        assert child is early
        spec = scenefile.load(SCENE)  # as the app loads it: 16 envs, the generic kernel
        child.build(spec, spec.envs.n_envs)
        t0 = time.monotonic()
        while not child.answers_ready():  # never waits: the app polls it before its first image
            assert time.monotonic() - t0 < 300, "the child never said its scene built ahead is ready"
            time.sleep(0.05)
        assert child.answering_kernel("generic") == "auto"
        here_spec = scenefile.load(SCENE)
        here_spec.solver.kernel = child.answering_kernel("generic")
        _, here_runner = scenefile.build(here_spec, debug_frames=False)
        _, there_runner = scenefile.build(scenefile.load(SCENE), debug_frames=False)
        for k in range(2):
            got = child.step(there_runner, 0.05, edits=0)
            there_runner.apply(got, 0.05)
            expected = here_runner.step(0.05)
            assert not got.kernels_prepared and got.index == k
            assert child.built_ahead
            np.testing.assert_array_equal(got.qpos, expected.qpos)
        other = scenefile.load(SCENE)  # another scene (fewer envs, another target): built, not taken
        other.envs.n_envs = 4
        other.solver.kernel = "auto"  # as `here` runs
        other.targets[0].pos = (0.45, 0.1, 0.3)
        child.build(other, 4)
        assert not child.answers_ready()  # built now, then prepared: not at once
        here.spec.targets[0].pos = (0.45, 0.1, 0.3)
        here.retarget()
        got = child.step(there, 0.05, edits=None)
        assert child.built_ahead is False
        np.testing.assert_array_equal(got.qpos, here.step(0.05).qpos)
        child.close()
    finally:
        p.close()


def test_a_child_ignores_ctrl_c_and_ends_quietly_with_its_parent():
    """Ctrl+C reaches the whole process group: a child (even mid-import) ignores it and goes on, and
    ends quietly when its stdin closes, or when the parent's end of the pipe is gone."""
    import pickle
    import signal
    import subprocess
    import sys

    for closing in ("stdin", "both"):
        child = subprocess.Popen([sys.executable, "-m", "app.sim.solver_child"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(children.PACKAGE_ROOT),
                                 env=children.child_env())
        time.sleep(0.3)  # importing taichi and the engine
        child.send_signal(signal.SIGINT)
        time.sleep(0.2)
        assert child.poll() is None, "SIGINT ended the child"
        if closing == "both":
            child.stdout.close()  # the parent is gone: replies have nowhere to go
            pickle.dump(("frobnicate", ()), child.stdin)
        child.stdin.close()
        assert child.wait(timeout=120) == 0
        err = child.stderr.read().decode()
        assert "Traceback" not in err, err
        child.stderr.close()


def test_a_spare_warms_up_and_answers_at_the_apps_priority():
    """A spare child, through its generic-solver warm-up and the scene it is then given (a robot
    switch), runs every thread at this process's priority. (A spare niced to 12 kept that nice for
    the scene it then served: an unprivileged process cannot raise it again, and beside other
    programs' work at nice 0 its answers starved.)"""
    from _procs import niced_threads

    ik.init(backend="cpu")
    child = solver_proc.SolverProcess()
    try:
        child.send("warm", reply=False)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3.0:  # through its warm-up (a load ~1.5 s, or a compile)
            assert not niced_threads(child.proc.pid), niced_threads(child.proc.pid)
            time.sleep(0.02)
        runner = _runner("auto")
        child.build(runner.spec, runner.n_envs)
        assert child.step(runner, 0.05, edits=0).success.any()
        assert not niced_threads(child.proc.pid), niced_threads(child.proc.pid)
    finally:
        child.close()


def test_the_generic_warm_up_runs_below_the_app_in_its_own_session_too(tmp_path, monkeypatch):
    """The warm-up child (its own session, so that it outlives the app) lowers its nice and, where
    Linux groups sessions for the scheduler, its session's autogroup: a group's CPU share does not
    depend on its processes' nice, and at nice 19 alone it took ~70 % of a core beside a cold
    start (the app's sim thread then waited for a CPU holding the GIL: frames blocked 0.5 s)."""
    ik.init(backend="cpu")
    from taichi.lang import impl

    cache = tmp_path / "ticache"
    monkeypatch.setattr(impl.current_cfg(), "offline_cache_file_path", str(cache))
    monkeypatch.setenv("TI_OFFLINE_CACHE_FILE_PATH", str(cache))
    warm = warmup.GenericWarmup()
    assert warm.proc is not None
    pid = warm.proc.pid
    try:
        flag = Path("/proc/sys/kernel/sched_autogroup_enabled")
        grouped = flag.exists() and flag.read_text().strip() == "1"
        deadline, seen = time.monotonic() + 60, None
        while time.monotonic() < deadline and warm.proc.poll() is None:
            nice = os.getpriority(os.PRIO_PROCESS, pid)
            group = Path(f"/proc/{pid}/autogroup").read_text() if grouped else ""
            seen = (nice, group.strip())
            if nice == 19 and (not grouped or group.strip().endswith("nice 19")):
                break
            time.sleep(0.05)
        assert seen is not None and seen[0] == 19, seen
        assert not grouped or seen[1].endswith("nice 19"), seen
        assert os.getsid(pid) != os.getsid(0)  # its own session, as said
    finally:
        warm.proc.kill()
        warm.proc.wait(timeout=60)


def _alive(pid: int) -> bool:
    """``pid`` runs (not ended, nor a zombie waiting for init to reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="reads Linux's /proc")
def test_a_killed_apps_spare_ends_at_once_even_mid_warm_up(tmp_path):
    """An app killed (SIGKILL: nothing of it runs after) takes its spare child with it, even while the
    spare prepares the generic solver with the GIL held (an empty kernel cache: a compile, seconds
    long, after which the spare alone would have read its closed stdin and ended); a spare started
    from a thread that ended at once (the warm-up's watcher renews the spare) lives on with its pool."""
    import signal
    import subprocess
    import sys

    app = subprocess.Popen([sys.executable, "-c", (
        "import threading, time, engine as ik; ik.init(backend='cpu')\n"
        "from app.sim import solver_proc\n"
        "pool = solver_proc.SolverPool(warm_generic=False)\n"
        "first, box = pool.take(), []\n"
        "def renew():  # asks for a spare, takes it, and ends once the spare asked for the death signal\n"
        "    pool.settled(); box.append(pool.take()); box[0].receive()  # (its init's reply comes after)\n"
        "t = threading.Thread(target=renew); t.start(); t.join()\n"
        "spare = box[0]; time.sleep(1.0)\n"
        "print('pids', first.proc.pid, spare.proc.pid, spare.proc.poll(), flush=True)\n"
        "spare.send('warm', reply=False)\n"
        "time.sleep(600)\n")], cwd=str(children.PACKAGE_ROOT), stdout=subprocess.PIPE, text=True,
        env=dict(children.child_env(), TI_OFFLINE_CACHE_FILE_PATH=str(tmp_path / "ticache")))
    try:
        line = app.stdout.readline()
        while line and not line.startswith("pids "):  # (the engine's own lines)
            line = app.stdout.readline()
        first, spare, ended = line.split()[1:]
        assert ended == "None", "a spare started from a thread that then ended did not live on"
        first, spare = int(first), int(spare)
        assert _alive(spare)
        time.sleep(0.5)  # into its compile
        app.send_signal(signal.SIGKILL)
        app.wait(timeout=60)
        deadline = time.monotonic() + 2.0
        while _alive(spare) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not _alive(spare), "the killed app's spare ran on"
    finally:
        if app.poll() is None:
            app.kill()
            app.wait(timeout=60)


def test_no_second_warm_up_starts_and_one_started_stops_before_taichi(tmp_path, monkeypatch):
    """While a warm-up holds a cache folder's lock, the app starts no other; a second one started
    anyway (two apps at once) sees the lock before importing taichi (~1 s of a core)."""
    import subprocess
    import sys

    ik.init(backend="cpu")
    from taichi.lang import impl

    cache = tmp_path / "ticache"
    monkeypatch.setattr(impl.current_cfg(), "offline_cache_file_path", str(cache))
    monkeypatch.setenv("TI_OFFLINE_CACHE_FILE_PATH", str(cache))
    assert not warmup.warmup_running(cache)
    warm = warmup.GenericWarmup()
    try:
        deadline = time.monotonic() + 60
        while not warmup.warmup_running(cache) and time.monotonic() < deadline:
            assert warm.proc.poll() is None, f"the warm-up ended (exit {warm.proc.returncode})"
            time.sleep(0.05)
        assert warmup.warmup_running(cache)
        assert warmup.GenericWarmup().proc is None  # not started beside it
        code = ("import sys; from app.sim import warmup as s; "
                "rc = s.warm_generic(); print(rc, 'taichi' in sys.modules)")
        env = dict(children.child_env(), IKSTUDIO_WARM_CACHE=str(cache))
        out = subprocess.run([sys.executable, "-c", code], cwd=str(children.PACKAGE_ROOT), env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.stdout.split() == ["3", "False"], out.stdout + out.stderr
    finally:
        warm.proc.kill()
        warm.proc.wait(timeout=60)
    assert not warmup.warmup_running(cache)  # the lock went with its holder


def test_a_pool_made_in_a_thread_that_ended_still_solves():
    """The pool starts every child from a thread of its own: its first child, taken in a thread that
    ends once the child has asked for the parent-death signal, still builds its scene and solves."""
    import threading

    ik.init(backend="cpu")
    box = []

    def make():
        pool = solver_proc.SolverPool(warm_generic=False)
        child = pool.take()
        child.receive()  # its init's reply: the child has asked for the signal by then
        box.append((pool, child))

    t = threading.Thread(target=make)
    t.start()
    t.join()
    pool, child = box[0]
    try:
        time.sleep(0.3)
        assert child.proc.poll() is None, f"the child ended with the thread (exit {child.proc.returncode})"
        runner = _runner("auto")
        child.build(runner.spec, runner.n_envs)
        assert child.step(runner, 0.05, edits=0).success.any()
    finally:
        child.close()
        pool.close()
