"""Plan jobs (issue 31 item 6): ``engine.batch.solve(..., plan=...)`` / ``ikstudio solve --plan``
adds to each row a path from its start to its IK answer among the job's obstacles.

Judged independently: every path the dataset calls valid starts at the row's start, ends at the
row's answer (its ``q_<joint>`` columns), stays within the joint limits and is free at mesh level
along every segment (Pinocchio + coal, tests/_plan_judge.py, at 1 mm / 0.005 rad steps where the
mesh clearance proves nothing more). A job stopped after its first chunk and resumed by the
command line in a fresh process with one taichi thread (as a Ray worker runs) gives the same
part files, byte for byte, as the uninterrupted in-process job, and so does a run on a local
2-CPU Ray cluster (two workers). Bad inputs are one-line errors naming the argument or column,
and leave no output folder behind.
"""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _batch import read_sorted
from _plan_judge import SegmentJudge

import engine
import engine.batch
from app.cli import commands as cli
from engine.batch.planning import GOAL_UNREACHABLE, plan_seed, read_paths
from engine.collision.robot import sample_qpos
from engine.plan import result as plan_result
from engine.scenefile import build, load
from engine.scenefile.obstacles import obstacle_morph

RUN_LAST = True  # uses pyarrow in the test process: see tests/conftest.py
REPO = Path(__file__).resolve().parent.parent
CLUTTER = REPO / "scenes" / "panda_clutter.yaml"
ROBOT, LINK = "panda_urdf", "panda_hand"
ROWS, UNREACHABLE = 9, 5  # chunks of 4, 4 and 1 rows; row 5's target lies 3 m away
PLAN = {"max_nodes": 1000, "max_retry": 2, "num_waypoints": 16}
FLAGS = ["--max-nodes", "1000", "--max-retry", "2", "--num-waypoints", "16"]


@pytest.fixture(scope="module")
def clutter():
    """The clutter scene's Panda (16 envs) and its obstacles' morphs."""
    engine.init(backend="cpu", precision="32")
    spec = load(CLUTTER)
    scene, runner = build(spec, n_envs=16)
    return runner.robot, [obstacle_morph(spec, o) for o in spec.obstacles]


@pytest.fixture(scope="module")
def targets(clutter, tmp_path_factory) -> Path:
    """ROWS hand poses of configurations clear of the clutter, each row with a clear start
    configuration in columns s_<joint>; row UNREACHABLE's target moved out of reach."""
    robot, _ = clutter
    q = sample_qpos(robot.tree, 16 * 8, seed=7)
    free = np.concatenate([q[k * 16:(k + 1) * 16][~robot.in_collision(q[k * 16:(k + 1) * 16])] for k in range(8)])
    assert len(free) >= 2 * ROWS
    goal, start = free[:ROWS], free[ROWS:2 * ROWS]
    pos, quat = robot.forward_kinematics(np.concatenate([goal, goal[:16 - ROWS]]))
    hand = robot.get_link(LINK).idx_local
    p, w = np.asarray(pos[:ROWS, hand], float), np.asarray(quat[:ROWS, hand], float)
    p[UNREACHABLE] = (3.0, 0.0, 0.5)
    cols = {"x": p[:, 0], "y": p[:, 1], "z": p[:, 2], "qw": w[:, 0], "qx": w[:, 1], "qy": w[:, 2], "qz": w[:, 3]}
    cols.update({f"s{i}": start[:, i] for i in range(robot.n_qs)})
    path = tmp_path_factory.mktemp("plan") / "targets.parquet"
    pq.write_table(pa.table(cols), path)
    return path


def _starts(robot) -> list[str]:
    return [f"s{i}" for i in range(robot.n_qs)]


def _solve(robot, targets, out, **kw):
    return engine.batch.solve(ROBOT, targets, LINK, out, chunk=4, seed=1, obstacles=CLUTTER, plan=PLAN,
                              start=_starts(robot), **kw)


@pytest.fixture(scope="module")
def whole(clutter, targets, tmp_path_factory):
    """The uninterrupted in-process job's folder and summary."""
    out = tmp_path_factory.mktemp("whole") / "out"
    return out, _solve(clutter[0], targets, out)


