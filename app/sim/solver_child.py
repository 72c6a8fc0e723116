"""The solver child's side of :mod:`app.sim.solver_proc`: ``python -m app.sim.solver_child`` reads
pickled ``(kind, args)`` commands on stdin and answers ``(ok, value)`` on stdout, until stdin closes.

Commands: ``init`` (the engine like the parent's), ``build`` (a scene spec
for ``n_envs`` envs; the child solves frame 0 once to prepare its kernels before it replies,
:func:`prepare_kernels`: the parent reads that reply only when it can without waiting, or at its
first step), ``step`` (one frame from the parent's state and edits), ``check`` (``in_collision``
of the parent's state, after its edits), and
``preload`` (no answer): a scene file and a backend, from which the first child builds and
prepares the scene the GUI will open while the parent is still starting
(:func:`app.sim.solver_proc.preload_early`); a later ``init`` and ``build`` that ask for the same
engine and the same scene then take what it built. ``warm`` (no answer): a spare child loads
the generic solver from taichi's cache before it has a scene (:meth:`Child.warm`).
``--warm-generic`` runs the generic solver's warm-up instead
(:func:`app.sim.warmup.warm_generic`).
"""

from __future__ import annotations

import os
import pickle
import signal
import sys

if __name__ == "__main__":
    # Ctrl+C reaches the whole process group: the parent stops the app and closes this child's stdin,
    # which ends it; the child itself stays quiet (no KeyboardInterrupt halfway through an import)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Child:
    """What a child holds: its runner, its kernel choice for "generic" and a scene built ahead."""

    def __init__(self):
        self.runner = None
        self.override = "generic"  # what the spec's "generic" runs as ("auto" until it is cached)
        self.ahead = None  # (spec as asked, n_envs, generic cached, runner): built by preload
        self.initialised = False
        self.has_scene = False  # asked to build one (a spare until then: see die_with_parent)

    def init(self, init_args: dict) -> None:
        """``engine.init(**init_args)`` unless the engine already runs that way (a preload started it:
        its scene and kernels stay)."""
        if self.initialised and _resolved_init_args() == init_args:
            return
        self.ahead = None
        _quiet_init(init_args)
        self.initialised = True

    def build(self, spec, n_envs, generic_cached: bool) -> bool:
        """Build ``spec`` for ``n_envs`` envs (or take the preloaded one if it is the same); returns
        whether it was built now (its kernels are then still to prepare)."""
        ahead, self.ahead = self.ahead, None
        self.override = "generic" if generic_cached else "auto"
        if ahead is not None and ahead[:3] == (spec, n_envs, generic_cached):
            self.runner = ahead[3]
            return False
        self.runner = _build_runner(spec, n_envs, generic_cached)
        return True

    def preload(self, scene: str, backend: str) -> None:
        """Start the engine on ``backend``, build scene file ``scene`` and prepare its kernels, as the
        parent will ask; anything that fails leaves nothing built (the parent's own start says
        what is wrong)."""
        try:
            from engine import scenefile

            spec = scenefile.load(scene, check=False)  # the parent checks it (the link names: ~0.1 s more here)
            _quiet_init({"backend": backend})
            self.initialised = True
            cached = False  # the command's first child answers per robot first (SolverProcess.per_robot_first)
            runner = _build_runner(spec.model_copy(deep=True), spec.envs.n_envs, cached)
            prepare_kernels(runner)
            self.ahead = (spec, spec.envs.n_envs, cached, runner)
        except Exception:
            self.ahead = None

    def warm(self) -> None:
        """Load the generic IK solver (plain: no avoidance or look-at rows) and the kernels every scene
        runs from taichi's cache, with a small scene that is then dropped (``solve_generic_once``), so that
        this child's first scene waits only for its build; errors are ignored (the build meets
        them)."""
        from .warmup import solve_generic_once

        try:
            solve_generic_once()
        except Exception:
            pass

    def step(self, dt, t, t_solved, index, qpos, edits):
        runner = self.runner
        if edits is not None:
            _edit(runner, *edits, override=self.override)
        runner.robot.set_qpos(qpos if runner.scene.is_batched else qpos[0])
        runner.t, runner.t_solved, runner.frame_index = t, t_solved, index
        return runner.step(dt)


    def check(self, qpos, edits):
        """``in_collision()`` of ``qpos`` (n_envs, n_qs), after ``edits`` (as for :meth:`step`)."""
        import numpy as np

        runner = self.runner
        if edits is not None:
            _edit(runner, *edits, override=self.override)
        runner.robot.set_qpos(qpos if runner.scene.is_batched else qpos[0])
        return np.asarray(runner.robot.in_collision(), bool).reshape(-1)


