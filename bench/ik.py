"""Batched IK throughput and success on the Panda, beside pytorch_kinematics.

    python bench/ik.py                  # full run: n_envs 1, 16, 256, 1024, 4096
    python bench/ik.py --quick          # n_envs 16, 1024, 4096; fewer repeats; pk up to 1024 envs
    python bench/ik.py --backend cpu --sizes 16 1024 --no-pk
    python bench/ik.py --collision-only --collision-sizes 1024 --collision-targets near   # bench/_collision.py

Two cases on the Panda MJCF (``assets/panda``), f32 (``engine.init(backend=..., precision="32")``;
"gpu" falls back to the CPU where there is none):

* single-link: ``robot.inverse_kinematics("hand", pos, quat)``, full pose;
* multilink: ``robot.inverse_kinematics_multilink(["left_finger", "right_finger"], ...)`` with
  ``rot_mask=[False, False, True]`` (positions, and each finger's z axis along its target's).

Targets are FK of uniform random configurations within the joint limits (seeded; the same
configurations for every solver). The scene's state stays at the default pose, so every call
starts from it; the solver's other parameters are the API defaults (max_samples 50,
max_solver_iters 20, ``kernel="auto"``: the solver compiled for the Panda; ``--kernel generic``
runs the one compiled for every robot).

A call's cost depends on its targets: an env whose target needs many restarts makes its whole
call slow (with 16 envs, one hard target can double it). So each n_envs is timed over at least
``--min-targets`` (512) targets, split into batches of n_envs: a small batch size runs several
distinct batches (16 envs: 32 calls). One "cycle" calls every batch once; latency ("ms/call") is
the median cycle time divided by the number of batches, i.e. the mean cost of a call over the
batches, after a warm-up cycle that compiles the kernels; solves/s = n_envs / latency; "spread"
gives the fastest and slowest batch (the median of its own repeats). Success is checked
independently by FK of every returned qpos (``robot.forward_kinematics``): position error <= 5e-4
m and rotation angle <= 5e-3 rad (for the multilink z-axis mask: the angle between the link's and
the target's z axes). "rep" is the solver's own ``IKResult.success`` rate, for comparison.

Comparison: pytorch_kinematics' batched ``PseudoInverseIK`` on example-robot-data's Panda URDF
(chain base to ``panda_hand``), f32 on the CPU, max_iterations 20, default lr, tolerances as above,
``--pk-retries`` (10) initial configurations: the default pose plus seeded uniform random ones.
Its targets are its own FK of the same joint configurations (its base / hand frames may differ
from the MJCF's), and its answer per problem (first converged retry, else the lowest error) is
checked by its own FK with the same tolerances, over the same batches. It runs after ours in a child process, so torch's
OpenMP threads and taichi's CPU threads never share a process (on a 2-core machine pk's calls were
often ~10x slower after taichi kernels had run in the same process). On a machine shared with other
work torch's spinning OpenMP threads are very sensitive to the load: ``--pk-threads 1`` steadies pk's
figures there. pytorch_kinematics has no multilink IK ("n/a").
Install the comparison with::

    pip install torch==2.13.0 pytorch-kinematics      # or: pip install -e ".[bench]"

Without it the pk columns are skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing
import os
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]  # run from a checkout without installing
os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")  # engine imports taichi

from _collision import bench_collision  # noqa: E402
from _common import fmt_ms, fmt_pct, fmt_rate, median_time, print_table  # noqa: E402

import engine  # noqa: E402

SIZES = (1, 16, 256, 1024, 4096)
QUICK_SIZES = (16, 1024, 4096)
COLLISION_SIZES = (16, 1024, 4096)  # the collision-aware case (bench/_collision.py)
QUICK_PK_MAX_ENVS = 1024
POS_TOL = 5e-4
ROT_TOL = 5e-3
SINGLE_LINK = "hand"
MULTI_LINKS = ("left_finger", "right_finger")
MULTI_ROT_MASK = (False, False, True)
PK_END_LINK = "panda_hand"
PK_MAX_ITERATIONS = 20


# -- geometry ----------------------------------------------------------------------------------
def quat_angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle (rad) of the rotation between unit quaternions ``a`` and ``b`` (..., 4), wxyz."""
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    w = np.abs(np.sum(a * b, axis=-1))
    # the vector part of conj(a) * b, whose norm is sin(angle / 2)
    v = a[..., :1] * b[..., 1:] - b[..., :1] * a[..., 1:] - np.cross(a[..., 1:], b[..., 1:])
    return 2.0 * np.arctan2(np.linalg.norm(v, axis=-1), w)


