"""The app's sim thread: :class:`SimThread` runs a :class:`app.sim.loop.Sim` in a worker thread,
running the GUI's commands in order between ticks. Every thread of the app, and every solver child,
runs at the priority the app was started with: a thread or process that lowers its priority
cannot raise it again, and below other programs' work it starved the answers on a busy machine
(a robot switch at nice 8 and 12 waited 72-92 s for the CPU beside four busy loops at nice 0;
1.6 s at the same priority)."""

from __future__ import annotations

import queue
import threading
import time

from pydantic import ValidationError

from engine.configuration import prepare_fk
from engine.scenefile.errors import one_line

from .preload import preload
from .tuning import freeze_heap, quick_compiles

IDLE_WAIT_S = 0.05  # the sim thread's longest sleep: it wakes at once on a command, an edit or an image
MIN_TICK_S = 1.0 / 120.0  # and ticks at most this often


class SimThread:
    """Runs ``sim`` in a worker thread: commands posted by the GUI run in order between ticks; a
    tick solves (at most one frame ahead of the renderer) and asks for the next image as soon as
    the renderer is idle. ``on_done(key, failure)`` hears how each command ended (``failure``: its
    message, None on success); an error outside the commands comes as ``on_done("sim", text)``.
    ``solver_process``: the IK solves run in child processes (:mod:`app.sim.solver_proc`: taichi holds
    the GIL while it compiles or loads a kernel, which would stop the GUI thread), and the generic
    solver is compiled into taichi's cache in the background; the thread first compiles this
    process's FK (:func:`engine.configuration.prepare_fk`, once per process: every robot's is the same
    kernel) and then sets :attr:`kernels_ready`, for which the window waits before its first frame."""

    def __init__(self, sim, on_done, name: str = "ikstudio-sim", solver_process: bool = True):
        self.sim = sim
        self.on_done = on_done
        if solver_process:
            from .solver_proc import SolverPool

            sim.pool = SolverPool()
            quick_compiles()
            freeze_heap()
        self.prepare = solver_process  # compile this process's FK before the first command (see kernels_ready)
        self.kernels_ready = threading.Event()  # set once that is done (or failed: the build says why)
        self.kernels_at_ready: int | None = None  # this process's kernels prepared by then (launch)
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._wake = threading.Event()
        self._stop = False
        self.busy: str | None = None  # what the command running now is doing ("loading ur5"), for the GUI
        self.ticks = 0
        sim.on_image = self.wake
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def post(self, what: str, fn, *args, key: str | None = None, label: str | None = None) -> None:
        """Run ``fn(*args)`` in the sim thread; ``what`` names it in messages, ``label`` in
        :attr:`busy` while it runs; ``key`` is handed to ``on_done``."""
        self._commands.put((what, fn, args, key, label))
        self._wake.set()

    def wake(self) -> None:
        self._wake.set()

    @property
    def idle(self) -> bool:
        """No command waiting or running."""
        return self._commands.empty() and self.busy is None

    def _run(self) -> None:
        sim = self.sim
        last = 0.0
        try:
            if self.prepare:
                preload()  # the first scene's lazy imports: each holds the GIL (app.sim.preload)
                prepare_fk()
                freeze_heap()  # the modules just imported, out of the collector (never a scene: tuning)
        except Exception:  # the first build meets the same error and reports it
            pass
        finally:
            self.kernels_at_ready = sim.kernels_prepared()
            self.kernels_ready.set()
        while not self._stop:
            self._wake.wait(IDLE_WAIT_S)
            self._wake.clear()
            while not self._commands.empty() and not self._stop:
                what, fn, args, key, label = self._commands.get()
                self.busy = label or "working"
                try:
                    fn(*args)
                except ValidationError as err:
                    self.on_done(key, f"{what}: {one_line(err)}")
                except Exception as err:  # a failed command is a message; the sim goes on
                    self.on_done(key, f"{what}: {err}")
                else:
                    self.on_done(key, None)
                finally:
                    self.busy = None
            if self._stop:
                break
            wait = MIN_TICK_S - (time.perf_counter() - last)
            if wait > 0:
                time.sleep(wait)
            last = time.perf_counter()
            try:
                sim.collect()
                sim.request_frame()  # first: the renderer draws the last solved state while the next one is solved
                if sim.wants_step():
                    sim.tick()
                    self.ticks += 1
                    sim.request_frame()  # if the renderer was idle (nothing changed before this solve)
            except Exception as err:  # never let the worker die: say so and pause
                self.sim.c.playing = False
                self.on_done("sim", f"sim: {type(err).__name__}: {err}")

    def close(self, timeout: float = 30.0) -> None:
        """Stop the thread (after the command running now), then free the scene in it."""
        self._stop = True
        self._wake.set()
        self._thread.join(timeout)
        self.sim.close()
