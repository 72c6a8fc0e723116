"""bench/plan.py's side-by-side run of Genesis' ``plan_path`` (bench/plan_genesis.py, a child process).

Genesis lives in its own interpreter (its taichi fork and torch must not meet the engine's), so the
problems travel in an .npz and the answers come back as JSON lines on the child's stdout and the
paths in another .npz. Valid paths of both planners can then be judged at mesh level along every
segment (Pinocchio + coal, tests/_plan_judge.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CHILD = HERE / "plan_genesis.py"


def genesis_python(given: str | None) -> str | None:
    """The interpreter that has ``genesis-world``: ``given``, else ``$GENESIS_PYTHON``, else this one
    when it can import ``genesis``; None when there is none."""
    given = given or os.environ.get("GENESIS_PYTHON")
    if given:
        return given
    return sys.executable if importlib.util.find_spec("genesis") else None


def resolved_urdf(robot, folder: Path) -> Path:
    """A copy of ``robot``'s URDF in ``folder`` with every ``package://`` URI made an absolute path
    (Genesis' URDF loader does not search ROS package folders); the file is otherwise unchanged."""
    from engine.assets import resolve_package_uri

    src = Path(robot.tree.source)
    text = src.read_text()

    def absolute(match):
        found = resolve_package_uri(match.group(1), src)
        if found is None:
            raise FileNotFoundError(f"{src}: cannot resolve {match.group(1)!r}")
        return f'filename="{found}"'

    out = folder / src.name
    out.write_text(re.sub(r'filename="(package://[^"]+)"', absolute, text))
    return out


def run_genesis(python: str, robot, clutter, problems: dict, *, num_waypoints: int, repeats: int,
                timeout_s: float, log: Path) -> tuple[list[dict], dict]:
    """Run bench/plan_genesis.py under ``python`` on ``problems`` ``{n: (start, goal)}`` (rad, m).

    Returns its JSON lines (one dict per size: ``n``, ``build_s``, ``first_s``, ``times_s``,
    ``valid``) and its paths ``{n: (path (T, n, n_qs), valid (n,))}``. Genesis' log goes to ``log``.
    Raises RuntimeError (naming the log) when the child fails or runs past ``timeout_s`` seconds.
    """
    with tempfile.TemporaryDirectory(prefix="plan_genesis_") as tmp:
        tmp = Path(tmp)
        names = q_joint_names(robot)
        arrays = {f"{k}_{n}": v for n, (s, g) in problems.items() for k, v in (("start", s), ("goal", g))}
        np.savez(tmp / "problems.npz", urdf=str(resolved_urdf(robot, tmp)), clutter=json.dumps(clutter),
                 joint_names=np.array(names), sizes=np.array(sorted(problems)), num_waypoints=num_waypoints,
                 repeats=repeats, seed=0, **arrays)
        with open(log, "w") as err:
            try:
                proc = subprocess.run([python, str(CHILD), str(tmp / "problems.npz"), str(tmp / "paths.npz")],
                                      stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired as exc:
                raise RuntimeError(f"Genesis ran past {timeout_s:.0f} s (its log: {log})") from exc
        if proc.returncode != 0:
            raise RuntimeError(f"Genesis' run failed with exit code {proc.returncode} (its log: {log})")
        rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
        with np.load(tmp / "paths.npz") as data:
            paths = {n: (data[f"path_{n}"], data[f"valid_{n}"]) for n in problems}
    return rows, paths


def q_joint_names(robot) -> list[str]:
    """The name of the joint owning each q of ``robot`` (``(n_qs,)``, in q order)."""
    names = [""] * robot.n_qs
    for joint in robot.joints:
        for q in joint.qs_idx_local:
            names[q] = joint.name
    return names


def judge_free(robot, clutter, path: np.ndarray, valid: np.ndarray, start: np.ndarray, goal: np.ndarray) -> dict:
    """Mesh-level verdicts (tests/_plan_judge.py) on the paths ``path (T, n, n_qs)`` that ``valid``
    marks: ``valid`` (how many), ``free`` (free along every segment), ``at_waypoint`` (colliding at
    one of the returned waypoints itself), ``between`` (free at every waypoint but colliding between
    two), ``ends_off`` (not starting at ``start`` / ending at ``goal`` ``(n, n_qs)`` within 1e-4 rad
    or m: a wrong problem, never expected) and ``seconds`` (the judging's wall time)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from _plan_judge import SegmentJudge

    import engine as gs

    kinds = {"box": gs.morphs.Box, "cylinder": gs.morphs.Cylinder, "sphere": gs.morphs.Sphere}
    judge = SegmentJudge(robot, [kinds[kind](fixed=True, **kw) for kind, kw in clutter])
    t0 = time.perf_counter()
    out = dict(valid=0, free=0, at_waypoint=0, between=0, ends_off=0)
    for e in np.flatnonzero(valid):
        p = path[:, e].astype(float)
        out["valid"] += 1
        out["ends_off"] += int(max(np.abs(p[0] - start[e]).max(), np.abs(p[-1] - goal[e]).max()) > 1e-4)
        if judge.path_free(p):
            out["free"] += 1
        elif any(min(w.min(), s.min(initial=np.inf)) <= 0 for w, s in map(judge.clearances, p)):
            out["at_waypoint"] += 1
        else:
            out["between"] += 1
    out["seconds"] = time.perf_counter() - t0
    return out


def table(ours: dict, rows: list[dict], judged: dict) -> str:
    """The side-by-side table: ``ours`` ``{n: (s per batch, valid share)}``, Genesis' ``rows`` and
    ``judged`` ``{(who, n): judge_free's dict}`` (mesh-level)."""
    head = (f"{'n_envs':>7} {'ours s':>8} {'GS s':>8} {'GS first':>9} {'GS build':>9} {'ours p/s':>9} "
            f"{'GS p/s':>8} {'ratio':>7} {'ours ok':>8} {'GS ok':>7} {'ours mesh-free':>15} {'GS mesh-free':>13}")
    lines = [head]
    for row in rows:
        n = row["n"]
        t_ours, ok_ours = ours[n]
        t_gs = statistics.median(row["times_s"]) if row["times_s"] else row["first_s"]
        mesh = {who: "-" if (who, n) not in judged else "{free}/{valid}".format(**judged[(who, n)])
                for who in ("ours", "genesis")}
        lines.append(f"{n:>7} {t_ours:>8.2f} {t_gs:>8.2f} {row['first_s']:>9.1f} {row['build_s']:>9.1f} "
                     f"{n / t_ours:>9.1f} {n / t_gs:>8.2f} {t_gs / t_ours:>6.0f}x {ok_ours:>8.0%} "
                     f"{row['valid']:>7.0%} {mesh['ours']:>15} {mesh['genesis']:>13}")
    return "\n".join(lines)