def quat_z_axis(q: np.ndarray) -> np.ndarray:
    """The rotated z axis (..., 3) of wxyz quaternions (..., 4)."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    return np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=-1)


def vector_angle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Angle (rad) between vectors ``a`` and ``b`` (..., 3)."""
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, axis=-1))


# -- our solver --------------------------------------------------------------------------------
def random_qpos(lo: np.ndarray, hi: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``n`` uniform configurations within [lo, hi]; a smaller n gives a prefix of a larger one."""
    return np.random.default_rng(seed).uniform(lo, hi, (n, len(lo)))


def batches_of(lo: np.ndarray, hi: np.ndarray, n_envs: int, args) -> list[np.ndarray]:
    """Target configurations for n_envs: ``ceil(min_targets / n_envs)`` batches of n_envs rows."""
    count = max(1, -(-args.min_targets // n_envs))
    qpos = random_qpos(lo, hi, n_envs * count, args.seed)
    return [qpos[b * n_envs:(b + 1) * n_envs] for b in range(count)]


def time_cycle(calls: list, args) -> tuple[float, float, float]:
    """(mean seconds per call over one cycle of ``calls``, fastest call, slowest call)."""
    def cycle():
        for call in calls:
            call()

    per_call = median_time(cycle, warmup=0, min_repeats=args.repeats, budget_s=args.budget) / len(calls)
    if len(calls) == 1:
        return per_call, per_call, per_call
    each = [median_time(call, warmup=0, min_repeats=3, max_repeats=3) for call in calls]
    return per_call, min(each), max(each)


def bench_ours(n_envs: int, batches: list[np.ndarray], args) -> dict[str, dict]:
    """Latency and FK-checked success of both IK cases on a scene of ``n_envs`` envs, over ``batches``."""
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=n_envs)
    hand = robot.get_link(SINGLE_LINK).idx_local
    fingers = [robot.get_link(name).idx_local for name in MULTI_LINKS]
    common = dict(pos_tol=POS_TOL, rot_tol=ROT_TOL, seed=args.seed, return_info=True, kernel=args.kernel)
    goals = [tuple(np.asarray(a, np.float64) for a in robot.forward_kinematics(q)) for q in batches]

    def single(links_pos, links_quat):
        return lambda: robot.inverse_kinematics(SINGLE_LINK, links_pos[:, hand], links_quat[:, hand], **common)

    def multi(links_pos, links_quat):
        return lambda: robot.inverse_kinematics_multilink(
            list(MULTI_LINKS), [links_pos[:, i] for i in fingers], [links_quat[:, i] for i in fingers],
            rot_mask=list(MULTI_ROT_MASK), **common)

    def check_single(q, links_pos, links_quat):
        pos, quat = (np.asarray(a, np.float64) for a in robot.forward_kinematics(q))  # checked in f64
        pos_err = np.linalg.norm(pos[:, hand] - links_pos[:, hand], axis=-1)
        rot_err = quat_angle(quat[:, hand], links_quat[:, hand])
        return (pos_err <= POS_TOL) & (rot_err <= ROT_TOL)

    def check_multi(q, links_pos, links_quat):
        pos, quat = (np.asarray(a, np.float64) for a in robot.forward_kinematics(q))  # checked in f64
        pos_err = np.linalg.norm(pos[:, fingers] - links_pos[:, fingers], axis=-1)
        rot_err = vector_angle(quat_z_axis(quat[:, fingers]), quat_z_axis(links_quat[:, fingers]))
        return np.all((pos_err <= POS_TOL) & (rot_err <= ROT_TOL), axis=-1)

    out = {}
    for case, make, check in (("single", single, check_single), ("multi", multi, check_multi)):
        calls = [make(*goal) for goal in goals]
        ok, rep = [], []
        for call, goal in zip(calls, goals):  # warm-up (compiles the kernels) and the answers that are checked
            result = call()
            ok.append(check(result.qpos, *goal))
            rep.append(np.atleast_1d(result.success))
        ok, rep = np.concatenate(ok), np.concatenate(rep)
        seconds, fastest, slowest = time_cycle(calls, args)
        out[case] = dict(s=seconds, fastest=fastest, slowest=slowest, batches=len(calls), ok=float(ok.mean()),
                         rep=float(rep.mean()), disagree=int(np.sum(ok != rep)))
    current = robot.get_qpos()
    assert np.allclose(current, robot.tree.default_qpos, atol=1e-6), "IK changed the scene's state"
    scene.destroy()
    return out


# -- pytorch_kinematics --------------------------------------------------------------------------
class PkSingle:
    """pytorch_kinematics' batched PseudoInverseIK on the URDF Panda, base to ``panda_hand``."""

    def __init__(self, default_q: np.ndarray, args):
        import pytorch_kinematics as pk
        import torch

        self.pk, self.torch = pk, torch
        path = engine.assets.resolve("panda_urdf").path
        with open(path, "rb") as f, contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):  # its URDF parser prints unknown attributes
            chain = pk.build_serial_chain_from_urdf(f.read(), end_link_name=PK_END_LINK)
        self.chain = chain.to(dtype=torch.float32, device="cpu")
        self.dof = len(self.chain.get_joint_parameter_names())
        lo, hi = self.chain.get_joint_limits()
        self.limits = torch.tensor([lo, hi], dtype=torch.float32).T
        gen = torch.Generator().manual_seed(args.seed)
        span = self.limits[:, 1] - self.limits[:, 0]
        retry = torch.rand(args.pk_retries, self.dof, generator=gen) * span + self.limits[:, 0]
        retry[0] = torch.as_tensor(default_q[: self.dof], dtype=torch.float32)
        self.retry = retry
        self.args = args

    def bench(self, batches: list[np.ndarray]) -> dict:
        torch = self.torch
        ik = self.pk.PseudoInverseIK(self.chain, retry_configs=self.retry, joint_limits=self.limits,
                                     max_iterations=PK_MAX_ITERATIONS, pos_tolerance=POS_TOL,
                                     rot_tolerance=ROT_TOL)

        def solver(targets):
            def solve():
                sol = ik.solve(targets)
                score = sol.err_pos + sol.err_rot
                conv = sol.converged
                pick = torch.where(conv.any(dim=1), conv.to(torch.int8).argmax(dim=1), score.argmin(dim=1))
                return sol.solutions[torch.arange(len(pick)), pick], sol.converged_any
            return solve

        with torch.no_grad():
            targets = [self.chain.forward_kinematics(torch.as_tensor(q[:, : self.dof], dtype=torch.float32))
                       for q in batches]
        calls = [solver(t) for t in targets]
        oks, reps = [], []
        try:
            for call, target in zip(calls, targets):  # warm-up, and the answers that are checked
                answer, reported = call()
                with torch.no_grad():
                    got = self.chain.forward_kinematics(answer).get_matrix().double().numpy()
                want = target.get_matrix().double().numpy()
                pos_err = np.linalg.norm(got[:, :3, 3] - want[:, :3, 3], axis=-1)
                rot_err = (Rotation.from_matrix(want[:, :3, :3]).inv()
                           * Rotation.from_matrix(got[:, :3, :3])).magnitude()
                oks.append((pos_err <= POS_TOL) & (rot_err <= ROT_TOL))
                reps.append(reported.numpy())
            seconds, fastest, slowest = time_cycle(calls, self.args)
        except torch.linalg.LinAlgError as exc:  # its DLS step can hit an exactly singular matrix in f32
            return dict(error=f"pk raised LinAlgError: {str(exc).splitlines()[0]}")
        ok, rep = np.concatenate(oks), np.concatenate(reps)
        return dict(s=seconds, fastest=fastest, slowest=slowest, ok=float(ok.mean()), rep=float(rep.mean()),
                    disagree=int(np.sum(ok != rep)))


