"""The render thread: one worker thread owns the pyrender OffscreenRenderer and every GL call.

pyrender's GL context must never share a thread with dearpygui's (they crash), so the caller only
builds a :class:`FrameRequest` (plain numpy: camera, instance poses per mesh key) and hands it to
:class:`RenderThread`; the worker uploads the poses into each instanced mesh's GL buffer, draws,
reads the image back and resolves a ``concurrent.futures.Future``.

Software GL (OSMesa) note: ``OffscreenRenderer.render`` also reads the depth buffer back, which
costs ~20 ms at 720p; this module draws with the renderer and reads only the colour buffer.
"""

from __future__ import annotations

import ctypes
import queue
import threading
import time
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np

from ..errors import StateError
from . import meshes, shaders


@dataclass
class FrameRequest:
    """Everything one frame needs, computed in the caller's thread.

    ``poses``: {mesh key: (N, 4, 4) float32}; keys absent (or with N = 0) are hidden this frame.
    ``specs``: {mesh key: MeshSpec} for every key that may appear; a mesh drawn before whose key
    is no longer among them is removed (its set was replaced). ``sink``: called in the render
    thread with the image (the video recorder), or None; then ``on_image(image, timing)`` (ms of
    each stage), before the frame's Future resolves.
    """

    res: tuple[int, int]
    camera_pose: np.ndarray
    yfov: float
    znear: float
    zfar: float
    poses: dict
    specs: dict
    bg_color: tuple = (0.16, 0.17, 0.19, 1.0)
    sink: object = None
    ambient: tuple = (0.34, 0.34, 0.36)
    on_image: object = None
    timing: dict = field(default_factory=dict)


class GLScene:
    """A pyrender scene of instanced meshes, keyed like :attr:`FrameRequest.poses`. Render thread only."""

    def __init__(self):
        import pyrender

        self._pr = pyrender
        self.scene = pyrender.Scene(bg_color=(0.16, 0.17, 0.19, 1.0), ambient_light=(0.34, 0.34, 0.36))
        self.camera = pyrender.PerspectiveCamera(yfov=np.deg2rad(40.0), aspectRatio=16 / 9, znear=0.02, zfar=100.0)
        self.camera_node = self.scene.add(self.camera, pose=np.eye(4))
        for direction, intensity in (((-0.5, -0.3, -1.0), 0.62), ((0.3, 0.8, -0.4), 0.22)):
            self.scene.add(pyrender.DirectionalLight(color=np.ones(3), intensity=intensity), pose=_aim(direction))
        self.nodes: dict = {}  # key -> (node, mesh, last poses object)
        self.renderer = None
        self.res = None

    def _ensure_renderer(self, res: tuple[int, int]) -> None:
        if self.renderer is not None and self.res == tuple(res):
            return
        if self.renderer is not None:
            _delete_renderer(self.renderer)  # frees every mesh's GL buffers; they are re-uploaded on the next draw
        _stable_context_ids()
        try:
            self.renderer = self._pr.OffscreenRenderer(*res)
        except Exception as err:  # no GL: missing libOSMesa / EGL, or a bad PYOPENGL_PLATFORM
            import os

            raise StateError(f"could not create an offscreen GL context (PYOPENGL_PLATFORM="
                               f"{os.environ.get('PYOPENGL_PLATFORM')!r}): {err}. Install libosmesa6 "
                               f"for software rendering, or set PYOPENGL_PLATFORM=egl on a GPU.") from err
        _tune_renderer(self.renderer._renderer)
        self.res = tuple(res)
        for key, (node, mesh, _) in self.nodes.items():
            self.nodes[key] = (node, mesh, None)

    def draw(self, req: FrameRequest) -> np.ndarray:
        t0 = time.perf_counter()
        self._ensure_renderer(req.res)
        platform = self.renderer._platform
        platform.make_current()
        self.scene.bg_color = np.asarray(req.bg_color, float)
        self.scene.ambient_light = np.asarray(req.ambient, float)
        self.camera.yfov, self.camera.aspectRatio = req.yfov, req.res[0] / req.res[1]
        self.camera.znear, self.camera.zfar = req.znear, req.zfar
        self.scene.set_pose(self.camera_node, req.camera_pose)
        uploaded = 0
        for key, poses in req.poses.items():
            if len(poses) == 0:
                continue
            if key not in self.nodes:
                mesh = meshes.to_pyrender(req.specs[key], poses)
                node = self.scene.add(mesh, name=f"{len(self.nodes):08d}", pose=np.eye(4))
                self.nodes[key] = (node, mesh, poses)
                continue
            node, mesh, last = self.nodes[key]
            mesh.is_visible = True
            if poses is not last:
                uploaded += _upload_poses(mesh.primitives[0], poses)
                self.nodes[key] = (node, mesh, poses)
        for key in [k for k in self.nodes if k not in req.specs]:  # a replaced set (engine.vis.link_sets)
            self.scene.remove_node(self.nodes.pop(key)[0])  # pyrender frees its GL buffers at the next draw
        for key, (_, mesh, _) in self.nodes.items():
            if key not in req.poses or len(req.poses[key]) == 0:
                mesh.is_visible = False
        t1 = time.perf_counter()
        if platform.supports_framebuffers():  # EGL / a GPU: the standard path is fast there
            color, _ = self.renderer.render(self.scene)
            platform.make_current()
        else:
            r = self.renderer._renderer
            r.viewport_width, r.viewport_height = req.res
            r.render(self.scene, self._pr.RenderFlags.NONE)
            color = r.read_color_buf()
        image = np.ascontiguousarray(color[..., :3])
        t2 = time.perf_counter()
        req.timing.update(upload_ms=(t1 - t0) * 1e3, raster_ms=(t2 - t1) * 1e3, uploaded_bytes=uploaded)
        return image

    def delete(self) -> None:
        """Free the GL context and every mesh's GL buffers, and drop the meshes (their Python side
        goes with the visualizer's next garbage collection: :mod:`engine.runtime.garbage`)."""
        try:
            if self.renderer is not None:
                _delete_renderer(self.renderer)
        finally:
            self.renderer = None
            self.nodes.clear()
            self.scene = self.camera_node = None


