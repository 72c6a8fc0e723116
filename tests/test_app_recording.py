"""Recording (issue 17, item 5): the video plays in real time however slow the renderer (frames
are written on the video's clock, repeating the newest image), at the size asked for (the camera
renders at it while the view shows it letterboxed), with or without the gizmos and target frames,
to a path that defaults beside the scene file; the app shows the length recorded."""

from __future__ import annotations

import time

import imageio.v2 as imageio
import numpy as np
import pytest

import engine as ik
from app.control import recording
from app.control.controller import AppController

SCENE = """\
robot: panda
envs: {n_envs: 4}
solver: {seed: 0}
targets:
  - {link: hand, pos: [0.45, 0.1, 0.4], quat: [0.0, 1.0, 0.0, 0.0], motion: {type: circle, radius: 0.05}}
"""


@pytest.fixture(scope="module", autouse=True)
def engine_cpu():
    ik.init(backend="cpu")


@pytest.fixture
def ctl(tmp_path):
    path = tmp_path / "scene.yaml"
    path.write_text(SCENE)
    c = AppController(path, res=(300, 240))
    yield c
    c.close()


def frames_of(path) -> list[np.ndarray]:
    reader = imageio.get_reader(str(path))
    try:
        return [np.asarray(f) for f in reader]
    finally:
        reader.close()


