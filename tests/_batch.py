"""Helpers of the batch job tests: targets made from FK of random configurations, and the checks
of an output dataset (every row once, answers verified by FK of the returned qpos)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from engine.transforms import quat_conj, quat_mul, quat_to_rotvec

POS_TOL, ROT_TOL = 5e-4, 5e-3  # the solver's defaults; FK checks allow 5 % + 1e-6 over them


def random_poses(robot, links: list[str], n: int, seed: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{link: (pos (n, 3), quat (n, 4))}``: FK of ``n`` seeded uniform random configurations
    within the joint limits (reachable targets), on a scene of ``robot`` built with n envs."""
    lo, hi = robot.q_limits
    lo, hi = np.where(np.isfinite(lo), lo, -np.pi), np.where(np.isfinite(hi), hi, np.pi)
    q = np.random.default_rng(seed).uniform(lo, hi, (n, robot.n_qs))
    pos, quat = robot.forward_kinematics(q)
    out = {}
    for name in links:
        i = robot.get_link(name).idx_local
        out[name] = (pos[:, i].astype(np.float64), quat[:, i].astype(np.float64))
    return out


def target_table(poses: dict, prefixed: bool, **extra) -> pa.Table:
    """A targets table: ``x, y, z, qw, qx, qy, qz`` (``LINK.`` prefixed when ``prefixed``), plus ``extra``."""
    cols = {}
    for link, (pos, quat) in poses.items():
        p = f"{link}." if prefixed else ""
        cols.update({f"{p}{c}": pos[:, i] for i, c in enumerate("xyz")})
        cols.update({f"{p}{c}": quat[:, i] for i, c in enumerate(("qw", "qx", "qy", "qz"))})
    cols.update(extra)
    return pa.table(cols)


def read_sorted(out) -> pa.Table:
    """The whole dataset in ``out``, sorted by ``target`` (read in this thread: pyarrow's thread
    pool, once started, stays in the test process and grew later tests' memory, which some measure)."""
    table = pq.read_table(out, use_threads=False)
    return table.sort_by("target")


def check_complete(table: pa.Table, n: int) -> None:
    """Exactly one row per input row: ``target`` is 0 .. n-1, each once."""
    targets = table.column("target").to_numpy()
    assert table.num_rows == n, f"{table.num_rows} rows, expected {n}"
    assert len(np.unique(targets)) == n and targets.min() == 0 and targets.max() == n - 1


def qpos_of(table: pa.Table, q_names: list[str]) -> np.ndarray:
    return np.stack([table.column(c).to_numpy() for c in q_names], axis=1)


def fk_errors(robot, qpos: np.ndarray, link: str, pos: np.ndarray, quat: np.ndarray, z_only: bool = False):
    """Position (m) and rotation (rad) errors of ``link`` at ``qpos`` (rows in chunks of the scene's
    envs), measured by the engine's FK; ``z_only``: the angle between the link's and the target's z axes."""
    n_envs = len(robot.get_qpos())
    i = robot.get_link(link).idx_local
    fk_p, fk_q = [], []
    for start in range(0, len(qpos), n_envs):
        q = qpos[start:start + n_envs]
        pad = n_envs - len(q)
        if pad:
            q = np.concatenate([q, np.repeat(q[-1:], pad, 0)])
        p, r = robot.forward_kinematics(q)
        fk_p.append(p[:len(q) - pad, i])
        fk_q.append(r[:len(q) - pad, i])
    fk_p, fk_q = np.concatenate(fk_p), np.concatenate(fk_q)
    pos_err = np.linalg.norm(fk_p - pos, axis=1)
    if z_only:
        rot_err = np.arccos(np.clip(np.sum(_z_axis(fk_q) * _z_axis(quat), axis=1), -1, 1))
    else:
        rot_err = np.linalg.norm(quat_to_rotvec(quat_mul(fk_q, quat_conj(quat))), axis=-1)
    return pos_err, rot_err


def _z_axis(q: np.ndarray) -> np.ndarray:
    w, x, y, z = q.T
    return np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], axis=1)


def within(pos_err, rot_err) -> np.ndarray:
    return (pos_err <= POS_TOL * 1.05 + 1e-6) & (rot_err <= ROT_TOL * 1.05 + 1e-6)


def part_states(out) -> dict[str, tuple[int, int, str]]:
    """``{part name: (inode, mtime_ns, sha256)}`` of every part file in ``out``."""
    states = {}
    for p in sorted(Path(out).glob("part-*.parquet")):
        st = p.stat()
        states[p.name] = (st.st_ino, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return states
