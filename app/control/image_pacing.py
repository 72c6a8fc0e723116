"""Images paced to the window's frames.

Where the renderer and the window share two cores and a software GL (Mesa's llvmpipe: Xvfb, a VM),
each image the sim asks for takes CPU from the window's own frames. At 1020 x 885 px on the idle
2-core VM, an image at every GUI frame held the window at 15-17 frames/s; one every other frame
gave it 21-23 (images at 10-12/s). :class:`ImagePacing` decides: while the window draws fewer
than :data:`MIN_FPS` frames/s with an image at nearly every frame, the sim asks for an image only
every :data:`SLOW_FRAMES_PER_IMAGE` GUI frames, until the window reaches :data:`RELAX_FPS` again.
Where GL is fast (a GPU), the window keeps its 30 frames/s and every frame gets an image.

The window calls :meth:`ImagePacing.frame_drawn` each frame and :meth:`ImagePacing.adapt` with its
rates; the sim thread reads :meth:`ImagePacing.due` (plain ints and floats, read across threads).
"""

from __future__ import annotations

MIN_FPS = 20.0  # GUI frames/s below which images are spaced (issue 27: at least 20)
RELAX_FPS = 27.0  # ... and at or above which every frame may get one again
SLOW_FRAMES_PER_IMAGE = 2
IMAGE_SHARE = 0.75  # "an image at nearly every frame": images/s at least this share of frames/s
SETTLE_FRAMES = 45  # frames after a change before the next decision (the rates span 2 s)


class ImagePacing:
    """How many GUI frames pass between two images the sim asks for (1, or 2 while spaced)."""

    def __init__(self):
        self.frames = 0  # GUI frames drawn so far
        self.frames_per_image = 1
        self._changed_at = 0  # the frame of the last change

    def frame_drawn(self) -> None:
        self.frames += 1

    def adapt(self, gui_fps: float, images_per_s: float) -> bool:
        """Decide from the window's rates (frames/s, images shown/s, over its last seconds); True
        when the pacing changed."""
        if self.frames - self._changed_at < SETTLE_FRAMES:
            return False
        want = self.frames_per_image
        if want == 1 and gui_fps < MIN_FPS and images_per_s >= IMAGE_SHARE * gui_fps:
            want = SLOW_FRAMES_PER_IMAGE
        elif want > 1 and gui_fps >= RELAX_FPS:
            want = 1
        if want == self.frames_per_image:
            return False
        self.frames_per_image, self._changed_at = want, self.frames
        return True

    def due(self, frames_at_last_image: int) -> bool:
        """An image may be asked for, the last one having been asked at GUI frame ``frames_at_last_image``."""
        return self.frames - frames_at_last_image >= self.frames_per_image
