"""FK and Jacobian throughput of the batched engine on the Panda, beside Pinocchio.

    python bench/fk.py            # full run
    python bench/fk.py --quick    # a few seconds

For each batch size (n_envs 1 .. 65536) one scene holds the Panda MJCF (``assets/panda``):
``forward_kinematics(qpos)`` (all links) and ``get_jacobian(hand)`` (after ``set_qpos``) are timed
through the public API, numpy validation included. Latency is the median over repeats of one
call (after a warm-up); throughput is n_envs / latency. Memory per env is the bytes of the
entity's per-env state arrays divided by n_envs. Pinocchio's ``framesForwardKinematics`` on
example-robot-data's Panda URDF, called once per configuration in a Python loop, is the
reference. The ratio ours / Pinocchio at n_envs = 16384 is printed twice: from the table (the two
rates timed seconds apart), and side by side: rounds of 20 of our calls, each followed by a
Pinocchio loop of the same duration, one ratio per round (median and range). This machine's speed
swings by 1.5x over seconds, so only the second compares like with like. "kernel us" is the FK kernel
that ``forward_kinematics`` runs (from ``STATIC_FK_MIN_ROWS`` rows up the per-robot one over SIMD
lanes, marked "*") alone on preallocated arrays, to show what the API's validation and copies
cost; beside it, on the same rows: "1-row us", the per-robot kernel with one row per thread (what
a GPU runs), and "generic us", the generic FK kernel.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")

from _common import median_time  # noqa: E402

import engine  # noqa: E402
from engine import assets, morphs
from engine.kernels import lane_fk
from engine.kernels import per_robot_fk as static_fk
from engine.runtime import (
    dispatch,  # noqa: E402
    threads,  # noqa: E402
)

SIZES = (1, 16, 1024, 16384, 65536)
RATIO_AT = 16384


# warm-up calls: enough for the API's first launches in each thread mode (engine.runtime.threads)
WARM_UP = 2 * (threads.MIN_SAMPLES + 1) + 1


def median_seconds(fn, budget_s: float, times: list | None = None) -> float:
    """:func:`_common.median_time` with this bench's warm-up and repeat bounds."""
    return median_time(fn, min_repeats=5, max_repeats=500, budget_s=budget_s, warmup=WARM_UP, times=times)


def random_qpos(robot, rng: np.random.Generator, n: int) -> np.ndarray:
    lo, hi = robot.q_limits
    return rng.uniform(lo, hi, (n, robot.n_qs))


def bench_ours(n_envs: int, budget_s: float, rng: np.random.Generator) -> dict:
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build(n_envs=n_envs)
    hand = robot.get_link("hand")
    qpos = random_qpos(robot, rng, n_envs)
    fk_times = []
    fk = median_seconds(lambda: robot.forward_kinematics(qpos), budget_s, times=fk_times)
    mode = threads.CHOICE.preferred(threads.size_class(("lane_fk", id(robot.configuration.spec)), n_envs))
    # the FK kernels alone, on preallocated arrays (what the API adds: validation, copies)
    dt = robot.configuration.dtype
    q_k = qpos.astype(dt)
    pose = np.empty_like(robot.configuration.pose)
    generic = median_seconds(lambda: robot.configuration.run_fk(q_k, pose), budget_s)
    per_robot = n_envs >= dispatch.STATIC_FK_MIN_ROWS and robot.configuration.spec is not None
    kernel = one_thread = one_row = generic
    if per_robot:
        spec, serial = robot.configuration.spec, dispatch.serial(n_envs)
        pos, quat = np.empty((n_envs, robot.n_links, 3), dt), np.empty((n_envs, robot.n_links, 4), dt)
        kernel = median_seconds(lambda: lane_fk.run_fk(spec, q_k, pos, quat, serial), budget_s)
        one_thread = median_seconds(lambda: lane_fk.run_fk(spec, q_k, pos, quat, True), budget_s)
        run = static_fk.fk_kernel(spec)
        flat_q, flat_pos, flat_quat = q_k.reshape(-1), pos.reshape(-1), quat.reshape(-1)
        one_row = median_seconds(lambda: run(flat_q, flat_pos, flat_quat, n_envs, serial), budget_s)
    robot.set_qpos(qpos)
    jac = median_seconds(lambda: robot.get_jacobian(hand), budget_s)
    state_bytes = robot.state_nbytes()
    scene.destroy()
    return dict(n_envs=n_envs, fk_s=fk, fk_mean_s=statistics.mean(fk_times), mode=mode, kernel_s=kernel,
                one_thread_s=one_thread, one_row_s=one_row, generic_s=generic, per_robot=per_robot, jac_s=jac,
                bytes_per_env=state_bytes / n_envs)


class PinocchioLoop:
    """Pinocchio's ``framesForwardKinematics`` on example-robot-data's Panda URDF, called once per
    configuration in a Python loop (the reference)."""

    def __init__(self, n_configs: int, rng: np.random.Generator):
        import pinocchio as pin

        self.pin = pin
        self.model = pin.buildModelFromUrdf(str(assets.resolve("erd:panda").path))
        self.data = self.model.createData()
        lo = np.where(np.isfinite(self.model.lowerPositionLimit), self.model.lowerPositionLimit, -np.pi)
        hi = np.where(np.isfinite(self.model.upperPositionLimit), self.model.upperPositionLimit, np.pi)
        self.qs = list(rng.uniform(lo, hi, (n_configs, self.model.nq)))
        self.rate(100)  # warm-up

    def rate(self, n: int | None = None) -> float:
        """Configurations/s over the first ``n`` configurations (all by default)."""
        fk, model, data = self.pin.framesForwardKinematics, self.model, self.data
        qs = self.qs[:n]
        t0 = time.perf_counter()
        for q in qs:
            fk(model, data, q)
        return len(qs) / (time.perf_counter() - t0)


