"""``Visualizer``: the scene's renderer front end (see :mod:`engine.vis` for the API summary).

Per frame, in the caller's thread: link poses are read from the entities (env-local), composed with
each env's on-screen offset (``scene.envs_offset()``) into one (n_envs, 4, 4) pose array per link
mesh, split by env tint; debug objects add their cached instance poses. The render thread draws
the result (:mod:`engine.vis.renderer`).
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from concurrent.futures import Future

import numpy as np

from .. import inputs
from ..errors import InvalidTypeError, InvalidValueError, StateError
from ..options import studio_vis_options
from ..runtime import garbage
from ..transforms import pose_to_matrix
from . import link_sets, meshes, renderer
from .camera import Camera
from .debug import DebugObject, DebugObjects, as_color, frame_instances
from .recorder import VideoRecorder
from .renderer import FrameRequest, RenderThread

AUTO_DECIMATE_ENVS = 16  # lod=None: "decimated" from this many envs up
AUTO_DECIMATE_TRIANGLES = 300_000  # lod=None: "decimated" too past this many triangles (Baxter: 410k an env)
DEFAULT_RES = (1280, 720)


class Visualizer:
    """Renders ``scene`` offscreen: every env on a grid, link meshes instanced across envs.

    ``res`` (width, height) px (None: ``scene.viewer_options.res``, else 1280x720); ``camera`` a
    :class:`Camera` (default: placed by the scene's viewer options when they set a camera field,
    else framed on all envs when first needed); ``lod`` "full" | "decimated" | None (decimated
    when n_envs >= 16, or when the envs' full meshes hold more than ``AUTO_DECIMATE_TRIANGLES``);
    ``max_faces_per_mesh`` the face budget of a decimated visual; ``show_grid`` the ground grid;
    ``bg_color`` and ``ambient_light`` (None: the scene's ``vis_options``). The scene's
    ``vis_options`` also choose the world and link frames and the envs drawn.
    ``quick_first_image``: when the decimated meshes are not cached yet (a robot never drawn on
    this machine), draw the full ones while they are made in the background, instead of waiting
    for them (:mod:`engine.vis.link_sets`; an interactive app's choice: a video keeps one level).
    """

    def __init__(self, scene, res=None, camera: Camera | None = None, lod: str | None = None,
                 max_faces_per_mesh: int = 1000, show_grid: bool = True, bg_color=None, ambient_light=None,
                 quick_first_image: bool = False):
        if lod is not None and lod not in meshes.LODS:
            raise InvalidValueError(f"lod: expected one of {meshes.LODS} or None (auto), got {lod!r}")
        if camera is not None and not isinstance(camera, Camera):
            raise InvalidTypeError(f"camera: expected an engine.vis.Camera, got {type(camera).__name__}")
        self._scene = scene
        vis_options = getattr(scene, "vis_options", None) or studio_vis_options()
        viewer_options = getattr(scene, "viewer_options", None)
        if res is None:
            res = viewer_options.res if viewer_options is not None and viewer_options.res is not None else DEFAULT_RES
        self._camera = camera if camera is not None else Camera(res=res)  # a given camera keeps its res
        self._auto_frame = camera is None
        if camera is None and viewer_options is not None and viewer_options.camera_set:
            self._camera.fov = viewer_options.camera_fov
            self._camera.look_at(viewer_options.camera_pos, viewer_options.camera_lookat, viewer_options.camera_up)
            self._auto_frame = False
        self._lod = lod
        self._triangles: int | None = None
        self.max_faces_per_mesh = inputs.as_positive("max_faces_per_mesh", max_faces_per_mesh, integer=True)
        self.show_grid = bool(show_grid)
        self.bg_color = as_color("bg_color", vis_options.background_color if bg_color is None else bg_color)
        self.ambient_light = as_color("ambient_light", vis_options.ambient_light if ambient_light is None
                                      else ambient_light)[:3]
        self.vis_options = vis_options
        self._viewer = None
        self.debug = DebugObjects(scene)
        self._tint: np.ndarray | None = None  # (n_batch, 4), NaN rows untinted
        self._links = link_sets.LinkSets(quick_first=inputs.as_flag("quick_first_image", quick_first_image))
        self._link_specs: list | None = None  # [(entity idx, link indices sharing one mesh, key)]
        self._specs: dict = {}
        self._thread: RenderThread | None = None
        self._finalizer: weakref.finalize | None = None  # closes the thread of a visualizer dropped unclosed
        self.recorded_frames = 0  # frames in the last finished recording
        self.skipped_updates = 0  # update() calls that rendered nothing: no window, no recording
        self._lock = threading.Lock()
        self._latest: np.ndarray | None = None
        self._pending: list[Future] = []
        self._recorder: VideoRecorder | None = None
        self.last_timing: dict = {}
        self._closed = False
        atexit.register(_close_at_exit, weakref.ref(self))

    # -- properties ---------------------------------------------------------------------------------
    @property
    def scene(self):
        return self._scene

    @property
    def camera(self) -> Camera:
        """The camera; framed on all env cells the first time it is read after ``scene.build``."""
        if self._auto_frame and self._scene.is_built:
            self._auto_frame = False
            self.frame_all()
        return self._camera

    @camera.setter
    def camera(self, value: Camera) -> None:
        if not isinstance(value, Camera):
            raise InvalidTypeError(f"camera: expected an engine.vis.Camera, got {type(value).__name__}")
        self._camera, self._auto_frame = value, False

    @property
    def lod(self) -> str:
        """The level of detail in use: the one given, else by env count once the scene is built."""
        if self._lod is not None:
            return self._lod
        if not self._scene.is_built:
            return "full"
        n = self._scene.n_batch
        heavy = n * self._full_triangles() > AUTO_DECIMATE_TRIANGLES
        return "decimated" if n >= AUTO_DECIMATE_ENVS or heavy else "full"

    @property
    def drawn_lod(self) -> str | None:
        """The level of detail of the link meshes drawn now: :attr:`lod`, or "full" while a quick
        first image's decimated meshes are being made (None before the first frame)."""
        return self._links.lod

    @property
    def link_meshes_preparing(self) -> bool:
        """The decimated link meshes are being made in the background (see ``quick_first_image``)."""
        return self._links.preparing

    @property
    def link_meshes(self) -> tuple[int, int]:
        """(instanced link meshes, links drawn) per env: links drawn alike (the same visuals) share
        one mesh, so one draw call draws them in every env (Baxter: 24 meshes for 38 links)."""
        self._ensure_meshes()
        return len(self._link_specs), sum(len(links) for _, links, _ in self._link_specs)

    def _full_triangles(self) -> int:
        """Triangles of one env's robots at full detail (their meshes are loaded on first call)."""
        if self._triangles is None:
            self._triangles = sum(meshes.tree_triangles(entity.tree) for entity in self._scene.entities)
        return self._triangles

    @property
    def render_thread_id(self) -> int | None:
        """``threading.get_ident()`` of the render thread (None before the first frame)."""
        return None if self._thread is None else self._thread.ident

    # -- camera ---------------------------------------------------------------------------------------
    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned box (lo, hi) around every env's links, the ground at z = 0 included, m."""
        self._scene.require_built()
        offsets = self._scene.envs_offset()
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        for entity in self._scene.entities:
            pos = entity.get_links_pos().reshape(self._scene.n_batch, -1, 3) + offsets[:, None]
            lo, hi = np.minimum(lo, pos.min(axis=(0, 1))), np.maximum(hi, pos.max(axis=(0, 1)))
        if not np.all(np.isfinite(lo)):
            lo, hi = offsets.min(axis=0), offsets.max(axis=0)
        pad = 0.15  # link geometry around the link origins
        lo, hi = lo - pad, hi + pad
        lo[2], hi[2] = min(lo[2], 0.0), max(hi[2], 0.3)
        return lo, hi

    def frame_all(self, direction=(1.0, 0.55, 0.6)) -> Camera:
        """Point the camera at the scene so every env cell fits the image; returns the camera."""
        lo, hi = self.scene_bounds()
        self._auto_frame = False
        return self._camera.frame_bounds(lo, hi, direction)

    # -- debug objects (scene.draw_debug_* delegate here) ----------------------------------------------
    # Genesis 1.4.5's defaults (a 1 m frame, 1 cm axes; a 1 cm arrow up the z axis)
    def draw_debug_frame(self, T, axis_length=1.0, origin_size=0.015, axis_radius=0.01, env_idx=0) -> DebugObject:
        return self._drawing("draw_debug_frame").frame(T, axis_length, origin_size, axis_radius, env_idx)

    def draw_debug_sphere(self, pos, radius=0.01, color=(1.0, 0.0, 0.0, 0.5), env_idx=0) -> DebugObject:
        return self._drawing("draw_debug_sphere").sphere(pos, radius, color, env_idx)

    def draw_debug_spheres(self, poss, radius=0.01, color=(1.0, 0.0, 0.0, 0.5), env_idx=0) -> DebugObject:
        return self._drawing("draw_debug_spheres").spheres(poss, radius, color, env_idx)

    def draw_debug_line(self, start, end, radius=0.002, color=(1.0, 0.0, 0.0, 0.5), env_idx=0) -> DebugObject:
        return self._drawing("draw_debug_line").line(start, end, radius, color, env_idx)

    def draw_debug_arrow(self, pos, vec=(0, 0, 1), radius=0.01, color=(1.0, 0.0, 0.0, 0.5), env_idx=0) -> DebugObject:
        return self._drawing("draw_debug_arrow").arrow(pos, vec, radius, color, env_idx)

    def draw_debug_path(self, qposs, entity, link_idx=-1, density=0.3, frame_scaling=1.0, env_idx=0) -> DebugObject:
        from .debug_path import path_handle

        debug = self._drawing("draw_debug_path")
        return path_handle(debug, self.scene, qposs, entity, link_idx, density, frame_scaling, env_idx)

    def _drawing(self, what: str) -> DebugObjects:
        """The debug objects, for a new drawing by ``what``; a StateError once this visualizer is
        closed (``scene.destroy()``, ``close()``): nothing would ever draw it."""
        if self._closed:
            raise StateError(f"{what}: the scene's visualizer is closed (the scene was destroyed, or its "
                             "visualizer closed); draw debug objects in an open scene")
        return self.debug

    def update_debug_objects(self, objs=None, poses=None) -> None:
        """Re-pose moved handles; with ``objs`` and ``poses`` first set each handle's pose (all
        checked before any is set)."""
        if objs is not None:
            for handle in objs:
                if not isinstance(handle, DebugObject) or not self.debug.holds(handle):
                    raise InvalidValueError(f"objs: {handle!r} is not a debug object drawn in this scene")
            checked = [handle.checked_pose(T) for handle, T in zip(objs, poses, strict=True)]
            for handle, T in zip(objs, checked, strict=True):
                handle.set_pose(T)
        self.debug.update()

    def clear_debug_object(self, handle) -> None:
        self.debug.remove(handle)

    def clear_debug_objects(self) -> None:
        self.debug.clear()

    def take_over(self, previous: Visualizer) -> None:
        """Adopt the debug objects of ``previous`` (the scene's visualizer this one replaces), then close
        it. ``scene.visualizer = vis`` calls this."""
        if previous is self:
            return
        self.debug = previous.debug
        previous.close()

    # -- the interactive viewer (engine.vis.viewer) -------------------------------------------------
    @property
    def viewer(self):
        """The open viewer window (:class:`engine.vis.viewer.Viewer`), or None."""
        return self._viewer if self._viewer is not None and self._viewer.is_open else None

    def open_viewer(self):
        """Open the interactive viewer window on this visualizer's camera (``scene.build()`` calls it
        for ``show_viewer=True``). Without a display: one warning, None, and the scene runs headless."""
        from .viewer import open_viewer

        if self.viewer is None:
            options = getattr(self._scene, "viewer_options", None)
            if options is None:
                from ..options import ViewerOptions

                options = ViewerOptions()
            self._viewer = open_viewer(self, options)
            if self._viewer is not None:
                self._viewer.request_refresh()
        return self.viewer

    def on_step(self) -> None:
        """After ``scene.step()`` / ``reset()``: the viewer window redraws, and ``max_FPS`` paces the steps."""
        viewer = self.viewer
        if viewer is not None:
            viewer.request_refresh()
            viewer.step_wait()

    # -- env tints ----------------------------------------------------------------------------------
    def set_env_tint(self, envs_idx, rgba) -> None:
        """Tint the robots of ``envs_idx`` (None: all envs) with ``rgba`` (3 or 4 numbers in [0, 1]),
        or remove their tint with ``rgba=None``. Fixed bodies (obstacles, a Plane) keep their colour."""
        self._scene.require_built()
        n = self._scene.n_batch
        idx = inputs.as_index_list("envs_idx", envs_idx, n, "env")
        idx = np.arange(n) if idx is None else idx
        color = None if rgba is None else as_color("rgba", rgba)
        if self._tint is None or len(self._tint) != n:
            self._tint = np.full((n, 4), np.nan)
        self._tint[idx] = np.nan if color is None else color

    def env_tints(self) -> np.ndarray:
        """(n_envs, 4) tint per env, NaN rows for untinted envs."""
        n = self._scene.n_batch
        return np.full((n, 4), np.nan) if self._tint is None else self._tint.copy()

    # -- frames -------------------------------------------------------------------------------------
    def _ensure_meshes(self) -> None:
        self._scene.require_built()
        scene = self._scene
        entries, specs, _ = self._links.current(scene, self.lod, self.max_faces_per_mesh,
                                                lambda: scene.n_batch * self._full_triangles())
        if entries is not self._link_specs:  # the first set, or the decimated one replacing a quick first
            self._specs = {k: s for k, s in self._specs.items() if k[0] != "link"}  # tinted copies too
            self._specs.update(specs)
            self._link_specs = entries
        if ("ground", "plane") in self._specs:
            return
        offsets = scene.envs_offset()
        margin = np.array([0.6, 0.6]) + 0.5 * scene.env_spacing
        ground = meshes.ground_specs(offsets[:, :2].min(axis=0) - margin, offsets[:, :2].max(axis=0) + margin)
        for name, spec in ground.items():
            self._specs[("ground", name)] = spec
        self._ground_poses = np.eye(4, dtype=np.float32)[None]

    def _request(self, record: bool) -> FrameRequest:
        t0 = time.perf_counter()
        self._ensure_meshes()
        scene, cam = self._scene, self.camera
        n = scene.n_batch
        offsets = scene.envs_offset()
        tint = self.env_tints()
        tinted = ~np.isnan(tint[:, 0])
        shown = np.zeros(n, bool)
        shown[self._rendered_envs(n)] = True
        groups = [(None, np.flatnonzero(~tinted & shown))]
        for color in {tuple(row) for row in tint[tinted]}:
            groups.append((color, np.flatnonzero(np.all(tint == color, axis=1) & shown)))
        poses: dict = {}
        link_T = {}
        for e, entity in enumerate(scene.entities):
            with entity.lock:  # one state: another thread's set_qpos cannot fall between the two reads
                pos = entity.get_links_pos().reshape(n, -1, 3)
                quat = entity.get_links_quat().reshape(n, -1, 4)
            T = pose_to_matrix(pos, quat).astype(np.float32)
            T[..., :3, 3] += offsets[:, None].astype(np.float32)
            link_T[e] = T
        for e, link_idx, key in self._link_specs:
            # a tint marks robots: the scene's fixed bodies (obstacles) keep their colours
            for color, envs in groups if not scene.entities[e].is_placed_body else [(None, np.flatnonzero(shown))]:
                k = key if color is None else key + (color,)
                if color is not None and k not in self._specs:
                    self._specs[k] = self._specs[key].tinted(color)
                poses[k] = link_T[e][envs][:, link_idx].reshape(-1, 4, 4)
        overlays = [("debug", self.debug.instance_poses(offsets))]
        options = self.vis_options
        if options.show_world_frame:
            overlays.append(("world_frame", self._world_frame(options.world_frame_size)))
        if options.show_link_frame:
            size = options.link_frame_size
            links = np.concatenate([T[shown].reshape(-1, 4, 4) for T in link_T.values()] or [np.zeros((0, 4, 4))])
            overlays.append(("link_frames", frame_instances(links, size, size * 0.025, size * 0.06)))
        for layer, instances in overlays:
            for (shape, rgba), p in instances.items():
                k = (layer, shape, rgba)
                if k not in self._specs:
                    self._specs[k] = meshes.debug_spec(shape, rgba)
                poses[k] = p
        if self.show_grid:
            poses[("ground", "plane")] = poses[("ground", "lines")] = self._ground_poses
        sink = self._recorder.append if record and self._recorder is not None else None
        req = FrameRequest(cam.res, cam.pose, float(np.deg2rad(cam.fov)), cam.znear, cam.zfar, poses,
                           dict(self._specs), self.bg_color, sink, ambient=self.ambient_light)
        req.timing["scene_ms"] = (time.perf_counter() - t0) * 1e3
        req.timing["t0"] = t0
        return req

    def _rendered_envs(self, n: int) -> np.ndarray:
        """The envs whose entities are drawn (``vis_options.rendered_envs_idx``; indices past the last
        env are left out)."""
        chosen = self.vis_options.rendered_envs_idx
        return np.arange(n) if chosen is None else np.array([i for i in chosen if i < n], dtype=int)

    def _world_frame(self, size: float) -> dict:
        """Instance poses of the world frame at the origin (kept: the same arrays every frame)."""
        kept = self.__dict__.get("_world_frame_cache")
        if kept is None or kept[0] != size:
            kept = self._world_frame_cache = (size, frame_instances(np.eye(4)[None], size, size * 0.01, size * 0.03))
        return kept[1]

    def _thread_for_render(self) -> RenderThread:
        if self._closed:
            raise StateError("the visualizer is closed")
        if self._thread is None:
            garbage.before_opening(renderer.open_threads())  # (frees those of scenes let go unclosed)
            self._thread = RenderThread()
            self._finalizer = weakref.finalize(self, self._thread.close, 5.0)  # a dropped visualizer: GL freed
        return self._thread

    def request_frame(self, record: bool = True) -> Future:
        """Snapshot the current state now and render it in the render thread; returns a Future of the
        (H, W, 3) uint8 image (also appended to the video while recording, unless ``record`` is
        False). Does not block. An open viewer window shows the image too."""
        with self._lock:
            req = self._request(record=record)
            req.on_image = self._finished
            fut = self._thread_for_render().render(req)
            self._pending = [f for f in self._pending if not f.done()] + [fut]
        return fut

    def _finished(self, image: np.ndarray, timing: dict) -> None:
        """Render thread, before the frame's Future resolves: so ``render()`` after it sees this frame."""
        self._latest = image
        self.last_timing = dict(timing)
        viewer = self._viewer
        if viewer is not None:
            viewer.show(image)

    def update(self, force: bool = True, auto: bool | None = None) -> np.ndarray | None:
        """Show the current state (no stepping) to whoever looks: with a viewer window open or a
        recording running, render it, wait, and return the image (H, W, 3) uint8 (appended to the
        video while recording). With nobody looking, render nothing and return None, as Genesis
        does without a viewer (it marks its renderers stale; its cameras draw when asked): the
        next :meth:`render` draws the state as it is then. ``force`` and ``auto`` are Genesis'
        arguments, accepted."""
        inputs.as_flag("force", force)
        if self._closed:
            raise StateError("the visualizer is closed")
        if self.viewer is not None or self._recorder is not None:
            return self.request_frame().result()
        self.skipped_updates += 1
        return None

    def render(self) -> np.ndarray:
        """Render the current state and return it (H, W, 3) uint8, after any frame still being
        drawn; not appended to a recording."""
        for fut in list(self._pending):
            fut.result()
        return self.request_frame(record=False).result()

    # -- recording ----------------------------------------------------------------------------------
    @property
    def is_recording(self) -> bool:
        return self._recorder is not None

    def start_recording(self, path, fps: float = 30) -> None:
        """Stream every following ``update()`` / ``request_frame()`` frame to the video ``path`` (.mp4)."""
        if self._recorder is not None:
            raise StateError(f"already recording to '{self._recorder.path}'; call stop_recording() first")
        self._recorder = VideoRecorder(path, fps=fps)

    def stop_recording(self):
        """Finish the video after the frames already requested; returns its path (None if not recording)."""
        recorder, self._recorder = self._recorder, None
        if recorder is None:
            return None
        if self._thread is not None and self._thread.is_alive:
            self._thread.submit(lambda gl: recorder.close()).result()
        recorder.close()
        self.recorded_frames = recorder.n_frames
        return recorder.path

    # -- teardown ----------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop recording (finishing the file), stop the render thread and free GL. Idempotent."""
        if self._closed:
            return
        try:
            self.stop_recording()
        finally:
            if self._viewer is not None:
                self._viewer.close()
                self._viewer = None
            self._closed = True
            if self._thread is not None:
                self._thread.close()
                self._finalizer.detach()  # ... and holds the thread no longer
                self._thread = None
            held = sum(garbage.mesh_bytes(spec.mesh) for spec in self._specs.values())
            self._links.release()
            self._specs = {}
            garbage.let_go(held)  # its meshes hold cycles: freed by a full collection

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _close_at_exit(ref) -> None:
    vis = ref()
    if vis is not None:
        vis.close()