def serve(inp, out) -> None:
    """The child's loop: read (kind, args), reply (ok, value), until stdin closes."""
    child = Child()
    while True:
        try:
            kind, args = pickle.load(inp)
        except EOFError:
            return
        if kind in ("preload", "build") and not child.has_scene:
            child.has_scene = True
            die_with_parent(False)  # it finishes its command and caches its kernels if the parent ends now
        if kind in ("preload", "warm"):  # no reply
            getattr(child, kind)(*args)
            continue
        try:
            if kind == "init":
                value = child.init(*args)
            elif kind == "build":
                if child.build(*args):
                    prepare_kernels(child.runner)  # before the reply: the reply says the answers are ready
                    value = False
                else:
                    value = True  # the scene built ahead was taken
            elif kind == "step":
                value = child.step(*args)
            elif kind == "check":
                value = child.check(*args)
            else:
                raise ValueError(f"unknown command {kind!r}")
        except Exception as err:  # the parent shows it; this child goes on
            reply = (False, f"{type(err).__name__}: {err}")
        else:
            reply = (True, value)
        try:
            pickle.dump(reply, out)
            out.flush()
        except (BrokenPipeError, OSError):  # the parent is gone: nobody to answer
            return


def die_with_parent(on: bool) -> bool:
    """Linux: (``on``) have the kernel kill this process when the parent's thread that started it ends
    (``PR_SET_PDEATHSIG``), or (not ``on``) no longer. A spare is killed so: it has nothing to finish
    nor to cache, and a killed app's spare would otherwise run on until it next read its stdin (a
    warm load: 1-2 s of a core, with the GIL held, so no thread of its own could stop it). A child
    with a scene ends by its stdin the normal way (taichi caches the kernels it compiled). Returns
    whether the kernel took the setting (False elsewhere)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(1, signal.SIGKILL if on else 0, 0, 0, 0) == 0  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return False


def prepare_kernels(runner) -> bool:
    """Compile, or load from taichi's cache, the kernels of ``runner``'s first frame before it is
    asked for: solve frame 0 once, then put the runner back at time 0 (:meth:`Runner.reset`),
    where the parent's first step starts. The kernel load (~1.2 s warm for the generic solver)
    then overlaps the parent's own build and first image instead of following them. The tracked
    frames after it run the same compiled solver (the velocity box is a run-time flag), so no
    frame waits for a compile later. Not for planned motion (its first frame plans every env:
    real work, not a kernel load). Errors are left to the real step to report. Returns whether
    a frame was solved."""
    if runner.spec.solver.plan or not runner.spec.targets:
        return False
    try:
        runner.step()
    except Exception:  # the parent's first step meets the same error and shows it
        return False
    finally:
        runner.reset()
    return True


def _resolved_init_args() -> dict:
    """This process's engine as ``engine.init`` arguments (the form the parent sends)."""
    from .children import engine_init_args

    return engine_init_args()


def _quiet_init(init_args: dict) -> None:
    """``engine.init`` without taichi's start-up line (the app's own init already said it)."""
    import engine

    sys.stdout.flush()
    saved = [(fd, os.dup(fd)) for fd in (1, 2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd, _ in saved:
            os.dup2(null, fd)
        engine.init(**init_args)
    finally:
        sys.stdout.flush()
        for fd, copy in saved:
            os.dup2(copy, fd)
            os.close(copy)
        os.close(null)


def _build_runner(spec, n_envs, generic_cached: bool):
    """The runner of ``spec`` for ``n_envs`` envs, headless, its "generic" kernel as the cache allows
    (``spec``'s solver is changed so)."""
    from engine import scenefile

    _choose_kernel(spec.solver, "generic" if generic_cached else "auto")
    return scenefile.build(spec, n_envs=n_envs, debug_frames=False)[1]


def _choose_kernel(solver, override: str) -> None:
    """The generic solver while it is not cached yet: the per-robot one (see solver_proc's doc)."""
    if solver.kernel == "generic" and override != "generic":
        solver.kernel = override


def _edit(runner, targets, solver, obstacles, override: str) -> None:
    spec = runner.spec
    _choose_kernel(solver, override)
    spec.targets, spec.solver = targets, solver
    if obstacles != spec.obstacles:
        spec.obstacles = obstacles
        runner.place_obstacles()
    runner.retarget()


def main() -> int:
    if "--warm-generic" in sys.argv:
        from .warmup import warm_generic

        return warm_generic()
    parent = os.environ.get("IKSTUDIO_SOLVER_PARENT")
    if die_with_parent(True) and parent and os.getppid() != int(parent):
        return 0  # the parent ended before the kernel was told
    out = os.fdopen(os.dup(1), "wb")  # the replies; prints (taichi's, the engine's) go to stderr
    os.dup2(2, 1)
    import engine  # noqa: F401  (taichi and the engine, imported while the parent starts: see start_early)

    serve(sys.stdin.buffer, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
