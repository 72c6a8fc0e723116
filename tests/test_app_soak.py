"""Soak: 2000 controller frames with the env count changed every 200 frames and the robot switched
(Panda <-> UR5) every 400, rendering all along: no exception, no error message, no memory growth,
no thread left behind by the scenes replaced. It runs in a fresh process, whose memory is the app's
alone."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
from _support import in_fresh_process, rss_mb

import engine as ik
from app.control.controller import DEFAULT_SCENE, AppController

RES = (160, 90)
N_FRAMES = 2000
ENV_COUNTS = (64, 1, 4, 16)  # at frames 100, 300, 500, 700, then again from 900
MAX_GROWTH_MB = 60.0


def test_soak_2000_frames_with_env_and_robot_changes():
    r = in_fresh_process("test_app_soak", "soak")
    rss, threads = ({int(k): v for k, v in r[name].items()} for name in ("rss", "threads"))
    growth = rss[2000] - rss[1200]
    print(f"\nsoak: {N_FRAMES} frames in {r['seconds']:.1f} s ({N_FRAMES / r['seconds']:.0f} fps), "
          f"{r['images']} images; RSS at frames 400 / 1200 / 2000: {rss[400]:.1f} / {rss[1200]:.1f} / "
          f"{rss[2000]:.1f} MB (growth after warm-up {growth:+.1f} MB); threads {threads}; mean convergence "
          f"{100 * r['converged']:.1f} % (reached {100 * r['reached']:.1f} %, the rest lagging)")
    assert not r["errors"], r["errors"]
    assert not r["error_messages"], r["error_messages"]
    assert r["envs"] == [64, 1, 4, 16] * 2 + [64, 1]
    assert r["robots"] == [6, 9, 6, 9]  # UR5, Panda, UR5, Panda
    assert r["images"] >= N_FRAMES // 10
    assert growth < MAX_GROWTH_MB, f"RSS grew by {growth:.1f} MB over the last 800 frames: {rss}"
    assert threads[2000] <= threads[1200], f"threads left behind by replaced scenes: {threads}"
    assert r["converged"] > 0.9


def soak() -> dict:
    """The soak itself, in a process of its own (:func:`_support.in_fresh_process`): what the test
    judges, as JSON."""
    ik.init(backend="cpu")
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
    converged, reached = [], []
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
            frame = c.last_frame
            if frame is not None:  # reached, or following at the velocity limits (smooth tracking)
                lagging = np.zeros_like(frame.success) if frame.lagging is None else frame.lagging
                converged.append(float(np.mean(frame.success | lagging)))
                reached.append(frame.success_rate)
        seconds = time.perf_counter() - t0
    finally:
        c.close()

    return {"rss": rss, "threads": threads, "seconds": seconds, "images": n_images, "errors": errors,
            "error_messages": [m for m in c.messages if m[0] == "error"], "envs": [n for _, n in envs],
            "robots": robots, "converged": float(np.mean(converged)),
            "reached": float(np.mean(reached))}
