"""``ikstudio solve``'s job against in-process IK, and on a local Ray cluster, side by side.

    python bench/solve.py                    # 100,000 Panda hand targets, 8 rounds, then Ray (2 CPUs)
    python bench/solve.py --rows 50000 --rounds 4 --no-ray

The targets are FK of seeded uniform random configurations within the joint limits (full 6-D
poses of the Panda's ``hand``), written to a Parquet file with a carried ``id`` column. On the CPU
backend, f32, default solver settings (``kernel="auto"``), chunk 4096 (the CPU default):

* **in-process IK**: one scene of ``chunk`` envs, then for each chunk of the same file the call
  the job makes, ``robot.inverse_kinematics(hand, pos, quat, init_qpos=default pose,
  seed=chunk_seed(0, k))`` on arrays already in memory (after one untimed warm-up call);
  rate = rows / the loop's time;
* **local job**: :func:`engine.batch.solve` from the Parquet file into an empty folder. "run
  rate" is rows over ``run_s`` (the first chunk handed out to the last part written: what the
  in-process loop times); "wall rate" over the whole call (reading the file, building the scene,
  loading the compiled kernels from taichi's disk cache, writing the parts);
* **io**: the job's reading (file, hash, checks) plus writing (the writer thread's CPU time) over
  its wall time;
* **Ray**: the same job with ``ray=True`` on a local cluster started here with
  ``ray.init(num_cpus=2)`` (2 workers, one per CPU, one taichi thread each); "run rate" excludes
  the workers' start-up (scene and kernels, once each), shown as "setup". Each Ray round runs
  between two local jobs and is compared with their mean; its parts are compared byte for byte
  with the local job's.

Rounds alternate the order of in-process and local job (AB, BA, ...), so both see the same
machine (a shared one's load drifts over seconds); the ratios are per round and their median is
printed, with the ratio of CPU time (``time.process_time``, every thread: the job's reading and
writing included), which another process's load hardly moves.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine  # noqa: E402
import engine.batch  # noqa: E402
from engine.batch.settings import CPU_CHUNK, chunk_seed  # noqa: E402


def make_targets(path: Path, rows: int, seed: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=rows)
    lo, hi = robot.q_limits
    pos, quat = robot.forward_kinematics(np.random.default_rng(seed).uniform(lo, hi, (rows, robot.n_qs)))
    h = robot.get_link("hand").idx_local
    cols = {name: pos[:, h, i] for i, name in enumerate("xyz")}
    cols.update({name: quat[:, h, i] for i, name in enumerate(("qw", "qx", "qy", "qz"))})
    cols["id"] = np.arange(rows) * 7 + 1
    pq.write_table(pa.table(cols), path)
    scene.destroy()


def in_process(path: Path, chunk: int) -> tuple[float, float]:
    """(wall, CPU) seconds of the in-process loop over every chunk of ``path`` (arrays in memory)."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    pos = np.stack([table[c].to_numpy() for c in "xyz"], axis=1)
    quat = np.stack([table[c].to_numpy() for c in ("qw", "qx", "qy", "qz")], axis=1)
    n = len(pos)
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=min(chunk, n))
    hand = robot.get_link("hand")
    q0 = robot.get_qpos()
    chunks = []
    for k, start in enumerate(range(0, n, chunk)):
        p, q = pos[start:start + chunk], quat[start:start + chunk]
        if len(p) < len(q0):  # the job pads its last chunk the same way
            p = np.concatenate([p, np.repeat(p[-1:], len(q0) - len(p), 0)])
            q = np.concatenate([q, np.repeat(q[-1:], len(q0) - len(q), 0)])
        chunks.append((k, p, q))
    robot.inverse_kinematics(hand, pos=chunks[0][1], quat=chunks[0][2], init_qpos=q0, seed=1, return_info=True)
    t0, c0 = time.perf_counter(), time.process_time()
    for k, p, q in chunks:
        robot.inverse_kinematics(hand, pos=p, quat=q, init_qpos=q0, seed=chunk_seed(0, k), return_info=True)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    scene.destroy()
    return seconds, cpu


