"""Images paced to the window's frames (issue 27: the window draws at least 20 frames/s), a safety
net for a busy machine: below app.control.image_pacing.MIN_FPS GUI frames/s with an image at
nearly every frame, images come every other frame. The rule and the sim honouring it: no image,
and no solve past the one waiting to be drawn, until the window has drawn its frames."""

from __future__ import annotations

import time

import pytest

import engine as ik
from app.control import image_pacing as ip
from app.control.controller import AppController


def _settled(p: ip.ImagePacing) -> None:
    for _ in range(ip.SETTLE_FRAMES):
        p.frame_drawn()


def test_images_are_spaced_only_while_the_frames_are_slow_and_every_frame_gets_one():
    p = ip.ImagePacing()
    _settled(p)
    assert not p.adapt(gui_fps=30.0, images_per_s=30.0) and p.frames_per_image == 1  # fast: as it is
    assert not p.adapt(gui_fps=ip.MIN_FPS - 3, images_per_s=5.0) and p.frames_per_image == 1  # slow, not for images
    slow = ip.MIN_FPS - 3
    assert p.adapt(gui_fps=slow, images_per_s=slow) and p.frames_per_image == ip.SLOW_FRAMES_PER_IMAGE
    assert not p.adapt(gui_fps=30.0, images_per_s=slow)  # too soon after the change: the rates lag
    _settled(p)
    assert not p.adapt(gui_fps=ip.RELAX_FPS - 1, images_per_s=11.5) and p.frames_per_image == 2  # hysteresis
    assert p.adapt(gui_fps=ip.RELAX_FPS, images_per_s=13.5) and p.frames_per_image == 1
    assert p.adapt(gui_fps=slow, images_per_s=slow) is False  # settling after the change
    _settled(p)
    assert p.adapt(gui_fps=slow, images_per_s=slow) and p.frames_per_image == 2
    for _ in range(ip.PROBE_FRAMES):
        p.frame_drawn()
    assert p.adapt(gui_fps=slow + 1, images_per_s=slow / 2) and p.frames_per_image == 1  # probed again
    for _ in range(3 * ip.SETTLE_FRAMES):
        p.frame_drawn(starting=True)
    assert not p.adapt(gui_fps=slow, images_per_s=slow)  # the start-up's frames decide nothing
    q = ip.ImagePacing()
    q.frames_per_image = 2
    q.frame_drawn()
    assert not q.due(0)
    q.frame_drawn()
    assert q.due(0)


@pytest.fixture()
def ctl():
    ik.init(backend="cpu")
    c = AppController(res=(160, 120), threaded=True)
    c.pacing = ip.ImagePacing()
    assert c.wait_ready(timeout=300)
    yield c
    c.close()


def _solved(c) -> int:
    return 0 if c.sim.last_frame is None else c.sim.last_frame.index + 1


def _images_and_solves(c, seconds: float, frame_every: float | None) -> tuple[int, int]:
    """Images collected and frames solved in ``seconds``, the window drawing a frame every
    ``frame_every`` s (None: no frame drawn at all)."""
    c.pacing.frames_per_image = 2
    seq0, solved0 = c.sim.latest_image()[0], _solved(c)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        c.update()
        c.poll_frame()
        if frame_every is not None:
            c.pacing.frame_drawn()
            time.sleep(frame_every)
        else:
            time.sleep(0.02)
    return c.sim.latest_image()[0] - seq0, _solved(c) - solved0


def test_the_sim_waits_for_the_windows_frames(ctl):
    deadline = time.perf_counter() + 300
    while ctl.sim.latest_image() is None or not ctl.sim.warm:
        assert time.perf_counter() < deadline, "no answers"
        ctl.update()
        time.sleep(0.05)
    images, solves = _images_and_solves(ctl, 1.5, None)
    assert images <= 1 and solves <= 2, (images, solves)  # no frame drawn: nothing more asked for
    images, solves = _images_and_solves(ctl, 2.0, 0.05)  # 20 frames/s: at most 10 images/s
    assert 3 <= images <= 22 and solves <= images + 2, (images, solves)


def test_the_readouts_say_when_images_are_paced(ctl):
    from app.gui.panels import readouts

    ctl.pacing.frames_per_image = 1
    assert "paced" not in " ".join(readouts.solve_lines(ctl, 25.0, 25.0))
    ctl.pacing.frames_per_image = 2
    assert readouts.solve_lines(ctl, 18.0, 9.0)[1].endswith("images paced")
