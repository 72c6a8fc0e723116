"""The seed's two scripts run headless: each exits 0 and its summary line reports every IK solve met.

Each script runs in its own process (as a user would start it) on the CPU, with a few steps.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SUCCESS_LINE = re.compile(r"^IK success: (\d+)/(\d+) (?:steps|solves) \(([\d.]+)%\)", re.MULTILINE)


@pytest.mark.parametrize("script,steps", [("advanced_IK_multilink.py", 60), ("batched_IK.py", 60)])
def test_example_runs_and_reports_success(script, steps):
    env = dict(os.environ, ENABLE_TAICHI_HEADER_PRINT="0", TI_ENABLE_TELEMETRY="0", TI_SKIP_VERSION_CHECK="ON")
    # this checkout's engine, whatever an installed one says
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), "--steps", str(steps), "--backend", "cpu"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{output[-3000:]}"
    step_lines = [line for line in proc.stdout.splitlines() if line.startswith("step ")]
    assert len(step_lines) == steps, f"expected one line per step:\n{proc.stdout[-2000:]}"
    match = SUCCESS_LINE.search(proc.stdout)
    assert match, f"no summary line in the output of {script}:\n{proc.stdout[-2000:]}"
    solved, total = int(match[1]), int(match[2])
    assert total > 0 and solved == total, f"{script}: {match[0]}"


@pytest.mark.parametrize("script", ["advanced_IK_multilink.py", "batched_IK.py"])
def test_example_records_a_video_with_target_frames(script, tmp_path):
    """``--record out.mp4 --frames N`` renders headless: an mp4 of N frames at 1280x720."""
    import imageio.v2 as imageio

    env = dict(os.environ, ENABLE_TAICHI_HEADER_PRINT="0", TI_ENABLE_TELEMETRY="0", TI_SKIP_VERSION_CHECK="ON")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    out = tmp_path / "demo.mp4"
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / script), "--record", str(out), "--frames", "8",
                           "--backend", "cpu", "--quiet"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    reader = imageio.get_reader(out)
    assert reader.count_frames() == 8
    frame = reader.get_data(0)
    assert frame.shape == (720, 1280, 3)
    # the debug frames' red x axes are drawn: some strongly red pixels in the image
    red = (frame[..., 0] > 150) & (frame[..., 1] < 80) & (frame[..., 2] < 80)
    assert red.sum() > 5


@pytest.mark.parametrize("script", ["advanced_IK_multilink.py", "batched_IK.py"])
def test_example_output_has_no_taichi_noise(script):
    """``--help`` prints no taichi banner, and a run says once where it runs (taichi's own
    "Starting on arch" line, one per backend tried, is not passed on), with the environment a
    user has: nothing set to quiet taichi."""
    env = {k: v for k, v in os.environ.items() if k not in ("ENABLE_TAICHI_HEADER_PRINT",)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    path = str(ROOT / "examples" / script)
    help_ = subprocess.run([sys.executable, path, "--help"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
    assert help_.returncode == 0 and help_.stdout.startswith("usage:")
    assert "Taichi" not in help_.stdout + help_.stderr, help_.stdout + help_.stderr
    run = subprocess.run([sys.executable, path, "--steps", "2", "--backend", "gpu"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-2000:]
    assert "[Taichi]" not in output, output[-2000:]
    assert sum(line.startswith("running on ") for line in run.stdout.splitlines()) == 1, run.stdout[-2000:]
