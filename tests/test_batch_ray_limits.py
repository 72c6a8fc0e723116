"""``ikstudio solve --ray`` where the cluster cannot do what is asked (issue 26): more workers than
it has CPUs, an address where nothing (or no Ray) answers, SIGTERM while connecting, and native
output (Ray's raylet, worker processes) that must not reach a ``--json`` stdout. No Ray cluster
is started: the checks happen before one would be used."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import engine.batch
from engine.batch import cluster
from engine.errors import InvalidValueError, StateError

RUN_LAST = True  # uses pyarrow in the test process: see tests/conftest.py

REPO = Path(__file__).resolve().parent.parent


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))


@pytest.fixture()
def targets(tmp_path):
    n = 8
    src = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": np.full(n, 0.4), "y": np.zeros(n), "z": np.full(n, 0.5), "qw": np.zeros(n),
                             "qx": np.ones(n), "qy": np.zeros(n), "qz": np.zeros(n)}), src)
    return src


class _Server:
    """A TCP server on 127.0.0.1 that accepts connections and then says ``reply`` (or nothing)."""

    def __init__(self, reply: bytes | None):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.conns = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            if self.reply is not None:
                conn.sendall(self.reply)

    def close(self):
        for conn in self.conns:
            conn.close()
        self.sock.close()


def test_more_workers_than_the_cluster_has_cpus_are_refused(tmp_path, targets, monkeypatch):
    class FakeRay:  # a 2-CPU cluster; nothing else of Ray is reached before the refusal
        @staticmethod
        def cluster_resources():
            return {"CPU": 2.0}

    monkeypatch.setattr(cluster, "connect", lambda address: (FakeRay, False, "fake:1"))
    with pytest.raises(InvalidValueError, match=r"--workers: 5 workers need 5 CPUs \(one each\); the Ray cluster has "
                                                r"2: expected at most 2"):
        engine.batch.solve("panda", targets, "hand", tmp_path / "out", ray=True, workers=5,
                           labels={"workers": "--workers"})


def test_an_address_where_nothing_listens_is_refused_at_once_naming_it(tmp_path, targets):
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "app", "solve", "panda", "--link", "hand", "--targets", str(targets),
                           "--out", str(tmp_path / "out"), "--ray", "127.0.0.1:1", "--no-progress"], cwd=REPO,
                          env=_env(), capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    assert done.returncode == 1, done.stderr
    assert "ray: nothing answers at '127.0.0.1:1' (Connection refused" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one line, no raw Ray warnings
    assert elapsed < 60


def test_a_silent_server_times_out_and_a_server_that_is_not_ray_is_named():
    silent = _Server(None)
    try:
        t0 = time.monotonic()
        with pytest.raises(StateError, match=rf"ray: nothing answers at '127.0.0.1:{silent.port}' \(timed out, waited "
                                             r"up to 0.5 s\)"):
            cluster._check_reachable(f"127.0.0.1:{silent.port}", timeout=0.5)
        assert time.monotonic() - t0 < 5
    finally:
        silent.close()
    web = _Server(b"HTTP/1.1 400 Bad Request\r\n\r\n")
    try:
        with pytest.raises(StateError, match="is not a Ray cluster"):
            cluster._check_reachable(f"127.0.0.1:{web.port}", timeout=2)
    finally:
        web.close()
    grpc = _Server(b"\x00\x00\x18\x04\x00\x00\x00\x00\x00")  # an HTTP/2 SETTINGS frame, as Ray's GCS answers
    try:
        cluster._check_reachable(f"127.0.0.1:{grpc.port}", timeout=2)
    finally:
        grpc.close()
    with pytest.raises(InvalidValueError, match="expected a cluster address HOST:PORT"):
        cluster._check_reachable("no-port-here")


def test_sigterm_while_connecting_exits_143_at_once(tmp_path, targets):
    silent = _Server(None)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "app", "solve", "panda", "--link", "hand", "--targets",
                                 str(targets), "--out", str(tmp_path / "out"), "--ray", f"127.0.0.1:{silent.port}",
                                 "--no-progress"], cwd=REPO, env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            end = time.monotonic() + 120
            while not silent.conns and time.monotonic() < end:  # the driver is waiting on the address now
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.05)
            assert silent.conns, "the driver never connected"
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
            elapsed = time.monotonic() - t0
        finally:
            if proc.poll() is None:
                proc.kill()
    finally:
        silent.close()
    assert proc.returncode == 143, err
    assert elapsed < 3.0, f"took {elapsed:.1f} s"
    assert "stopped by SIGTERM" in err


SCRIPT = """
import os, subprocess, sys
import engine.batch
from app import cli
from engine.batch.progress import SolveSummary

def noisy_solve(*args, **kwargs):
    os.write(1, b"(raylet) A worker died or was killed while executing a task\\n")  # as Ray's raylet does
    subprocess.run([sys.executable, "-c", "print('a worker process prints')"])
    return SolveSummary(out="o", rows=1, rows_solved=1, rows_skipped=0, chunks=1, chunks_solved=1, chunks_skipped=0,
                        succeeded=1, wall_s=1.0, setup_s=0.1, run_s=0.9, solve_s=0.8, read_s=0.0, write_s=0.0,
                        chunk=1, workers=2, backend="cpu", ray="local")

engine.batch.solve = noisy_solve
sys.exit(cli.main(["solve", "panda", "--link", "hand", "--targets", sys.argv[1], "--out", "o", "--ray", "--json",
                   "--no-progress"]))
"""


def test_json_stdout_holds_the_json_alone_whatever_native_code_prints(tmp_path, targets):
    script = tmp_path / "noisy.py"
    script.write_text(SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(targets)], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)  # nothing else on stdout
    assert summary["workers"] == 2 and summary["ray"] == "local"
    assert "(raylet) A worker died" in done.stderr and "a worker process prints" in done.stderr
