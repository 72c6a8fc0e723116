"""``ikstudio solve``: stopped by a signal and resumed (real subprocesses), and bad input, each a
one-line error naming the file, the column or the row (in-process, through ``app.cli.commands.main``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _batch import check_complete, part_states, read_sorted

from app.cli import commands as cli

RUN_LAST = True  # uses pyarrow in the test process: see tests/conftest.py

REPO = Path(__file__).resolve().parent.parent
CHUNKS, CHUNK = 60, 256  # unreachable targets: every chunk runs all its restarts (~0.1 s each here)
STOP_WITHIN_S = 5.0


def _targets(n: int, z: float = 3.0, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"x": rng.uniform(-0.5, 0.5, n), "y": rng.uniform(-0.5, 0.5, n), "z": np.full(n, z),
                     "qw": np.zeros(n), "qx": np.ones(n), "qy": np.zeros(n), "qz": np.zeros(n),
                     "id": np.arange(n)})


def _command(src: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "app", "solve", "panda", "--link", "hand", "--targets", str(src), "--out", str(out),
            "--chunk", str(CHUNK), "--seed", "3", "--backend", "cpu"]


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_a_signal_keeps_finished_parts_and_the_rerun_completes_without_duplicates(tmp_path, sig):
    src, out = tmp_path / "unreachable.parquet", tmp_path / "out"
    pq.write_table(_targets(CHUNKS * CHUNK), src)
    proc = subprocess.Popen(_command(src, out), cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 180
        while len(list(out.glob("part-*.parquet"))) < 3:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < end, "timed out waiting for parts"
            time.sleep(0.02)
        t0 = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, f"exit {proc.returncode}: {err}"
    assert elapsed < STOP_WITHIN_S, f"took {elapsed:.1f} s to stop"
    before = part_states(out)
    assert 3 <= len(before) < CHUNKS, f"{len(before)} parts: the job was not stopped mid-run"
    assert f"stopped by {sig.name}; {out} keeps its {len(before)} finished parts" in err, err
    assert not list(out.glob(".part-*")), "an unfinished part was left behind"

    rerun = subprocess.run(_command(src, out) + ["--json", "--no-progress"], cwd=REPO, env=_env(),
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)
    assert summary["chunks_skipped"] == len(before) and summary["chunks_solved"] == CHUNKS - len(before)
    assert f"resuming: {len(before)} of {CHUNKS} chunks" in rerun.stderr
    after = part_states(out)
    assert len(after) == CHUNKS
    assert {name: after[name] for name in before} == before, "a part written before the signal was touched"
    table = read_sorted(out)
    check_complete(table, CHUNKS * CHUNK)
    assert table.column("id").to_numpy().tolist() == list(range(CHUNKS * CHUNK))
    assert not table.column("success").to_numpy().any()  # 3 m up: out of reach, and flagged so


# -- bad input: one line each, naming the file, the column or the row ------------------------------------


@pytest.fixture
def good(tmp_path):
    table = _targets(8, z=0.4)
    table = table.set_column(3, "qw", pa.array(np.zeros(8))).set_column(4, "qx", pa.array(np.ones(8)))
    path = tmp_path / "good.parquet"
    pq.write_table(table, path)
    return table, path


def _solve(capsys, *args) -> tuple[int, str]:
    code = cli.main(["solve", *map(str, args), "--backend", "cpu", "--no-progress"])
    err = capsys.readouterr().err.strip()
    return code, err


def _bad(tmp_path, table: pa.Table, name: str) -> Path:
    path = tmp_path / name
    if name.endswith(".csv"):
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, path)
    else:
        pq.write_table(table, path)
    return path


def test_bad_targets_are_one_line_errors_naming_file_column_and_row(tmp_path, capsys, good):
    table, _ = good
    out = tmp_path / "out"
    cases = [
        (table.drop_columns(["qy"]), "missing.parquet", "missing.parquet: missing column 'qy' (link 'hand'); the "
                                                        "file has: x, y, z, qw, qx, qz, id"),
        (table.set_column(1, "y", pa.array([0.1, np.nan, 0.1, 0.1, np.nan, 0.1, 0.1, 0.1])), "nan.parquet",
         "nan.parquet: column 'y': NaN in rows 1, 4"),
        (table.set_column(0, "x", pa.array([0.1] * 7 + [None], pa.float64())), "null.parquet",
         "null.parquet: column 'x': missing value in row 7"),
        (table.set_column(4, "qx", pa.array([1, 1, 0, 1, 1, 1, 1, 1.0])), "zero.parquet",
         "zero.parquet: quaternion (qw, qx, qy, qz): zero quaternion in row 2; expected a unit quaternion"),
        (table.set_column(4, "qx", pa.array([1, 1, 1, 1, 1, 1.5, 1, 1.0])), "long.csv",
         "long.csv: quaternion (qw, qx, qy, qz): norm 1.5 in row 5; expected a unit quaternion (norm 1 within "
         "0.001)"),
        (table.set_column(6, "qz", pa.array(["0"] * 8)), "text.parquet",
         "text.parquet: column 'qz': expected numbers, got string"),
        (table.append_column("success", pa.array([True] * 8)), "clash.parquet",
         "clash.parquet: column 'success' is also an output column"),
    ]
    for bad, name, message in cases:
        code, err = _solve(capsys, "panda", "--link", "hand", "--targets", _bad(tmp_path, bad, name), "--out", out)
        assert code == 1 and len(err.splitlines()) == 1, err
        assert err.startswith(f"ikstudio: error: {tmp_path / name}: ") and message.split(": ", 1)[1] in err, err
    assert not out.exists()
    code, err = _solve(capsys, "panda", "--link", "hand", "--targets", tmp_path / "t.parquet", "--out", out)
    assert code == 1 and err == f"ikstudio: error: --targets: no such file: '{tmp_path / 't.parquet'}'", err
    (tmp_path / "t.txt").write_text("x,y\n")
    code, err = _solve(capsys, "panda", "--link", "hand", "--targets", tmp_path / "t.txt", "--out", out)
    assert code == 1 and err.endswith("t.txt: expected a .parquet, .npz or .csv file, got suffix '.txt'"), err


def test_bad_robot_link_masks_and_options_are_one_line_errors(tmp_path, capsys, good):
    _, src = good
    out = tmp_path / "out"
    expected = [
        (("pnda", "--link", "hand"), "ikstudio: error: robot: unknown robot 'pnda'; did you mean 'panda'?"),
        (("panda", "--link", "hnd"), "ikstudio: error: --link: no link 'hnd' in 'panda'; did you mean 'hand'?"),
        (("panda", "--link", "hand", "--rot-mask", "1,1,0"), "ikstudio: error: --rot-mask: [true, true, false] has "
                                                             "two true axes"),
        (("panda", "--link", "hand", "--rot-mask", "hnd=0,0,1"), "ikstudio: error: --rot-mask: 'hnd' is not a link "
                                                                  "of this job"),
        (("panda", "--link", "hand", "--damping", "-1"), "ikstudio: error: --damping: expected a positive number, "
                                                         "got -1"),
        (("panda", "--link", "hand", "--chunk", "0"), "ikstudio: error: --chunk: expected rows per solve call"),
        (("panda", "--link", "hand", "--workers", "2"), "ikstudio: error: --workers: only with --ray"),
        (("panda", "--link", "hand", "--avoid-collisions", "--collision-margin", "-1"),
         "ikstudio: error: --collision-margin:"),
        (("panda", "--link", "hand", "--obstacles", "nowhere.yaml"), "nowhere.yaml: no such file"),
    ]
    for args, message in expected:
        code, err = _solve(capsys, *args, "--targets", src, "--out", out)
        assert code in (1, 2) and len(err.splitlines()) == 1 and err.startswith(message), (args, err)
    bad_solver = tmp_path / "solver.yaml"
    bad_solver.write_text("max_samples: 5\nmax_step: 0.3\n")
    code, err = _solve(capsys, "panda", "--link", "hand", "--targets", src, "--out", out, "--solver", bad_solver)
    assert code == 1 and f"{bad_solver}: max_step: unknown key" in err and "(line 2)" in err, err
    assert not out.exists()


def test_an_out_holding_another_jobs_parts_is_refused(tmp_path, capsys, good):
    _, src = good
    out = tmp_path / "out"
    code = cli.main(["solve", "panda", "--link", "hand", "--targets", str(src), "--out", str(out), "--backend", "cpu",
                     "--no-progress", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert summary["rows"] == 8 and summary["rows_solved"] == 8 and 0 <= summary["success_rate"] <= 1
    assert "8 rows (8 solved)" in captured.err and "solves/s" in captured.err
    code, err = _solve(capsys, "panda", "--link", "hand", "--targets", src, "--out", out, "--pos-tol", "0.001")
    assert code == 1 and len(err.splitlines()) == 1, err
    assert err.startswith(f"ikstudio: error: --out: '{out}' holds another job's parts: solver.pos_tol (0.0005 there, "
                          "0.001 now). Rerun with that job's input and settings"), err
