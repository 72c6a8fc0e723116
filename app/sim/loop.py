"""The engine side of the app: one scene, its runner and visualizer, solved and rendered off the GUI thread.

Only :class:`Sim` calls the engine. The GUI thread changes plain state on the controller (the
scene spec's targets and solver settings, the camera, play / pause, counters of edits and step
requests) and reads the :class:`Snapshot` the sim publishes after every change (qpos, link poses,
the last frame's figures). So the GUI never waits on a solve, a scene build or a render: with a
:class:`app.sim.thread.SimThread` all of that runs in one worker thread (and the rasterising in the visualizer's
render thread), at the GUI's own CPU priority; without one (tests, headless use),
:meth:`app.control.controller.AppController.update` runs :meth:`Sim.tick` inline.

Per tick: the GUI's spec edits are copied into the runner's own spec (under the controller's
edit lock: the GUI never edits what the solver reads), one frame is solved when playing, stepping
or edited (not in manual mode), failed envs are tinted, a snapshot is published, and an image is
requested when the renderer is idle and the state or the camera changed since the last one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from engine import scenefile
from engine.runtime import launch

from . import collision_view, shading
from .metrics import FrameReadout
from .path_view import PathView
from .tuning import kernel_cache_files, release_freed_memory

FAIL_TINT = (0.95, 0.15, 0.1, 1.0)
MAX_DT = 0.25  # s of motion per solved frame at most (a stall does not make the targets jump further)


@dataclass(frozen=True, eq=False)
class Snapshot:
    """What the GUI may read of the engine state, published by the sim after each change.

    ``generation`` counts scene installs (a new one means a new robot, env count or spec);
    ``version`` every publish. ``spec`` is the spec the scene was built from (the GUI's from then
    on); ``keep_edits``: the GUI keeps its own targets and solver settings over it (a rebuild for
    a new env count or spacing). ``robot``: the entity (the GUI reads only its static model:
    ``tree``, ``links``, ``get_link``). Arrays are env-local: ``qpos`` (n_envs, n_qs),
    ``links_pos`` (n_envs, n_links, 3), ``links_quat`` (n_envs, n_links, 4); ``offsets``
    (n_envs, 3) each env's on-screen offset. ``frame``: the last solved RunnerFrame (None until one).
    ``colliding`` (n_envs,) bool: whose answer collides (None: not checked, :mod:`app.sim.collision_view`).
    ``path``: the planned path drawn for the selected env, ``(T, n_qs)`` samples (None: none drawn);
    ``path_points`` ``(T, 3)`` m: where its drawn link goes, in the world. ``kernel``: the solver
    the answers come from (the spec's, but "auto" while the generic one is not compiled yet).
    ``edits``: the controller's edit count the answers follow (-1: none yet; later ones: later snapshots).
    """

    generation: int
    version: int
    spec: object
    keep_edits: bool
    robot: object
    n_envs: int
    offsets: np.ndarray
    qpos: np.ndarray
    links_pos: np.ndarray
    links_quat: np.ndarray
    frame: object
    t: float
    colliding: np.ndarray | None = None
    path: np.ndarray | None = None
    path_points: np.ndarray | None = None
    kernel: str | None = None
    edits: int = -1


class Sim:
    """The scene, runner and visualizer of controller ``c`` (engine calls happen here only)."""

    def __init__(self, c):
        self.c = c
        self.scene = self.runner = self.robot = None
        self.collisions: collision_view.CollisionView | None = None
        self.paths = PathView()  # the selected env's planned path (solver.plan)
        self.generation = 0
        self.version = 0
        self.published: Snapshot | None = None
        self.last_frame = None
        self.pending = None  # Future of the image being rendered
        self._pending_answers = False  # ... which shows this scene's solved answers (not robots at rest)
        self._image: tuple | None = None  # (sequence number, image, render ms, generation, requests) of the newest
        self._image_seq = 0
        self._requested = None  # (version, camera, the controller's render_requests) of the last image asked for
        self._synced_edits = -1  # the controller's edit count last copied into the runner's spec
        self._solved_edits = -1  # ... and last solved
        self._steps_seen = 0
        self._stepped_unrendered = False  # a solved state no image was requested of yet
        self._frames_at_request = 0  # the window's frame count when the last image was asked for
        self._pending_version = self.image_version = (0, 0)  # (generation, version) rendered / shown
        self._last_tick = time.perf_counter()
        self._tinted = np.zeros(0, bool)
        self.on_image = None  # called (render thread) when an image is ready: the sim thread's wake-up
        self.keep_edits, self._warm, self._first_image_done, self._installed_at = False, False, False, 0.0
        self._following_edit = False  # the last solve followed an edit made while paused (catching_up)
        self.stage: str | None = None  # what a long step is doing (the GUI's progress note), or None
        self.startup: dict = {}  # how the current scene's first frame went: build_s, solve_s, kernels, image_s,
        # answers_seq (the sequence number of its first image showing solved answers)
        self.pool = None  # a solver_proc.SolverPool: the IK solves run in a child process (the GUI's sim)
        self.solver = None  # ... the current scene's solver process

    @property
    def visualizer(self):
        return self.scene.visualizer

    # -- building -------------------------------------------------------------------------------------
    def install(self, spec, n_envs: int | None = None, keep_edits: bool = False) -> None:
        """Build ``spec`` (for ``n_envs`` envs, default the file's) and make it current; on an error the
        current scene stays as it was and the error propagates."""
        from engine.vis import Visualizer

        c = self.c
        t0 = time.perf_counter()
        cache_empty = not kernel_cache_files()
        n = spec.envs.n_envs if n_envs is None else n_envs
        self.stage = f"loading {spec.robot.file} and building {n} env{'s' * (n != 1)}"
        solver = None
        if self.pool is not None:  # the child builds (and prepares its kernels) while this one builds and draws
            solver = self.pool.take()
            solver.build(spec, n)
        try:
            scene, runner = scenefile.build(spec, n_envs=n_envs)
            scene.visualizer = Visualizer(scene, res=c.camera_params[3], lod=c.lod, quick_first_image=True)
            shading.prepare(scene.visualizer, runner.robot.tree)  # STL shells smooth, not speckled, at its LOD
        except BaseException:
            if solver is not None:
                solver.close()
            raise
        finally:
            self.stage = None
        self.startup = {"build_s": time.perf_counter() - t0, "cache_empty": cache_empty}
        spec.envs.n_envs = scene.n_batch
        old, old_solver = self.scene, self.solver
        if solver is not None:
            self.solver = solver
        self.scene, self.runner, self.robot = scene, runner, runner.robot
        self.paths = PathView()  # the old scene's drawing went with it
        checker = None if self.solver is None else self._check_in_child
        self.collisions = collision_view.CollisionView(runner.robot, scene.visualizer, checker)
        runner.spec = spec.model_copy(deep=True)  # the runner's own: the GUI edits `spec`
        self.pending, self._requested, self.last_frame = None, None, None
        self._tinted = np.zeros(scene.n_batch, np.int8)
        self._synced_edits = self._solved_edits = c.edit_count
        self._stepped_unrendered = False
        self._warm = False
        self._following_edit = False
        self._first_image_done = False
        self._installed_at = time.perf_counter()
        self.generation += 1
        self.keep_edits = keep_edits
        c.metrics.reset()
        if old is not None:
            old.destroy()
            if self.pool is not None:  # the window's process: its heap is frozen, so this is quick
                release_freed_memory()
        if old_solver is not None:
            old_solver.close()
        self.collisions.show_spheres(c.show_spheres)  # shown in the old scene: shown in this one
        self.publish(spec)

    def close(self) -> None:
        if self.solver is not None:
            self.solver.close()
            self.solver = None
        if self.pool is not None:
            self.pool.close()
        if self.scene is not None:
            self.scene.destroy()
            self.scene = None

    def startup_note(self) -> str | None:
        """One line on how the current scene's first image came (once it has): the scene build, the
        first solve (with "compiled" only when the kernel cache was empty: then it surely did) and
        the first image, in seconds."""
        st = self.startup
        if "image_s" not in st or "solve_s" not in st:
            return None
        kernels = "compiled (first run; cached for the next ones)" if st["cache_empty"] else "ready"
        return (f"scene built in {st['build_s']:.1f} s, IK kernels {kernels} in {st['solve_s']:.1f} s, "
                f"first image in {st['image_s']:.1f} s")

    # -- state to the GUI -----------------------------------------------------------------------------
    def publish(self, spec=None) -> Snapshot:
        """Read the robot's state once and publish it for the GUI."""
        robot, n = self.robot, self.scene.n_batch
        self.version += 1
        snap = Snapshot(
            generation=self.generation, version=self.version,
            spec=spec if spec is not None else self.published.spec, keep_edits=self.keep_edits, robot=robot,
            n_envs=n, offsets=self.scene.envs_offset(), qpos=robot.get_qpos().reshape(n, -1),
            links_pos=robot.get_links_pos().reshape(n, -1, 3), links_quat=robot.get_links_quat().reshape(n, -1, 4),
            frame=self.last_frame, t=self.runner.t,
            colliding=None if self.collisions.colliding is None else self.collisions.colliding.copy(),
            path=self.paths.samples, path_points=self.paths.points, kernel=self.answering_kernel(),
            edits=-1 if self.last_frame is None else self._solved_edits)
        self.published = snap
        return snap

    def answering_kernel(self) -> str:
        """The solver the current scene's answers come from (see :class:`Snapshot`)."""
        kernel = self.runner.spec.solver.kernel
        return kernel if self.solver is None else self.solver.answering_kernel(kernel)

    # -- one tick -------------------------------------------------------------------------------------
    @property
    def solved_edits(self) -> int:
        """The controller's edit count as of the last frame solved (-1: none yet)."""
        return self._solved_edits

    def sync_spec(self) -> bool:
        """Copy the GUI's targets and solver settings into the runner's spec if they were edited."""
        c = self.c
        if c.edit_count == self._synced_edits:
            return False
        with c.edit_lock:
            count = c.edit_count
            run_spec = self.runner.spec
            run_spec.targets = [t.model_copy() for t in c.spec.targets]
            run_spec.solver = c.spec.solver.model_copy()
            moved = run_spec.obstacles != c.spec.obstacles
            if moved:
                run_spec.obstacles = [o.model_copy() for o in c.spec.obstacles]
        if moved:
            self.runner.place_obstacles()  # set_pos / set_quat in every env: nothing recompiles
        self.runner.retarget()
        self._synced_edits = count
        return True

    def tick(self) -> FrameReadout | None:
        """Solve one frame if playing, stepping or edited (never in manual mode) and publish it;
        returns its readout (None when nothing was solved)."""
        if self.scene is None:
            return None
        c = self.c
        now = time.perf_counter()
        wall_dt, self._last_tick = now - self._last_tick, now
        self.sync_spec()
        step_once = c.step_requests != self._steps_seen
        edited = self._synced_edits != self._solved_edits
        if not (c.playing or step_once or edited or self.catching_up()) or c.manual:
            return None
        if c.playing:
            dt = min(wall_dt, MAX_DT)
        else:
            dt = self.runner.dt if step_once else 0.0
        self._following_edit = edited and not c.playing or (self._following_edit and not (c.playing or step_once))
        self._steps_seen, self._solved_edits = c.step_requests, self._synced_edits
        t0 = time.perf_counter()
        if not self._warm:
            self.stage = ("compiling the IK kernels (first run; cached for the next ones)"
                          if self.startup.get("cache_empty") else "preparing the IK kernels")
        try:
            frame = self._solve(dt * c.speed)
        except (ValueError, RuntimeError) as err:
            c.playing = False
            c.error(f"solve failed, paused: {err}", key="solve")
            return None
        finally:
            self.stage = None
        if not self._warm and "solve_s" not in self.startup:
            self.startup["solve_s"] = time.perf_counter() - t0
        if not self._warm and self.pool is not None:
            self.pool.settled()  # the spare child and the generic warm-up start now, not before
        c.resolve("solve")
        self.last_frame = frame
        colliding = self._check_collisions(frame.min_distance)  # the solve's own distances when it avoided
        self._tint_failures(frame.success, colliding, frame.lagging)
        env = c.selected_env if 0 <= c.selected_env < self.runner.n_envs else 0
        self.paths.update(self.scene, self.runner, env, bool(self.runner.spec.solver.plan))
        readout = FrameReadout.of(frame, now, self.visualizer.last_timing.get("total_ms", 0.0), colliding)
        if self._warm and not frame.kernels_prepared:  # a solve that compiled or loaded a kernel: not a readout
            c.metrics.add(readout)
        self._warm = True  # the first solve of a scene may compile or load kernels (the child's first step)
        self._stepped_unrendered = True
        self.publish()
        return readout

    @property
    def warm(self) -> bool:
        """Whether this scene solved once (its kernels are compiled or loaded)."""
        return self._warm

    def catching_up(self) -> bool:
        """Whether an edit made while paused left envs lagging behind their targets (smooth tracking
        moved them by their whole velocity limit): the sim goes on solving, without advancing time,
        until none lags, so the edit is followed all the way, smoothly. (Pausing alone freezes the
        robots where they are.)"""
        frame = self.last_frame
        return (self._following_edit and frame is not None and frame.lagging is not None
                and bool(frame.lagging.any()))

    def _solve(self, dt: float):
        """One frame solved: in the solver process when there is one (applied here), else in-process."""
        if self.solver is None:
            return self.runner.step(dt)
        frame = self.solver.step(self.runner, dt, self._synced_edits)
        self.runner.apply(frame, dt)
        return frame

    def first_image_due(self) -> bool:
        """This scene has no image yet: the sim renders one before it solves (the robots reach the screen before
        the IK kernels), once the GUI framed its camera for it (a window: once laid out; other GUIs: or 1 s)."""
        if self._first_image_done or self.scene is None or self._solve_before_first_image():
            return False
        framed = self.c.camera_generation == self.generation
        return framed or not self.c.view_laid_out or time.perf_counter() - self._installed_at < 1.0

    def busy_rendering(self) -> bool:
        return self.pending is not None and not self.pending.done()

    def _step_due(self) -> bool:
        """Playing, a step asked for, or an edit not solved yet (paused: followed to its end); not manual."""
        c = self.c
        due = (c.playing or c.step_requests != self._steps_seen or c.edit_count != self._solved_edits
               or self.catching_up())
        return due and not c.manual

    def _solve_before_first_image(self) -> bool:
        """The scene's child has its first answers ready (its scene built and kernels prepared; at start
        the first child builds the scene of ``ikstudio``'s command line ahead: solver_proc.start_early):
        the first image shows them, instead of robots at rest followed ~0.4 s later by the answers."""
        return (not self._first_image_done and not self._warm and self.solver is not None
                and self._step_due() and self.solver.answers_ready())

    def wants_step(self) -> bool:
        """A tick would solve, and the last solved state is already on its way to the screen (the sim
        runs at most one frame ahead of the renderer, and of the window's image pacing)."""
        if self.scene is None or not self._step_due() or self.first_image_due():
            return False
        return not (self._stepped_unrendered and (self.busy_rendering() or self._image_paced()))

    def _image_paced(self) -> bool:
        """The window's pacing (``c.pacing``, app.control.image_pacing) holds the next image back (never the first)."""
        pacing = self.c.pacing
        return (pacing is not None and self._first_image_done and self._image is not None
                and self._image[3] == self.generation and not pacing.due(self._frames_at_request))

    def _tint_failures(self, success: np.ndarray, colliding: np.ndarray | None = None, lagging=None) -> None:
        """Failed envs red, lagging ones amber, those whose answer collides magenta (collision_view)."""
        state = collision_view.env_states(success, colliding, lagging)
        if state.shape == self._tinted.shape and np.array_equal(state, self._tinted):
            return
        vis = self.visualizer
        for code, rgba in ((collision_view.OK, None), (collision_view.FAILED, FAIL_TINT),
                           (collision_view.COLLIDING, collision_view.COLLIDE_TINT),
                           (collision_view.LAGGING, collision_view.LAG_TINT)):
            if (state == code).any():
                vis.set_env_tint(np.flatnonzero(state == code), rgba)
        self._tinted = state

    def _check_collisions(self, min_distance: np.ndarray | None = None) -> np.ndarray | None:
        """Which envs' current answers collide (None when the checks are off; see collision_view);
        ``min_distance``: the clearances the solve of this state measured, if it did."""
        colliding = self.collisions.after_state(self.runner.spec, min_distance)
        if self.collisions.error is not None:
            self.c.error(self.collisions.error, key="collisions")
        return colliding

    def _check_in_child(self) -> np.ndarray:
        """``in_collision()`` of the robot's current state, run in the solver child (its spec synced)."""
        return self.solver.check(self.runner, self._synced_edits)

    def _retint(self) -> None:
        """The state changed without a solve (a joint, the spheres): check and tint again, publish."""
        if self.last_frame is not None:
            self._tint_failures(self.last_frame.success, self._check_collisions(), self.last_frame.lagging)
        self.publish()

    def show_spheres(self, show: bool) -> None:
        """Draw the robot's collision spheres (debug objects, every env), or remove them."""
        self.collisions.show_spheres(show)
        self._retint()

    # -- engine writes the GUI asks for ------------------------------------------------------------------
    def set_joint(self, env: int | None, q_index: int, value: float) -> None:
        envs = [env] if self.scene.is_batched and env is not None else None
        self.robot.set_qpos([float(value)], qs_idx_local=[int(q_index)], envs_idx=envs)
        self._retint()

    def reset(self) -> None:
        self.runner.reset()
        self.c.metrics.reset()
        self.publish()

    def show_target_frames(self, show: bool) -> None:
        """Draw the targets' frames in the render (the runner's debug frames), or hide them."""
        runner = self.runner
        if runner.debug_frames != bool(show):
            runner.debug_frames = bool(show)
            if not show:
                runner.clear_debug_frames()
            else:
                self._solved_edits = -1  # solve once (no time passes) so that the frames are drawn again
            self.publish()  # a new state to render

    # -- images -------------------------------------------------------------------------------------
    def request_frame(self, force: bool = False) -> bool:
        """Ask the renderer for an image of the current state if it is idle and the state or the
        camera changed since the last one (or ``force``); True if one was requested."""
        if self.scene is None or self.busy_rendering() or self._solve_before_first_image():
            return False
        self.collect()
        asked = self._requested is None or self.c.render_requests != self._requested[2]  # by wait_frame: unpaced
        if not (force or asked) and self._image_paced():
            return False
        if self.first_image_due() and self.c.camera_generation != self.generation:
            return False  # the GUI is about to frame the camera for this scene: render that
        key = (self.version, self.c.camera_params, self.c.render_requests)
        if key == self._requested and not force and not self.c.always_render:
            return False
        self._apply_camera(self.c.camera_params)
        if self._image is None or self._image[3] != self.generation:
            self.startup.setdefault("image_t0", time.perf_counter())
        fut = self.visualizer.request_frame()
        self._frames_at_request = self.c.pacing.frames if self.c.pacing is not None else 0
        self.pending, self._requested, self._stepped_unrendered = fut, key, False
        self._pending_answers = self._warm  # the state it shows was solved at least once
        self._pending_version = (self.generation, self.version)
        if self.on_image is not None:
            fut.add_done_callback(lambda f: self.on_image())
        return True

    def _apply_camera(self, params) -> None:
        position, target, fov, res = params
        cam = self.visualizer.camera
        if tuple(cam.res) != tuple(res):
            cam.res = tuple(res)
        cam.fov = fov
        cam.look_at(np.array(position), np.array(target))

    def collect(self) -> None:
        """Take a finished render as the newest image (sim side only: the sim thread, or inline)."""
        fut = self.pending
        if fut is None or not fut.done():
            return
        self.pending = None
        self._first_image_done = True
        self.image_version = self._pending_version  # (generation, version) the newest image shows
        try:
            image = fut.result()
        except Exception as err:  # the render thread's error, shown rather than raised
            self.c.error(f"render failed: {err}", key="render")
            return
        self.c.resolve("render")
        self._image_seq += 1
        if "image_t0" in self.startup:
            self.startup["image_s"] = time.perf_counter() - self.startup.pop("image_t0")
        if self._pending_answers:
            self.startup.setdefault("answers_seq", self._image_seq)
        ms = float(self.visualizer.last_timing.get("total_ms", 0.0))
        self._image = (self._image_seq, image, ms, self.generation, self._requested[2])  # (asked for with it)
        recorder = self.c.recorder
        if recorder is not None:
            recorder.offer(image)

    def image_is_current(self) -> bool:
        """The newest collected image shows the state last published (no newer one waits to be
        drawn); any thread may ask."""
        return self.pending is None and self.image_version == (self.generation, self.version)

    @staticmethod
    def kernels_prepared() -> int:
        """How many kernels this process compiled or loaded so far (engine.runtime.launch)."""
        return launch.kernels_prepared()

    @staticmethod
    def kernels_prepared_since(number: int) -> list:
        """The kernel preparations of this process after the ``number``-th (launch.Preparation)."""
        return launch.prepared_since(number)

    def first_answers_image(self) -> int | None:
        """The sequence number (as in :meth:`latest_image`) of the current scene's first image that
        shows solved answers, or None before one was collected."""
        return self.startup.get("answers_seq")

    def latest_image(self) -> tuple | None:
        """(sequence number, image (H, W, 3) uint8, render ms, scene generation, the controller's
        render_requests when it was asked for) of the newest collected image, or None; any thread."""
        return self._image

    def wait_image(self, timeout: float = 30.0) -> np.ndarray:
        """Inline use: the image of the current state: the render in flight if it shows it, else a new
        one (the newest image when nothing changed since it was requested)."""
        if self.pending is not None:
            self.pending.result(timeout=timeout)
            self.collect()
        if not self.request_frame():
            if self._image is not None:
                return self._image[1]
            self.request_frame(force=True)
        self.pending.result(timeout=timeout)
        self.collect()
        return self._image[1]