def run_for(c, seconds: float, image_every: float) -> None:
    """Inline frames for ``seconds`` of wall time, one image every ``image_every`` s (a slow renderer)."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        time.sleep(image_every)
        c.update()
        c.wait_frame()


def test_the_video_plays_in_real_time_at_the_size_asked(ctl, tmp_path):
    video = tmp_path / "clip.mp4"
    assert ctl.start_recording(video, fps=30, size=(320, 180))
    assert (ctl.camera.width, ctl.camera.height) == (320, 180)  # rendered at the video's size ...
    scale, x0, y0 = ctl.view_transform()
    assert scale == pytest.approx(300 / 320) and x0 == 0 and y0 > 0  # ... and letterboxed in the 300x240 view
    ctl.wait_frame()  # the first image at the video's size: the video's time 0
    t0 = time.perf_counter()
    run_for(ctl, 2.0, image_every=0.25)  # 4 images a second
    rec = ctl.recording
    assert ctl.stop_recording()
    wall = time.perf_counter() - t0
    assert (ctl.camera.width, ctl.camera.height) == (300, 240)  # the view's size again
    frames = frames_of(video)
    assert all(f.shape == (180, 320, 3) for f in frames)
    seconds = len(frames) / 30.0
    assert abs(seconds - wall) < 0.4, (seconds, wall)  # as long as the recording took: real time
    assert rec.images < len(frames) / 3  # though far fewer images were rendered
    assert ctl.last_recording["frames"] == len(frames)
    assert "real time" in ctl.messages[-1][1] and str(video) in ctl.messages[-1][1]


def test_gizmos_and_target_frames_in_the_video_or_not(ctl, tmp_path):
    with_overlay, without = tmp_path / "with.mp4", tmp_path / "without.mp4"
    ctl.playing = False
    line = [("line", [(40.0, 90.0), (280.0, 90.0)], (255, 0, 255, 255), 5.0)]  # what the GUI would draw
    for path, overlay in ((with_overlay, True), (without, False)):
        assert ctl.start_recording(path, fps=30, size=(320, 180), overlay=overlay)
        ctl.overlay_prims = line
        assert ctl.runner.debug_frames == overlay  # the target frames are hidden from the render without it
        run_for(ctl, 0.5, image_every=0.1)
        assert ctl.stop_recording()
        assert ctl.runner.debug_frames
    magenta = [(f[88:93, 60:260].astype(int) - [255, 0, 255]).__abs__().sum(axis=2).mean() < 60
               for f in frames_of(with_overlay)]
    assert all(magenta), "the overlay is not in the video"
    last = frames_of(without)[-1]
    assert (np.abs(last[88:93, 60:260].astype(int) - [255, 0, 255]).sum(axis=2) < 60).mean() < 0.05


def test_a_bad_path_is_refused_and_the_default_is_beside_the_scene(ctl, tmp_path):
    assert not ctl.start_recording(tmp_path / "missing" / "x.mp4")
    assert ctl.status()[0] == "error" and "does not exist" in ctl.status()[1]
    assert not ctl.start_recording(tmp_path / "x.gif")
    assert ctl.recording is None and (ctl.camera.width, ctl.camera.height) == (300, 240)
    app_dir = recording.Path(recording.__file__).parent
    assert recording.default_path(ctl.spec.source, app_dir) == tmp_path / "scene.mp4"
    (tmp_path / "scene.mp4").write_bytes(b"")
    assert recording.default_path(ctl.spec.source, app_dir) == tmp_path / "scene-2.mp4"
    # a scene that came with the app: the current folder, not the package
    packaged = app_dir / "scenes" / "batched_panda.yaml"
    assert recording.default_path(packaged, app_dir, cwd=tmp_path) == tmp_path / "batched_panda.mp4"
    assert ctl.start_recording(tmp_path / "fine.mp4")  # and the status clears once one starts
    assert ctl.status()[0] != "error"
    ctl.stop_recording()


def test_recording_in_the_window(launch, display, tmp_path):
    from _appwindow import grab_screen

    scene = tmp_path / "scene.yaml"
    scene.write_text(SCENE)
    app = launch(scene_path=str(scene))
    r = app.wait_report(lambda r: r["images"] >= 2 and any(m[1].startswith("solving") for m in r["messages"]),
                        timeout=180)
    assert r["record_path"] == str(tmp_path / "scene.mp4")  # beside the scene file
    # "..." opens the file dialog (keys go to it, Escape closes it)
    app.click_widget("record_browse")
    app.wait_report(lambda r: r["keyboard_owner"] == "record_dialog")
    app.xdotool("key", "Escape")
    r = app.wait_report(lambda r: r["keyboard_owner"] is None)
    # Record at the default 1280x720 (the view is smaller), with the gizmos, for about 3 s
    app.click_widget("record_button")
    r = app.wait_report(lambda r: r["state"]["recording"] and r["state"]["render_size"] == [1280, 720])
    t0 = time.monotonic()
    r = app.wait_report(lambda r: "0:02" in r["record_info"], timeout=30)  # the length so far is shown
    (ox, oy) = r["view_origin"]
    mark = grab_screen(display, (int(ox) + 8, int(oy) + 8, int(ox) + 90, int(oy) + 28))
    assert ((mark[..., 0] > 200) & (mark[..., 1] < 110)).sum() > 40, "no REC mark"
    app.wait_report(lambda r: time.monotonic() - t0 > 3.0, timeout=10)
    before_click = time.monotonic() - t0  # the stop lands between this and the report saying so
    app.click_widget("record_button")
    r = app.wait_report(lambda r: r["last_recording"] is not None, timeout=60)
    stopped = time.monotonic() - t0
    frames = frames_of(tmp_path / "scene.mp4")
    assert frames[0].shape == (720, 1280, 3)
    # the video plays in real time: as long as the recording ran (give or take the report's latency)
    assert before_click - 1.0 < len(frames) / 30.0 < stopped + 1.0, (len(frames), before_click, stopped)
    assert r["state"]["render_size"] == r["view_size"]  # back to the view's size
    # the gizmo is in the video: its handle colours, which the rendered scene does not have
    red = np.array([230, 51, 51])
    assert (np.abs(frames[-1].astype(int) - red).sum(axis=2) < 40).sum() > 50
    assert "Traceback" not in app.log(), app.log()


def test_closing_the_app_finishes_the_video(ctl, tmp_path):
    video = tmp_path / "closed.mp4"
    assert ctl.start_recording(video, fps=30, size=(320, 180))
    ctl.wait_frame()
    run_for(ctl, 1.0, image_every=0.1)
    ctl.close()  # the window closed while recording
    assert ctl.recording is None
    frames = frames_of(video)  # a whole file: every frame readable
    assert abs(len(frames) / 30.0 - 1.0) < 0.4 and ctl.last_recording["frames"] == len(frames)


def test_a_signal_closes_the_window_and_finishes_the_video(launch, tmp_path):
    """SIGTERM (a logout, ``kill``) closes the app as its window's close button does: the video
    being recorded is finished, and the app exits with 128 + 15."""
    import signal

    scene = tmp_path / "scene.yaml"
    scene.write_text(SCENE)
    app = launch(scene_path=str(scene))
    app.wait_report(lambda r: r["images"] >= 2 and any(m[1].startswith("solving") for m in r["messages"]), timeout=180)
    app.click_widget("record_button")
    app.wait_report(lambda r: "0:01" in r["record_info"], timeout=120)  # a busy CI machine renders the recording slowly
    app.proc.send_signal(signal.SIGTERM)
    assert app.wait_exit(timeout=60) == 128 + signal.SIGTERM
    log = app.log()
    assert "stopped by SIGTERM" in log and f"recording saved: {tmp_path / 'scene.mp4'}" in log, log
    frames = frames_of(tmp_path / "scene.mp4")
    assert len(frames) >= 30 and frames[0].shape == (720, 1280, 3)
