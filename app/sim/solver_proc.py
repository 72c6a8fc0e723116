"""The app's IK solves, in a process of their own, so that the GUI thread never waits on taichi.

Taichi holds the GIL while it compiles a kernel (the generic solver: ~10 s on 2 cores with an empty
cache, ~18 s with avoidance; the per-robot one ~2 s) and while it loads one from its disk cache (~1.2 s for the
generic solver): a GUI thread in the same process stops for all of it. So the app's sim thread
does not call the IK solver: a :class:`SolverProcess` (a child Python: :mod:`app.sim.solver_child`)
builds the same scene headless and solves every frame there. The sim thread sends each frame's
inputs (dt, time, frame number, the current qpos, the spec's edits) and applies the answer it gets
back (:meth:`engine.scenefile.runner.Runner.apply`); waiting on the pipe releases the GIL. The
answers are the ones the same runner gives in-process (same spec, same seeds, same kernel).

Kernel choice: scene files run the generic solver by default, which compiles ~5x slower than the
per-robot one. Until it is in taichi's cache (:func:`app.sim.warmup.generic_ready`, written by
:class:`app.sim.warmup.GenericWarmup`, a child that compiles it at the lowest priority) a child solves with
"auto" instead (the per-robot solver where the robot has one: the same algorithm and
tolerances), so a fresh machine answers within seconds. A child reads taichi's cache index when it
starts, so only children started after the warm-up see the generic solver. The first child of
the command (:func:`start_early`) answers with "auto" even where the generic solver is cached:
the per-robot solver loads from the cache in about half the time, and that load is the warm
start's critical path (answers 5.3-5.6 s after the command with the generic one, 2.9 s with the
per-robot one, ``bench/startup.py`` at load 1-1.6); later scenes (a robot switch, an opened file)
run the generic one, which their spare child has loaded ahead.

:class:`SolverPool` keeps one spare child started (python, the engine and taichi imported and
initialised), so that a new scene's child has only its scene to build; the spare and the warm-up
start once the first scene has solved (before that, they would slow the first answers down); the
first child is started by ``ikstudio`` itself before its heavy imports, and builds the scene of
its command line while the parent starts (:func:`start_early`); each child prepares its first
frame's kernels right after its build (:func:`app.sim.solver_child.prepare_kernels`). Messages are
pickled over the child's stdin / stdout; the child's own prints go to stderr. Closing a child's stdin ends it
the normal way, so taichi writes the kernels it compiled to its cache; a spare, which has nothing to
cache, is killed instead, and dies with the app (:func:`app.sim.solver_child.die_with_parent`).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path

from .children import PACKAGE_ROOT, child_env, engine_init_args
from .warmup import GenericWarmup, generic_ready


class SolverProcessError(RuntimeError):
    """The solver process failed a command or exited; the message says which and why."""


class SolverProcess:
    """One child solving one scene; :meth:`build` then :meth:`step` per frame (from one thread)."""

    def __init__(self, init_args: dict | None = None, initialise: bool = True, per_robot_first: bool = False):
        env = dict(child_env(), IKSTUDIO_SOLVER_PARENT=str(os.getpid()))  # see solver_child.die_with_parent
        self.proc = subprocess.Popen([sys.executable, "-m", "app.sim.solver_child"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, cwd=str(PACKAGE_ROOT))
        self._pending: list[str] = []  # the commands whose replies are not read yet, oldest first
        self.given_scene = False  # sent a build or a preload (see discard)
        self.built_ahead: bool | None = None  # the last build's reply: the child took a scene built ahead
        self._sent_edits = None
        self.generic_as = "generic"  # what this child runs for kernel "generic" (set at build)
        # the command's first child answers with the per-robot solver even where the generic one is cached:
        # it loads from taichi's cache in ~0.6 s against ~1.2-2.3 s, the warm start's critical path
        self.per_robot_first = per_robot_first
        self.initialised = False
        if initialise:
            self.initialise(init_args)

    def initialise(self, init_args: dict | None = None) -> None:
        """Initialise the child's engine like this process's (``init_args``: ``engine.init``'s
        arguments, default this process's); once, before anything else. The child runs at this
        process's priority (see app.sim.thread's doc)."""
        self.send("init", init_args if init_args is not None else engine_init_args())
        self.initialised = True

    # -- the pipe ---------------------------------------------------------------------------------------
    def send(self, kind: str, *args, reply: bool = True) -> None:
        """Send a command (``reply``: the child answers it, read by :meth:`receive`)."""
        try:
            pickle.dump((kind, args), self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as err:
            raise SolverProcessError(f"the solver process is gone (exit {self.proc.poll()}): {err}") from None
        if reply:
            self._pending.append(kind)
        self.given_scene = self.given_scene or kind in ("build", "preload")

    def receive(self):
        """Every reply not read yet (waits for them); returns the newest's value. A failed command
        raises SolverProcessError."""
        value = None
        while self._pending:
            value = self._read_reply()
        return value

    def _read_reply(self):
        """The oldest reply not read yet (waits for it): its value."""
        try:
            ok, value = pickle.load(self.proc.stdout)
        except (EOFError, OSError, pickle.UnpicklingError) as err:
            self._pending.clear()
            raise SolverProcessError(f"the solver process exited (exit {self.proc.poll()}): {err!r}") from None
        kind = self._pending.pop(0)
        if not ok:
            raise SolverProcessError(value)
        if kind == "build":
            self.built_ahead = bool(value)
        return value

    def answers_ready(self) -> bool:
        """Whether the child answered every command sent so far (after a build: its scene is built and
        its kernels prepared, so a step is answered at once); reads the replies that have come,
        never waits."""
        while self._pending and self._reply_waiting():
            self._read_reply()
        return not self._pending

    def _reply_waiting(self) -> bool:
        """A reply can be read without waiting (in the pipe's buffer or the pipe)."""
        try:
            fd = self.proc.stdout.fileno()
            os.set_blocking(fd, False)
        except (OSError, ValueError, AttributeError):  # no non-blocking pipes here: say no
            return False
        try:
            return bool(self.proc.stdout.peek(1))
        except BlockingIOError:
            return False
        finally:
            os.set_blocking(fd, True)

    # -- commands ---------------------------------------------------------------------------------------
    def build(self, spec, n_envs: int) -> None:
        """Build ``spec`` for ``n_envs`` envs in the child, which then prepares its kernels
        (:func:`app.sim.solver_child.prepare_kernels`) and replies (read by :meth:`answers_ready` or
        the next step)."""
        cached = generic_ready() and not self.per_robot_first
        self.generic_as = "generic" if cached else "auto"  # the child's choice (see serve)
        self.send("build", spec.model_copy(deep=True), n_envs, cached)  # checked there, as in-process
        self._sent_edits = None

    def answering_kernel(self, kernel: str) -> str:
        """The solver this child answers with for the spec's ``kernel``: the generic one runs as
        "auto" in a child started before it was cached (see the module doc)."""
        return self.generic_as if kernel == "generic" else kernel

    def step(self, runner, dt: float, edits: int):
        """Solve ``runner``'s current frame in the child: its time (and its last solved frame's), frame
        number and qpos, with the spec's targets, solver settings and obstacles when ``edits`` (the
        edit count they were copied at) changed since the last step. Returns the child's RunnerFrame
        (not applied)."""
        qpos = runner.robot.get_qpos().reshape(runner.n_envs, -1)
        self.send("step", float(dt), float(runner.t), float(runner.t_solved), int(runner.frame_index), qpos,
                  self._changes(runner.spec, edits))
        return self.receive()

    def check(self, runner, edits: int):
        """``in_collision()`` (n_envs,) bool of ``runner``'s current qpos, run in the child, with the
        spec's obstacles (and targets and solver settings) sent when ``edits`` changed, as for
        :meth:`step`."""
        qpos = runner.robot.get_qpos().reshape(runner.n_envs, -1)
        self.send("check", qpos, self._changes(runner.spec, edits))
        return self.receive()

    def _changes(self, spec, edits: int):
        """The spec's targets, solver settings and obstacles if ``edits`` changed since they were
        last sent, else None."""
        if edits == self._sent_edits:
            return None
        self._sent_edits = edits
        return ([t.model_copy() for t in spec.targets], spec.solver.model_copy(),
                [o.model_copy() for o in spec.obstacles])

    def discard(self) -> None:
        """End a child nobody will use: killed if it was never given a scene (a spare: it compiled
        nothing worth caching, and the normal way would first finish what it was doing, a warm load
        of 1-2 s of a core), else the normal way (the command's first child preloads its scene)."""
        if not self.given_scene:
            self.proc.kill()
        self.close()

    def close(self, timeout: float = 10.0) -> None:
        """End the child the normal way (taichi writes its cache), killing it after ``timeout`` s."""
        proc = self.proc
        try:
            proc.stdin.close()
        except OSError:
            pass
        threading.Thread(target=_reap, args=(proc, timeout), daemon=True).start()


def _reap(proc, timeout: float) -> None:
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    proc.stdout.close()


class SolverPool:
    """Hands out :class:`SolverProcess` es, keeping one spare started ahead, and starts the generic
    solver's warm-up (see the module doc). The first child starts with the pool; the next spare and
    the warm-up start only once a scene has solved (:meth:`settled`): until then the first scene's
    child, its kernels and the first image want every core. Thread-safe (the warm-up's watcher
    renews the spare)."""

    def __init__(self, warm_generic: bool = True):
        self._init_args = engine_init_args()
        self._spare: SolverProcess | None = None
        self._lock = threading.Lock()
        # the spares start from a thread that lives as long as the pool: a spare dies with the thread that
        # started it (app.sim.solver_child.die_with_parent), and the warm-up's watcher thread ends at once
        from concurrent.futures import ThreadPoolExecutor  # (not at import: the warm start's path, start_early)

        self._starter = ThreadPoolExecutor(1, thread_name_prefix="ikstudio-spares")
        self._closed = False
        self._warm_generic = warm_generic
        self.warmup: GenericWarmup | None = None
        # the first scene's child starts now (or started with the command: start_early): its python, taichi
        # and engine start-up (~0.8 s) runs while this process starts and builds the scene, not after
        early = _EARLY.pop() if _EARLY else None
        if early is not None and early.proc.poll() is None:
            early.initialise(self._init_args)
            self._spare = early
        else:
            self._spare = self._start_child()

    def take(self) -> SolverProcess:
        """The spare (or a new child when there is none); the next spare starts at :meth:`settled`."""
        with self._lock:
            taken, self._spare = self._spare, None
        return taken or self._start_child()

    def settled(self) -> None:
        """A scene solved: start the spare and, once, the generic solver's warm-up."""
        with self._lock:
            if self._closed:
                return
            if self._spare is None:
                self._spare = self._new_spare()
            if self._warm_generic and self.warmup is None:
                self.warmup = GenericWarmup(on_done=self._renew_spare)

    def _start_child(self) -> SolverProcess:
        """A new child, started from the pool's own thread (see ``_starter``)."""
        return self._starter.submit(SolverProcess, self._init_args).result()

    def _new_spare(self) -> SolverProcess:
        """A spare child; where the generic solver is cached, it loads it now with a small scene
        (``warm``), so that its first scene (a robot switch) waits only for its build."""
        spare = self._start_child()
        if generic_ready():
            spare.send("warm", reply=False)
        return spare

    def _renew_spare(self) -> None:
        """The generic solver is cached: a spare started from now on sees it."""
        with self._lock:
            if self._closed:  # the warm-up ended after the app closed: no spare to renew
                return
            try:
                old, self._spare = self._spare, self._new_spare()
            except RuntimeError:  # the interpreter is shutting down (its executors refuse work)
                return
        if old is not None:
            old.discard()

    def close(self) -> None:
        with self._lock:
            spare, self._spare, self._closed = self._spare, None, True
        if spare is not None:
            spare.discard()
        self._starter.shutdown(wait=False)


# -- the first child, started with the command -------------------------------------------------------------
_EARLY: list = []  # the child start_early() began, until a SolverPool takes it


def start_early() -> SolverProcess:
    """Start the first scene's child now, before this process imports the engine (``ikstudio``'s GUI
    command calls this first): the child imports taichi and the engine beside this process's own
    start instead of after it, then builds the scene :func:`preload_early` names. The first
    :class:`SolverPool` takes it and initialises it (a no-op when the engine already runs as
    asked), and the first build of that same scene takes what it built; :func:`discard_early`
    ends it if no pool takes it. Returns it."""
    if not _EARLY:
        _EARLY.append(SolverProcess(initialise=False, per_robot_first=True))
    return _EARLY[0]


def preload_early(scene: str, backend: str) -> None:
    """Have the child :func:`start_early` began (if any) start the engine on ``backend`` and build
    scene file ``scene`` and prepare its kernels (``preload``, :mod:`app.sim.solver_child`)."""
    if _EARLY:
        _EARLY[0].send("preload", str(Path(scene).resolve()), str(backend), reply=False)


def early_child() -> SolverProcess | None:
    """The child :func:`start_early` began, while no pool has taken it."""
    return _EARLY[0] if _EARLY else None


def discard_early() -> None:
    """End the child :func:`start_early` began if no pool took it (the GUI did not start): killed,
    since what it builds is of no use."""
    while _EARLY:
        child = _EARLY.pop()
        child.proc.kill()
        child.close()
