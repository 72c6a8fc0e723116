"""Trajectory datasets (issue 30): ``engine.batch.solve(trajectory=, time=)`` solves each motion in
time order, velocity-limited after its first frame, whole trajectories per chunk, resumable.

The checks read the output dataset alone: each trajectory's rows sorted by its time column, the
joint moves between consecutive frames (from the output's q_ columns) within the velocity limit
times the time step, ``step`` equal to those moves, the successful rows' answers met by the engine's
FK of their qpos; an interrupted and resumed job identical to an uninterrupted one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _batch import fk_errors, qpos_of, read_sorted

import engine
import engine.batch
from engine.batch.settings import qpos_names

N_TRAJ, FRAMES, DT = 200, 300, 1.0 / 30  # trajectories, frames each, s per frame
V = 0.6  # rad/s: at most 0.02 rad per frame (the fastest paths need more: they lag)
SLACK = 2e-6  # float32 answers (rad)


@pytest.fixture(scope="module")
def panda():
    engine.init(backend="cpu")
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))  # the job's robot: the catalog's "panda"
    scene.build(n_envs=64)
    yield robot
    scene.destroy()


def _motions(seed: int = 3) -> pa.Table:
    """200 hand paths of 300 frames (circles of 5-12 cm at 0.2-0.6 laps/s around reachable centres,
    some faster than V allows), the rows shuffled, string trajectory ids, times from per-trajectory
    offsets."""
    rng = np.random.default_rng(seed)
    t = np.arange(FRAMES) * DT
    rows = []
    for e in range(N_TRAJ):
        c = np.array([0.45, 0.0, 0.45]) + rng.uniform(-0.1, 0.1, 3)
        r, w, phase = rng.uniform(0.05, 0.12), 2 * np.pi * rng.uniform(0.2, 0.6), rng.uniform(0, 2 * np.pi)
        pos = c + np.stack([0 * t, r * np.cos(w * t + phase), r * np.sin(w * t + phase)], axis=1)
        rows.append((np.full(FRAMES, f"traj-{e}"), 10.0 * e + t, pos))
    ids = np.concatenate([r[0] for r in rows])
    times = np.concatenate([r[1] for r in rows])
    pos = np.concatenate([r[2] for r in rows])
    shuffle = rng.permutation(len(ids))
    return pa.table({"x": pos[shuffle, 0], "y": pos[shuffle, 1], "z": pos[shuffle, 2], "motion": ids[shuffle],
                     "t": times[shuffle]})


def _solve(src, out, **kw):
    return engine.batch.solve("panda", src, "hand", out, rot_mask=(False, False, False), chunk=50, seed=4,
                              solver={"max_joint_velocity": V, "track": True}, trajectory="motion", time="t", **kw)


def test_200_trajectories_of_300_frames_resumed_equal_uninterrupted_within_the_limit(tmp_path, panda):
    src = tmp_path / "motions.parquet"
    pq.write_table(_motions(), src)
    whole = _solve(src, tmp_path / "whole")
    assert whole.chunks == 4 and whole.rows == N_TRAJ * FRAMES

    def stop_after_two(progress):
        if progress.chunks_done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _solve(src, tmp_path / "cut", progress=stop_after_two)
    assert engine.batch.finished_parts(tmp_path / "cut") == 2
    again = _solve(src, tmp_path / "cut")
    assert again.chunks_skipped == 2 and again.chunks_solved == 2
    a, b = read_sorted(tmp_path / "whole"), read_sorted(tmp_path / "cut")
    assert a.equals(b), "the resumed dataset differs from the uninterrupted one"

    # judged from the output alone
    table = a
    inp = pq.read_table(src)
    assert table.column("target").to_numpy().tolist() == list(range(N_TRAJ * FRAMES))
    assert table.column("motion").to_pylist() == inp.column("motion").to_pylist()  # carried with its row
    names = qpos_names(panda.tree)
    q = qpos_of(table, names)
    motion = np.array(table.column("motion").to_pylist())
    t = table.column("t").to_numpy()
    step = table.column("step").to_numpy()
    arm = names[:7]
    worst, at_limit = 0.0, 0
    for e in range(N_TRAJ):
        rows = np.flatnonzero(motion == f"traj-{e}")
        rows = rows[np.argsort(t[rows])]
        assert len(rows) == FRAMES
        moved = np.abs(np.diff(q[rows][:, :len(arm)], axis=0))  # (frames - 1, 7)
        bound = V * np.diff(t[rows])[:, None]
        assert (moved <= bound + SLACK).all(), f"trajectory {e}: a joint moved {moved.max():.5f} rad in a frame"
        np.testing.assert_allclose(step[rows[1:]], moved.max(axis=1), atol=1e-6)
        worst = max(worst, moved.max())
        at_limit += int((moved >= 0.999 * bound).any(axis=1).sum())
    assert worst >= V * DT - SLACK and at_limit > 0, "no frame reached the limit: the test means nothing"
    success = table.column("success").to_numpy()
    assert success.mean() > 0.9, success.mean()
    pos = np.stack([inp.column(c).to_numpy() for c in "xyz"], axis=1)[table.column("target").to_numpy()]
    ok = np.flatnonzero(success)[::37]  # a sample of the successful rows, checked by FK
    pos_err, _ = fk_errors(panda, q[ok], "hand", pos[ok], np.tile([1.0, 0, 0, 0], (len(ok), 1)))
    assert (pos_err <= 5e-4 * 1.05 + 1e-6).all(), pos_err.max()


def test_trajectory_arguments_are_checked(tmp_path, panda):
    src = tmp_path / "m.parquet"
    table = _motions().slice(0, 600)
    pq.write_table(table, src)
    with pytest.raises(ValueError, match="a trajectory job needs both columns"):
        engine.batch.solve("panda", src, "hand", tmp_path / "o", rot_mask=(False,) * 3, trajectory="motion")
    with pytest.raises(ValueError, match="no time column 'when'"):
        engine.batch.solve("panda", src, "hand", tmp_path / "o", rot_mask=(False,) * 3, trajectory="motion",
                           time="when")
    with pytest.raises(ValueError, match="max_joint_velocity: velocity-limited tracking applies to trajectory jobs"):
        engine.batch.solve("panda", src, "hand", tmp_path / "o", rot_mask=(False,) * 3,
                           solver={"track": True, "max_joint_velocity": 1.0})
    twice = table.set_column(4, "t", pa.array(np.zeros(600)))
    pq.write_table(twice, src)
    with pytest.raises(ValueError, match=r"column 't': time 0 s twice in trajectory 'traj-"):
        engine.batch.solve("panda", src, "hand", tmp_path / "o", rot_mask=(False,) * 3, trajectory="motion", time="t")
    assert not (tmp_path / "o").exists()


def test_the_plan_orders_rows_by_trajectory_then_time_and_chunks_whole_trajectories():
    from engine.batch.targets import numeric_column
    from engine.batch.trajectories import frame_dt, frame_rows, plan

    # rows of three trajectories, shuffled: "b" 3 frames, 7 (an integer id) 2 frames, "c" 4 frames
    ids = ["b", "7", "b", "c", "c", "7", "b", "c", "c"]
    t = [0.2, 5.0, 0.0, 1.0, 1.1, 4.0, 0.1, 1.3, 1.2]
    p = plan(pa.table({"id": ids, "t": t}), "id", "t", numeric_column)
    assert p.order.tolist() == [2, 6, 0, 5, 1, 3, 4, 8, 7]  # "b", then 7, then "c" (first appearance), by time
    assert p.bounds.tolist() == [0, 3, 5, 9] and p.n_trajectories == 3
    assert p.chunk_rows(2) == [5, 4] and p.chunk_rows(3) == [9] and p.chunk_rows(1) == [3, 2, 4]
    rows, times, lengths = p.chunk(1, 2)
    assert rows.tolist() == [3, 4, 8, 7] and lengths.tolist() == [4]
    rows, times, lengths = p.chunk(0, 2)
    assert frame_rows(lengths, 2).tolist() == [2, 4]  # trajectory 7 holds its last frame
    assert frame_dt(times, lengths, 1) == pytest.approx(0.1)  # min(0.1 s, 1.0 s)
    assert frame_dt(times, lengths, 2) == pytest.approx(0.1)  # only "b" still runs
