"""``engine.batch.solve(ray=...)`` on a local Ray cluster (``ray.init(num_cpus=2)``, started and
stopped by this module's child process, ``_batch_ray_driver.py``): 40,000 Panda targets through
Parquet, the same dataset bit for bit as the in-process run, answers judged by Pinocchio's FK on
a sample, and a worker process killed mid-run. Ray starts in a few seconds; each job's two
workers take a few more to build their scene and load the compiled solver from taichi's disk
cache, so the module keeps to two Ray jobs, in one cluster.
"""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _batch import check_complete, fk_errors, qpos_of, random_poses, read_sorted, target_table, within

import engine
import engine.batch
from engine import model, morphs
from engine.batch.settings import qpos_names

RUN_LAST = True  # uses pyarrow in the test process: see tests/conftest.py

pytest.importorskip("ray")
N = 40_000
ROBOT, LINK = "panda_urdf", "panda_hand"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def local_job(tmp_path_factory):
    """40k targets (FK of random configurations) in a Parquet file, and the in-process job's dataset."""
    engine.init(backend="cpu")
    tmp = tmp_path_factory.mktemp("batch_ray")
    scene = engine.Scene()
    robot = scene.add_entity(morphs.URDF(file=ROBOT, fixed=True))
    scene.build(n_envs=N)
    pos, quat = random_poses(robot, [LINK], N, seed=11)[LINK]
    scene.destroy()
    src = tmp / "targets.parquet"
    pq.write_table(target_table({LINK: (pos, quat)}, prefixed=False, id=np.arange(N) + 100,
                                label=np.array(["a", "b", "c", "d"])[np.arange(N) % 4]), src)
    out = tmp / "local"
    summary = engine.batch.solve(ROBOT, src, LINK, out, seed=2)
    assert summary.chunks == 10 and summary.ray is None
    return {"src": src, "out": out, "pos": pos, "quat": quat, "tmp": tmp, "summary": summary}


@pytest.fixture(scope="module")
def ray_runs(local_job):
    """The two Ray jobs' summaries (``{"plain": ..., "killed": ...}``), run by the child process."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(REPO / "tests" / "_batch_ray_driver.py"), ROBOT, LINK,
                           str(local_job["src"]), str(local_job["tmp"]), "2"], capture_output=True, text=True,
                          cwd=REPO, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {run["run"]: run for run in runs}


def _same_dataset(a, b) -> None:
    names = sorted(p.name for p in a.glob("part-*.parquet"))
    assert names == sorted(p.name for p in b.glob("part-*.parquet")) and len(names) == 10
    for name in names:
        assert filecmp.cmp(a / name, b / name, shallow=False), f"{name} differs"


def _pinocchio_check(table, pos, quat, sample: np.ndarray) -> np.ndarray:
    """Per sampled row: whether Pinocchio's FK of the returned qpos meets the target."""
    from pinref import PinReference
    from scipy.spatial.transform import Rotation

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = model.load(morphs.URDF(file=ROBOT, fixed=True))
    ref = PinReference(tree)
    hand = tree.link_names().index(LINK)
    q = qpos_of(table, qpos_names(tree))
    ok = []
    for i in sample:
        rots, poss = ref.link_poses(q[i].astype(np.float64))
        target_rot = Rotation.from_quat(quat[i], scalar_first=True).as_matrix()
        angle = Rotation.from_matrix(rots[hand].T @ target_rot).magnitude()
        ok.append(within(np.linalg.norm(poss[hand] - pos[i]), angle))
    return np.array(ok)


def test_ray_job_is_the_local_job_bit_for_bit_and_right_by_pinocchio(ray_runs, local_job):
    out = local_job["tmp"] / "ray"
    summary = ray_runs["plain"]
    assert summary["ray"] == "connected" and summary["workers"] == 2 and summary["rows_solved"] == N
    assert summary["retried"] == 0 and summary["succeeded"] == local_job["summary"].succeeded
    # the workers wrote the kernels they compiled to taichi's disk cache when the job ended (a Ray
    # worker is killed, and taichi writes that cache only when its runtime ends): the next job loads them
    assert summary["cache_files"], "a finished Ray job's workers left nothing in taichi's disk cache"
    _same_dataset(local_job["out"], out)
    table = read_sorted(out)
    check_complete(table, N)
    assert table.column("id").to_numpy().tolist() == (np.arange(N) + 100).tolist()
    success = table.column("success").to_numpy()
    assert success.mean() >= 0.99
    pos, quat = local_job["pos"], local_job["quat"]
    sample = np.random.default_rng(0).choice(N, 300, replace=False)
    by_pinocchio = _pinocchio_check(table, pos, quat, sample)
    assert by_pinocchio.mean() >= 0.99 and np.all(by_pinocchio[success[sample]]), \
        "a row flagged successful misses its target by Pinocchio's FK"
    scene = engine.Scene()
    robot = scene.add_entity(morphs.URDF(file=ROBOT, fixed=True))
    scene.build(n_envs=4096)
    by_fk = within(*fk_errors(robot, qpos_of(table, qpos_names(robot.tree)), LINK, pos, quat))
    scene.destroy()
    assert np.all(by_fk[success]) and by_fk.mean() >= 0.99


def test_a_worker_killed_mid_run_is_replaced_and_the_job_completes(ray_runs, local_job):
    summary = ray_runs["killed"]  # SIGKILL to one worker process once the first chunk was in
    assert summary["killed"] and summary["retried"] >= 1, summary
    assert any("died" in note for note in summary["notes"]), summary["notes"]
    assert summary["rows_solved"] == N and summary["chunks_solved"] == 10
    out = local_job["tmp"] / "killed"
    _same_dataset(local_job["out"], out)  # the retried chunks' rows are the same rows
    check_complete(read_sorted(out), N)
