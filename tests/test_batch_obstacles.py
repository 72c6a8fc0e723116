"""Batch jobs among obstacles: ``engine.batch.solve(..., obstacles=scene_file)`` places a scene
file's obstacles in every worker's scene, and with ``avoid_collisions`` among the solver settings
every answer the dataset marks successful is clear of them (the sphere model, which bounds the
meshes, on a scene built from the same file); ``ikstudio solve --avoid-collisions --obstacles``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from _batch import read_sorted

import engine
import engine.batch
from app.cli import commands as cli
from engine.collision.robot import sample_qpos
from engine.scenefile import build, load

CLUTTER = Path(__file__).resolve().parent.parent / "scenes" / "panda_clutter.yaml"
N = 96


@pytest.fixture(scope="module")
def clutter():
    engine.init(backend="cpu", precision="32")
    scene, runner = build(load(CLUTTER), n_envs=N)
    return runner.robot


@pytest.fixture(scope="module")
def targets(clutter):
    """Hand poses of N configurations clear of the clutter (a Table of x, y, z, qw, qx, qy, qz)."""
    robot = clutter
    q = sample_qpos(robot.tree, N * 8, seed=3)
    free = np.concatenate([q[k * N:(k + 1) * N][~robot.in_collision(q[k * N:(k + 1) * N])] for k in range(8)])[:N]
    assert len(free) == N
    pos, quat = robot.forward_kinematics(free)
    hand = robot.get_link("panda_hand").idx_local
    p, w = np.asarray(pos[:, hand], float), np.asarray(quat[:, hand], float)
    return pa.table({"x": p[:, 0], "y": p[:, 1], "z": p[:, 2], "qw": w[:, 0], "qx": w[:, 1], "qy": w[:, 2],
                     "qz": w[:, 3]})


def _qpos(table: pa.Table, robot) -> np.ndarray:
    names = [c for c in table.column_names if c.startswith("q_")]
    assert len(names) == robot.n_qs
    return np.stack([table.column(c).to_numpy() for c in names], axis=1)


def test_a_job_among_obstacles_keeps_clear_of_them(tmp_path, clutter, targets):
    robot = clutter
    runs = {}
    for avoid in (False, True):
        engine.batch.solve("panda_urdf", targets, "panda_hand", tmp_path / f"out{avoid}", chunk=48, seed=1,
                           solver={"avoid_collisions": avoid}, obstacles=CLUTTER)
        table = read_sorted(tmp_path / f"out{avoid}")
        ok = table.column("success").to_numpy()
        runs[avoid] = ok, robot.in_collision(_qpos(table, robot))
    plain_ok, plain_hit = runs[False]
    ok, hit = runs[True]
    print(f"plain: {plain_ok.mean():.3f} solved, {np.sum(plain_ok & plain_hit)} in collision; avoiding: "
          f"{ok.mean():.3f} solved, {np.sum(ok & hit)} in collision")
    assert np.any(plain_ok & plain_hit)  # the clutter is in the way of some plain answers
    assert ok.mean() >= 0.95 and not np.any(ok & hit)


def test_the_command_line_takes_obstacles(tmp_path, capsys, clutter, targets):
    import pyarrow.parquet as pq

    src = tmp_path / "t.parquet"
    pq.write_table(targets.slice(0, 16), src)
    code = cli.main(["solve", "panda_urdf", "--link", "panda_hand", "--targets", str(src), "--out", str(tmp_path / "o"),
                     "--backend", "cpu", "--no-progress", "--json", "--avoid-collisions", "--collision-margin", "0.005",
                     "--obstacles", str(CLUTTER)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out)["rows_solved"] == 16
    manifest = json.loads((tmp_path / "o" / "_ikstudio_solve.json").read_text())
    settings = manifest["settings"]
    assert settings["solver"]["avoid_collisions"] is True and settings["solver"]["collision_margin"] == 0.005
    assert len(settings["obstacles"]) == 64  # the obstacle file's SHA-256: part of what a resume must repeat
    table = read_sorted(tmp_path / "o")
    ok = table.column("success").to_numpy()
    assert ok.any() and not clutter.in_collision(_qpos(table, clutter).repeat(N // 16, axis=0), margin=0.005)[
        np.repeat(ok, N // 16)].any()