def run_pk(sizes, pk_max: int, lo: np.ndarray, hi: np.ndarray, default_q: np.ndarray, args) -> dict:
    """pk's figures for each n_envs <= ``pk_max`` and a line saying what ran (in the child process)."""
    try:
        import pytorch_kinematics  # noqa: F401
        import torch
    except ImportError as exc:
        return dict(results=None, note=f"pytorch_kinematics: not importable ({exc}); pk columns skipped. "
                                       "Install with: pip install torch==2.13.0 pytorch-kinematics")
    if args.pk_threads:
        torch.set_num_threads(args.pk_threads)
    solver = PkSingle(default_q, args)
    low, high = solver.limits[:, 0].numpy(), solver.limits[:, 1].numpy()
    results = {}
    for n in sizes:
        if n <= pk_max:
            # the URDF's arm limits are the MJCF's; the clip only guards against a future mismatch
            results[n] = solver.bench([np.clip(q[:, : solver.dof], low, high) for q in batches_of(lo, hi, n, args)])
            print(f"  pk   n_envs={n} done", file=sys.stderr, flush=True)
    note = (f"pytorch_kinematics {_version('pytorch-kinematics')}, torch {torch.__version__} "
            f"({torch.get_num_threads()} threads, own process): PseudoInverseIK, {args.pk_retries} retries, "
            f"max_iterations {PK_MAX_ITERATIONS}, f32, cpu")
    return dict(results=results, note=note)