def side_by_side(rounds: int, calls: int, pin: PinocchioLoop, rng: np.random.Generator) -> list[float]:
    """Ratios ours / Pinocchio at ``RATIO_AT`` envs, one per round; a round times ``calls``
    ``forward_kinematics`` calls (median) and then one Pinocchio loop of about the same duration,
    so that both sides of a ratio see the same phase of a shared, noisy machine."""
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build(n_envs=RATIO_AT)
    qpos = random_qpos(robot, rng, RATIO_AT)
    for _ in range(3):
        robot.forward_kinematics(qpos)
    ratios = []
    for _ in range(rounds):
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            robot.forward_kinematics(qpos)
            times.append(time.perf_counter() - t0)
        ours = RATIO_AT / statistics.median(times)
        ratios.append(ours / pin.rate(int(sum(times) * 1e6)))  # ~1 us per configuration
    scene.destroy()
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run: small time budget per measurement")
    parser.add_argument("--backend", default="cpu", choices=engine.runtime.backend.BACKENDS)
    parser.add_argument("--precision", default="32", choices=engine.runtime.backend.PRECISIONS)
    args = parser.parse_args()
    budget = 0.2 if args.quick else 1.0
    arch = engine.init(backend=args.backend, precision=args.precision)
    rng = np.random.default_rng(0)

    print(f"IK Studio FK / Jacobian benchmark: Panda (assets/panda, link 'hand'), {arch.describe()}, "
          f"f{args.precision}{', quick' if args.quick else ''}")
    if arch.timing_note():
        print(f"({arch.timing_note()})")
    rows = [bench_ours(n, budget, rng) for n in SIZES]
    pin = PinocchioLoop(20_000, rng)
    pin_rate = statistics.median(pin.rate() for _ in range(3))
    ratios = side_by_side(5 if args.quick else 20, 20, pin, rng)
    header = (f"{'n_envs':>7} | {'FK us/call':>11} {'mean us':>8} {'FK configs/s':>13} {'mode':>4} {'kernel us':>10} "
              f"{'1-thread':>9} {'1-row us':>9} "
              f"{'generic us':>10} | "
              f"{'Jac us/call':>11} {'Jac configs/s':>13} | {'bytes/env':>9}")
    print(header)
    print("-" * len(header))
    for r in rows:
        mode = {None: "-", True: "S", False: "P"}[r["mode"]]
        print(f"{r['n_envs']:>7} | {r['fk_s'] * 1e6:>11.1f} {r['fk_mean_s'] * 1e6:>8.1f} "
              f"{r['n_envs'] / r['fk_s']:>13,.0f} "
              f"{mode:>4} {r['kernel_s'] * 1e6:>9.1f}{'*' if r['per_robot'] else ' '} {r['one_thread_s'] * 1e6:>9.1f} "
              f"{r['one_row_s'] * 1e6:>9.1f} "
              f"{r['generic_s'] * 1e6:>10.1f} | "
              f"{r['jac_s'] * 1e6:>11.1f} {r['n_envs'] / r['jac_s']:>13,.0f} | {r['bytes_per_env']:>9.0f}")
    if arch == "cpu":
        print(f"* the per-robot FK kernel over SIMD lanes (engine.kernels.lane_fk), used from "
              f"{dispatch.STATIC_FK_MIN_ROWS} rows up, on the thread pool; 1-thread: the same in the calling thread; "
              f"1-row: engine.kernels.per_robot_fk\nmode: the one forward_kinematics ended up preferring (S: calling "
              f"thread, P: thread pool; engine.runtime.threads); its 1-in-{threads.EXPLORE_EVERY} launches in the "
              f"other mode count in the mean, rarely in the median")
    else:  # lane_fk.run_fk runs the one-row kernel off the CPU
        print(f"* the per-robot FK kernel, one row per thread (engine.kernels.per_robot_fk), used from "
              f"{dispatch.STATIC_FK_MIN_ROWS} rows up; 1-thread: the same kernel serialised (one device thread); "
              f"1-row: the same kernel again; generic: engine.kernels.fk")
    print(f"\nPinocchio framesForwardKinematics (example-robot-data panda URDF), Python loop: "
          f"{pin_rate:,.0f} configs/s ({1e6 / pin_rate:.1f} us/config)")
    at = next(r for r in rows if r["n_envs"] == RATIO_AT)
    ours = RATIO_AT / at["fk_s"]
    print(f"FK ours / Pinocchio at n_envs={RATIO_AT}, from the table above: {ours:,.0f} / {pin_rate:,.0f} "
          f"= {ours / pin_rate:.2f}x")
    print(f"FK ours / Pinocchio at n_envs={RATIO_AT}, side by side over {len(ratios)} rounds (each: 20 calls, "
          f"then Pinocchio for as long): median {statistics.median(ratios):.2f}x, "
          f"range {min(ratios):.2f}-{max(ratios):.2f}x")

if __name__ == "__main__":
    main()
