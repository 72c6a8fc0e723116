"""Spreading a job's chunks over Ray workers.

Each worker is a Ray actor holding one :class:`~engine.batch.worker.ChunkSolver`: it starts the
engine and builds the scene once, then solves the chunks it is handed, keeping its compiled
kernels. The driver (the process that called :func:`engine.batch.solve`) reads the input, sends
each chunk's targets, and writes the parts itself, so the workers need no shared file system,
only the same ``ikstudio`` install (and the robot file at the same path, for a file given by
path). Each worker has up to :data:`IN_FLIGHT` chunks queued, so it never waits for the driver.

A worker that dies (its process killed, its node lost) loses its queued chunks: they go back to
the queue and a new worker takes its place; a chunk is tried at most :data:`MAX_TRIES` times.
An error the solve itself raises stops the job with that error's message.
"""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import socket
import threading

from ..errors import InvalidValueError, StateError
from .worker import ChunkSolver

IN_FLIGHT = 2
MAX_TRIES = 3
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # + empty SETTINGS
RELEASE_S = 30.0  # how long a finished job waits for its workers to write their kernel caches
CONNECT_TIMEOUT_S = 10.0  # how long a HOST:PORT may take to accept a connection before the job is refused
WAIT_S = 0.25  # ray.wait's timeout: how soon a signal is seen while every worker is busy


def ray_module():
    try:
        import ray
    except ImportError:
        raise ImportError("ray=...: Ray is not installed; pip install 'ikstudio[batch]' (or pip install ray)") from None
    return ray


def connect(address) -> tuple[object, bool, str]:
    """Join a Ray cluster: an already initialised one, else ``address``: True (or None) for
    ``RAY_ADDRESS`` if set, else a new local cluster; ``"auto"`` for the cluster ``ray start``
    began on this machine; ``"HOST:PORT"`` (or ``ray://...``) for that one. Returns ``(ray,
    started_here, address)``.

    ``ray.init`` replaces the process's SIGTERM handler; the caller's one is put back, so that
    ``ikstudio solve`` still stops cleanly (and keeps its parts) on SIGTERM.
    """
    ray = ray_module()
    if ray.is_initialized():
        return ray, False, "connected"
    if address is True or address is None or address == "":
        address = os.environ.get("RAY_ADDRESS") or "local"
    elif not isinstance(address, str):
        raise InvalidValueError(f"ray: expected True, 'auto' or a cluster address such as '10.0.0.1:6379', got "
                                f"{address!r}")
    _check_reachable(address)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main else None
    kwargs = dict(address=address, log_to_driver=False, logging_level="error")
    if address == "local":
        kwargs["include_dashboard"] = False
    try:
        ray.init(**kwargs)
    except ConnectionError as err:
        raise StateError(f"ray: cannot connect to the Ray cluster at {address!r}: {err} (a cluster that enforces "
                         "token authentication also needs RAY_AUTH_MODE=token and its token on this machine; see "
                         "the README)") from None
    finally:
        if main and previous is not None:
            signal.signal(signal.SIGTERM, previous)
    return ray, address == "local", address


def _check_reachable(address: str, timeout: float | None = None) -> None:
    """Refuse, within :data:`CONNECT_TIMEOUT_S`, a ``HOST:PORT`` (or ``ray://HOST:PORT``) where
    nothing accepts a connection: ``ray.init`` would wait on it for minutes, printing raw warnings.
    "local" and "auto" are left to Ray."""
    if address in ("local", "auto"):
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidValueError(f"ray: expected a cluster address HOST:PORT (such as '10.0.0.1:6379'), 'auto' or "
                                f"True, got {address!r}")
    timeout = CONNECT_TIMEOUT_S if timeout is None else timeout
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as conn:
            # a Ray cluster's GCS (and Ray Client's server) is gRPC: HTTP/2, whose server answers
            # the client's connection preface with a SETTINGS frame at once
            conn.sendall(HTTP2_PREFACE)
            reply = conn.recv(9)
    except OSError as err:
        reason = "timed out" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise StateError(f"ray: nothing answers at {address!r} ({reason}, waited up to {timeout:g} s); start the "
                         "cluster there (`ray start --head`) or check the address") from None
    if len(reply) < 4 or reply[3] != 0x04:
        raise StateError(f"ray: the server at {address!r} is not a Ray cluster (it does not speak gRPC); check the "
                         "address (a head node's GCS port, 6379 by default)")


def check_workers(ray, workers: int, gpu: bool, label: str = "workers") -> int:
    """``workers``, if the cluster can place them (one CPU each, one GPU each with a GPU backend);
    else an error naming what the cluster has (Ray would wait for them forever)."""
    have = cluster_gpus(ray) if gpu else cluster_cpus(ray)
    if workers > have:
        what = "GPUs" if gpu else "CPUs"
        raise InvalidValueError(f"{label}: {workers} workers need {workers} {what} (one each); the Ray cluster has "
                                f"{have}: expected at most {have}")
    return workers


