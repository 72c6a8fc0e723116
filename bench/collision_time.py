"""What the exact self check costs: ``collision_distance`` of 1024 random configurations.

    python bench/collision_time.py hyq ur5 panda_urdf      # catalog names
    python bench/collision_time.py hyq --envs 4096 --backend cpu

Each robot (fixed base) gets ``--envs`` seeded random configurations
(:func:`engine.collision.robot.sample_qpos`); ``robot.collision_distance(qpos, world=False)`` is
called once to compile and build the model (the pieces cut or read from the cache), then timed
``--repeats`` times: the median and the least (ms), with the model's spheres and pieces.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")

import engine  # noqa: E402
from engine.collision.robot import sample_qpos  # noqa: E402


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("robots", nargs="+", help="catalog names")
    parser.add_argument("--envs", type=int, default=1024, help="configurations per call (default 1024)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backend", default="cpu", choices=engine.runtime.backend.BACKENDS)
    args = parser.parse_args(argv)
    engine.init(backend=args.backend, precision="32", logging_level="warning")
    for name in args.robots:
        scene = engine.Scene()
        robot = scene.add_entity(engine.morphs.URDF(file=f"erd:{name}", fixed=True))
        scene.build(n_envs=args.envs)
        qpos = sample_qpos(robot.tree, args.envs, 1)
        t0 = time.perf_counter()
        robot.collision_distance(qpos, world=False)
        first = time.perf_counter() - t0
        model = robot.collision_model()
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            robot.collision_distance(qpos, world=False)
            times.append(time.perf_counter() - t0)
        pieces = [len(p) for p in model.link_pieces()]
        print(f"{name}: {model.spheres.n_spheres} spheres, {sum(pieces)} pieces (most per link {max(pieces)}); "
              f"first call {first:.1f} s; {args.envs} configurations: median {statistics.median(times) * 1e3:.0f} ms, "
              f"least {min(times) * 1e3:.0f} ms", flush=True)
        scene.destroy()


if __name__ == "__main__":
    main()
