"""``ikstudio solve`` under crashes and corruption (issue 26): kill -9 at random points over 20
runs, a bit or byte flipped in a part or the manifest, a truncated manifest, a full disk (a small
tmpfs where the test can mount one, else a filesystem error injected in-process). Every run ends
with a dataset identical to an uninterrupted one, or with a clear refusal: never exit 0 with bad
data.

Real subprocesses of ``python -m app solve`` on Panda (whose compiled solver the other batch
tests load from taichi's disk cache), with 60 chunks of 64 unreachable targets: each chunk runs
all its restarts (~30 ms), so parts and manifest updates follow each other closely.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _batch import read_sorted

from engine.batch.verify import verify

RUN_LAST = True  # uses pyarrow in the test process: see tests/conftest.py

REPO = Path(__file__).resolve().parent.parent
CHUNKS, CHUNK = 60, 64
KILL_RUNS = 20


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _command(src: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "app", "solve", "panda", "--link", "hand", "--targets", str(src), "--out", str(out),
            "--chunk", str(CHUNK), "--seed", "4", "--backend", "cpu", "--no-progress"]


def _run(src, out, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run(_command(src, out), cwd=REPO, env=_env(), capture_output=True, text=True, timeout=timeout)


def _verify(out) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "solve", "--verify", str(out)], cwd=REPO, env=_env(),
                          capture_output=True, text=True, timeout=120)


def _parts(out: Path) -> int:
    return len(list(out.glob("part-*.parquet"))) if out.is_dir() else 0


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The targets, the dataset of one uninterrupted run, and that run's (time from its start to
    its first part on disk, time per later part) in s: the kills land within those times."""
    tmp = tmp_path_factory.mktemp("crash")
    n = CHUNKS * CHUNK
    rng = np.random.default_rng(0)
    src = tmp / "unreachable.parquet"
    pq.write_table(pa.table({"x": rng.uniform(-0.5, 0.5, n), "y": rng.uniform(-0.5, 0.5, n), "z": np.full(n, 3.0),
                             "qw": np.zeros(n), "qx": np.ones(n), "qy": np.zeros(n), "qz": np.zeros(n),
                             "id": np.arange(n)}), src)
    out = tmp / "reference"
    t0 = time.monotonic()
    proc = subprocess.Popen(_command(src, out), cwd=REPO, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    while _parts(out) == 0 and proc.poll() is None and time.monotonic() - t0 < 300:
        time.sleep(0.005)
    to_first_part = time.monotonic() - t0
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    per_part = max(time.monotonic() - t0 - to_first_part, 0.0) / (CHUNKS - 1)
    return src, out, read_sorted(out), (to_first_part, per_part)


def _same(out: Path, reference: pa.Table) -> None:
    table = read_sorted(out)
    assert table.num_rows == reference.num_rows
    assert table.equals(reference), "the dataset differs from the uninterrupted run's"


def test_kill_9_at_random_points_over_20_runs(tmp_path, reference):
    """A third of the kills land while the process starts (importing, building, loading the
    solver: before its first part, at a random share of the time the uninterrupted run took to
    write its first one), the others within one part's time after a part appeared: inside the solve, the part's
    write or the manifest's update. After each, the folder's parts are sound or named as
    unrecorded. The kill points follow the job's progress, not the clock, so a fast or a busy
    machine kills at the same kinds of points."""
    src, _, expected, (to_first_part, per_part) = reference
    out = tmp_path / "out"
    rng = np.random.default_rng(26)
    killed_mid_job = killed_starting = 0
    for run in range(KILL_RUNS):
        start = _parts(out)
        starting = rng.random() < 0.35
        wait_for = start + int(rng.integers(1, 3))
        delay = float(rng.uniform(0.1, 0.9) * to_first_part if starting else rng.uniform(0.0, 1.0) * per_part)
        proc = subprocess.Popen(_command(src, out), cwd=REPO, env=_env(), stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)
        try:
            t0 = time.monotonic()
            if starting:  # kill after the delay, or at once if a part appears first
                while _parts(out) == start and proc.poll() is None and time.monotonic() - t0 < delay:
                    time.sleep(0.002)
            else:
                while _parts(out) < wait_for and proc.poll() is None and time.monotonic() - t0 < 240:
                    time.sleep(0.002)
                time.sleep(delay)
            finished = proc.poll() is not None
            if not finished:
                proc.send_signal(signal.SIGKILL)
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        if finished:
            assert proc.returncode == 0, f"run {run}: exit {proc.returncode}: {err}"
        else:
            assert proc.returncode == -signal.SIGKILL
            if _parts(out) < CHUNKS:
                killed_mid_job += not starting
                killed_starting += starting
        if (out / "_ikstudio_solve.json").exists():  # what the kill left is sound, or named as unrecorded
            problems = verify(out).problems
            assert all("missing" in p or "not recorded in the manifest" in p for p in problems), (run, problems)
    print(f"{killed_mid_job} kills mid-solve, {killed_starting} while starting")
    assert killed_mid_job >= 8 and killed_starting >= 3, (killed_mid_job, killed_starting)
    final = _run(src, out)
    assert final.returncode == 0, final.stderr
    _same(out, expected)
    check = _verify(out)
    assert check.returncode == 0 and f"complete and intact: {CHUNKS} of {CHUNKS} parts" in check.stdout, check.stderr
    assert not [p.name for p in out.iterdir() if p.name.startswith(".")], "temporary files were left behind"


@pytest.mark.parametrize("where", ["part_bit", "part_byte", "part_middle_zeros"])
def test_a_flipped_bit_or_byte_in_a_part_is_solved_again(tmp_path, reference, where):
    src, ref_out, expected, _ = reference
    out = tmp_path / "out"
    shutil.copytree(ref_out, out)
    rng = np.random.default_rng(abs(hash(where)) % 1000)
    part = out / f"part-{int(rng.integers(0, CHUNKS)):05d}.parquet"
    data = bytearray(part.read_bytes())
    offset = int(rng.integers(8, len(data) - 8))
    if where == "part_bit":
        data[offset] ^= 1 << int(rng.integers(0, 8))
    elif where == "part_byte":
        data[offset] = (data[offset] + 1 + int(rng.integers(0, 255))) % 256
    else:
        data[len(data) // 4:len(data) // 2] = bytes(len(data) // 2 - len(data) // 4)
    part.write_bytes(bytes(data))
    verdict = verify(out)
    assert not verdict.ok and any(f"{part.name}: its bytes do not match" in p for p in verdict.problems)
    done = _run(src, out)
    assert done.returncode == 0, done.stderr
    assert f"part '{part}': its bytes do not match the SHA-256 the manifest records (damaged); removed" in done.stderr
    _same(out, expected)
    assert verify(out).ok


@pytest.mark.parametrize("damage", ["bit", "byte", "truncated", "empty"])
def test_a_damaged_or_truncated_manifest_is_a_clear_refusal(tmp_path, reference, damage):
    src, ref_out, _, _ = reference
    out = tmp_path / "out"
    shutil.copytree(ref_out, out)
    manifest = out / "_ikstudio_solve.json"
    data = bytearray(manifest.read_bytes())
    rng = np.random.default_rng(len(damage))
    if damage == "bit":
        # a bit of a hex digest (a part's SHA-256): still valid JSON, caught by the checksum
        offset = data.index(b'"sha256": "') + 14
        data[offset] ^= 0x01
    elif damage == "byte":
        data[int(rng.integers(0, len(data)))] = ord("#")
    elif damage == "truncated":
        data = data[:len(data) // 2]
    else:
        data = b""
    manifest.write_bytes(bytes(data))
    parts = {p.name: p.read_bytes() for p in out.glob("part-*.parquet")}
    done = _run(src, out)
    assert done.returncode == 1, done.stderr
    assert f"--out: manifest '{manifest}'" in done.stderr and \
        ("damaged" in done.stderr or "not valid JSON" in done.stderr or "key " in done.stderr), done.stderr
    assert done.stdout == ""
    assert {p.name: p.read_bytes() for p in out.glob("part-*.parquet")} == parts, "a refused run touched the parts"
    with pytest.raises(ValueError, match=f"manifest '{manifest}'"):
        verify(out)


def _mount_tmpfs(path: Path, size_kb: int) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        return False
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kb}k", "tmpfs", str(path)], capture_output=True)
    return done.returncode == 0


def _remount(path: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(path)], check=True, capture_output=True)


def test_a_full_disk_then_freed_space_and_read_only_media(tmp_path, reference, monkeypatch):
    src, ref_out, expected, _ = reference
    size = sum(p.stat().st_size for p in ref_out.glob("part-*.parquet"))
    disk = tmp_path / "disk"
    if not _mount_tmpfs(disk, max(16, size // 2 // 1024)):  # not root here: the same failures, injected
        _injected_full_disk(tmp_path / "injected", reference, monkeypatch)
        _injected_read_only(tmp_path / "ro", reference, monkeypatch)
        return
    try:
        out = disk / "out"
        full = _run(src, out)
        assert full.returncode == 1, full.stderr
        assert "--out: cannot write the" in full.stderr and "No space left on device" in full.stderr, full.stderr
        assert str(out) in full.stderr
        assert not [p.name for p in out.iterdir() if p.name.startswith(".")], "a temporary file was left behind"
        kept = _parts(out)
        assert 0 < kept < CHUNKS
        _remount(disk, f"size={4 * size // 1024 + 64}k")  # space freed: the same command finishes the job
        done = _run(src, out)
        assert done.returncode == 0, done.stderr
        _same(out, expected)
        _remount(disk, "ro")  # a finished job on read-only media: refused to write, but can be checked
        ro = _run(src, out)
        assert ro.returncode == 1 and "--out: cannot open the lock file" in ro.stderr and "Read-only" in ro.stderr
        check = _verify(out)
        assert check.returncode == 0 and "complete and intact" in check.stdout, check.stderr
    finally:
        with contextlib.suppress(Exception):
            subprocess.run(["umount", str(disk)], capture_output=True)


def test_a_full_disk_by_an_injected_filesystem_error(tmp_path, reference, monkeypatch):
    """The same in-process, with ENOSPC raised by the manifest's write after the 5th part: works
    where tmpfs cannot be mounted, and hits the manifest write itself (issue 26, item 6)."""
    _injected_full_disk(tmp_path, reference, monkeypatch)


def test_read_only_media_by_an_injected_filesystem_error(tmp_path, reference, monkeypatch):
    _injected_read_only(tmp_path, reference, monkeypatch)


def _injected_full_disk(tmp_path: Path, reference, monkeypatch) -> None:
    import engine
    import engine.batch
    from engine.batch import manifest as mf

    src, _, expected, _ = reference
    out = tmp_path / "out"
    real_replace = os.replace
    calls = {"n": 0}

    def full_disk(a, b):
        if str(b).endswith(mf.MANIFEST):
            calls["n"] += 1
            if calls["n"] > 6:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(a, b)

    engine.init(backend="cpu")
    monkeypatch.setattr(mf.os, "replace", full_disk)
    kwargs = dict(chunk=CHUNK, seed=4, labels={"out": "--out"})
    with pytest.raises(OSError, match=rf"--out: cannot write the manifest '{out / mf.MANIFEST}': No space left"):
        engine.batch.solve("panda", src, "hand", out, **kwargs)
    monkeypatch.undo()
    assert not list(out.glob(".*")), "a temporary file was left behind"
    notes = []
    engine.batch.solve("panda", src, "hand", out, log=notes.append, **kwargs)
    assert any("the manifest has no record of it" in n for n in notes), notes  # the part whose record failed
    _same(out, expected)


def _injected_read_only(tmp_path: Path, reference, monkeypatch) -> None:
    """A finished job whose folder refuses writes (EROFS on the lock file): a run is refused naming
    the lock file and --verify; the check itself writes nothing and passes."""
    import builtins

    import engine.batch
    from engine.batch import dataset

    src, ref_out, _, _ = reference
    out = tmp_path / "out"
    shutil.copytree(ref_out, out)
    real_open = builtins.open

    def read_only(file, mode="r", *args, **kwargs):
        if any(m in mode for m in "wax+"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(dataset, "open", read_only, raising=False)
    with pytest.raises(OSError, match=rf"--out: cannot open the lock file '{out / dataset.LOCK}': Read-only file "
                                      r"system \(.*ikstudio solve --verify OUT"):
        engine.batch.solve("panda", src, "hand", out, chunk=CHUNK, seed=4, labels={"out": "--out"})
    monkeypatch.setattr(builtins, "open", read_only)
    verdict = verify(out)
    monkeypatch.undo()
    assert verdict.ok and verdict.parts_ok == CHUNKS
