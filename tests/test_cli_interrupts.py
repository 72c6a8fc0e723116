"""``ikstudio record`` stopped by SIGINT, SIGTERM or SIGHUP: it stops promptly, leaves a playable
video with every frame finished so far (at least one, even when stopped during the first frame),
and exits with the shell's status for the signal (128 + its number).

Each case runs the real command in a subprocess and sends the signal to it, as ``kill`` does:
right after it announces the recording (during the first frame: renderer start-up, mesh loading,
the first IK call) or once frames are being written.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import imageio.v2 as iio
import pytest

REPO = Path(__file__).resolve().parent.parent
STOP_WITHIN_S = 5.0  # generous for a loaded CI machine; here it takes 0.6-1.1 s, process exit included


def _record(out: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, "-m", "app", "record", str(REPO / "scenes" / "batched_panda.yaml"),
                             "-o", str(out), "--frames", "2000", "--size", "320x240", "--n-envs", "4",
                             "--no-progress", "--backend", "cpu"], cwd=REPO, env=env, stderr=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def _wait_for(condition, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


@pytest.mark.parametrize("when", ["first_frame", "mid_recording"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_record_stops_on_a_signal_with_a_playable_video(tmp_path, sig, when):
    out = tmp_path / "stopped.mp4"
    proc = _record(out)
    try:
        announced = []

        def started():  # "recording ..." goes to stderr just before the first frame
            line = proc.stderr.readline()
            announced.append(line)
            return line.startswith("recording") or proc.poll() is not None

        _wait_for(started, 120, "the recording to start")
        assert proc.poll() is None, "".join(announced)
        if when == "mid_recording":
            _wait_for(lambda: out.exists() and out.stat().st_size > 20_000, 120, "frames to be written")
        t0 = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, f"exit {proc.returncode}: {err}"
    assert elapsed < STOP_WITHIN_S, f"took {elapsed:.1f} s to stop"
    assert f"stopped by {sig.name}" in err, err
    with iio.get_reader(str(out)) as reader:  # playable: the container is finished and decodes
        frames = reader.count_frames()
        first = reader.get_data(0)
    assert frames >= (2 if when == "mid_recording" else 1) and first.shape == (240, 320, 3)
    assert f"holds the {frames} frames" in err, err


def test_a_second_signal_while_stopping_changes_nothing(tmp_path):
    """SIGTERM, then SIGINT 0.1 s later while the video is being finished: still exit 143, a playable
    file, no traceback (the second signal is ignored, not raised in the middle of the cleanup)."""
    out = tmp_path / "twice.mp4"
    proc = _record(out)
    try:
        _wait_for(lambda: proc.stderr.readline().startswith("recording") or proc.poll() is not None, 120,
                  "the recording to start")
        _wait_for(lambda: out.exists() and out.stat().st_size > 20_000, 120, "frames to be written")
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.1)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, f"exit {proc.returncode}: {err}"
    assert "Traceback" not in err, err
    with iio.get_reader(str(out)) as reader:
        assert reader.count_frames() >= 2