def _stable_context_ids() -> None:
    """Make PyOpenGL's context ids compare equal for one context (a patch of ``OpenGL.contextdata``,
    kept here and guarded by tests/test_vis_render.py).

    PyOpenGL keeps every array passed to ``glVertexAttribPointer`` in a table keyed by
    ``contextdata.getContext()``. Under OSMesa that returns a new ctypes pointer object on every
    call, and those compare by identity: each upload added entries that nothing could ever find
    or free again (~55 KB per visualizer, forever). As the pointer's address the id is stable, so
    an upload replaces its entry, and :func:`_delete_renderer` can drop a closed context's."""
    from OpenGL import contextdata

    if getattr(contextdata.getContext, "_address_ids", False):
        return
    original = contextdata.getContext

    def getContext(context=None):  # noqa: N802 (PyOpenGL's name)
        context = original(context)
        if isinstance(context, ctypes._Pointer):
            return ctypes.cast(context, ctypes.c_void_p).value
        return context

    getContext._address_ids = True
    contextdata.getContext = getContext


def _delete_renderer(renderer) -> None:
    """Delete a pyrender ``OffscreenRenderer``, its GL context and what PyOpenGL keeps about that
    context (see :func:`_stable_context_ids`): ``OffscreenRenderer.delete``'s steps, less its
    closing ``gc.collect()`` (paced instead by what closed visualizers let go:
    :mod:`engine.runtime.garbage`). A context that cannot be made current (it never came up, or
    is gone) has nothing left to free."""
    from OpenGL import contextdata

    platform, inner = renderer._platform, renderer._renderer
    renderer._renderer = renderer._platform = None  # pyrender's __del__ then has nothing to do
    if platform is None:
        return
    try:
        platform.make_current()
        context = contextdata.getContext()
    except Exception:  # noqa: BLE001 -- see the docstring
        return
    try:
        if inner is not None:
            inner.delete()
        platform.delete_context()
    finally:
        contextdata.cleanupContext(context)


def _tune_renderer(renderer) -> None:
    """Tune a pyrender Renderer for many small draw calls in software GL.

    Its shader cache is keyed by shader names and defines only and draws meshes with our shaders
    (:mod:`engine.vis.shaders`, cheaper per pixel); lights are bound once per frame
    (:func:`_lighting_once`). pyrender keys the cache by ``OpenGL.contextdata.getContext()`` too;
    under OSMesa that returns a new ctypes pointer on every call, which never compares equal, so
    every draw call recompiled its shader program (~5 ms each) and leaked the old one. One
    renderer has one context, so the context adds nothing to the key.
    """
    base = type(renderer._program_cache)
    ours = shaders.shader_paths()

    class _ProgramCache(base):
        def __init__(self, shader_dir):
            super().__init__(shader_dir)
            self._by_key = {}

        def get_program(self, vertex_shader, fragment_shader, geometry_shader=None, defines=None):
            key = (vertex_shader, fragment_shader, geometry_shader, tuple(sorted((defines or {}).items())))
            if (vertex_shader, fragment_shader, geometry_shader) == ("mesh.vert", "mesh.frag", None):
                vertex_shader, fragment_shader = ours["mesh.vert"], ours["mesh.frag"]
            if key not in self._by_key:
                self._by_key[key] = super().get_program(vertex_shader, fragment_shader, geometry_shader, defines)
            return self._by_key[key]

        def clear(self):
            super().clear()
            self._by_key = {}

    renderer._program_cache.clear()
    renderer._program_cache = _ProgramCache(renderer._program_cache.shader_dir)
    renderer.__class__ = _lighting_once(type(renderer))


