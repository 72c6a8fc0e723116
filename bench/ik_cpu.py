"""Per-call CPU time of small IK batches: a figure for A/B comparisons on a busy machine.

    python bench/ik_cpu.py                       # 16 envs, single and multilink, both solvers
    python bench/ik_cpu.py --n-envs 1 --rounds 9

Wall-clock figures (``bench/ik.py``) move with whatever else the machine runs. Batches of up to
``engine.runtime.dispatch.SERIAL_MAX_ENVS`` envs of the per-robot solver run in the calling thread, so
their process CPU time (``time.process_time``) counts the solve and little of the machine's other
load: what to compare when alternating two versions of the code on a shared 2-core VM. (The
generic solver always uses taichi's thread pool, whose idle spinning is CPU time too: its figure
is noisier.) Cases as in ``bench/ik.py``: the Panda's hand (full pose) and both fingertips
(positions + z axes), targets from FK of seeded random configurations, 16 batches per round, the
median round reported in microseconds per call.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402

FINGERS = ["left_finger", "right_finger"]


def _batches(robot, n_envs: int, count: int, seed: int):
    rng = np.random.default_rng(seed)
    lo, hi = robot.q_limits
    out = []
    for _ in range(count):
        pos, quat = robot.forward_kinematics(robot.tree.apply_mimic(rng.uniform(lo, hi, (n_envs, robot.n_qs))))
        out.append((pos.copy(), quat.copy()))
    return out


def _calls(robot, case: str, kernel: str, batches):
    hand = robot.get_link("hand").idx_local
    fingers = [robot.get_link(name).idx_local for name in FINGERS]
    if case == "single":
        return [lambda p=p, q=q: robot.inverse_kinematics("hand", p[:, hand], q[:, hand], kernel=kernel, seed=0)
                for p, q in batches]
    return [lambda p=p, q=q: robot.inverse_kinematics_multilink(FINGERS, [p[:, i] for i in fingers],
                                                                [q[:, i] for i in fingers],
                                                                rot_mask=[False, False, True], kernel=kernel, seed=0)
            for p, q in batches]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--kernels", nargs="+", default=["per_robot", "generic"])
    args = parser.parse_args()
    engine.init(backend="cpu", precision="32")
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=args.n_envs)
    batches = _batches(robot, args.n_envs, 16, 0)
    for kernel in args.kernels:
        for case in ("single", "multi"):
            calls = _calls(robot, case, kernel, batches)
            for call in calls:  # warm-up: compiles
                call()
            rounds = []
            for _ in range(args.rounds):
                start = time.process_time()
                for call in calls:
                    call()
                rounds.append((time.process_time() - start) / len(calls) * 1e6)
            print(f"{kernel:9s} {case:6s} n_envs={args.n_envs}: {statistics.median(rounds):8.1f} us CPU per call "
                  f"(rounds {min(rounds):.1f}-{max(rounds):.1f})")


if __name__ == "__main__":
    main()