def cluster_gpus(ray) -> int:
    return int(ray.cluster_resources().get("GPU", 0))


def cluster_cpus(ray) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


class Pool:
    """Ray actors solving ``job``'s chunks; :meth:`run` hands them out and yields each result."""

    def __init__(self, ray, job, n_workers: int, gpu: bool, log=None):
        self.ray = ray
        self.job = job
        self.log = log or (lambda message: None)
        options = dict(num_gpus=1, num_cpus=1) if gpu else dict(num_cpus=1)
        self.cpu_threads = None if gpu else 1  # one CPU per worker: one taichi pool thread
        self._actor_class = ray.remote(ChunkSolver).options(max_restarts=0, max_task_retries=0, **options)
        self.slots = [self._new() for _ in range(n_workers)]
        self.generation = [0] * n_workers
        self.retried = 0
        self.workers: dict = {}

    def wait_ready(self) -> dict:
        """Wait until every worker has built its scene and compiled its kernels; returns
        ``{pid: backend}``. A worker that cannot start is an error naming why."""
        from ray.exceptions import RayActorError, RayTaskError

        try:
            infos = self.ray.get([actor.ready.remote() for actor in self.slots])
        except (RayActorError, RayTaskError) as err:
            cause = getattr(err, "cause", None)
            text = str(cause if isinstance(cause, Exception) else err).strip()
            raise StateError(f"ray: a worker could not start: {text.splitlines()[-1] if text else type(err).__name__}")\
                from None
        self.workers = {info["pid"]: info["backend"] for info in infos}
        return self.workers

    def _new(self):
        return self._actor_class.remote(self.job, True, self.cpu_threads)

    def run(self, todo: list[int], chunk_args):
        """Solve chunks ``todo`` (``chunk_args(k) -> (pos, quat)``, and a trajectory job's times and
        lengths, or a plan job's starts: :meth:`ChunkSolver.solve`'s arguments after the index),
        yielding each result dict as it arrives (in any order)."""
        ray = self.ray
        from ray.exceptions import RayActorError, RayTaskError, WorkerCrashedError

        queue = collections.deque(todo)
        tries = collections.Counter()
        in_flight: dict = {}  # ObjectRef -> (slot, generation, chunk)
        load = [0] * len(self.slots)

        def feed(slot: int) -> None:
            while queue and load[slot] < IN_FLIGHT:
                k = queue.popleft()
                tries[k] += 1
                ref = self.slots[slot].solve.remote(k, *chunk_args(k))
                in_flight[ref] = (slot, self.generation[slot], k)
                load[slot] += 1

        for slot in range(len(self.slots)):
            feed(slot)
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=WAIT_S)
            for ref in ready:
                slot, generation, k = in_flight.pop(ref)
                try:
                    result = ray.get(ref)
                except (RayActorError, WorkerCrashedError) as err:
                    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
                    if generation == self.generation[slot]:
                        load[slot] = 0
                        self.generation[slot] += 1
                        with contextlib.suppress(Exception):
                            ray.kill(self.slots[slot])
                        self.slots[slot] = self._new()
                        self.log(f"worker {slot} died ({first[:160]}); starting a new one")
                    if tries[k] >= MAX_TRIES:
                        raise StateError(f"chunk {k}: its worker died {tries[k]} times (last: {first[:300]}); "
                                         "stopping (finished parts are kept)") from None
                    self.retried += 1
                    queue.appendleft(k)
                    feed(slot)
                    continue
                except RayTaskError as err:  # the solve raised: the job's own error, not the worker's
                    cause = getattr(err, "cause", None)
                    if isinstance(cause, Exception):
                        raise cause from None
                    raise StateError(f"chunk {k}: {str(err).strip().splitlines()[-1]}") from None
                if generation == self.generation[slot]:
                    load[slot] -= 1
                    feed(slot)
                yield result

    def release(self, timeout: float = RELEASE_S) -> None:
        """Ask every (idle) worker to end its engine, which writes the kernels it compiled to
        taichi's disk cache (:meth:`ChunkSolver.release`), waiting at most ``timeout`` s; a worker
        that fails or is slow is left to :meth:`close`. Called after a job's last chunk, never on
        an error or a signal (a busy worker would answer only after its queued chunks)."""
        with contextlib.suppress(Exception):
            refs = [actor.release.remote() for actor in self.slots]
            self.ray.wait(refs, num_returns=len(refs), timeout=timeout)

    def close(self) -> None:
        """Stop every worker (their CPUs go back to the cluster)."""
        for actor in self.slots:
            with contextlib.suppress(Exception):
                self.ray.kill(actor)
        self.slots = []
