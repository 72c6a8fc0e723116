"""Images paced to the window's frames, so that it draws 20 frames/s (issue 27) on a slow machine.

Where the renderer and the window share the CPU and a software GL (Mesa's llvmpipe: Xvfb, a VM),
each image the sim asks for takes CPU from the window's own frames (a new image costs a GUI frame
~25 ms at 1020 x 885 px: app.gui.view). When the window falls below :data:`MIN_FPS` frames/s with
an image at nearly every frame, the sim asks for an image only every :data:`SLOW_FRAMES_PER_IMAGE`
GUI frames, until the window reaches :data:`RELAX_FPS` again or :data:`PROBE_FRAMES` frames have
passed (then every frame gets one again, and the rates decide anew). The start-up's frames (slow
on purpose) decide nothing. Measured on the idle 2-core VM, the default scene in a window fitted
to 1920 x 1080 (a 1020 x 885 view): 13-15 GUI frames and as many images a second unpaced, 19-21
frames and 10-11 images paced; beside two busy loops, 10-11 frames and 5.5-6 images paced.

The window calls :meth:`ImagePacing.frame_drawn` each frame and :meth:`ImagePacing.adapt` with its
rates; the sim thread reads :meth:`ImagePacing.due` (plain ints and floats, read across threads).
"""

from __future__ import annotations

MIN_FPS = 20.0  # GUI frames/s below which images are spaced (issue 27: at least 20)
RELAX_FPS = 27.0  # ... and at or above which every frame may get one again
SLOW_FRAMES_PER_IMAGE = 2
IMAGE_SHARE = 0.75  # "an image at nearly every frame": images/s at least this share of frames/s
SETTLE_FRAMES = 45  # frames after a change before the next decision (the rates span 2 s)
PROBE_FRAMES = 600  # spaced this long (~25 s), every frame gets an image again, to see if it still must


class ImagePacing:
    """How many GUI frames pass between two images the sim asks for (1, or 2 while spaced)."""

    def __init__(self):
        self.frames = 0  # GUI frames drawn so far
        self.frames_per_image = 1
        self._changed_at = 0  # the frame of the last change

    def frame_drawn(self, starting: bool = False) -> None:
        """One GUI frame drawn; ``starting``: the app's start-up, whose slow frames decide nothing."""
        self.frames += 1
        if starting:
            self._changed_at = self.frames

    def adapt(self, gui_fps: float, images_per_s: float) -> bool:
        """Decide from the window's rates (frames/s, images shown/s, over its last seconds); True
        when the pacing changed."""
        if self.frames - self._changed_at < SETTLE_FRAMES:
            return False
        want = self.frames_per_image
        if want == 1 and gui_fps < MIN_FPS and images_per_s >= IMAGE_SHARE * gui_fps:
            want = SLOW_FRAMES_PER_IMAGE
        elif want > 1 and (gui_fps >= RELAX_FPS or self.frames - self._changed_at >= PROBE_FRAMES):
            want = 1
        if want == self.frames_per_image:
            return False
        self.frames_per_image, self._changed_at = want, self.frames
        return True

    def due(self, frames_at_last_image: int) -> bool:
        """An image may be asked for, the last one having been asked at GUI frame ``frames_at_last_image``."""
        return self.frames - frames_at_last_image >= self.frames_per_image