def _lighting_once(base):
    """A pyrender Renderer class that sets the light uniforms once per shader program per frame.

    pyrender rebinds every light (and queries GL_MAX_TEXTURE_IMAGE_UNITS twice) for every draw call;
    the lights are the same for every mesh of a frame and uniforms persist in a program, so once is
    enough. This is most of the per-draw cost in software GL. Meshes are drawn in creation order.
    """
    class _Renderer(base):
        def render(self, scene, flags, seg_node_map=None):
            self._lit_programs = set()
            return super().render(scene, flags, seg_node_map)

        def _bind_lighting(self, scene, program, node, flags):
            if id(program) not in self._lit_programs:
                self._lit_programs.add(id(program))
                super()._bind_lighting(scene, program, node, flags)

        def _sorted_mesh_nodes(self, scene):
            # pyrender sorts by node distance (all ours sit at the origin), leaving the order to a set's
            # iteration: draw in creation order instead, solids first, so frames are reproducible
            return sorted(scene.mesh_nodes, key=lambda n: (n.mesh.is_transparent, n.name))

        def _compute_max_n_lights(self, flags):
            cache = self.__dict__.setdefault("_max_lights", {})
            if flags not in cache:
                cache[flags] = super()._compute_max_n_lights(flags)
            return cache[flags]

    return _Renderer


def _aim(direction) -> np.ndarray:
    """A pose whose -z axis points along ``direction`` (pyrender lights shine along their -z)."""
    d = np.asarray(direction, float)
    z = -d / np.linalg.norm(d)
    x = np.cross([0.0, 0.0, 1.0], z) if abs(z[2]) < 0.99 else np.array([1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    T = np.eye(4)
    T[:3, 0], T[:3, 1], T[:3, 2] = x, np.cross(z, x), z
    return T


def _upload_poses(primitive, poses: np.ndarray) -> int:
    """Set an instanced primitive's poses; when already on the GPU, rewrite its instance buffer in place.

    pyrender uploads instance matrices only when a primitive first enters the context (its second
    buffer, column-major); re-adding it would re-upload the vertices too.
    """
    primitive.poses = poses
    if not primitive._in_context():
        return 0  # uploaded with the vertices on the next draw
    from OpenGL import GL

    data = np.ascontiguousarray(np.transpose(primitive.poses, (0, 2, 1)), dtype=np.float32)
    GL.glBindBuffer(GL.GL_ARRAY_BUFFER, primitive._buffers[1])
    GL.glBufferData(GL.GL_ARRAY_BUFFER, data.nbytes, data, GL.GL_DYNAMIC_DRAW)
    GL.glBindBuffer(GL.GL_ARRAY_BUFFER, 0)
    return data.nbytes


_OPEN: weakref.WeakSet = weakref.WeakSet()  # RenderThreads started and not closed yet
_OPEN_LOCK = threading.Lock()


def open_threads() -> int:
    """How many render threads (and their GL contexts and meshes) are open in this process."""
    with _OPEN_LOCK:
        return sum(1 for t in list(_OPEN) if not t.closed)


class RenderThread:
    """A worker thread running jobs in order; it creates (and at exit deletes) the :class:`GLScene`."""

    def __init__(self, name: str = "ikstudio-render"):
        self._jobs: queue.Queue = queue.Queue()
        self.gl: GLScene | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._closed = False
        self._thread.start()
        with _OPEN_LOCK:
            _OPEN.add(self)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def ident(self) -> int | None:
        """The worker's thread id (``threading.get_ident()`` inside it)."""
        return self._thread.ident

    @property
    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def submit(self, fn, *args) -> Future:
        """Run ``fn(gl_scene, *args)`` in the render thread; the Future holds its result or exception."""
        if self._closed:
            raise StateError("the visualizer is closed; create a new one to render")
        fut: Future = Future()
        self._jobs.put((fn, args, fut))
        return fut

    def render(self, req: FrameRequest) -> Future:
        """A Future of the (H, W, 3) uint8 image of ``req``; ``req.sink`` gets the image first."""
        return self.submit(_render_job, req)

    def close(self, timeout: float = 30.0) -> None:
        """Finish queued jobs, free GL and stop the thread."""
        if self._closed:
            return
        self._closed = True
        self._jobs.put(None)
        if threading.get_ident() != self._thread.ident:
            self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while True:
                job = self._jobs.get()
                if job is None:
                    break
                fn, args, fut = job
                if fut.set_running_or_notify_cancel():
                    try:
                        if self.gl is None:
                            self.gl = GLScene()
                        fut.set_result(fn(self.gl, *args))
                    except BaseException as err:  # handed to the caller through the Future
                        fut.set_exception(err)
                job = fn = args = fut = None  # hold nothing (the caller's visualizer) while idle
        finally:
            if self.gl is not None:
                try:
                    self.gl.delete()
                except Exception:  # the context may already be gone at interpreter exit
                    pass
                self.gl = None  # its meshes go now, not with this thread object


def _render_job(gl: GLScene, req: FrameRequest) -> np.ndarray:
    image = gl.draw(req)
    if req.sink is not None:
        t0 = time.perf_counter()
        req.sink(image)
        req.timing["encode_ms"] = (time.perf_counter() - t0) * 1e3
    t0 = req.timing.pop("t0", None)
    if t0 is not None:  # perf_counter() when the caller started building the request
        req.timing["total_ms"] = (time.perf_counter() - t0) * 1e3
    if req.on_image is not None:
        req.on_image(image, req.timing)
    return image
