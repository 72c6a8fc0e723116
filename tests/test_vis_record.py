"""Video recording: frames streamed to mp4 through imageio-ffmpeg, read back with imageio; a
recording cut short by an exception is still a playable file with the frames drawn so far."""

from __future__ import annotations

import io

import imageio.v2 as iio
import numpy as np
import pytest
from _support import skip_or_fail

import engine
from engine import morphs
from engine.vis import Camera, Visualizer, record_frames
from engine.vis.recorder import ProgressBar, VideoRecorder

RES = (320, 180)


@pytest.fixture(scope="module")
def scene():
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build(n_envs=4, env_spacing=(1.0, 1.0))
    scene.visualizer = Visualizer(scene, res=RES)
    try:
        scene.visualizer.update()
    except RuntimeError as err:
        skip_or_fail(f"no offscreen GL here: {err}")
    scene.robot = robot
    yield scene
    scene.visualizer.close()


def read_video(path) -> tuple[int, tuple[int, int], np.ndarray]:
    """(frame count, (width, height), last frame) of a video, read frame by frame."""
    reader = iio.get_reader(str(path))
    n, last = 0, None
    for frame in reader:
        n, last = n + 1, frame
    reader.close()
    return n, (last.shape[1], last.shape[0]), last


def test_recorded_mp4_has_every_frame_at_the_render_size(scene, tmp_path):
    vis = scene.visualizer
    path = tmp_path / "run.mp4"
    vis.start_recording(path, fps=10)
    assert vis.is_recording
    q0 = scene.robot.get_qpos()
    for i in range(12):
        scene.robot.set_qpos(q0 + 0.05 * i)
        vis.update()
    assert vis.stop_recording() == path
    assert not vis.is_recording
    n, size, last = read_video(path)
    assert n == 12 and size == RES
    # the last frame shows what the renderer drew (lossy codec: compare loosely)
    assert np.abs(last.astype(int) - vis.render().astype(int)).mean() < 8
    vis.update()  # no longer recording: the file is final
    assert read_video(path)[0] == 12


def test_request_frame_frames_are_recorded_in_order(scene, tmp_path):
    vis = scene.visualizer
    path = tmp_path / "gui.mp4"
    vis.start_recording(path, fps=30)
    futures = [vis.request_frame() for _ in range(5)]
    vis.stop_recording()  # waits for the frames already requested
    assert all(f.done() for f in futures)
    assert read_video(path)[0] == 5


def test_interrupted_recording_is_playable_up_to_its_last_frame(scene, tmp_path):
    path = tmp_path / "cut.mp4"
    err = io.StringIO()

    def step(i):
        if i == 7:
            raise KeyboardInterrupt("stopped by the user")
        scene.robot.set_qpos(scene.robot.get_qpos() + 0.02)

    with pytest.raises(KeyboardInterrupt):
        record_frames(scene, path, n_frames=20, step_fn=step, fps=30, progress=False)
    assert not scene.visualizer.is_recording
    n, size, _ = read_video(path)
    assert n == 7 and size == RES
    bar = ProgressBar(3, stream=err)
    for _ in range(3):
        bar.update()
    bar.close()
    assert "3/3" in err.getvalue()


def test_record_frames_progress_bar(scene, tmp_path, capsys):
    path = record_frames(scene, tmp_path / "bar.mp4", n_frames=4, step_fn=None, fps=30, progress=True)
    assert read_video(path)[0] == 4
    assert "4/4" in capsys.readouterr().err


def test_odd_sizes_are_padded_to_even(tmp_path):
    rec = VideoRecorder(tmp_path / "odd.mp4", fps=5)
    frame = np.zeros((31, 45, 3), np.uint8)
    frame[:, :, 0] = 200
    for _ in range(3):
        rec.append(frame)
    rec.close()
    rec.close()  # idempotent
    n, size, last = read_video(tmp_path / "odd.mp4")
    assert n == 3 and size == (46, 32)
    assert last[..., 0].mean() > 150


def test_recording_input_validation(scene, tmp_path):
    vis = scene.visualizer
    with pytest.raises(ValueError, match="path"):
        vis.start_recording(tmp_path / "x.png")
    with pytest.raises(FileNotFoundError, match="path"):
        vis.start_recording(tmp_path / "missing" / "x.mp4")
    with pytest.raises(ValueError, match="fps"):
        vis.start_recording(tmp_path / "x.mp4", fps=0)
    assert not vis.is_recording
    vis.start_recording(tmp_path / "y.mp4")
    with pytest.raises(RuntimeError, match="already recording"):
        vis.start_recording(tmp_path / "z.mp4")
    vis.stop_recording()
    with pytest.raises(ValueError, match="n_frames"):
        record_frames(scene, tmp_path / "w.mp4", n_frames=0)


def test_close_finishes_the_video_and_stops_the_thread(tmp_path):
    scene = engine.Scene()
    scene.add_entity(morphs.MJCF(file="panda"))
    scene.build()
    vis = Visualizer(scene, camera=Camera(res=(160, 90)))
    scene.visualizer = vis
    vis.start_recording(tmp_path / "closed.mp4")
    vis.update()
    vis.update()
    thread = vis._thread
    vis.close()
    assert not thread.is_alive and not vis.is_recording
    assert read_video(tmp_path / "closed.mp4")[0] == 2
    with pytest.raises(RuntimeError, match="closed"):
        vis.update()


def wait_gone(thread) -> bool:
    thread.join(10)
    return not thread.is_alive()


def test_replaced_or_dropped_visualizers_stop_their_render_threads():
    import gc

    scene = engine.Scene()
    scene.add_entity(morphs.MJCF(file="panda"))
    scene.build()
    scene.visualizer.camera.res = (64, 36)
    h = scene.draw_debug_sphere((0, 0, 0.5))
    scene.visualizer.render()
    first = scene.visualizer._thread._thread  # the threading.Thread (idents get reused)
    replacement = Visualizer(scene, camera=Camera(res=(64, 36)))
    scene.visualizer = replacement  # the old one closes; its debug objects move over
    assert h in list(replacement.debug)
    assert replacement.render().shape == (36, 64, 3)
    second = replacement._thread._thread
    assert wait_gone(first)
    del scene, replacement, h
    gc.collect()
    assert wait_gone(second)  # never closed: freed when garbage-collected