def test_valid_paths_run_from_the_start_to_the_answer_within_limits_and_clear_at_mesh_level(clutter, targets,
                                                                                            whole):
    robot, morphs = clutter
    out, summary = whole
    table = read_sorted(out)
    names = [c for c in table.column_names if c.startswith("q_")]
    assert table.column_names[table.column_names.index("iterations") + 1:][:4] == \
        ["path", "plan_valid", "plan_reason", "path_length"]
    assert table.schema.field("path").type == pa.list_(pa.list_(pa.float32(), robot.n_qs))
    answer = np.stack([table.column(c).to_numpy() for c in names], axis=1).astype(float)
    start = np.stack([table.column(c).to_numpy() for c in _starts(robot)], axis=1)
    success = table.column("success").to_numpy()
    valid = table.column("plan_valid").to_numpy()
    reason = table.column("plan_reason").to_pylist()
    length = table.column("path_length").to_pylist()
    paths = table.column("path").to_pylist()
    manifest = json.loads((out / "_ikstudio_solve.json").read_text())
    settings = manifest["settings"]
    assert settings["plan"]["num_waypoints"] == 16 and settings["start_columns"] == _starts(robot)
    assert settings["solver"]["avoid_collisions"] is True  # a plan job's default
    assert GOAL_UNREACHABLE == plan_result.GOAL_UNREACHABLE

    # the unreachable row: IK failed, so no plan
    assert not success[UNREACHABLE] and not valid[UNREACHABLE]
    assert reason[UNREACHABLE] == "goal_unreachable" and paths[UNREACHABLE] is None and length[UNREACHABLE] is None
    # the feasible rows: solved and planned (a few may exhaust the small node budget, never more)
    feasible = np.arange(ROWS) != UNREACHABLE
    assert success[feasible].all()
    assert valid[feasible].sum() >= 6, list(zip(valid, reason))
    assert summary.planned == int(valid.sum()) and summary.rows == ROWS
    for r in np.flatnonzero(~valid):
        assert paths[r] is None and length[r] is None and reason[r] in plan_result.REASONS and reason[r] != "ok"
    for r in np.flatnonzero(valid):
        assert reason[r] is None
    judge = SegmentJudge(robot, morphs)
    lo, hi = robot.q_limits
    kept = read_paths(table.filter(pa.array(valid)), robot.n_qs)
    assert kept.shape == (valid.sum(), 16, robot.n_qs) and kept.dtype == np.float32
    for k, r in enumerate(np.flatnonzero(valid)):
        p = kept[k].astype(float)
        np.testing.assert_allclose(p, np.asarray(paths[r], float))  # the helper reads what pyarrow reads
        np.testing.assert_allclose(p[0], start[r], atol=1e-6)
        np.testing.assert_array_equal(p[-1], answer[r])  # ends exactly at the row's answer
        assert (p >= lo - 1e-6).all() and (p <= hi + 1e-6).all(), f"row {r} leaves the joint limits"
        steps = np.linalg.norm(np.diff(p, axis=0), axis=1).sum()
        assert length[r] == pytest.approx(steps, rel=1e-4)
        assert length[r] >= np.linalg.norm(answer[r] - start[r]) - 1e-4
        assert judge.path_free(p), f"row {r}: a segment of its valid path collides at mesh level"
    blocked = [r for r in np.flatnonzero(valid) if not judge.segment_free(start[r], answer[r])]
    assert blocked, "no straight start-to-answer segment collides: the clutter tests nothing"
    print(f"{valid.sum()}/{ROWS} planned, {len(blocked)} blocked in a straight line ({list(reason)}), "
          f"{judge.evaluations} mesh-level checks")


