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
per-robot one. Until it is in taichi's cache (:func:`generic_ready`, written by
:class:`GenericWarmup`, a child that compiles it at the lowest priority) a child solves with
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

import hashlib
import os
import pickle
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding app/ and engine/
MARKER_PREFIX = "ikstudio-generic-ready-"


class SolverProcessError(RuntimeError):
    """The solver process failed a command or exited; the message says which and why."""


def child_env() -> dict:
    """The environment a solver child runs in: this one, taichi's banner off, mujoco's GL off unless
    ``MUJOCO_GL`` says otherwise (a child only compiles models: importing mujoco with GL probes GLFW,
    ~0.1 s of CPU), and this checkout first on ``PYTHONPATH`` (the child imports the same app and
    engine as this process)."""
    env = dict(os.environ, ENABLE_TAICHI_HEADER_PRINT="0")
    env.setdefault("MUJOCO_GL", "disable")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH")) if p)
    return env


def engine_init_args() -> dict:
    """The parent's ``engine.init`` arguments (the child initialises the same backend)."""
    from engine.runtime.state import STATE

    st = STATE
    if not st.initialised:
        return {"backend": "cpu"}
    return {"backend": st.arch, "precision": st.precision, "seed": st.seed, "debug": st.debug}


class SolverProcess:
    """One child solving one scene; :meth:`build` then :meth:`step` per frame (from one thread)."""

    def __init__(self, init_args: dict | None = None, initialise: bool = True, per_robot_first: bool = False):
        env = dict(child_env(), IKSTUDIO_SOLVER_PARENT=str(os.getpid()))  # see solver_child.die_with_parent
        self.proc = subprocess.Popen([sys.executable, "-m", "app.sim.solver_child"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, cwd=str(PACKAGE_ROOT))
        self._pending: list[str] = []  # the commands whose replies are not read yet, oldest first
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
        """Kill a child that never had a scene (a spare): it compiled nothing worth caching, and the
        normal way would first finish what it was doing (a spare's warm load: 1-2 s of a core)."""
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
            self._spare = SolverProcess(self._init_args)

    def take(self) -> SolverProcess:
        """The spare (or a new child when there is none); the next spare starts at :meth:`settled`."""
        with self._lock:
            taken, self._spare = self._spare, None
        return taken or SolverProcess(self._init_args)

    def settled(self) -> None:
        """A scene solved: start the spare and, once, the generic solver's warm-up."""
        with self._lock:
            if self._closed:
                return
            if self._spare is None:
                self._spare = self._new_spare()
            if self._warm_generic and self.warmup is None:
                self.warmup = GenericWarmup(on_done=self._renew_spare)

    def _new_spare(self) -> SolverProcess:
        """A spare child; where the generic solver is cached, it loads it now with a small scene
        (``warm``), so that its first scene (a robot switch) waits only for its build."""
        spare = self._starter.submit(SolverProcess, self._init_args).result()
        if generic_ready():
            spare.send("warm", reply=False)
        return spare

    def _renew_spare(self) -> None:
        """The generic solver is cached: a spare started from now on sees it."""
        with self._lock:
            if self._closed:  # the warm-up ended after the app closed: no spare to renew
                return
            old, self._spare = self._spare, self._new_spare()
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


# -- the generic solver's warm-up ---------------------------------------------------------------------------
def _cache_dir() -> Path:
    """Taichi's offline cache folder (its default, or TI_OFFLINE_CACHE_FILE_PATH)."""
    from taichi.lang import impl

    return Path(impl.current_cfg().offline_cache_file_path)


def _code_key() -> str:
    """A digest of the solver kernels' source, taichi's version and the backend: a marker written
    for other code or another backend is not taken for this one."""
    import taichi

    from engine.runtime.state import STATE

    h = hashlib.sha256(f"{taichi.__version__} {STATE.arch} {STATE.precision}".encode())
    for path in sorted((PACKAGE_ROOT / "engine" / "kernels").glob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def marker_path() -> Path:
    return _cache_dir() / f"{MARKER_PREFIX}{_code_key()}"


def generic_ready() -> bool:
    """The generic solver of this code, taichi and backend is in taichi's cache: a warm-up finished,
    and the cache has not been emptied since (``ti cache clean``, which taichi's own lock warning
    suggests, deletes its index and kernels but leaves our marker: every child would then compile
    the generic solver again, and no warm-up would run), nor lost the kernel files the warm-up
    wrote (taichi's cache drops its least recently used kernels beyond 100 MB): the marker lists
    them after its first line."""
    try:
        from engine.runtime import kernel_cache

        marker = marker_path()
        if not (marker.exists() and kernel_cache.has_index(marker.parent)):
            return False
        return all((marker.parent / name).is_file() for name in _listed_files(marker))
    except Exception:  # taichi not initialised (nothing is known to be cached), or an unreadable marker
        return False


class GenericWarmup:
    """Compiles the generic solver (with and without avoidance) into taichi's cache in a child at
    the lowest CPU priority, which then writes :func:`marker_path`; ``on_done()`` runs (in a
    watcher thread) when it finished well. Nothing starts when the marker exists, and one warm-up
    at a time runs per cache folder. The child outlives the app if need be (it is a one-off job
    per machine and code version, ~30 s of one core), so that the next start finds the solver."""

    def __init__(self, on_done=None):
        self.proc = None
        if generic_ready() or warmup_running(_cache_dir()):
            return
        env = dict(child_env(), IKSTUDIO_WARM_BACKEND=engine_init_args()["backend"],
                   IKSTUDIO_WARM_CACHE=str(_cache_dir()))
        self.proc = subprocess.Popen([sys.executable, "-m", "app.sim.solver_child", "--warm-generic"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=env, cwd=str(PACKAGE_ROOT),
                                     start_new_session=True)
        threading.Thread(target=self._wait, args=(on_done,), daemon=True).start()

    def _wait(self, on_done) -> None:
        if self.proc.wait() == 0 and on_done is not None:
            on_done()


# -- the children ---------------------------------------------------------------------------------------
def solve_generic_once(avoid=(False,)) -> None:
    """One generic-solver IK call per ``avoid`` setting on a small scene (Panda and a table, 2 envs),
    destroyed after: what compiles the generic solver into taichi's cache, or loads it from there."""
    import numpy as np

    import engine

    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.URDF(file="erd:panda", fixed=True))
    scene.add_entity(engine.morphs.Box(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3), fixed=True))
    scene.build(n_envs=2)
    hand = robot.get_link("panda_hand")
    pos, quat = np.tile([0.45, 0.1, 0.45], (2, 1)), np.tile([0.0, 1.0, 0.0, 0.0], (2, 1))
    for each in avoid:
        robot.inverse_kinematics(hand, pos, quat, kernel="generic", avoid_collisions=each, seed=0)
    scene.destroy()


def lowest_priority() -> None:
    """This process at the lowest CPU priority: nice 19, and its session's autogroup too where Linux
    groups sessions (``/proc/sys/kernel/sched_autogroup_enabled``). The warm-up runs in a session of
    its own, and an autogroup gets the same CPU share as the app's whatever its processes' nice:
    at nice 19 alone the warm-up still took ~70 % of a core beside a cold start, and the app's
    sim thread waited for a CPU while it held the GIL (frames 3-5 blocked 0.5-0.6 s)."""
    os.nice(19)
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19")
    except OSError:  # no autogroups (another OS, or a kernel without them)
        pass


def warm_generic() -> int:
    """Compile the generic solver, plain and avoiding (Panda and a table), write taichi's cache
    (``engine.destroy`` does), then the marker, naming the kernel files that appeared (none where
    the solver was in the cache already). Returns 0, 3 when another process is warming this cache
    up, 4 when taichi could not write its cache (its lock stayed taken): no marker then, so the
    next start tries again."""
    lowest_priority()
    cache = os.environ.get("IKSTUDIO_WARM_CACHE")  # the parent's cache folder: its lock is tried before taichi starts
    lock = _one_warmup_lock(Path(cache)) if cache else True
    if lock is None:
        return 3  # another process is warming this cache up
    import engine
    from engine.runtime import kernel_cache

    engine.init(backend=os.environ.get("IKSTUDIO_WARM_BACKEND", "cpu"))
    lock = lock if cache else _one_warmup_lock(_cache_dir())
    if lock is None:
        return 3
    marker = marker_path()
    folder = marker.parent
    before = _kernel_files(folder)
    solve_generic_once(avoid=(False, True))
    engine.destroy()  # writes taichi's offline cache (new kernels only: none where all were loaded from it)
    settled = kernel_cache.last_settled()
    if settled is not None and settled.held:  # taichi found its lock taken, and wrote nothing
        return 4
    listed = _listed_files(marker) if marker.exists() else []  # an earlier warm-up's, those still there kept
    written = sorted((_kernel_files(folder) - before) | {name for name in listed if (folder / name).is_file()})
    marker.write_text("the generic IK solver of this code is in this cache (app/sim/solver_proc.py); "
                      "its kernel files:\n" + "".join(f"{name}\n" for name in written))
    return 0


def _listed_files(marker: Path) -> list[str]:
    """The kernel file names a warm-up's marker lists (after its first line)."""
    return [name for name in marker.read_text().splitlines()[1:] if name]


def _kernel_files(folder: Path) -> set[str]:
    """Names of the kernel files in taichi's cache ``folder``."""
    try:
        return {p.name for p in folder.iterdir() if p.suffix == ".tic"}
    except OSError:
        return set()


def warmup_running(folder: Path) -> bool:
    """A warm-up holds cache ``folder``'s lock now (one starting beside it would stop at once)."""
    lock = _one_warmup_lock(folder)
    if lock is None:
        return True
    if lock is not True:
        lock.close()  # closing the file lets the lock go
    return False


def _one_warmup_lock(folder: Path):
    """An exclusive lock on cache ``folder``'s warm-up lock file (held until this process exits or the
    returned file is closed), or None when another warm-up holds it; where there is no flock, no lock
    is taken (True)."""
    try:
        import fcntl
    except ImportError:
        return True
    folder.mkdir(parents=True, exist_ok=True)
    f = open(folder / f"{MARKER_PREFIX}lock", "w")  # kept open: the lock lives as long as the process
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        return None
    return f
