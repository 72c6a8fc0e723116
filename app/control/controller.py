"""The app's state and actions, with no GUI import: the dearpygui layer (app.gui) only turns widgets
and mouse input into calls here, and tests drive this class without a window.

The engine side (scene, runner, visualizer) is an :class:`app.sim.loop.Sim`. ``threaded=True`` (the
GUI) runs it in a :class:`app.sim.thread.SimThread`: actions that need the engine (building a scene,
setting a joint, resetting) are posted to it and return at once, and the GUI reads the state from
the snapshot the sim publishes (:attr:`AppController.view`), so the GUI thread never waits on a
solve, a build or a render. ``threaded=False`` (tests, headless use) runs everything inline:
:meth:`AppController.update` solves one frame and asks for an image; :meth:`poll_frame` collects it.

Plain state the GUI edits directly: the scene spec's targets (through :class:`app.control.targets.TargetEditor`)
and solver settings, under :attr:`edit_lock`, each edit counted in :attr:`edit_count`; the camera;
play / pause / speed / manual.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from engine import scenefile
from engine.scenefile import models as scenefile_models
from engine.scenefile.errors import one_line
from engine.scenefile.io import resolve_robot

from ..sim.loop import FAIL_TINT, Sim, Snapshot  # noqa: F401 (FAIL_TINT: re-exported)
from ..sim.metrics import FrameReadout, Metrics
from ..sim.thread import SimThread
from . import motion, placement
from .camera_math import OrbitCamera
from .history import EditHistory
from .image_pacing import ImagePacing
from .obstacles import ObstacleEditor
from .pointer import PointerMixin
from .recording import RecordingMixin
from .status import StatusMixin
from .targets import TargetEditor
from .viewing import LINK_PAD_M, CameraMixin  # noqa: F401 (LINK_PAD_M: re-exported)

DEFAULT_SCENE = Path(__file__).resolve().parents[1] / "scenes" / "batched_panda.yaml"  # the repo's scenes/ links here
MAX_ENVS = scenefile_models.MAX_ENVS  # the scene files' limit: one limit for both
USER_ERRORS = (scenefile.SceneFileError, ValueError, KeyError, TypeError, OSError, RuntimeError)


class AppError(Exception):
    """A user action that could not be done; the message is shown in the app."""


class AppController(StatusMixin, CameraMixin, PointerMixin, RecordingMixin):
    """Everything the app shows and changes.

    ``scene_path``: a scene file (default: the seed's 16-env batched demo). ``res``: the 3D view's
    (width, height) in pixels. ``lod``: the visualizer's level of detail (None: automatic).
    ``threaded``: run the engine side in its own thread (see the module docstring); the scene is
    then built there, and :attr:`view` is None until it is.
    """

    def __init__(self, scene_path=None, res=(1280, 720), lod: str | None = None, threaded: bool = False):
        self.res = (int(res[0]), int(res[1]))
        self.lod = lod
        self.init_status()
        self.metrics = Metrics()
        self.camera = OrbitCamera(target=np.zeros(3), distance=4.0, azimuth_deg=30.0, elevation_deg=30.0,
                                  width=self.res[0], height=self.res[1])
        self.camera_params = self.current_camera_params()
        self.camera_generation = 0  # the scene generation the camera was last handed over for
        self.playing = True
        self.speed = 1.0
        self.manual = False
        self.follow = False
        self.kept_velocity = None  # a scene's solver.max_joint_velocity while "smooth" is off (set_smooth)
        self.always_render = False  # render every tick even when nothing changed
        self.view_size = self.res  # the 3D view's size, px; the camera renders at it or at render_size
        self.view_laid_out = True  # view_size is the view's own (a window: False until its first layout)
        self._framing = None  # how the camera was last framed by the app: see CameraMixin.resize_view
        self.render_size: tuple[int, int] | None = None  # a recording's fixed size
        self.init_recording()
        self.selected_env = 0
        self.edit_lock = threading.Lock()  # held while the GUI edits spec.targets / .solver and the sim copies them
        self.edit_count = 0
        self.step_requests = 0
        self.render_requests = 0  # a new one makes the sim render even when nothing changed
        self.pacing: ImagePacing | None = None  # the window's: images spaced while its frames are slow
        self.view: Snapshot | None = None  # the engine state the GUI shows (the sim's snapshot, adopted per frame)
        self.targets: TargetEditor | None = None
        self.obstacles: ObstacleEditor | None = None  # the obstacles' gizmo and pose edits
        self.history = EditHistory(self)  # undo / redo of both editors' edits (a new one per scene)
        self.show_spheres = False  # the robot's collision spheres are drawn (debug objects)
        self._pointer: dict | None = None  # the mouse button held over the 3D view, if any
        self._image_seen = self._image_requests = 0  # the newest image handed over: its number, render_requests
        self.latest_image: np.ndarray | None = None
        self.spec = scenefile.load(scene_path or DEFAULT_SCENE)
        self.sim = Sim(self)
        self.worker: SimThread | None = None
        if threaded:
            self.worker = SimThread(self.sim, self._command_done)
            self.worker.post("cannot open the scene", self.sim.install, self.spec)
        else:
            self.sim.install(self.spec)
            self.adopt()

    # -- what the GUI reads -----------------------------------------------------------------------------
    @property
    def ready(self) -> bool:
        """A scene is built and shown."""
        return self.view is not None

    @property
    def n_envs(self) -> int:
        return self.view.n_envs if self.view is not None else self.spec.envs.n_envs

    @property
    def robot(self):
        """The shown scene's robot (read its static model only: the engine state is in :attr:`view`)."""
        return self.view.robot

    @property
    def busy(self) -> str | None:
        """What the sim thread is doing that takes a while (building a scene, preparing the kernels),
        or None: the GUI's progress note."""
        stage = self.sim.stage or (None if self.worker is None else self.worker.busy)
        if stage is not None:
            return stage
        latest = self.sim.latest_image()
        if self.worker is not None and (self.view is None or latest is None or latest[3] != self.view.generation):
            return "drawing the robots"  # built; its first image is on its way
        return None

    @property
    def answers_shown(self) -> bool:
        """:meth:`poll_frame` has handed over an image of the current scene that shows solved answers."""
        seq = self.sim.first_answers_image()
        return seq is not None and self._image_seen >= seq

    # the engine objects: for the inline mode (tests) and the sim thread only
    @property
    def scene(self):
        return self.sim.scene

    @property
    def runner(self):
        return self.sim.runner

    @property
    def visualizer(self):
        return self.sim.visualizer

    @property
    def last_frame(self):
        return self.view.frame if self.view is not None else None

    @property
    def dirty(self) -> bool:
        """Targets or solver settings were edited since the last solve."""
        return self.edit_count != self.sim.solved_edits

    @dirty.setter
    def dirty(self, value: bool) -> None:
        if value:
            self.edited()

    def edited(self) -> None:
        """The GUI changed the spec's targets or solver settings (call with or after :attr:`edit_lock`):
        the next tick copies them into the runner and solves, even when paused."""
        self.edit_count += 1
        if self.worker is None:
            self.sim.sync_spec()  # inline: the runner follows at once (tests read runner.groups)
        else:
            self.worker.wake()

    def adopt(self) -> bool:
        """Take the sim's newest snapshot as :attr:`view` (GUI thread, once per frame); a new scene
        also brings its spec, a new target editor and the camera of its file. True if it changed."""
        snap = self.sim.published
        if snap is None or snap is self.view:
            return False
        new_scene = self.view is None or snap.generation != self.view.generation
        first = self.view is None
        envs_before = None if first else len(self.view.offsets)
        self.view = snap
        if new_scene:
            if snap.keep_edits and not first:
                with self.edit_lock:  # edits made while it was rebuilt carry over, and so does their undo
                    snap.spec.targets, snap.spec.solver = self.spec.targets, self.spec.solver
                    snap.spec.obstacles = self.spec.obstacles
                    self.spec = snap.spec
                self.edited()
            else:
                self.spec = snap.spec
                self.history = EditHistory(self)
                self.targets = TargetEditor(self)
                self.obstacles = ObstacleEditor(self)
            self.camera_from_spec()
            if snap.keep_edits and envs_before is not None and len(snap.offsets) != envs_before:
                self.frame_all()  # another env count: the old framing is far too wide, or leaves envs out
            self.selected_env = self.nearest_env()  # in front: its gizmo and robot are the largest on screen
        return True

    # -- scene lifecycle ------------------------------------------------------------------------------
    def post(self, what: str, fn, *args, key: str | None = None, label: str | None = None) -> bool:
        """Run an engine-side action: in the sim thread (True at once; a failure becomes a message),
        or inline (its success, errors as messages). ``key``: a failure stays on the status line
        until the same key succeeds (see :mod:`app.control.status`)."""
        if self.worker is not None:
            self.worker.post(what, fn, *args, key=key, label=label)
            return True
        try:
            fn(*args)
        except ValidationError as err:  # a live edit of a spec field: one line, not pydantic's report
            self._command_done(key, f"{what}: {one_line(err)}")
            return False
        except USER_ERRORS as err:
            self._command_done(key, f"{what}: {err}")
            return False
        self._command_done(key, None)
        self.adopt()
        return True

    def _command_done(self, key: str | None, failure: str | None) -> None:
        if failure is not None:
            self.error(failure, key=key)
        elif key is not None:
            self.resolve(key)

    def _try(self, what: str, fn, key: str | None = None) -> bool:
        try:
            fn()
        except ValidationError as err:
            self.error(f"{what}: {one_line(err)}", key=key)
            return False
        except USER_ERRORS as err:
            self.error(f"{what}: {err}", key=key)
            return False
        if key is not None:
            self.resolve(key)
        return True

    def open_scene(self, path) -> bool:
        """Load and build a scene file; on failure the message is shown and the current scene kept."""
        try:
            spec = scenefile.load(path)
        except USER_ERRORS as err:
            self.error(f"cannot open {path}: {err}")
            return False

        def install():
            self.sim.install(spec)
            self.info(f"opened {path}")

        return self.post(f"cannot open {path}", install)

    def save_scene(self, path=None) -> bool:
        """Write the current spec (robot, envs, solver, targets, camera) to ``path`` (default: its file)."""
        path = path or self.spec.source
        if path is None:
            self.error("save: this scene has no file yet; choose a path")
            return False
        self.camera_to_spec()
        ok = self._try(f"cannot save {path}", lambda: scenefile.save(self.spec, path, tidy=True))  # no float noise
        if ok:
            self.info(f"saved {path}")
        return ok

    def load_robot(self, name_or_path: str) -> bool:
        """Replace the robot (a catalog name or a URDF / MJCF path), keeping the env count and solver
        settings. It stands on the floor (its base raised if its geometry reaches below z = 0), the
        envs are spaced by its reach (:mod:`app.control.placement`), and its end link gets one full-pose
        target at its current pose."""
        envs, solver = self.spec.envs.model_dump(), self.spec.solver.model_dump()

        def swap():
            # a catalog robot stands bolted on its base (fixed: true), as a scene file's robot does
            robot_spec = {"file": str(name_or_path)}
            if resolve_robot(str(name_or_path), Path.cwd())[1] == "urdf":
                robot_spec["fixed"] = True
            spec = scenefile.SceneSpec(robot=robot_spec, envs=envs, solver=solver, targets=[])
            scene, runner = scenefile.build(spec, n_envs=1, debug_frames=False)
            robot = runner.robot
            pos = robot.get_links_pos().reshape(-1, robot.n_links, 3)[0]
            quat = robot.get_links_quat().reshape(-1, robot.n_links, 4)[0]
            lift = placement.lift_to_floor(robot.tree, pos, quat)  # a humanoid's pelvis base: feet to the floor
            spacing = placement.env_spacing(robot, pos, quat)  # neighbours out of each other's reach
            link = end_link(robot.tree)
            target = pos[link.idx] + [0.0, 0.0, lift]
            spec.robot.pos = (0.0, 0.0, round(lift, 4))
            spec.envs.env_spacing = (spacing, spacing)
            spec.targets = [scenefile.TargetSpec(link=link.name, pos=tuple(float(x) for x in target.round(4)),
                                                 quat=tuple(float(x) for x in quat[link.idx].round(6)))]
            scene.destroy()
            self.sim.install(spec)
            self.info(f"loaded robot {name_or_path}: {self.sim.robot.n_links} links, {self.sim.robot.n_dofs} dofs; "
                      f"envs {spacing:g} m apart" + (f", base raised {lift:.2f} m to the floor" if lift else ""))

        return self.post(f"cannot load robot '{name_or_path}'", swap, label=f"loading {name_or_path}")

    def set_n_envs(self, n_envs: int) -> bool:
        """Rebuild the scene with ``n_envs`` envs (1 .. :data:`MAX_ENVS`); targets and edits are kept."""
        try:
            n = int(n_envs)
        except (TypeError, ValueError):
            n = None
        if n is None or not 1 <= n <= MAX_ENVS:
            self.error(f"cannot change the number of envs: n_envs: expected 1 to {MAX_ENVS}, got {n_envs!r}",
                       key="envs")
            return False
        self.camera_to_spec()
        spec = self._spec_copy()
        return self.post("cannot change the number of envs", self.sim.install, spec, n, True, key="envs")

    def set_env_spacing(self, spacing) -> bool:
        """Rebuild the scene with envs ``spacing`` (x, y) m apart; targets and edits are kept."""
        spec = self._spec_copy()
        if not self._try("cannot change env spacing", lambda: setattr(spec.envs, "env_spacing", tuple(spacing)),
                         key="envs"):
            return False
        return self.post("cannot change env spacing", self.sim.install, spec, self.n_envs, True, key="envs")

    def _spec_copy(self):
        with self.edit_lock:
            return self.spec.model_copy(deep=True)

    def set_solver_param(self, name: str, value) -> bool:
        """Change one IK parameter live (validated like the scene file's ``solver`` section)."""
        def apply():
            with self.edit_lock:
                setattr(self.spec.solver, name, value)
            self.edited()

        return self._try("solver", apply, key=f"solver {name}")

    def set_smooth(self, on: bool) -> bool:
        """The solver panel's "smooth" switch: velocity-limited tracking (``solver.track``); on turns
        planned motion off (:func:`app.control.motion.switch`)."""
        return self._set_motion(bool(on), bool(self.spec.solver.plan) and not on)

    def set_plan(self, on: bool) -> bool:
        """The solver panel's "plan" switch: each env moves along collision-free paths to its new
        answers (``solver.plan``); on turns smooth tracking off."""
        return self._set_motion(bool(self.spec.solver.track) and not on, bool(on))

    def _set_motion(self, track: bool, plan: bool) -> bool:
        def apply():
            with self.edit_lock:
                self.kept_velocity = motion.switch(self.spec.solver, self.kept_velocity, track, plan)
            self.edited()

        return self._try("solver", apply, key="solver motion")

    def show_collision_spheres(self, show: bool) -> bool:
        """Draw the robot's collision spheres in every env (visualizer debug objects only), or not."""
        self.show_spheres = bool(show)
        return self.post("collision spheres", self.sim.show_spheres, self.show_spheres, key="spheres")

    def close(self) -> None:
        """Finish a running recording, stop the sim thread and free the scene."""
        self.finish_recording()
        if self.worker is not None:
            self.worker.close()
        else:
            self.sim.close()

    # -- time -------------------------------------------------------------------------------------------
    def toggle_play(self) -> None:
        self.playing = not self.playing
        self._wake()

    def step_once(self) -> None:
        """Advance one frame of the motion patterns (meant for when paused)."""
        self.step_requests += 1
        self._wake()

    def reset_scene(self) -> None:
        self.post("reset", self.sim.reset)

    def _wake(self) -> None:
        if self.worker is not None:
            self.worker.wake()

    def update(self) -> FrameReadout | None:
        """One frame. Inline: solve (when playing, stepping or edited; in manual mode nothing is
        solved), record readouts and ask the renderer for a new image; returns the readout.
        Threaded: adopt the newest snapshot and hand the camera to the sim thread (None)."""
        if self.view is not None and self.follow:
            self.camera.target = self.env_center(self.selected_env)
        self.hand_camera()
        if self.worker is not None:
            self.adopt()
            self.worker.wake()
            return None
        readout = self.sim.tick()
        self.adopt()
        self.sim.request_frame()
        return readout

    def poll_frame(self) -> np.ndarray | None:
        """The newest rendered image (H, W, 3) uint8 if one finished since the last call, else None."""
        if self.worker is None:
            self.sim.collect()
        latest = self.sim.latest_image()
        if latest is None or latest[0] == self._image_seen:
            return None
        self._image_seen, self._image_requests = latest[0], latest[4]
        self.latest_image = latest[1]
        return self.latest_image

    def wait_kernels(self, timeout: float) -> bool:
        """Wait up to ``timeout`` s for the sim thread's own kernels (FK) to be compiled, before the
        window draws its first frame: taichi holds the GIL while it compiles, which would stop the
        GUI's frames. True when they are (or nothing runs in a thread)."""
        return self.worker is None or self.worker.kernels_ready.wait(timeout)

    def wait_frame(self, timeout: float = 30.0) -> np.ndarray:
        """Block until an image of the current state is ready, and return it (for tests and headless use;
        a window shows it: it is taken, and the next poll_frame has no new image)."""
        if self.worker is None:
            self.hand_camera()
            self.sim.wait_image(timeout)
            return self.poll_frame()
        seen = self._image_seen
        t0 = time.perf_counter()
        self.render_requests += 1
        self.update()
        while time.perf_counter() - t0 < timeout:
            img = self.poll_frame()  # the render in flight may finish first, showing the camera it had
            if img is not None and self._image_seen > seen and self._image_requests >= self.render_requests:
                self.adopt()
                return img
            time.sleep(0.005)
        raise TimeoutError(f"no image within {timeout} s")

    def wait_ready(self, timeout: float = 300.0) -> bool:
        """Threaded: block until the sim thread has built the scene and run every posted command."""
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < timeout:
            if self.worker is None or (self.worker.idle and self.sim.published is not None):
                self.adopt()
                return self.view is not None
            time.sleep(0.01)
        return False

    def select_env(self, env: int) -> None:
        if not 0 <= int(env) < self.n_envs:
            raise AppError(f"env: expected 0 to {self.n_envs - 1}, got {env}")
        self.selected_env = int(env)

    # -- joints -------------------------------------------------------------------------------------------
    def joint_rows(self) -> list[tuple[str, int, float, float, float]]:
        """Sliders for the selected env: ``(joint name, qpos index, lower, upper, value)`` of every
        1-dof joint that is not a mimic (unbounded joints get +-pi rad or +-1 m)."""
        q = self.view.qpos[self.selected_env]
        rows = []
        for joint in self.robot.tree.joints:
            if joint.n_qs != 1 or joint.mimic is not None:
                continue
            span = np.pi if joint.type in ("revolute", "continuous") else 1.0
            lo = joint.lower if np.isfinite(joint.lower) else -span
            hi = joint.upper if np.isfinite(joint.upper) else span
            rows.append((joint.name, joint.q_start, float(lo), float(hi), float(q[joint.q_start])))
        return rows

    def set_joint(self, q_index: int, value: float) -> None:
        """Manual mode: set one qpos entry of the selected env (the solver stops driving it)."""
        self.manual = True
        self.post("set joint", self.sim.set_joint, self.selected_env, int(q_index), float(value))

    def toggle_manual(self) -> None:
        self.manual = not self.manual
        self._wake()

    @property
    def render_ms(self) -> float:
        """Wall time of the newest image, from its request to its pixels, ms."""
        latest = self.sim.latest_image()
        return 0.0 if latest is None else latest[2]


def end_link(tree):
    """The link at the end of the longest chain (a sensible default IK target)."""
    depth = [0] * tree.n_links
    for link in tree.links:
        if link.parent >= 0:
            depth[link.idx] = depth[link.parent] + 1
    moving = [link for link in tree.links if any(tree.joints[j].n_dofs for j in _ancestor_joints(tree, link.idx))]
    pool = moving or tree.links
    return max(pool, key=lambda link: (depth[link.idx], -link.idx))


def _ancestor_joints(tree, link_idx: int) -> list[int]:
    out = []
    while link_idx >= 0:
        out += tree.links[link_idx].joints
        link_idx = tree.links[link_idx].parent
    return out
