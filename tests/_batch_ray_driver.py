"""The Ray side of ``test_batch_ray.py``, run as a child process: it starts a local 2-CPU Ray
cluster, runs a job on it, lists the kernels its workers wrote to their (new, empty at first)
taichi disk cache, runs it again while killing one of its workers mid-run, stops the cluster, and
prints each summary as JSON. (In the pytest process, a Ray driver's threads outlive
``ray.shutdown()`` and grew its memory by several MB during later tests that measure it.)

    python tests/_batch_ray_driver.py ROBOT LINK TARGETS OUT_DIR SEED
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import ray

import engine.batch


def main() -> None:
    robot, link, src, out, seed = sys.argv[1:6]
    out = Path(out)
    cache = out / "ray_kernel_cache"  # the workers' taichi disk cache, empty at first (they inherit the variable)
    os.environ["TI_OFFLINE_CACHE_FILE_PATH"] = str(cache)
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
    try:
        plain = engine.batch.solve(robot, src, link, out / "ray", seed=int(seed), ray=True)
        cached = sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()) if cache.is_dir() else []
        print(json.dumps({"run": "plain", "cache_files": cached, **plain.to_dict()}), flush=True)
        killed, notes = [], []

        def kill_a_worker(progress):
            if not killed and progress.chunks_done == 1:
                pid = sorted(progress.workers)[0]  # a Ray worker process of this job: its actor reported it
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        again = engine.batch.solve(robot, src, link, out / "killed", seed=int(seed), ray=True, progress=kill_a_worker,
                                   log=notes.append)
        print(json.dumps({"run": "killed", "killed": killed, "notes": notes, **again.to_dict()}), flush=True)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
