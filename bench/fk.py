"""FK and Jacobian throughput of the batched engine on the Panda, beside Pinocchio.

    python bench/fk.py            # full run
    python bench/fk.py --quick    # a few seconds

For each batch size (n_envs 1 .. 65536) one scene holds the Panda MJCF (``assets/panda``):
``forward_kinematics(qpos)`` (all links) and ``get_jacobian(hand)`` (after ``set_qpos``) are timed
through the public API, numpy validation included. Latency is the median over repeats of one
call (after a warm-up); throughput is n_envs / latency. Memory per env is the bytes of the
entity's per-env state arrays divided by n_envs. Pinocchio's ``framesForwardKinematics`` on
example-robot-data's Panda URDF, called once per configuration in a Python loop, is the
reference; the ratio ours / Pinocchio is given at n_envs = 16384. "kernel us" is the FK kernel
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

import engine  # noqa: E402
from engine import assets, entity, morphs  # noqa: E402
from engine.kernels import fk as fk_kernels  # noqa: E402
from engine.kernels import lane_fk, static_fk  # noqa: E402

SIZES = (1, 16, 1024, 16384, 65536)
RATIO_AT = 16384


def median_seconds(fn, budget_s: float, min_repeats: int = 5, max_repeats: int = 500) -> float:
    """Median wall time of one ``fn()`` call: warm-up, then as many repeats as fit ``budget_s``."""
    for _ in range(2):
        fn()
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    repeats = int(np.clip(budget_s / max(first, 1e-9), min_repeats, max_repeats))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def random_qpos(robot, rng: np.random.Generator, n: int) -> np.ndarray:
    lo, hi = robot.q_limits
    return rng.uniform(lo, hi, (n, robot.n_qs))


def bench_ours(n_envs: int, budget_s: float, rng: np.random.Generator) -> dict:
    scene = engine.Scene()
    robot = scene.add_entity(morphs.MJCF(file="panda"))
    scene.build(n_envs=n_envs)
    hand = robot.get_link("hand")
    qpos = random_qpos(robot, rng, n_envs)
    fk = median_seconds(lambda: robot.forward_kinematics(qpos), budget_s)
    # the FK kernels alone, on preallocated arrays (what the API adds: validation, copies)
    dt = robot._dtype
    q_k = qpos.astype(dt)
    pose = np.empty_like(robot._pose)
    generic = median_seconds(lambda: robot._run_fk(q_k, pose), budget_s)
    per_robot = n_envs >= entity.STATIC_FK_MIN_ROWS and robot._spec is not None
    kernel = one_row = generic
    if per_robot:
        spec, serial = robot._spec, fk_kernels.serial_for(n_envs)
        pos, quat = np.empty((n_envs, robot.n_links, 3), dt), np.empty((n_envs, robot.n_links, 4), dt)
        kernel = median_seconds(lambda: lane_fk.run_fk(spec, q_k, pos, quat, serial), budget_s)
        run = static_fk.fk_kernel(spec)
        flat_q, flat_pos, flat_quat = q_k.reshape(-1), pos.reshape(-1), quat.reshape(-1)
        one_row = median_seconds(lambda: run(flat_q, flat_pos, flat_quat, serial), budget_s)
    robot.set_qpos(qpos)
    jac = median_seconds(lambda: robot.get_jacobian(hand), budget_s)
    state_bytes = robot.state_nbytes()
    scene.destroy()
    return dict(n_envs=n_envs, fk_s=fk, kernel_s=kernel, one_row_s=one_row, generic_s=generic, per_robot=per_robot,
                jac_s=jac,
                bytes_per_env=state_bytes / n_envs)


def bench_pinocchio(n_configs: int, rng: np.random.Generator) -> float:
    """Configurations/s of ``pin.framesForwardKinematics`` in a Python loop."""
    import pinocchio as pin

    model = pin.buildModelFromUrdf(str(assets.resolve("erd:panda").path))
    data = model.createData()
    lo = np.where(np.isfinite(model.lowerPositionLimit), model.lowerPositionLimit, -np.pi)
    hi = np.where(np.isfinite(model.upperPositionLimit), model.upperPositionLimit, np.pi)
    qs = rng.uniform(lo, hi, (n_configs, model.nq))
    for q in qs[:100]:  # warm-up
        pin.framesForwardKinematics(model, data, q)
    rates = []
    for _ in range(3):
        t0 = time.perf_counter()
        for q in qs:
            pin.framesForwardKinematics(model, data, q)
        rates.append(n_configs / (time.perf_counter() - t0))
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run: small time budget per measurement")
    parser.add_argument("--backend", default="cpu", choices=engine.backend.BACKENDS)
    parser.add_argument("--precision", default="32", choices=engine.backend.PRECISIONS)
    args = parser.parse_args()
    budget = 0.2 if args.quick else 1.0
    arch = engine.init(backend=args.backend, precision=args.precision)
    rng = np.random.default_rng(0)

    print(f"IK Studio FK / Jacobian benchmark: Panda (assets/panda, link 'hand'), arch={arch}, "
          f"f{args.precision}{', quick' if args.quick else ''}")
    rows = [bench_ours(n, budget, rng) for n in SIZES]
    pin_rate = bench_pinocchio(2_000 if args.quick else 20_000, rng)

    header = (f"{'n_envs':>7} | {'FK us/call':>11} {'FK configs/s':>13} {'kernel us':>10} {'1-row us':>9} "
              f"{'generic us':>10} | "
              f"{'Jac us/call':>11} {'Jac configs/s':>13} | {'bytes/env':>9}")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['n_envs']:>7} | {r['fk_s'] * 1e6:>11.1f} {r['n_envs'] / r['fk_s']:>13,.0f} "
              f"{r['kernel_s'] * 1e6:>9.1f}{'*' if r['per_robot'] else ' '} {r['one_row_s'] * 1e6:>9.1f} "
              f"{r['generic_s'] * 1e6:>10.1f} | "
              f"{r['jac_s'] * 1e6:>11.1f} {r['n_envs'] / r['jac_s']:>13,.0f} | {r['bytes_per_env']:>9.0f}")
    print(f"* the per-robot FK kernel over SIMD lanes (engine.kernels.lane_fk), used from "
          f"{entity.STATIC_FK_MIN_ROWS} rows up; 1-row: engine.kernels.static_fk")
    print(f"\nPinocchio framesForwardKinematics (example-robot-data panda URDF), Python loop: "
          f"{pin_rate:,.0f} configs/s ({1e6 / pin_rate:.1f} us/config)")
    at = next(r for r in rows if r["n_envs"] == RATIO_AT)
    ours = RATIO_AT / at["fk_s"]
    print(f"FK ours / Pinocchio at n_envs={RATIO_AT}: {ours:,.0f} / {pin_rate:,.0f} = {ours / pin_rate:.2f}x")


if __name__ == "__main__":
    main()
