"""What the exact self check costs: ``collision_distance`` of 1024 random configurations.

    python bench/collision_time.py hyq ur5 panda_urdf      # catalog names
    python bench/collision_time.py hyq --envs 4096 --backend cpu
    python bench/collision_time.py panda_urdf --backend vulkan --envs 16 --vs-numpy --world

``--vs-numpy`` also times the numpy twins (what a software Vulkan device took before the checks ran
in launches under its loop limit: :mod:`engine.collision.launches`), call for call alternated with
the kernel's, and prints the ratio; ``--world`` checks the self pairs and a box before the robot
(``collision_distance()`` as IK's answers are checked) instead of the self pairs alone.

Each robot (fixed base) gets ``--envs`` seeded random configurations
(:func:`engine.collision.robot.sample_qpos`); ``robot.collision_distance(qpos, world=False)`` is
called once to compile and build the model (the pieces cut or read from the cache), then timed
``--repeats`` times: the median and the least (ms), with the model's spheres and pieces.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
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
    parser.add_argument("--vs-numpy", action="store_true", help="time the numpy twins too, alternated")
    parser.add_argument("--world", action="store_true", help="a box before the robot, checked too")
    args = parser.parse_args(argv)
    engine.init(backend=args.backend, precision="32", logging_level="warning")
    for name in args.robots:
        scene = engine.Scene()
        robot = scene.add_entity(engine.morphs.URDF(file=f"erd:{name}", fixed=True))
        if args.world:
            scene.add_entity(engine.morphs.Box(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3), fixed=True))
        scene.build(n_envs=args.envs)
        qpos = sample_qpos(robot.tree, args.envs, 1)
        t0 = time.perf_counter()
        check = functools.partial(robot.collision_distance, qpos, world=args.world)
        check()
        first = time.perf_counter() - t0
        model = robot.collision_model()
        times, twins = [], []
        for _ in range(args.repeats):
            times.append(_timed(check))
            if args.vs_numpy:
                with _numpy_twins():
                    twins.append(_timed(check))
        pieces = [len(p) for p in model.link_pieces()]
        print(f"{name}: {model.spheres.n_spheres} spheres, {sum(pieces)} pieces (most per link {max(pieces)}); "
              f"first call {first:.1f} s; {args.envs} configurations: median {statistics.median(times) * 1e3:.0f} ms, "
              f"least {min(times) * 1e3:.0f} ms", flush=True)
        if twins:
            print(f"    numpy twins: median {statistics.median(twins) * 1e3:.0f} ms, least {min(twins) * 1e3:.0f} ms; "
                  f"the kernel {statistics.median(twins) / statistics.median(times):.1f}x faster (medians)",
                  flush=True)
        scene.destroy()


def _timed(call) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


@contextlib.contextmanager
def _numpy_twins():
    """The checks as a software device past its loop limit takes them: the numpy twins."""
    from engine.runtime import dispatch
    from engine.runtime.state import STATE

    saved = STATE.software, dispatch.SOFTWARE_LOOP_LIMIT
    STATE.software, dispatch.SOFTWARE_LOOP_LIMIT = True, 0
    try:
        yield
    finally:
        STATE.software, dispatch.SOFTWARE_LOOP_LIMIT = saved


if __name__ == "__main__":
    main()
