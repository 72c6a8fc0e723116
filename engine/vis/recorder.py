"""Video: frames streamed to an mp4 as they are rendered (never held in memory).

:class:`VideoRecorder` wraps ``imageio.v2.get_writer`` (ffmpeg from imageio-ffmpeg, libx264,
yuv420p). Odd frame sizes are padded to even by repeating the last row / column, since yuv420p
needs even sizes, and ``macro_block_size=1`` stops imageio from resizing. Closing the writer
finishes the file, so a recording cut short by an exception is playable up to its last frame as
long as :meth:`VideoRecorder.close` runs (``record_frames`` and ``Visualizer.close`` see to it).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from .. import inputs
from ..errors import InvalidTypeError, InvalidValueError, MissingFileError, StateError


class VideoRecorder:
    """Appends (H, W, 3) uint8 frames to ``path``; the writer opens on the first frame."""

    def __init__(self, path, fps: float = 30, codec: str = "libx264", quality: float | None = 7):
        self.path = Path(path).expanduser()
        if self.path.suffix.lower() not in (".mp4", ".mkv", ".mov", ".avi"):
            raise InvalidValueError(f"path: expected a video file name ending in .mp4 (or .mkv/.mov/.avi), "
                                    f"got '{path}'")
        if not self.path.parent.is_dir():
            raise MissingFileError(f"path: folder '{self.path.parent}' does not exist")
        self.fps = inputs.as_positive("fps", fps)
        self.codec = codec
        self.quality = quality
        self.n_frames = 0
        self.size: tuple[int, int] | None = None  # (width, height) as written
        self._writer = None
        self._closed = False

    def append(self, frame: np.ndarray) -> None:
        if self._closed:
            raise StateError(f"the recording to '{self.path}' is already closed")
        frame = np.asarray(frame)
        if frame.ndim != 3 or frame.shape[2] not in (3, 4) or frame.dtype != np.uint8:
            raise InvalidValueError(f"frame: expected (H, W, 3) uint8, got {frame.shape} {frame.dtype}")
        frame = frame[..., :3]
        h, w = frame.shape[:2]
        pad_h, pad_w = h % 2, w % 2
        if pad_h or pad_w:
            frame = np.pad(frame, ((0, pad_h), (0, pad_w), (0, 0)), mode="edge")
        if self._writer is None:
            import imageio.v2 as iio

            self.size = (frame.shape[1], frame.shape[0])
            self._writer = iio.get_writer(str(self.path), fps=self.fps, codec=self.codec, quality=self.quality,
                                          macro_block_size=1, pixelformat="yuv420p", ffmpeg_log_level="error")
        elif (frame.shape[1], frame.shape[0]) != self.size:
            raise InvalidValueError(f"frame: size changed mid-recording from {self.size} to "
                                    f"{(frame.shape[1], frame.shape[0])} (width, height)")
        self._writer.append_data(np.ascontiguousarray(frame))
        self.n_frames += 1

    def close(self) -> None:
        """Finish the file (safe to call twice)."""
        if self._closed:
            return
        self._closed = True
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    @property
    def is_open(self) -> bool:
        return not self._closed


class ProgressBar:
    """A one-line progress bar on stderr (``\\r``-updated), e.g. ``[#####.....] 50/100 12.3 fps``."""

    def __init__(self, total: int, label: str = "", width: int = 30, stream=None, enabled: bool = True):
        self.total, self.label, self.width = max(int(total), 1), label, width
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.count = 0
        self._t0 = time.perf_counter()
        self._last = 0.0

    def update(self, n: int = 1) -> None:
        self.count += n
        now = time.perf_counter()
        if self.enabled and (now - self._last > 0.1 or self.count >= self.total):
            self._last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        done = int(self.width * min(self.count / self.total, 1.0))
        rate = self.count / max(now - self._t0, 1e-9)
        self.stream.write(f"\r{self.label}[{'#' * done}{'.' * (self.width - done)}] {self.count}/{self.total} "
                          f"{rate:.1f} fps")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()


def record_frames(scene, path, n_frames: int, step_fn=None, fps: float = 30, progress: bool = True) -> Path:
    """Render ``n_frames`` of ``scene`` to the video ``path``, headless; returns the path.

    Before frame ``i`` is drawn, ``step_fn(i)`` (if given) advances the scene: set qpos, solve IK,
    ``scene.step()``, move debug objects. A progress bar goes to stderr when ``progress``. If
    ``step_fn`` raises, the video is closed with the frames drawn so far and the error propagates.
    """
    n_frames = inputs.as_positive("n_frames", n_frames, integer=True)
    if step_fn is not None and not callable(step_fn):
        raise InvalidTypeError(f"step_fn: expected a callable step_fn(i), got {type(step_fn).__name__}")
    vis = scene.visualizer
    vis.start_recording(path, fps=fps)
    bar = ProgressBar(n_frames, label=f"{Path(path).name} ", enabled=progress)
    try:
        for i in range(n_frames):
            if step_fn is not None:
                step_fn(i)
            vis.update()
            bar.update()
    finally:
        bar.close()
        vis.stop_recording()
    return Path(path)
