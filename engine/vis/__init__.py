"""Visualizer: debug objects, a numpy camera, an offscreen pyrender renderer in its own thread, video.

GL platform: importing this package sets ``PYOPENGL_PLATFORM`` (before anything imports OpenGL)
when it is unset: ``IKSTUDIO_GL_PLATFORM`` if given, else "egl" on a machine with an NVIDIA GPU
and "osmesa" (software, no display needed) otherwise.

API. ``scene.visualizer`` is made on first use through the scene's visualizer seam
(:func:`engine.scene.set_visualizer_factory`; ``engine/__init__.py`` registers :class:`Visualizer`),
and ``scene.draw_debug_*`` pass their calls to it. The kinematics core never imports this package::

    vis = Visualizer(scene, res=(1280, 720), camera=None, lod=None, max_faces_per_mesh=1000)
    scene.visualizer = vis            # optional: replace the default one (debug objects move over)
    vis.camera                        # Camera: .pos .lookat .up .fov (vertical deg) .res (w, h)
    vis.camera.look_at(pos, target)   # aim;  vis.frame_all(): fit every env cell in view
    vis.camera.project(points)        # world (..., 3) -> pixels (..., 2), x right, y down; numpy only
    img = vis.render()                # render the current state (no stepping), wait: (H, W, 3) uint8
    vis.update()                      # Genesis' call: renders only for an open window or a recording (else None)
    fut = vis.request_frame()         # concurrent.futures.Future of a frame, for the GUI loop
    vis.set_env_tint(envs_idx, (1, 0, 0, 1))   # tint robots of some envs; rgba=None removes it
    vis.start_recording("out.mp4", fps=30); ...; vis.stop_recording(); vis.is_recording
    vis.close()                       # finish any video, stop the render thread
    vis.last_timing                   # ms of the last frame: scene_ms, upload_ms, raster_ms, total_ms
    record_frames(scene, "out.mp4", n_frames, step_fn, fps=30, progress=True)   # headless video

Debug objects (visualizer-only; never in the simulation state), all returning a
:class:`DebugObject` handle; ``T`` or positions may carry a leading n_envs axis (one per env cell),
else they sit in env ``env_idx`` (default 0)::

    h = scene.draw_debug_frame(T, axis_length=1.0, origin_size=0.015, axis_radius=0.01)   # Genesis' defaults
    scene.draw_debug_sphere(pos, radius=0.01, color=(1, 0, 0, 0.5))
    scene.draw_debug_spheres(poss, radius=0.01, color=...)    # poss (N, 3)
    scene.draw_debug_line(start, end, radius=0.002, color=...)
    scene.draw_debug_arrow(pos, vec=(0, 0, 1), radius=0.01, color=...)
    h.set_pose(T)  # or h.T = T;  then scene.update_debug_objects() re-poses it (no mesh rebuilt)
    scene.clear_debug_object(h); scene.clear_debug_objects()

Rendering: each link's visuals (merged per colour) are ONE pyrender mesh instanced across envs,
envs laid out by ``scene.envs_offset()``. Tinted envs draw from a second instanced mesh per
(link, tint). ``lod="decimated"`` (default from 16 envs) caps each visual at ``max_faces_per_mesh``.
"""

from __future__ import annotations

import os


def _default_gl_platform() -> str:
    chosen = os.environ.get("IKSTUDIO_GL_PLATFORM", "").strip().lower()
    if chosen:
        return chosen
    return "egl" if os.path.exists("/dev/nvidia0") else "osmesa"


if "PYOPENGL_PLATFORM" not in os.environ:
    import sys

    if "OpenGL" in sys.modules:
        import warnings

        warnings.warn("engine.vis: OpenGL was imported before engine.vis, so PYOPENGL_PLATFORM could not be set "
                      "in time; import engine first or set PYOPENGL_PLATFORM=osmesa", RuntimeWarning, stacklevel=2)
    os.environ["PYOPENGL_PLATFORM"] = _default_gl_platform()

from .camera import Camera  # noqa: E402
from .debug import DebugObject  # noqa: E402
from .recorder import VideoRecorder, record_frames  # noqa: E402
from .visualizer import Visualizer  # noqa: E402

__all__ = ["Camera", "DebugObject", "VideoRecorder", "Visualizer", "record_frames"]