def bench_pk(sizes, pk_max: int, lo: np.ndarray, hi: np.ndarray, default_q: np.ndarray,
             args) -> tuple[dict | None, str]:
    """:func:`run_pk` in a fresh process (no taichi threads beside torch's)."""
    if args.no_pk:
        return None, "pytorch_kinematics: skipped (--no-pk)"
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        out = pool.apply(run_pk, (list(sizes), pk_max, lo, hi, default_q, args))
    return out["results"], out["note"]


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


# -- report ------------------------------------------------------------------------------------
TARGETS = dict(single_16_ms=0.2, single_rate=100e3, multi_16_ms=1.0, multi_1024_rate=30e3)


def _rate(row: dict | None, n: int) -> float | None:
    return None if row is None or "s" not in row else n / row["s"]


def summary(ours: dict, pk: dict) -> tuple[str, str | None]:
    """The targets line, and a line comparing pk's figures at the same points (None without pk)."""

    def get(case, n):
        return ours.get((case, n))

    def mark(value, target, at_most):
        if value is None:
            return "not measured"
        return "met" if (value <= target if at_most else value >= target) else "MISSED"

    s16 = get("single", 16)["s"] if get("single", 16) else None
    m16 = get("multi", 16)["s"] if get("multi", 16) else None
    r1024, r4096 = _rate(get("single", 1024), 1024), _rate(get("single", 4096), 4096)
    m1024 = _rate(get("multi", 1024), 1024)
    parts = [
        f"single 16-env {fmt_ms(s16)} ms (target <= {TARGETS['single_16_ms']} ms: "
        f"{mark(None if s16 is None else s16 * 1e3, TARGETS['single_16_ms'], True)})",
        f"single {fmt_rate(r1024)}/s @1024 ({mark(r1024, TARGETS['single_rate'], False)}), "
        f"{fmt_rate(r4096)}/s @4096 ({mark(r4096, TARGETS['single_rate'], False)}) "
        f"(target >= {fmt_rate(TARGETS['single_rate'])}/s)",
        f"multi 16-env {fmt_ms(m16)} ms (target <= {TARGETS['multi_16_ms']} ms: "
        f"{mark(None if m16 is None else m16 * 1e3, TARGETS['multi_16_ms'], True)})",
        f"multi {fmt_rate(m1024)}/s @1024 (target >= {fmt_rate(TARGETS['multi_1024_rate'])}/s: "
        f"{mark(m1024, TARGETS['multi_1024_rate'], False)})",
    ]
    line = "SUMMARY: " + " | ".join(parts)
    if not pk:
        return line, None
    p16 = pk.get(16)
    pk_parts = [f"single 16-env {fmt_ms(p16['s']) if p16 and 's' in p16 else '-'} ms"]
    for n in (1024, 4096):
        pk_parts.append(f"{fmt_rate(_rate(pk.get(n), n))}/s @{n}")
    return line, "pk (same machine): " + ", ".join(pk_parts)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="gpu", choices=engine.runtime.backend.BACKENDS,
                        help='engine backend ("gpu" falls back to the CPU; default gpu)')
    parser.add_argument("--sizes", type=int, nargs="+", help=f"n_envs to run (default {' '.join(map(str, SIZES))})")
    parser.add_argument("--quick", action="store_true",
                        help=f"n_envs {' '.join(map(str, QUICK_SIZES))}, 3 repeats, pk up to {QUICK_PK_MAX_ENVS} envs")
    parser.add_argument("--no-pk", action="store_true", help="skip the pytorch_kinematics comparison")
    parser.add_argument("--pk-retries", type=int, default=10, help="pytorch_kinematics initial configurations")
    parser.add_argument("--pk-threads", type=int, help="torch threads for pk (default: torch's default)")
    parser.add_argument("--pk-max-envs", type=int, help="run pk only up to this n_envs (default: all)")
    parser.add_argument("--repeats", type=int, help="minimum timed repeats per figure (>= 3; default 5, quick 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random targets and restarts")
    parser.add_argument("--min-targets", type=int, default=512,
                        help="targets per n_envs, in batches of n_envs (default 512: 32 batches of 16 envs)")
    parser.add_argument("--kernel", default="auto", choices=("auto", "per_robot", "generic"),
                        help="which compiled IK solver runs (see engine.ik.KERNELS)")
    parser.add_argument("--collision-sizes", type=int, nargs="*", default=list(COLLISION_SIZES),
                        help="n_envs of the collision-aware case (bench/_collision.py; none: skip it; "
                             f"default {' '.join(map(str, COLLISION_SIZES))})")
    parser.add_argument("--collision-targets", nargs="*", default=["near", "far"], choices=("near", "far"),
                        help="target sets of the collision-aware case (default: both)")
    parser.add_argument("--collision-models", nargs="*", default=["new", "cover", "old"],
                        choices=("new", "cover", "old"), help="collision models of the collision-aware case "
                        "(default: all three)")
    parser.add_argument("--collision-only", action="store_true", help="run the collision-aware case only")
    args = parser.parse_args(argv)
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    if any(n < 1 for n in sizes):
        parser.error("--sizes: expected positive n_envs")
    if args.min_targets < 1:
        parser.error("--min-targets: expected a positive number")
    args.repeats = max(3, args.repeats or (3 if args.quick else 5))
    args.budget = 0.3 if args.quick else 1.5  # seconds of timed repeats per figure, beyond the minimum
    pk_max = args.pk_max_envs or (QUICK_PK_MAX_ENVS if args.quick else max(sizes))

    # quiet: taichi prints one "Starting on arch" line per backend it tries; the header says which won
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always", RuntimeWarning)
        arch = engine.init(backend=args.backend, precision="32", logging_level="error")
    notes = [str(w.message).removeprefix("init: ") for w in caught if str(w.message).startswith("init: ")]
    notes += [arch.timing_note()] if arch.timing_note() else []
    fell_back = f" ({'; '.join(notes)})" if notes else ""
    print(f"IK bench: Panda, f32, backend {args.backend!r} -> {arch.describe()}{fell_back}, {os.cpu_count()} CPUs; "
          f"kernel {args.kernel!r}; pos_tol {POS_TOL}, rot_tol {ROT_TOL}; "
          f"mean cost of a call over >= {args.min_targets} targets in batches of n_envs (median of >= "
          f"{args.repeats} cycles over the batches, after a warm-up)")

    if args.collision_only:
        collision_table(args)
        return
    probe = engine.Scene()
    robot = probe.add_entity(engine.morphs.MJCF(file="panda"))
    probe.build()
    lo, hi = robot.q_limits
    default_q = robot.tree.default_qpos.copy()
    probe.destroy()

    ours: dict[tuple[str, int], dict] = {}
    for n in sizes:
        res = bench_ours(n, batches_of(lo, hi, n, args), args)
        for case in ("single", "multi"):
            ours[(case, n)] = res[case]
        sys.stdout.flush()
        print(f"  ours n_envs={n} done", file=sys.stderr, flush=True)
    pk, pk_note = bench_pk(sizes, pk_max, lo, hi, default_q, args)
    print(pk_note)
    print()

    rows = []
    for n in sizes:
        for case in ("single", "multi"):
            r = ours[(case, n)]
            spread = f"{fmt_ms(r['fastest'])}-{fmt_ms(r['slowest'])}" if r["batches"] > 1 else "-"
            row = [case, n, r["batches"], fmt_ms(r["s"]), spread, fmt_rate(n / r["s"]), fmt_pct(r["ok"]),
                   fmt_pct(r["rep"])]
            if pk is not None:
                p = pk.get(n)
                if case == "multi":
                    row += ["n/a"] * 5
                elif p is None:
                    row += ["skipped"] + ["-"] * 4
                elif "error" in p:
                    row += ["error"] + ["-"] * 4
                else:
                    row += [fmt_ms(p["s"]), fmt_rate(n / p["s"]), fmt_pct(p["ok"]), fmt_pct(p["rep"]),
                            f"{p['s'] / r['s']:.1f}x"]
            rows.append(row)

    headers = ["case", "n_envs", "batches", "ms/call", "spread ms", "solves/s", "ok(FK)", "rep"]
    if pk is not None:
        headers += ["pk ms/call", "pk solves/s", "pk ok(FK)", "pk rep", "ours vs pk"]
    print_table(headers, rows, left=1)
    print()
    print("case single: link 'hand', full pose; multi: 'left_finger' + 'right_finger', positions + z axes "
          "(rot_mask [F, F, T]).")
    print("ms/call: mean over the batches; spread: fastest and slowest batch.")
    print("ok(FK): success checked by FK of the returned q; rep: the solver's own success flag (IKResult.success"
          + ("; pk: converged_any); ours vs pk: how many times faster per call." if pk is not None else ")."))
    notes = [f"ours {case} n_envs={n}: FK check and IKResult.success disagree on {r['disagree']} env(s)"
             for (case, n), r in ours.items() if r["disagree"]]
    notes += [f"pk n_envs={n}: {p['error']}" for n, p in (pk or {}).items() if "error" in p]
    notes += [f"pk n_envs={n}: FK check and converged_any disagree on {p['disagree']} problem(s)"
              for n, p in (pk or {}).items() if p.get("disagree")]
    for note in notes:
        print("note:", note)
    collision_table(args)
    line, pk_line = summary(ours, pk)
    if pk_line:
        print(pk_line)
    print(line)


