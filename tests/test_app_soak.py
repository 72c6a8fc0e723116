"""Soak: 2000 controller frames with the env count changed every 200 frames and the robot switched
(Panda <-> UR5) every 400, rendering all along: no exception, no error message, no memory growth,
no thread left behind by the scenes replaced."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest
from _support import rss_mb

import engine as ik
from app.controller import DEFAULT_SCENE, AppController

RES = (160, 90)
N_FRAMES = 2000
ENV_COUNTS = (64, 1, 4, 16)  # at frames 100, 300, 500, 700, then again from 900
MAX_GROWTH_MB = 60.0


@pytest.fixture(scope="module", autouse=True)
def engine_cpu():
    ik.init(backend="cpu")


def test_soak_2000_frames_with_env_and_robot_changes():
    c = AppController(res=RES, lod="decimated")
    errors: list[str] = []
    show_error = c.error

    def error(text: str) -> None:
        errors.append(text)
        show_error(text)

    c.error = error
    # The schedule repeats every 800 frames (panda 16 -> 64 -> 1 -> ur5 1 -> 4 -> 16 -> panda 16 ...): the first
    # 1200 frames warm every cache up (kernels per env count, both robots' meshes); frames 1200 and 2000 are the
    # same point of the cycle (the Panda with 1 env, after a full cycle), so their RSS compare like with like.
    rss, threads, robots, envs = {}, {}, [], []
    converged = []
    n_images = 0
    t0 = time.perf_counter()
    try:
        for i in range(N_FRAMES + 1):
            if i in (400, 1200, 2000):
                c.wait_frame()
                gc.collect()
                rss[i] = rss_mb()
                threads[i] = threading.active_count()
            if i == N_FRAMES:
                break
            if i and i % 400 == 0:
                ok = c.load_robot("ur5") if (i // 400) % 2 else c.open_scene(DEFAULT_SCENE)
                assert ok, errors
                robots.append(c.robot.n_dofs)
            elif i % 200 == 100:
                n = ENV_COUNTS[(i // 200) % len(ENV_COUNTS)]
                assert c.set_n_envs(n), errors
                assert c.n_envs == n
                envs.append((i, n))
            c.update()
            if c.poll_frame() is not None:
                n_images += 1
            if i % 10 == 9:
                img = c.wait_frame()
                n_images += 1
                assert img.shape == (RES[1], RES[0], 3)
            if c.last_frame is not None:
                converged.append(c.last_frame.success_rate)
        seconds = time.perf_counter() - t0
    finally:
        c.close()

    growth = rss[2000] - rss[1200]
    print(f"\nsoak: {N_FRAMES} frames in {seconds:.1f} s ({N_FRAMES / seconds:.0f} fps), {n_images} images; "
          f"RSS at frames 400 / 1200 / 2000: {rss[400]:.1f} / {rss[1200]:.1f} / {rss[2000]:.1f} MB "
          f"(growth after warm-up {growth:+.1f} MB); threads {threads}; mean convergence "
          f"{100 * np.mean(converged):.1f} %")
    assert not errors, errors
    assert not [m for m in c.messages if m[0] == "error"]
    assert [n for _, n in envs] == [64, 1, 4, 16] * 2 + [64, 1]
    assert robots == [6, 9, 6, 9]  # UR5, Panda, UR5, Panda
    assert n_images >= N_FRAMES // 10
    assert growth < MAX_GROWTH_MB, f"RSS grew by {growth:.1f} MB over the last 800 frames: {rss}"
    assert threads[2000] <= threads[1200], f"threads left behind by replaced scenes: {threads}"
    assert np.mean(converged) > 0.9
