"""Recording the app's view to a video that plays in real time.

The renderer delivers images at whatever rate it reaches (30 per second for 16 Pandas, 3 for 256
on 2 cores), so a video made of one frame per image plays fast (60 s of use became a 4.5 s clip).
:class:`Recorder` writes frames on the video's own clock instead: frame k, due ``k / fps`` seconds
after the first image, is the newest image at that moment (repeated until a new one arrives), so
the video lasts as long as the recording did. Its thread does the writing (ffmpeg's libx264,
``ultrafast``: the encoder must keep up on 2 cores), never the GUI's or the sim's.

With ``overlay``, each frame also gets what the GUI draws over the view (the gizmos, as 2-D
primitives in the image's pixels, see :func:`draw_primitives`), so the video shows them too.
"""

from __future__ import annotations

import math
import threading
import time
from pathlib import Path

import numpy as np

VIDEO_SUFFIXES = (".mp4", ".mkv", ".mov", ".avi")
SIZES = {"1280x720": (1280, 720), "1920x1080": (1920, 1080), "view": None}  # the size choices; None: the view's


class Recorder:
    """A video at ``path`` of ``size`` (width, height) px at ``fps`` frames per second, real time.

    Call :meth:`offer` with each new image (any thread) and :meth:`stop` at the end. ``overlay()``,
    if given, returns the primitives to draw over a frame (called in the writer thread).
    """

    def __init__(self, path, fps: float = 30.0, size: tuple[int, int] = (1280, 720), overlay=None):
        self.path = Path(path).expanduser()
        if self.path.suffix.lower() not in VIDEO_SUFFIXES:
            raise ValueError(f"expected a video file ending in .mp4 (or .mkv, .mov, .avi), got '{self.path}'")
        if not self.path.parent.is_dir():
            raise ValueError(f"folder '{self.path.parent}' does not exist")
        self.fps = float(fps)
        self.size = (int(size[0]), int(size[1]))
        self.overlay = overlay
        self.frames = 0  # frames written
        self.images = 0  # distinct images offered
        self.error: str | None = None
        self._latest: np.ndarray | None = None
        self._t0: float | None = None  # perf_counter() of the first image: the video's time 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ikstudio-record", daemon=True)
        self._thread.start()

    @property
    def seconds(self) -> float:
        """Length of the video so far, s (frames written / fps)."""
        return self.frames / self.fps

    @property
    def elapsed(self) -> float:
        """Wall time since the first image, s (what the video's length will be)."""
        return 0.0 if self._t0 is None else time.perf_counter() - self._t0

    def offer(self, image: np.ndarray) -> None:
        """A new image of the view (H, W, 3) uint8: the frames due from now on show it."""
        if image.shape[1::-1] != self.size:
            return  # rendered for the size before the recording began: not part of the video
        self._latest = image
        self.images += 1
        if self._t0 is None:
            self._t0 = time.perf_counter()
        self._wake.set()

    def stop(self, timeout: float = 60.0) -> Path:
        """Write the frames due until now, finish the file; returns its path."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
        if self.error is not None:
            raise RuntimeError(self.error)
        return self.path

    def _run(self) -> None:
        writer = None
        try:
            while True:
                stopping = self._stop.is_set()
                if self._latest is not None:
                    due = math.floor(self.elapsed * self.fps) + 1  # frame 0 at time 0
                    while self.frames < due:
                        if writer is None:
                            writer = self._open()
                        writer.append_data(self._frame())
                        self.frames += 1
                if stopping:
                    break
                self._wake.wait(0.5 / self.fps)
                self._wake.clear()
        except Exception as err:  # a full disk, a dead encoder: the recording ends, the app says why
            self.error = f"{type(err).__name__}: {err}"
        finally:
            if writer is not None:
                writer.close()

    def _open(self):
        import imageio.v2 as iio

        return iio.get_writer(str(self.path), fps=self.fps, codec="libx264", quality=7, macro_block_size=1,
                              pixelformat="yuv420p", ffmpeg_log_level="error",
                              output_params=["-preset", "ultrafast"])

    def _frame(self) -> np.ndarray:
        image = self._latest
        prims = self.overlay() if self.overlay is not None else None
        if prims:
            image = draw_primitives(image, prims)
        h, w = image.shape[:2]
        if h % 2 or w % 2:  # yuv420p wants even sizes
            image = np.pad(image, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
        return np.ascontiguousarray(image)


def draw_primitives(image: np.ndarray, prims) -> np.ndarray:
    """A copy of ``image`` with ``prims`` drawn: ("line" | "arrow", points, rgba, width), ("polygon",
    points, rgba fill, rgba outline), ("circle", centre, radius, rgba), ("text", top-left corner,
    text, rgba, height px); points in image pixels."""
    from PIL import Image, ImageDraw

    base = Image.fromarray(image).convert("RGBA")
    layer = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    for p in prims:
        if p[0] in ("line", "arrow"):
            pts = [tuple(float(v) for v in xy) for xy in p[1]]
            draw.line(pts, fill=tuple(p[2]), width=max(1, int(round(p[3]))))
            if p[0] == "arrow":  # a head at the second point
                (x0, y0), (x1, y1) = pts[0], pts[-1]
                d = np.array([x1 - x0, y1 - y0])
                n = float(np.linalg.norm(d))
                if n > 1e-6:
                    d /= n
                    side = np.array([-d[1], d[0]])
                    tip = np.array([x1, y1])
                    head = [tuple(tip), tuple(tip - 8 * d + 4 * side), tuple(tip - 8 * d - 4 * side)]
                    draw.polygon(head, fill=tuple(p[2]))
        elif p[0] == "polygon":
            draw.polygon([tuple(float(v) for v in xy) for xy in p[1]], fill=tuple(p[2]), outline=tuple(p[3]))
        elif p[0] == "circle":
            (x, y), r = (float(v) for v in p[1]), p[2]
            draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(p[3]))
        elif p[0] == "text":
            draw.text(tuple(float(v) for v in p[1]), p[2], fill=tuple(p[3]))
    return np.asarray(Image.alpha_composite(base, layer).convert("RGB"))


def default_path(scene_source, app_dir: Path, cwd: Path | None = None) -> Path:
    """Where a recording goes unless the user picks: beside the scene file (``SCENE_NAME.mp4``), or
    in the current folder for a scene that came with the app (or has no file) or a folder not
    writable; a name already taken gets -2, -3, ..."""
    import os

    cwd = Path(cwd or Path.cwd())
    if scene_source is None:
        folder, stem = cwd, "ikstudio-recording"
    else:
        source = Path(scene_source).resolve()
        inside_app = Path(app_dir).resolve() in source.parents
        folder = cwd if inside_app or not os.access(source.parent, os.W_OK) else source.parent
        stem = source.stem
    path = folder / f"{stem}.mp4"
    k = 2
    while path.exists():
        path = folder / f"{stem}-{k}.mp4"
        k += 1
    return path


class RecordingMixin:
    """Recording for the controller: the camera renders at the video's size while it runs (the view
    shows the image letterboxed), images go to a :class:`Recorder`, and with ``overlay`` off the
    target frames are hidden from the render (and so from the view) until it ends."""

    def init_recording(self) -> None:
        self.recorder: Recorder | None = None
        self.overlay_prims: list = []  # what the GUI drew over the view this frame, in camera pixels
        self.last_recording: dict | None = None  # {"path", "seconds", "frames", "fps"} of the last one

    @property
    def recording(self) -> Recorder | None:
        return self.recorder

    def start_recording(self, path, fps: float = 30.0, size: tuple[int, int] | None = (1280, 720),
                        overlay: bool = True) -> bool:
        """Record the view to the video ``path``: ``size`` (width, height) px (None: the view's),
        ``fps`` frames per second in real time; ``overlay``: the gizmos and target frames too."""
        if self.recorder is not None:
            self.error(f"record: already recording to {self.recorder.path}", key="record")
            return False
        size = tuple(size) if size is not None else tuple(self.view_size)
        try:
            rec = Recorder(path, fps=fps, size=size, overlay=(lambda: self.overlay_prims) if overlay else None)
        except ValueError as err:
            self.error(f"record: {err}", key="record")
            return False
        self.resolve("record")
        self.recorder = rec
        self.render_size = size
        self.apply_render_size()
        if not overlay:
            self.post("record", self.sim.show_target_frames, False)
        self.info(f"recording {rec.path.name}: {size[0]}x{size[1]} at {fps:g} fps, in real time")
        self._wake()
        return True

    def stop_recording(self) -> bool:
        """Finish the video (in the sim thread: the GUI does not wait for the encoder); the app then
        says where it went and how long it is."""
        rec, self.recorder = self.recorder, None
        if rec is None:
            return False
        self.render_size = None
        self.apply_render_size()

        def finish():
            self.sim.show_target_frames(True)
            path = rec.stop()
            self.last_recording = {"path": path, "seconds": rec.seconds, "frames": rec.frames, "fps": rec.fps}
            self.info(f"recording saved: {path} ({_clock(rec.seconds)} at {rec.fps:g} fps, {rec.frames} frames, "
                      "real time)")

        return self.post("record", finish, key="record", label="finishing the video")

    def finish_recording(self) -> Path | None:
        """Finish a running recording now, in the calling thread (the app is closing: the file is
        left whole); returns its path, or None when nothing was recording."""
        rec, self.recorder = self.recorder, None
        if rec is None:
            return None
        path = rec.stop()
        self.last_recording = {"path": path, "seconds": rec.seconds, "frames": rec.frames, "fps": rec.fps}
        return path

    def recording_text(self) -> str:
        """How long the video is so far (m:ss), for the REC mark."""
        return _clock(self.recorder.elapsed if self.recorder is not None else 0.0)


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"