def collision_table(args) -> None:
    """The collision-aware case (bench/_collision.py): near and far targets, the new, cover and old
    models, plain and avoiding side by side."""
    if not args.collision_sizes:
        return
    rows = []
    for kind in args.collision_targets:
        for n in args.collision_sizes:
            for model in args.collision_models:
                r = bench_collision(n, args, kind, model)
                p, a = r["plain"], r["avoid"]
                rows.append([kind, n, f"{model} ({r['spheres']})", r["batches"], fmt_ms(p["s"]), fmt_ms(a["s"]),
                             f"{p['s'] / a['s']:.2f}x", fmt_pct(p["good"]), fmt_pct(p["false"]), fmt_pct(a["ok"]),
                             fmt_pct(a["good"]), fmt_pct(a["false"])])
                print(f"  collision {kind} n_envs={n} model {model} done", file=sys.stderr, flush=True)
    print()
    print("collision-aware: Panda in scenes/panda_clutter.yaml (a table top, a pillar, a ball, a bar, a crate); "
          "targets: hand poses of configurations collision-free at mesh level (coal), near: within 4 cm of an "
          "obstacle, far: beyond; plain vs avoid_collisions=True, alternated")
    print_table(["targets", "n_envs", "model (spheres)", "batches", "plain ms", "avoid ms", "avoid/plain rate",
                 "plain good", "plain in coll", "avoid ok", "avoid good", "avoid false"], rows)
    print("good: success and mesh-free (coal); in coll / false: success yet colliding at mesh level (coal); "
          "model new: the cover fit and the links' hulls near contact (default), cover: its spheres alone, "
          "old: 8 spheres per link; rate: plain ms / avoid ms "
          "(goals: >= 0.25x near, >= 0.5x far, at 1024 envs).")

if __name__ == "__main__":
    main()