def job(src: Path, out: Path):
    """(summary, CPU seconds) of the local job."""
    c0 = time.process_time()
    s = engine.batch.solve("panda", src, "hand", out)
    return s, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--ray-rounds", type=int, default=3)
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    engine.init(backend="cpu")
    tmp = Path(tempfile.mkdtemp(prefix="bench_solve_"))
    try:
        src = tmp / "targets.parquet"
        make_targets(src, args.rows, seed=0)
        print(f"bench: {args.rows:,} Panda hand targets (6-D), chunk {CPU_CHUNK}, CPU f32, "
              f"{engine.runtime.backend.current().describe()}")
        ratios, cpu_ratios = [], []
        for r in range(args.rounds):
            out = tmp / f"local{r}"
            if r % 2:
                s, job_cpu = job(src, out)
                t_ip, ip_cpu = in_process(src, CPU_CHUNK)
            else:
                t_ip, ip_cpu = in_process(src, CPU_CHUNK)
                s, job_cpu = job(src, out)
            ip_rate = args.rows / t_ip
            ratios.append(s.run_rate / ip_rate)
            cpu_ratios.append(ip_cpu / job_cpu)
            print(f"  round {r}: in-process {ip_rate:,.0f} solves/s; job run rate {s.run_rate:,.0f}/s "
                  f"({100 * s.run_rate / ip_rate:.1f}%), wall rate {s.solves_per_s:,.0f}/s "
                  f"(wall {s.wall_s:.2f} s, setup {s.setup_s:.2f} s); CPU {ip_cpu:.2f} s vs {job_cpu:.2f} s; io "
                  f"{100 * s.io_fraction:.1f}% (read {s.read_s * 1e3:.0f} ms, write {s.write_s * 1e3:.0f} ms CPU), "
                  f"success {100 * s.success_rate:.2f}%")
            if r:
                shutil.rmtree(out)
        print(f"local job / in-process IK: median {100 * statistics.median(ratios):.1f}% of the rate "
              f"(rounds: {', '.join(f'{100 * x:.0f}%' for x in ratios)}); CPU time: in-process / job median "
              f"{100 * statistics.median(cpu_ratios):.1f}%")
        if args.no_ray:
            return
        import ray

        t0 = time.perf_counter()
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
        print(f"ray: local cluster of 2 CPUs started in {time.perf_counter() - t0:.1f} s")
        try:
            ray_ratios = []
            for r in range(args.ray_rounds):
                before, _ = job(src, tmp / f"before{r}")
                out = tmp / f"ray{r}"
                s = engine.batch.solve("panda", src, "hand", out, ray=True)
                after, _ = job(src, tmp / f"after{r}")
                local = (before.run_rate + after.run_rate) / 2
                same = all(filecmp.cmp(p, tmp / "local0" / p.name, shallow=False) for p in sorted(out.glob("part-*")))
                ray_ratios.append(s.run_rate / local)
                print(f"  ray round {r}: {s.workers} workers, run rate {s.run_rate:,.0f}/s, local job just before and "
                      f"after {before.run_rate:,.0f}/s and {after.run_rate:,.0f}/s: {100 * s.run_rate / local:.1f}%; "
                      f"wall {s.wall_s:.2f} s (setup {s.setup_s:.2f} s), io {100 * s.io_fraction:.1f}%, parts "
                      f"identical to the local job's: {same}")
                for folder in (tmp / f"before{r}", out, tmp / f"after{r}"):
                    shutil.rmtree(folder)
            print(f"ray job / local job: median {100 * statistics.median(ray_ratios):.1f}% (rounds: "
                  f"{', '.join(f'{100 * x:.0f}%' for x in ray_ratios)})")
        finally:
            ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
