"""``engine.batch.solve`` in this process: formats in and out, multilink jobs, resuming, refusals.

Answers are checked by FK of the returned qpos (``robot.forward_kinematics``), never by the
solver's own flags alone. Ray runs are in ``test_batch_ray.py``; the command line, signals and
bad-input messages in ``test_batch_cli.py``.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from _batch import check_complete, fk_errors, part_states, qpos_of, random_poses, read_sorted, target_table, within

import engine
import engine.batch
from engine.batch import dataset
from engine.batch.settings import chunk_seed, qpos_names

RUN_LAST = True  # uses pyarrow in the test process: see tests/conftest.py

N = 3000


@pytest.fixture(scope="module")
def panda():
    engine.init(backend="cpu")
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=1024)
    yield robot
    scene.destroy()


@pytest.fixture(scope="module")
def poses(panda):
    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.MJCF(file="panda"))
    scene.build(n_envs=N)
    out = random_poses(robot, ["hand", "left_finger", "right_finger"], N, seed=3)
    scene.destroy()
    return out


def test_parquet_in_parquet_dataset_out_with_carried_columns(tmp_path, panda, poses):
    ids = np.arange(N, dtype=np.int64) * 10 + 7
    labels = np.array([f"grasp-{i % 13}" for i in range(N)])
    src = tmp_path / "t.parquet"
    pq.write_table(target_table({"hand": poses["hand"]}, prefixed=False, id=ids, label=labels), src)
    out = tmp_path / "out"
    summary = engine.batch.solve("panda", src, "hand", out, chunk=1024, seed=5)
    assert (summary.rows, summary.rows_solved, summary.chunks, summary.chunks_solved) == (N, N, 3, 3)
    assert sorted(p.name for p in out.iterdir()) == ["_ikstudio_solve.json", "_ikstudio_solve.lock",
                                                     "part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    table = read_sorted(out)
    check_complete(table, N)
    q_names = qpos_names(panda.tree)
    assert table.column_names == ["target", *q_names, "success", "pos_error", "rot_error", "iterations", "id", "label"]
    assert table.schema.field("id").type == pa.int64() and table.column("id").to_numpy().tolist() == ids.tolist()
    assert table.column("label").to_pylist() == labels.tolist()
    pos, quat = poses["hand"]
    pos_err, rot_err = fk_errors(panda, qpos_of(table, q_names), "hand", pos, quat)
    ok = within(pos_err, rot_err)
    success = table.column("success").to_numpy()
    assert ok.mean() >= 0.99 and np.all(ok[success]), "a row flagged successful fails the FK check"
    assert summary.succeeded == success.sum() and summary.success_rate == pytest.approx(success.mean())
    np.testing.assert_allclose(table.column("pos_error").to_numpy(), pos_err, atol=2e-5)
    assert table.column("iterations").type == pa.int32()
    manifest = json.loads((out / "_ikstudio_solve.json").read_text())
    assert manifest["input"]["rows"] == N and manifest["settings"]["seed"] == 5 and manifest["chunks"] == 3
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_parquet(out, use_threads=False)
    assert len(frame) == N and set(frame["target"]) == set(range(N))


def test_a_row_is_the_in_process_call_of_its_chunk(tmp_path, panda, poses):
    """Chunk k is one ``inverse_kinematics`` call seeded chunk_seed(seed, k) from the default pose."""
    pos, quat = poses["hand"]
    out = tmp_path / "out"
    engine.batch.solve("panda", {c: v for c, v in zip("xyz", pos.T)} | dict(zip(("qw", "qx", "qy", "qz"), quat.T)),
                       "hand", out, chunk=1024, seed=9)
    table = read_sorted(out)
    start = 1024
    res = panda.inverse_kinematics("hand", pos=pos[start:start + 1024], quat=quat[start:start + 1024],
                                   init_qpos=panda.get_qpos(), seed=chunk_seed(9, 1), return_info=True)
    got = qpos_of(table, qpos_names(panda.tree))[start:start + 1024]
    np.testing.assert_array_equal(got, res.qpos)


def test_csv_and_npz_multilink_with_per_link_masks(tmp_path, panda, poses):
    fingers = {k: poses[k] for k in ("left_finger", "right_finger")}
    table = target_table(fingers, prefixed=True, id=np.arange(N))
    csv_path, npz_path = tmp_path / "t.csv", tmp_path / "t.npz"
    pacsv.write_csv(table, csv_path)
    np.savez(npz_path, **{c: table.column(c).to_numpy() for c in table.column_names})
    masks = {"left_finger": "0,0,1", "right_finger": [False, False, True]}
    results = []
    for src in (csv_path, npz_path):
        out = tmp_path / f"out_{src.suffix[1:]}"
        summary = engine.batch.solve("panda", src, ["left_finger", "right_finger"], out, rot_mask=masks, chunk=1500)
        assert summary.rows == N and summary.chunks == 2
        result = read_sorted(out)
        check_complete(result, N)
        assert {"left_finger.pos_error", "left_finger.rot_error", "right_finger.pos_error",
                "right_finger.rot_error", "id"} <= set(result.column_names)
        assert "pos_error" not in result.column_names
        results.append(result)
    q = qpos_of(results[0], qpos_names(panda.tree))
    ok = np.ones(N, bool)
    for link in fingers:
        pos, quat = fingers[link]
        ok &= within(*fk_errors(panda, q, link, pos, quat, z_only=True))
    assert ok.mean() >= 0.97
    assert np.all(ok[results[0].column("success").to_numpy()])
    # the CSV's decimal text and the npz's float64 give (nearly) the same targets: the same answers
    np.testing.assert_allclose(q, qpos_of(results[1], qpos_names(panda.tree)), atol=1e-3)


def test_resume_solves_only_the_missing_chunks_and_leaves_the_others(tmp_path, panda, poses):
    src = tmp_path / "t.parquet"
    pq.write_table(target_table({"hand": poses["hand"]}, prefixed=False), src)
    out = tmp_path / "out"
    first = engine.batch.solve("panda", src, "hand", out, chunk=500)
    assert first.chunks == 6
    before = part_states(out)
    reference = read_sorted(out)
    for name in ("part-00001.parquet", "part-00004.parquet"):
        os.unlink(out / name)
    (out / ".part-00004.parquet.tmp-99999").write_bytes(b"half a part")  # a killed run's leftover
    notes = []
    again = engine.batch.solve("panda", src, "hand", out, log=notes.append)  # chunk: the job's own
    assert (again.chunks_skipped, again.chunks_solved, again.rows_skipped) == (4, 2, 2000)
    assert notes and "4 of 6 chunks" in notes[0]
    after = part_states(out)
    assert sorted(after) == sorted(before)
    for name, state in before.items():
        if name not in ("part-00001.parquet", "part-00004.parquet"):
            assert after[name] == state, f"{name} was rewritten"
    assert after["part-00004.parquet"][2] == before["part-00004.parquet"][2]  # the same bytes again
    assert not list(out.glob(".part-*"))
    assert read_sorted(out).equals(reference)
    assert again.succeeded == first.succeeded
    done = engine.batch.solve("panda", src, "hand", out)
    assert done.chunks_solved == 0 and done.rows == N and part_states(out) == after


def test_another_jobs_folder_is_refused(tmp_path, panda, poses):
    src = tmp_path / "t.parquet"
    pq.write_table(target_table({"hand": poses["hand"]}, prefixed=False), src)
    out = tmp_path / "out"
    engine.batch.solve("panda", src, "hand", out, chunk=1500)
    with pytest.raises(ValueError, match=r"holds another job's parts: seed \(0 there, 1 now\)"):
        engine.batch.solve("panda", src, "hand", out, seed=1)
    with pytest.raises(ValueError, match=r"solver\.damping \(0\.01 there, 0\.02 now\)"):
        engine.batch.solve("panda", src, "hand", out, solver={"damping": 0.02})
    with pytest.raises(ValueError, match=r"chunk \(1500 there, 1000 now\)"):
        engine.batch.solve("panda", src, "hand", out, chunk=1000)
    changed = tmp_path / "t2.parquet"
    pos, quat = poses["hand"]
    pq.write_table(target_table({"hand": (pos + [0, 0, 1e-3], quat)}, prefixed=False), changed)
    with pytest.raises(ValueError, match=r"the input \(3,000 rows, sha256 \w+ there; 3,000 rows, sha256 \w+ now\)"):
        engine.batch.solve("panda", changed, "hand", out)
    with pytest.raises(ValueError, match="pos_masks"):
        engine.batch.solve("panda", src, "hand", out, pos_mask=[1, 1, 0])
    # a folder of another tool, or of parts without their manifest
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"holds 1 other files \(notes.txt, ...\) and no manifest"):
        engine.batch.solve("panda", src, "hand", other)
    orphan = tmp_path / "orphan"
    orphan.mkdir()
    os.link(out / "part-00000.parquet", orphan / "part-00000.parquet")
    with pytest.raises(ValueError, match="holds 1 part files of another job and no manifest"):
        engine.batch.solve("panda", src, "hand", orphan)
    # a part of another job slipped into this one's folder: its bytes are not the ones the manifest
    # records, so it is removed and its chunk solved again, saying so
    reference = read_sorted(out)
    second = tmp_path / "second"
    engine.batch.solve("panda", src, "hand", second, chunk=1500, seed=1)
    os.unlink(out / "part-00001.parquet")
    os.link(second / "part-00001.parquet", out / "part-00001.parquet")
    notes = []
    again = engine.batch.solve("panda", src, "hand", out, log=notes.append)
    assert again.chunks_solved == 1 and any("part-00001.parquet': its bytes do not match" in n for n in notes), notes
    assert read_sorted(out).equals(reference)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(ValueError, match="is a file; expected a folder"):
        engine.batch.solve("panda", src, "hand", a_file)


def test_one_job_at_a_time_per_folder(tmp_path, panda, poses):
    src = tmp_path / "t.parquet"
    pq.write_table(target_table({"hand": poses["hand"]}, prefixed=False), src)
    out = tmp_path / "out"
    out.mkdir()
    manifest_free = dataset.Output(out, {}, [1])
    manifest_free._lock()  # another process's job holds the folder
    try:
        with pytest.raises(RuntimeError, match="another job is writing to"):
            engine.batch.solve("panda", src, "hand", out)
    finally:
        manifest_free.close()
    assert engine.batch.solve("panda", src, "hand", out).rows == N


def test_solver_settings_from_a_file_and_their_errors(tmp_path, panda, poses):
    src = tmp_path / "t.parquet"
    pq.write_table(target_table({"hand": poses["hand"]}, prefixed=False), src)
    good = tmp_path / "solver.yaml"
    good.write_text("max_samples: 3\nmax_solver_iters: 30\ndamping: 0.02\nseed: 4\nkernel: generic\n")
    out = tmp_path / "out"
    engine.batch.solve("panda", src, "hand", out, solver=good, chunk=3000)
    settings = json.loads((out / "_ikstudio_solve.json").read_text())["settings"]
    assert settings["seed"] == 4 and settings["solver"]["max_samples"] == 3
    assert settings["solver"]["kernel"] == "generic" and settings["solver"]["damping"] == 0.02
    scene_file = tmp_path / "scene.yaml"
    scene_file.write_text("robot: panda\nsolver: {max_samples: 3, max_solver_iters: 30, damping: 0.02, seed: 4, "
                          "kernel: generic}\n")
    assert engine.batch.solve("panda", src, "hand", out, solver=scene_file).chunks_solved == 0  # the same job
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_samples: 3\ndamping: -1\n")
    with pytest.raises(ValueError, match=r"bad.yaml: damping: expected a positive number, got -1 \(line 2\)"):
        engine.batch.solve("panda", src, "hand", tmp_path / "o2", solver=bad)
    with pytest.raises(ValueError, match=r"solver.max_samples: expected an integer in \[1, 10000\]"):
        engine.batch.solve("panda", src, "hand", tmp_path / "o2", solver={"max_samples": 0})
    with pytest.raises(ValueError, match="unknown"):
        engine.batch.solve("panda", src, "hand", tmp_path / "o2", solver={"dampng": 0.1})
    assert not (tmp_path / "o2").exists()


def test_interrupting_the_python_call_keeps_finished_parts(tmp_path, panda, poses):
    src = tmp_path / "t.parquet"
    pq.write_table(target_table({"hand": poses["hand"]}, prefixed=False), src)
    out = tmp_path / "out"

    def stop_after_two(progress):
        if progress.chunks_done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engine.batch.solve("panda", src, "hand", out, chunk=500, progress=stop_after_two)
    assert engine.batch.finished_parts(out) == 2 and not list(out.glob(".part-*"))
    again = engine.batch.solve("panda", src, "hand", out)
    assert again.chunks_skipped == 2 and again.chunks_solved == 4
    check_complete(read_sorted(out), N)


def test_chunk_seeds_are_fixed_and_spread():
    seeds = [chunk_seed(0, k) for k in range(1000)]
    assert len(set(seeds)) == 1000 and all(0 <= s < 2**31 for s in seeds)
    assert chunk_seed(0, 1) != chunk_seed(1, 0)
    assert chunk_seed(7, 3) == chunk_seed(7, 3) == 608795752  # part of the format: never changes


def test_joining_ray_picks_the_address_and_keeps_the_sigterm_handler(monkeypatch):
    import signal

    from engine.batch import cluster

    calls = []

    class FakeRay:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kwargs):
            calls.append(kwargs)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # as ray.init does: its own handler

    def mine(signum, frame):
        pass

    monkeypatch.setattr(cluster, "ray_module", lambda: FakeRay)
    previous = signal.signal(signal.SIGTERM, mine)
    try:
        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        assert cluster.connect(True)[1:] == (True, "local")
        assert calls[-1]["address"] == "local" and calls[-1]["include_dashboard"] is False
        assert signal.getsignal(signal.SIGTERM) is mine
        monkeypatch.setenv("RAY_ADDRESS", "10.0.0.5:6379")
        assert cluster.connect(True)[1:] == (False, "10.0.0.5:6379")
        assert cluster.connect("auto")[1:] == (False, "auto") and "include_dashboard" not in calls[-1]
        with pytest.raises(ValueError, match="ray: expected True, 'auto' or a cluster address"):
            cluster.connect(6379)
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_morphs_placement_travels_with_the_job(tmp_path, poses):
    """A morph placed elsewhere (or a built entity's) is rebuilt the same way by every worker."""
    pos, quat = poses["hand"]
    lifted = engine.morphs.MJCF(file="panda", pos=(0.0, 0.0, 0.5))
    out = tmp_path / "out"
    summary = engine.batch.solve(lifted, target_table({"hand": (pos + [0, 0, 0.5], quat)}, prefixed=False), "hand",
                                 out, chunk=1500)
    assert summary.success_rate >= 0.99
    settings = json.loads((out / "_ikstudio_solve.json").read_text())["settings"]
    assert settings["robot"]["options"] == {"pos": [0.0, 0.0, 0.5]}
    with pytest.raises(ValueError, match=r"robot.options.pos \(\[0.0, 0.0, 0.5\] there, None now\)"):
        engine.batch.solve("panda", target_table({"hand": (pos + [0, 0, 0.5], quat)}, prefixed=False), "hand", out)
