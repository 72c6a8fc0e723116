"""Same seed, same paths: ``plan_path`` in another process, on the CPU and on Vulkan (Mesa's
lavapipe here), against this process's answer (tests/_plan_run.py plans the batch)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _support import skip_or_fail

import engine as gs

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def here():
    import _plan_run

    gs.init(backend="cpu", precision="32", seed=0)
    scene = gs.Scene()
    panda = scene.add_entity(gs.morphs.URDF(file="erd:panda", fixed=True))
    scene.add_entity(gs.morphs.Box(fixed=True, **_plan_run.CRATE))
    scene.build(n_envs=4)
    return _plan_run.plan(panda)


def _run(backend, out):
    env = dict(os.environ, PYTHONPATH=str(HERE.parent))
    return subprocess.run([sys.executable, str(HERE / "_plan_run.py"), backend, str(out)], env=env,
                          capture_output=True, text=True, timeout=600)


def test_same_seed_same_paths_in_another_process_and_on_vulkan(here, tmp_path):
    from engine.runtime import devices

    cpu = _run("cpu", tmp_path / "cpu.npz")
    assert cpu.returncode == 0, cpu.stderr[-2000:]
    a = np.load(tmp_path / "cpu.npz")
    np.testing.assert_array_equal(a["path"], here.path)  # same seed, same paths, another process
    assert a["valid"].all()
    if not devices.vulkan_devices():
        skip_or_fail("no Vulkan device (install Debian's mesa-vulkan-drivers for lavapipe)")
    vk = _run("vulkan", tmp_path / "vk.npz")
    assert vk.returncode == 0, vk.stderr[-2000:]
    b = np.load(tmp_path / "vk.npz")
    np.testing.assert_array_equal(a["valid"], b["valid"])
    np.testing.assert_array_equal(a["nodes"], b["nodes"])
    np.testing.assert_allclose(a["path"], b["path"], atol=1e-5)
