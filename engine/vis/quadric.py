"""Quadric edge-collapse decimation (``fast_simplification``, trimesh's backend), run so that it
never stalls the caller's other threads.

``fast_simplification.simplify`` holds the GIL for its whole call: 0.1-0.3 s on a mesh of
100k faces (Baxter's torso, cold mesh cache). In the app the render thread decimates a new robot's
meshes while the GUI thread draws, and the GUI stood still that long (issue 27). So a mesh above
:data:`IN_PROCESS_FACES` faces is decimated in a worker process of its own (started on first use,
one per process, kept for the next meshes, ended at exit); the caller waits on a pipe, without
the GIL. Smaller meshes, or any mesh when the worker cannot run, are decimated in the process.

The worker imports only numpy and fast_simplification (not the engine, not the caller's
``__main__``), so a script without a ``__name__ == "__main__"`` guard is safe. Results are the
same arrays either way (the same function on the same inputs).
"""

from __future__ import annotations

import atexit
import struct
import subprocess
import sys
import threading

import numpy as np

IN_PROCESS_FACES = 20_000  # faces: below this, decimating holds the GIL under ~30 ms

_CHILD = r"""
import struct, sys
import numpy as np
from fast_simplification import simplify
inp, out = sys.stdin.buffer, sys.stdout.buffer
def read(n):
    data = inp.read(n)
    if len(data) != n:
        raise SystemExit(0)
    return data
while True:
    nv, nf, target = struct.unpack("<qqq", read(24))
    v = np.frombuffer(read(nv * 24), np.float64).reshape(nv, 3).copy()
    f = np.frombuffer(read(nf * 24), np.int64).reshape(nf, 3).copy()
    try:
        rv, rf = simplify(points=v, triangles=f, target_count=int(target))
        rv = np.ascontiguousarray(rv, np.float64); rf = np.ascontiguousarray(rf, np.int64)
        out.write(struct.pack("<qq", len(rv), len(rf))); out.write(rv.tobytes()); out.write(rf.tobytes())
    except Exception as exc:
        msg = repr(exc).encode()
        out.write(struct.pack("<qq", -1, len(msg))); out.write(msg)
    out.flush()
"""


class _Worker:
    """The decimating child process and the lock that keeps one request on its pipes at a time."""

    def __init__(self):
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.broken = False  # it could not start, or died: decimate in the process from then on

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return self.proc

    def simplify(self, v: np.ndarray, f: np.ndarray, target: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Decimated (vertices, faces), or None when the worker failed (the caller decimates itself)."""
        with self.lock:
            if self.broken:
                return None
            try:
                proc = self._start()
                proc.stdin.write(struct.pack("<qqq", len(v), len(f), int(target)))
                proc.stdin.write(v.tobytes())
                proc.stdin.write(f.tobytes())
                proc.stdin.flush()
                nv, nf = struct.unpack("<qq", _read(proc.stdout, 16))
                if nv < 0:
                    raise ValueError(_read(proc.stdout, nf).decode(errors="replace"))
                rv = np.frombuffer(_read(proc.stdout, nv * 24), np.float64).reshape(nv, 3).copy()
                rf = np.frombuffer(_read(proc.stdout, nf * 24), np.int64).reshape(nf, 3).copy()
                return rv, rf
            except (OSError, EOFError, struct.error):
                self.broken = True
                self.close()
                return None

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            try:
                proc.stdin.close()
                proc.wait(timeout=2.0)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()


def _read(stream, n: int) -> bytes:
    data = stream.read(n)
    if len(data) != n:
        raise EOFError(f"the decimating worker sent {len(data)} of {n} bytes")
    return data


_WORKER = _Worker()
atexit.register(_WORKER.close)


def simplify(mesh, face_count: int):
    """``mesh`` (a ``trimesh.Trimesh``) decimated toward ``face_count`` faces, as trimesh's
    ``simplify_quadric_decimation(face_count=...)`` returns it (a processed ``Trimesh``).

    Raises ImportError without ``fast_simplification``, ValueError when it refuses the mesh."""
    import trimesh

    v = np.ascontiguousarray(mesh.vertices, np.float64)
    f = np.ascontiguousarray(mesh.faces, np.int64)
    out = _WORKER.simplify(v, f, face_count) if len(f) > IN_PROCESS_FACES else None
    if out is None:
        from fast_simplification import simplify as fast_simplify

        out = fast_simplify(points=v, triangles=f, target_count=int(face_count))
    return trimesh.Trimesh(vertices=out[0], faces=out[1])


__all__ = ["IN_PROCESS_FACES", "simplify"]
