"""Long runs hold their memory: 10,000 IK calls whose batch sizes keep changing (each size its own
plan and scratch arrays, plans evicted past 16) leave the process's memory where it was after a
warm-up. (Build/destroy cycles: tests/test_state_api.py; visualizer cycles: tests/test_vis_render.py.)
The calls run in a process of their own (``_support.in_fresh_process``): a test worker that has run
other modules beforehand (threads, pools and arenas of theirs) once grew 2.2 MB over the same calls.
"""

from __future__ import annotations

import gc

import numpy as np
from _support import in_fresh_process, rss_mb

import engine


def test_ten_thousand_ik_calls_of_varying_batch_sizes_keep_memory_flat():
    r = in_fresh_process("test_resources", "ten_thousand_calls")
    assert r["grown"] < 2.0, f"RSS grew {r['grown']:.1f} MB over 9,000 IK calls"
    assert r["plans"] <= 16


def ten_thousand_calls() -> dict:
    """The calls, in the process that calls this: ``{"grown": MiB of RSS over the last 9,000,
    "plans": IK plans kept}``."""
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=64)
    rng = np.random.default_rng(0)
    sizes = [1, 3, 8, 17, 32, 64, 5, 40, 2, 64, 11, 24, 7, 50, 33, 16, 9, 61, 4, 28]  # more than the 16 kept plans
    targets = {n: np.tile([0.4, 0.1, 0.3], (n, 1)) + rng.uniform(-0.05, 0.05, (n, 3)) for n in sizes}

    def calls(count):
        for i in range(count):
            n = sizes[i % len(sizes)]
            robot.inverse_kinematics(link="hand", pos=targets[n], quat=[0, 1, 0, 0], envs_idx=np.arange(n),
                                     seed=i, max_samples=2, max_solver_iters=5)

    calls(1000)  # warm-up: every size's kernel compiled, allocator pools filled
    gc.collect()
    base = rss_mb()
    calls(9000)
    gc.collect()
    grown = rss_mb() - base
    plans = len(robot.ik_state.plans)
    scene.destroy()
    return {"grown": grown, "plans": plans}
