"""Full garbage collections paced by what closed scenes let go, not run at every close.

Meshes loaded with trimesh hold reference cycles (a ``Trimesh`` and its caches, visuals and query
helpers point at each other), so a closed scene's or visualizer's meshes are freed only by a full
collection. The interpreter starts one by counting objects, not bytes: a few large vertex arrays
never trigger it, and 60 Panda scenes built, drawn and destroyed grew a process by ~130 MB.
pyrender's ``OffscreenRenderer.delete`` collects at every close instead, which costs ~0.1 s per
250k objects of the caller's heap, under the GIL (20 % of a test that draws every catalog robot
once). Here each close reports what it let go (:func:`let_go`), and a full collection runs once
:data:`GC_AFTER_BYTES` of vertex and face arrays are pending, or after :data:`GC_AFTER_RELEASES`
closes (and, for scenes let go without a close, when :data:`GC_AT_OPEN` render threads are open
as another starts): the arrays are a fraction of what a closed scene holds (trimesh's caches of normals and
adjacency, embree's ray structures, pyrender's objects: a Panda scene built, drawn and destroyed
left 2.3 MB, 0.4 MB of it in the arrays counted). So the memory stays bounded, and most closes
cost nothing.
"""

from __future__ import annotations

import gc
import threading

GC_AFTER_BYTES = 32 << 20  # vertex and face arrays let go before a full collection runs
GC_AFTER_RELEASES = 4  # ... or closes (of visualizers, or of scenes that had none)
# ... or, for what is never closed, render threads open when a new one is about to start
# (:func:`before_opening`): a scene dropped without destroy() (a script building scene after scene)
# keeps its visualizer's thread, GL context and meshes (~40 MB for Baxter) until a collection finds
# the cycle, and few objects mean the interpreter's own full collections come rarely (20 dropped
# scenes: 130 -> 1138 MB)
GC_AT_OPEN = 4

_LOCK = threading.Lock()
_PENDING = {"bytes": 0, "releases": 0}


def let_go(nbytes: int, close: bool = True) -> bool:
    """Count ``nbytes`` of vertex and face arrays let go and, with ``close``, one close (a
    visualizer, a scene without one; any thread); when :data:`GC_AFTER_BYTES` or
    :data:`GC_AFTER_RELEASES` are reached, run a full garbage collection. Returns True when it did."""
    with _LOCK:
        _PENDING["bytes"] += max(int(nbytes), 0)
        _PENDING["releases"] += int(bool(close))
        due = _PENDING["bytes"] >= GC_AFTER_BYTES or _PENDING["releases"] >= GC_AFTER_RELEASES
        if due:
            _PENDING["bytes"] = _PENDING["releases"] = 0
    if due:
        gc.collect()
    return due


def before_opening(open_now: int) -> bool:
    """A render thread is about to start while ``open_now`` are open: with :data:`GC_AT_OPEN` or
    more, run a full collection first (it frees those of scenes let go). Returns True when it did."""
    if open_now < GC_AT_OPEN:
        return False
    collect_now()
    return True


def collect_now() -> None:
    """Run a full collection now and forget what was pending (a caller that needs it at once)."""
    gc.collect()
    reset()


def pending() -> tuple[int, int]:
    """(bytes, closes) let go since the last collection :func:`let_go` ran."""
    with _LOCK:
        return _PENDING["bytes"], _PENDING["releases"]


def reset() -> None:
    """Forget what is pending, without collecting (a process that collected by itself)."""
    with _LOCK:
        _PENDING["bytes"] = _PENDING["releases"] = 0


def mesh_bytes(mesh) -> int:
    """Bytes of a mesh's vertex and face arrays (a trimesh, or anything with ``vertices`` and
    ``faces``); 0 for None."""
    if mesh is None:
        return 0
    return sum(int(getattr(getattr(mesh, name, None), "nbytes", 0) or 0) for name in ("vertices", "faces"))


def loaded_visual_bytes(tree) -> int:
    """Bytes of the visual meshes of a robot ``tree`` (engine.model) loaded so far."""
    return sum(mesh_bytes(visual.loaded_mesh) for link in tree.links for visual in link.visuals)
