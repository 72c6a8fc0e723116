"""The app's state and per-frame update, with no GUI import: the dearpygui layer (app.gui) only
turns widgets and mouse input into calls here, and tests drive this class without a window.

One frame (:meth:`AppController.update`): targets from the scene's motion patterns, one batched
IK call per target group for every env (the scene-file runner), the answer applied, envs whose IK
failed tinted, readouts recorded, and a new image requested from the visualizer's render thread
(:meth:`poll_frame` collects it when ready, so the GUI never waits on the renderer).
"""

from __future__ import annotations

import time
from collections import deque
from pathlib import Path

import numpy as np
from pydantic import ValidationError

from engine import scenefile
from engine.scenefile import models as scenefile_models
from engine.scenefile.errors import one_line

from .camera_math import OrbitCamera
from .metrics import FrameReadout, Metrics, worst
from .targets import TargetEditor

FAIL_TINT = (0.95, 0.15, 0.1, 1.0)
DEFAULT_SCENE = Path(__file__).resolve().parent / "scenes" / "batched_panda.yaml"  # the repo's scenes/ links here
MAX_ENVS = scenefile_models.MAX_ENVS  # the scene files' limit: one limit for both


class AppError(Exception):
    """A user action that could not be done; the message is shown in the app."""


class AppController:
    """Everything the app shows and changes.

    ``scene_path``: a scene file (default: the seed's 16-env batched demo). ``res``: the 3D view's
    (width, height) in pixels. ``lod``: the visualizer's level of detail (None: automatic).
    """

    def __init__(self, scene_path=None, res=(1280, 720), lod: str | None = None):
        self.res = (int(res[0]), int(res[1]))
        self.lod = lod
        self.messages: deque[tuple[str, str]] = deque(maxlen=50)  # (level, text), newest last
        self.metrics = Metrics()
        self.camera = OrbitCamera(target=np.zeros(3), distance=4.0, azimuth_deg=30.0, elevation_deg=30.0,
                                  width=self.res[0], height=self.res[1])
        self.playing = True
        self.speed = 1.0
        self.manual = False
        self.follow = False
        self.selected_env = 0
        self.spec = None
        self.scene = None
        self.runner = None
        self.robot = None
        self.last_frame = None  # RunnerFrame of the last solve
        self.latest_image: np.ndarray | None = None
        self._pending = None
        self._step_requested = False
        self.dirty = False  # targets edited: solve the next frame even when paused
        self._pointer: dict | None = None  # the mouse button held over the 3D view, if any
        self._last_update = time.perf_counter()
        self._tinted = np.zeros(0, bool)
        self._install(scenefile.load(scene_path or DEFAULT_SCENE))

    # -- messages -----------------------------------------------------------------------------------
    def info(self, text: str) -> None:
        self.messages.append(("info", text))

    def error(self, text: str) -> None:
        self.messages.append(("error", text))

    # -- scene lifecycle ------------------------------------------------------------------------------
    @property
    def n_envs(self) -> int:
        return self.scene.n_batch

    @property
    def visualizer(self):
        return self.scene.visualizer

    def _install(self, spec, n_envs: int | None = None) -> None:
        """Build ``spec`` and make it current; on any error the current scene stays as it was."""
        scene, runner = scenefile.build(spec, n_envs=n_envs)
        from engine.vis import Visualizer

        scene.visualizer = Visualizer(scene, res=self.res, lod=self.lod)
        old_scene = self.scene
        self.spec, self.scene, self.runner, self.robot = spec, scene, runner, runner.robot
        self.spec.envs.n_envs = scene.n_batch
        self.selected_env = min(self.selected_env, scene.n_batch - 1)
        self._pending = None
        self._tinted = np.zeros(scene.n_batch, bool)
        self.metrics.reset()
        self.last_frame = None
        self.targets = TargetEditor(self)
        if old_scene is not None:
            old_scene.destroy()
        self._camera_from_spec()

    def _try(self, what: str, fn) -> bool:
        try:
            fn()
        except ValidationError as err:  # a live edit of a spec field: one line, not pydantic's report
            self.error(f"{what}: {one_line(err)}")
            return False
        except (scenefile.SceneFileError, ValueError, KeyError, TypeError, OSError, RuntimeError) as err:
            self.error(f"{what}: {err}")
            return False
        return True

    def open_scene(self, path) -> bool:
        """Load and build a scene file; on failure the message is shown and the current scene kept."""
        ok = self._try(f"cannot open {path}", lambda: self._install(scenefile.load(path)))
        if ok:
            self.info(f"opened {path}")
        return ok

    def save_scene(self, path=None) -> bool:
        """Write the current spec (robot, envs, solver, targets, camera) to ``path`` (default: its file)."""
        path = path or self.spec.source
        if path is None:
            self.error("save: this scene has no file yet; choose a path")
            return False
        self._camera_to_spec()
        ok = self._try(f"cannot save {path}", lambda: scenefile.save(self.spec, path))
        if ok:
            self.info(f"saved {path}")
        return ok

    def load_robot(self, name_or_path: str) -> bool:
        """Replace the robot (a catalog name or a URDF / MJCF path), keeping envs and solver settings.
        Its end link gets one full-pose target at its current pose."""
        def swap():
            spec = scenefile.SceneSpec(robot={"file": str(name_or_path)}, envs=self.spec.envs.model_dump(),
                                       solver=self.spec.solver.model_dump(), targets=[])
            scene, runner = scenefile.build(spec, n_envs=1, debug_frames=False)
            robot = runner.robot
            link = end_link(robot.tree)
            pos = robot.get_links_pos().reshape(-1, robot.n_links, 3)[0, link.idx]
            quat = robot.get_links_quat().reshape(-1, robot.n_links, 4)[0, link.idx]
            spec.targets = [scenefile.TargetSpec(link=link.name, pos=tuple(float(x) for x in pos.round(4)),
                                                 quat=tuple(float(x) for x in quat.round(6)))]
            scene.destroy()
            self.spec.camera = None
            self._install(spec)

        ok = self._try(f"cannot load robot '{name_or_path}'", swap)
        if ok:
            self.info(f"loaded robot {name_or_path}: {self.robot.n_links} links, {self.robot.n_dofs} dofs")
            self.frame_all()
        return ok

    def set_n_envs(self, n_envs: int) -> bool:
        """Rebuild the scene with ``n_envs`` envs (1 .. :data:`MAX_ENVS`)."""
        def rebuild():
            n = int(n_envs)
            if not 1 <= n <= MAX_ENVS:
                raise ValueError(f"n_envs: expected 1 to {MAX_ENVS}, got {n_envs!r}")
            self._camera_to_spec()
            self._install(self.spec, n_envs=n)

        return self._try("cannot change the number of envs", rebuild)

    def set_env_spacing(self, spacing) -> bool:
        def apply():
            self.spec.envs.env_spacing = tuple(spacing)
            self._install(self.spec, n_envs=self.n_envs)

        return self._try("cannot change env spacing", apply)

    def set_solver_param(self, name: str, value) -> bool:
        """Change one IK parameter live (validated like the scene file's ``solver`` section)."""
        return self._try("solver", lambda: setattr(self.spec.solver, name, value))

    def close(self) -> None:
        if self.scene is not None:
            self.scene.destroy()

    # -- time -------------------------------------------------------------------------------------------
    def toggle_play(self) -> None:
        self.playing = not self.playing

    def step_once(self) -> None:
        """Advance one frame of the motion patterns (meant for when paused)."""
        self._step_requested = True

    def reset_scene(self) -> None:
        self.runner.reset()
        self.metrics.reset()

    def update(self) -> FrameReadout | None:
        """One frame: solve (when playing, stepping or in manual mode nothing is solved), tint,
        record readouts, and ask the renderer for a new image. Returns the frame's readout."""
        now = time.perf_counter()
        wall_dt, self._last_update = now - self._last_update, now
        readout = None
        if (self.playing or self._step_requested or self.dirty) and not self.manual:
            if self.playing:
                dt = min(wall_dt, 0.1)
            else:
                dt = self.runner.dt if self._step_requested else 0.0
            self._step_requested = self.dirty = False
            try:
                frame = self.runner.step(dt * self.speed)
            except (ValueError, RuntimeError) as err:
                self.playing = False
                self.error(f"solve failed, paused: {err}")
                return None
            self.last_frame = frame
            self._tint_failures(frame.success)
            readout = FrameReadout(now, frame.ik_ms, self.visualizer.last_timing.get("total_ms", 0.0),
                                   100.0 * frame.success_rate, int((~frame.success).sum()),
                                   worst(frame.pos_error), worst(frame.rot_error))
            self.metrics.add(readout)
        if self.follow:
            self.camera.target = self.env_center(self.selected_env)
        self._sync_camera()
        if self._pending is None:
            self._pending = self.visualizer.request_frame()
        return readout

    def poll_frame(self) -> np.ndarray | None:
        """The newest rendered image (H, W, 3) uint8 if one finished since the last call, else None."""
        fut = self._pending
        if fut is None or not fut.done():
            return None
        self._pending = None
        try:
            self.latest_image = fut.result()
        except Exception as err:  # the render thread's error, shown rather than raised into the GUI
            self.error(f"render failed: {err}")
            return None
        return self.latest_image

    def wait_frame(self, timeout: float = 30.0) -> np.ndarray:
        """Block until the pending image is ready (for tests and headless use)."""
        if self._pending is None:
            self._pending = self.visualizer.request_frame()
        self._pending.result(timeout=timeout)
        return self.poll_frame()

    def _tint_failures(self, success: np.ndarray) -> None:
        failed = ~np.asarray(success, bool).reshape(-1)
        if failed.shape == self._tinted.shape and np.array_equal(failed, self._tinted):
            return
        vis = self.visualizer
        if (~failed).any():
            vis.set_env_tint(np.flatnonzero(~failed), None)
        if failed.any():
            vis.set_env_tint(np.flatnonzero(failed), FAIL_TINT)
        self._tinted = failed

    # -- camera -----------------------------------------------------------------------------------------
    def _camera_from_spec(self) -> None:
        """The file's camera, unless it leaves an env out of this view (the file's camera may be
        framed for a video of another aspect ratio): then frame every env."""
        cam = self.spec.camera
        if cam is None:
            self.frame_all()
            return
        pos, lookat = np.array(cam.pos, float), np.array(cam.lookat, float)
        d = pos - lookat
        dist = float(np.linalg.norm(d))
        self.camera.target = lookat
        self.camera.distance = dist
        self.camera.azimuth_deg = float(np.degrees(np.arctan2(d[1], d[0])))
        self.camera.elevation_deg = float(np.degrees(np.arcsin(np.clip(d[2] / dist, -1, 1))))
        self.camera.fov_deg = float(cam.fov)
        pix, depth = self.camera.project(self.env_centers())
        margin = 0.06 * np.array([self.camera.width, self.camera.height])
        inside = (depth > 0) & np.all((pix >= margin) & (pix <= [self.camera.width, self.camera.height] - margin), 1)
        if not inside.all():
            self.frame_all()

    def _camera_to_spec(self) -> None:
        self.spec.camera = scenefile.CameraSpec(pos=tuple(float(x) for x in self.camera.position().round(4)),
                                                lookat=tuple(float(x) for x in np.asarray(self.camera.target).round(4)),
                                                fov=float(self.camera.fov_deg))

    def _sync_camera(self) -> None:
        cam = self.visualizer.camera
        if tuple(cam.res) != (self.camera.width, self.camera.height):
            cam.res = (self.camera.width, self.camera.height)
        cam.fov = self.camera.fov_deg
        cam.look_at(self.camera.position(), self.camera.target)

    def resize_view(self, width: int, height: int) -> None:
        """The 3D view's widget changed size: render at the new size."""
        width, height = max(int(width), 16), max(int(height), 16)
        if (width, height) != (self.camera.width, self.camera.height):
            self.camera.resize(width, height)
            self.res = (width, height)

    def frame_all(self) -> None:
        lo, hi = self.visualizer.scene_bounds()
        self.camera.frame_points(np.array([lo, hi]))

    def preset(self, name: str) -> None:
        self.camera.preset(name)

    def env_centers(self) -> np.ndarray:
        """On-screen centre of every env's robot (n_envs, 3): the mean of its link origins, m."""
        pos = self.robot.get_links_pos().reshape(self.n_envs, -1, 3)
        return pos.mean(axis=1) + self.scene.envs_offset()

    def env_center(self, env: int) -> np.ndarray:
        return self.env_centers()[env]

    def env_at_pixel(self, px: float, py: float, radius_px: float = 80.0) -> int | None:
        """The env whose robot projects nearest to pixel (px, py), within ``radius_px``."""
        pix, depth = self.camera.project(self.env_centers())
        dist = np.linalg.norm(pix - np.array([px, py]), axis=1)
        dist[~np.isfinite(dist) | (depth <= 0)] = np.inf
        best = int(np.argmin(dist))
        return best if dist[best] <= radius_px else None

    def link_at_pixel(self, px: float, py: float, radius_px: float = 30.0) -> tuple[int, str] | None:
        """``(env, link name)`` of the link origin that projects nearest to pixel (px, py), within
        ``radius_px``; nearer to the camera wins among links equally near on screen."""
        pos = self.robot.get_links_pos().reshape(self.n_envs, -1, 3) + self.scene.envs_offset()[:, None]
        pix, depth = self.camera.project(pos)
        dist = np.linalg.norm(pix - np.array([px, py]), axis=-1)
        dist[~np.isfinite(dist) | (depth <= 0)] = np.inf
        score = dist + 1e-3 * np.where(np.isfinite(depth), depth, 0.0)
        env, link = np.unravel_index(int(np.argmin(score)), score.shape)
        if dist[env, link] > radius_px:
            return None
        return int(env), self.robot.links[int(link)].name

    def select_env(self, env: int) -> None:
        if not 0 <= int(env) < self.n_envs:
            raise AppError(f"env: expected 0 to {self.n_envs - 1}, got {env}")
        self.selected_env = int(env)

    # -- the mouse over the 3D view ------------------------------------------------------------------------
    def pointer_down(self, button: str, px: float, py: float, shift: bool = False, ctrl: bool = False) -> str:
        """A button went down at pixel (px, py): grab a gizmo handle, else orbit (left), pan
        (middle, or shift + left); ctrl + left picks a link (a click adds a target to it). Returns
        the mode: "gizmo", "orbit", "pan" or "pick"."""
        if button == "left" and not shift and self.targets.begin_drag(px, py):
            mode = "gizmo"
        elif button == "left" and ctrl:
            mode = "pick"
        elif button == "middle" or (button == "left" and shift):
            mode = "pan"
        else:
            mode = "orbit"
        self._pointer = {"button": button, "mode": mode, "start": (px, py), "last": (px, py), "moved": False}
        return mode

    def pointer_move(self, px: float, py: float, ctrl: bool = False) -> None:
        """The mouse moved: drag what was grabbed (``ctrl`` snaps gizmo drags), or hover-highlight."""
        p = self._pointer
        if p is None:
            self.targets.hover_at(px, py)
            return
        dx, dy = px - p["last"][0], py - p["last"][1]
        p["last"], p["ctrl"] = (px, py), ctrl
        if abs(px - p["start"][0]) + abs(py - p["start"][1]) > 3:
            p["moved"] = True
        if p["mode"] == "gizmo":
            self.targets.drag_to(px, py, snap=ctrl)
        elif p["mode"] == "pan":
            self.camera.pan(dx, dy)
        elif p["mode"] == "orbit":
            self.camera.orbit(dx, dy)

    def pointer_up(self, px: float, py: float) -> None:
        """The button came up: end a gizmo drag, or select the env under a click that did not move."""
        p = self._pointer
        if p is None:
            return
        if (px, py) != p["last"]:  # the button came up after a move no frame saw: apply it first
            self.pointer_move(px, py, ctrl=p.get("ctrl", False))
        self._pointer = None
        if p["mode"] == "gizmo":
            self.targets.end_drag()
        elif p["mode"] == "pick" and not p["moved"]:
            found = self.link_at_pixel(px, py)
            if found is None:
                self.info("no link under the cursor (ctrl+click near a link's origin to add a target)")
            else:
                env, name = found
                self.select_env(env)
                self.targets.add_target(name)
                self.info(f"target added on link '{name}'")
        elif not p["moved"] and p["button"] == "left":
            env = self.env_at_pixel(px, py)
            if env is not None:
                self.select_env(env)

    def wheel(self, steps: float) -> None:
        self.camera.zoom(steps)

    # -- joints -------------------------------------------------------------------------------------------
    def joint_rows(self) -> list[tuple[str, int, float, float, float]]:
        """Sliders for the selected env: ``(joint name, qpos index, lower, upper, value)`` of every
        1-dof joint that is not a mimic (unbounded joints get +-pi rad or +-1 m)."""
        q = self.robot.get_qpos().reshape(self.n_envs, -1)[self.selected_env]
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
        envs = [self.selected_env] if self.scene.is_batched else None
        self.robot.set_qpos([float(value)], qs_idx_local=[int(q_index)], envs_idx=envs)

    def toggle_manual(self) -> None:
        self.manual = not self.manual


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