def test_a_stopped_job_resumed_by_the_command_line_on_one_thread_gives_the_same_parts(clutter, targets, whole,
                                                                                     tmp_path):
    robot, _ = clutter
    out = tmp_path / "cut"

    def stop_after_one(progress):
        if progress.chunks_done == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _solve(robot, targets, out, progress=stop_after_one)
    assert engine.batch.finished_parts(out) == 1
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               TI_CPU_MAX_NUM_THREADS="1")  # as a Ray worker's taichi runs
    done = subprocess.run([sys.executable, "-m", "app", "solve", ROBOT, "--link", LINK, "--targets", str(targets),
                           "--out", str(out), "--chunk", "4", "--seed", "1", "--obstacles", str(CLUTTER), "--plan",
                           "--start", ",".join(_starts(robot)), *FLAGS, "--backend", "cpu", "--json",
                           "--no-progress"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["chunks_skipped"] == 1 and summary["chunks_solved"] == 2
    assert summary["planned"] == whole[1].planned
    parts = sorted(p.name for p in whole[0].glob("part-*.parquet"))
    assert parts == sorted(p.name for p in out.glob("part-*.parquet")) and len(parts) == 3
    for name in parts:
        assert filecmp.cmp(whole[0] / name, out / name, shallow=False), f"{name} differs from the uninterrupted job's"
    assert read_sorted(out).equals(read_sorted(whole[0]))


RAY_DRIVER = """
import json, sys
import ray
import engine.batch
targets, out, starts, clutter = sys.argv[1:5]
ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="error")
try:
    summary = engine.batch.solve("panda_urdf", targets, "panda_hand", out, chunk=4, seed=1, obstacles=clutter, ray=True,
                                 workers=2, plan={"max_nodes": 1000, "max_retry": 2, "num_waypoints": 16},
                                 start=starts.split(","))
    print(json.dumps(summary.to_dict()))
finally:
    ray.shutdown()
"""


def test_a_ray_run_gives_the_in_process_parts(clutter, targets, whole, tmp_path):
    """Two Ray workers (a local 2-CPU cluster, in a child process as tests/_batch_ray_driver.py
    does) write the in-process job's part files byte for byte."""
    pytest.importorskip("ray")
    robot, _ = clutter
    out = tmp_path / "ray"
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", RAY_DRIVER, str(targets), str(out), ",".join(_starts(robot)),
                           str(CLUTTER)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["workers"] == 2 and summary["chunks_solved"] == 3 and summary["planned"] == whole[1].planned
    parts = sorted(p.name for p in whole[0].glob("part-*.parquet"))
    assert parts == sorted(p.name for p in out.glob("part-*.parquet"))
    for name in parts:
        assert filecmp.cmp(whole[0] / name, out / name, shallow=False), f"Ray's {name} differs from the in-process one"


def test_one_start_for_every_row_and_the_command_line_columns(clutter, targets, tmp_path, capsys):
    robot, _ = clutter
    start = pq.read_table(targets).slice(0, 1)
    one = [float(start.column(f"s{i}")[0].as_py()) for i in range(robot.n_qs)]
    sub = tmp_path / "four.parquet"
    pq.write_table(pq.read_table(targets).slice(0, 4), sub)
    code = cli.main(["solve", ROBOT, "--link", LINK, "--targets", str(sub), "--out", str(tmp_path / "o"), "--seed", "1",
                     "--obstacles", str(CLUTTER), "--plan", "--start-qpos=" + ",".join(repr(x) for x in one),
                     "--num-waypoints", "8", "--max-retry", "2", "--backend", "cpu",
                     "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "% planned" in captured.out
    table = read_sorted(tmp_path / "o")
    valid = table.column("plan_valid").to_numpy()
    assert valid.sum() >= 3, table.column("plan_reason").to_pylist()
    paths = read_paths(table.filter(pa.array(valid)), robot.n_qs)
    assert paths.shape[1] == 8
    np.testing.assert_allclose(paths[:, 0], np.tile(one, (len(paths), 1)), atol=1e-6)
    manifest = json.loads((tmp_path / "o" / "_ikstudio_solve.json").read_text())
    assert manifest["settings"]["start_qpos"] == one and manifest["settings"]["chunk"] == 256
    assert plan_seed(1, 0) != engine.batch.chunk_seed(1, 0)


def _refused(match, tmp_path, **kw):
    out = tmp_path / "never"
    args = dict(chunk=4, seed=1, obstacles=CLUTTER)
    args.update(kw)
    targets = args.pop("targets")
    with pytest.raises((ValueError, TypeError), match=match):
        engine.batch.solve(ROBOT, targets, LINK, out, **args)
    assert not out.exists(), "a refused job left an output folder"


def test_hostile_inputs_are_refused_naming_the_argument(clutter, targets, tmp_path):
    robot, _ = clutter
    starts = _starts(robot)
    t = pq.read_table(targets)
    _refused(r"start: a path's start applies to a plan job \(plan\)", tmp_path, targets=targets, start=starts)
    _refused(r"start_qpos: a path's start applies", tmp_path, targets=targets, start_qpos=[0.0] * 9)
    _refused(r"start, start_qpos: give one start", tmp_path, targets=targets, plan=True, start=starts,
             start_qpos=[0.0] * 9)
    _refused(r"start: expected 9 column names, one per qpos entry in the order q_panda_joint1, .*; got 2", tmp_path,
             targets=targets, plan=True, start="s0,s1")
    _refused(r"start: column 's0' is named twice", tmp_path, targets=targets, plan=True, start=["s0"] * 9)
    _refused(r"start: no column 'nope' in .*targets.parquet", tmp_path, targets=targets, plan=True,
             start=["nope", *starts[1:]])
    bad = t.set_column(t.column_names.index("s3"), "s3", pa.array([np.nan] + [0.0] * (ROWS - 1)))
    _refused(r"column 's3': NaN in row 0", tmp_path, targets=bad, plan=True, start=starts)
    _refused(r"start_qpos: expected 9 values, one per qpos entry \(q_panda_joint1, .*\), got 3", tmp_path,
             targets=targets, plan=True, start_qpos="0,0,0")
    _refused(r"start_qpos: q_panda_joint4 = 0 is outside its joint limits", tmp_path, targets=targets, plan=True,
             start_qpos=[0.0] * 9)
    _refused(r"start_qpos: expected 9 numbers such as", tmp_path, targets=targets, plan=True, start_qpos="a,b")
    _refused(r"plan: 'timeout' is not a plan job's keyword: a path that depends on the clock", tmp_path,
             targets=targets, plan={"timeout": 1.0})
    _refused(r"plan: 'seed' is not a plan job's keyword", tmp_path, targets=targets, plan={"seed": 3})
    _refused(r"plan: unknown keyword 'waypoints'; expected some of num_waypoints", tmp_path, targets=targets,
             plan={"waypoints": 3})
    _refused(r"plan.num_waypoints: expected a positive number, got 0", tmp_path, targets=targets,
             plan={"num_waypoints": 0})
    _refused(r"plan.planner: expected one of RRTConnect, RRT, got 'PRM'", tmp_path, targets=targets,
             plan={"planner": "PRM"})
    _refused(r"plan.smooth_path: expected True or False", tmp_path, targets=targets, plan={"smooth_path": "no"})
    _refused(r"plan: expected True or a mapping of plan_path keywords", tmp_path, targets=targets, plan="yes")
    motions = t.append_column("traj", pa.array([0] * ROWS)).append_column("t", pa.array(np.arange(ROWS, dtype=float)))
    _refused(r"plan, trajectory: a plan job plans each row from a start", tmp_path, targets=motions, plan=True,
             trajectory="traj", time="t")
    clash = t.append_column("plan_valid", pa.array([True] * ROWS))
    _refused(r"column 'plan_valid' is also an output column", tmp_path, targets=clash, plan=True)


def test_the_command_line_names_its_flags(clutter, targets, tmp_path, capsys):
    out = tmp_path / "never"
    base = ["solve", ROBOT, "--link", LINK, "--targets", str(targets), "--out", str(out), "--backend", "cpu",
            "--no-progress"]
    for extra, message in (
            (["--num-waypoints", "8"], "--num-waypoints: path settings apply with --plan"),
            (["--start", "s0"], "--start: a path's start applies to a plan job (--plan)"),
            (["--plan", "--start", "s0,s1"], "--start: expected 9 column names"),
            (["--plan", "--start-qpos", "1,2"], "--start-qpos: expected 9 values"),
            (["--plan", "--num-waypoints", "0"], "--num-waypoints: expected a positive number, got 0"),
            (["--plan", "--trajectory", "s0", "--time", "s1"], "--plan, --trajectory: a plan job plans each row")):
        code = cli.main(base + extra)
        err = capsys.readouterr().err
        assert code != 0 and message in err, (extra, err)
        assert not out.exists()


def test_a_resume_with_other_plan_settings_is_refused(clutter, targets, whole, tmp_path):
    import shutil

    robot, _ = clutter
    copy = tmp_path / "copy"
    shutil.copytree(whole[0], copy)
    before = sorted(p.name for p in copy.iterdir())
    with pytest.raises(ValueError, match=r"holds another job.s parts: plan.num_waypoints \(16 there, 8 now\)"):
        engine.batch.solve(ROBOT, targets, LINK, copy, chunk=4, seed=1, obstacles=CLUTTER,
                           plan={**PLAN, "num_waypoints": 8}, start=_starts(robot))
    assert sorted(p.name for p in copy.iterdir()) == before


def test_a_scene_files_planned_motion_makes_a_plan_job(clutter, targets, tmp_path):
    """``solver: {plan: true, plan_max_nodes}`` of a scene file (here panda_clutter_plan's) given as a
    job's solver settings plans each row, with that node budget, rather than being dropped."""
    robot, _ = clutter
    sub = tmp_path / "three.parquet"
    pq.write_table(pq.read_table(targets).slice(0, 3), sub)
    solver = load(REPO / "scenes" / "panda_clutter_plan.yaml").solver.model_copy(update={"plan_max_nodes": 1500})
    solver.model_fields_set.add("plan_max_nodes")
    summary = engine.batch.solve(ROBOT, sub, LINK, tmp_path / "o", seed=1, obstacles=CLUTTER, solver=solver,
                                 start=_starts(robot))
    assert summary.planned is not None
    table = read_sorted(tmp_path / "o")
    assert table.column("plan_valid").to_numpy().sum() >= 2, table.column("plan_reason").to_pylist()
    manifest = json.loads((tmp_path / "o" / "_ikstudio_solve.json").read_text())
    assert manifest["settings"]["plan"]["max_nodes"] == 1500
