"""The generic IK solver's warm-up: a child that compiles it into taichi's disk cache once per machine,
backend and code version, at the lowest CPU priority, and the marker that says it is there
(:func:`generic_ready`). Until then the app's children solve with the per-robot solver (see
:mod:`app.sim.solver_proc`); one warm-up runs at a time per cache folder (a lock file)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from .children import PACKAGE_ROOT, child_env, engine_init_args

MARKER_PREFIX = "ikstudio-generic-ready-"


def _cache_dir() -> Path:
    """Taichi's offline cache folder (its default, or TI_OFFLINE_CACHE_FILE_PATH)."""
    from taichi.lang import impl

    return Path(impl.current_cfg().offline_cache_file_path)


def _code_key() -> str:
    """A digest of the solver kernels' source, taichi's version and the backend: a marker written
    for other code or another backend is not taken for this one."""
    import taichi

    from engine.runtime.state import STATE

    h = hashlib.sha256(f"{taichi.__version__} {STATE.arch} {STATE.precision}".encode())
    for path in sorted((PACKAGE_ROOT / "engine" / "kernels").glob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def marker_path() -> Path:
    return _cache_dir() / f"{MARKER_PREFIX}{_code_key()}"


def generic_ready() -> bool:
    """The generic solver of this code, taichi and backend is in taichi's cache: a warm-up finished,
    and the cache has not been emptied since (``ti cache clean``, which taichi's own lock warning
    suggests, deletes its index and kernels but leaves our marker: every child would then compile
    the generic solver again, and no warm-up would run), nor lost the kernel files the warm-up
    wrote (taichi's cache drops its least recently used kernels beyond 100 MB): the marker lists
    them after its first line."""
    try:
        from engine.runtime import kernel_cache

        marker = marker_path()
        if not (marker.exists() and kernel_cache.has_index(marker.parent)):
            return False
        return all((marker.parent / name).is_file() for name in _listed_files(marker))
    except Exception:  # taichi not initialised (nothing is known to be cached), or an unreadable marker
        return False


class GenericWarmup:
    """Compiles the generic solver (with and without avoidance) into taichi's cache in a child at
    the lowest CPU priority, which then writes :func:`marker_path`; ``on_done()`` runs (in a
    watcher thread) when it finished well. Nothing starts when the marker exists, and one warm-up
    at a time runs per cache folder. The child outlives the app if need be (it is a one-off job
    per machine and code version, ~30 s of one core), so that the next start finds the solver."""

    def __init__(self, on_done=None):
        self.proc = None
        cache = _cache_dir()
        if generic_ready() or warmup_running(cache):
            return
        env = dict(child_env(), IKSTUDIO_WARM_BACKEND=engine_init_args()["backend"], IKSTUDIO_WARM_CACHE=str(cache))
        self.proc = subprocess.Popen([sys.executable, "-m", "app.sim.solver_child", "--warm-generic"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, env=env, cwd=str(PACKAGE_ROOT),
                                     start_new_session=True)
        threading.Thread(target=self._wait, args=(on_done,), daemon=True).start()

    def _wait(self, on_done) -> None:
        if self.proc.wait() == 0 and on_done is not None:
            on_done()


# -- in the warm-up child ------------------------------------------------------------------------------
def solve_generic_once(avoid=(False,)) -> None:
    """One generic-solver IK call per ``avoid`` setting on a small scene (Panda and a table, 2 envs),
    destroyed after: what compiles the generic solver into taichi's cache, or loads it from there."""
    import numpy as np

    import engine

    scene = engine.Scene()
    robot = scene.add_entity(engine.morphs.URDF(file="erd:panda", fixed=True))
    scene.add_entity(engine.morphs.Box(pos=(0.55, 0.0, 0.15), size=(0.5, 0.9, 0.3), fixed=True))
    scene.build(n_envs=2)
    hand = robot.get_link("panda_hand")
    pos, quat = np.tile([0.45, 0.1, 0.45], (2, 1)), np.tile([0.0, 1.0, 0.0, 0.0], (2, 1))
    for each in avoid:
        robot.inverse_kinematics(hand, pos, quat, kernel="generic", avoid_collisions=each, seed=0)
    scene.destroy()


def lowest_priority() -> None:
    """This process at the lowest CPU priority: nice 19, and its session's autogroup too where Linux
    groups sessions (``/proc/sys/kernel/sched_autogroup_enabled``). The warm-up runs in a session of
    its own, and an autogroup gets the same CPU share as the app's whatever its processes' nice:
    at nice 19 alone the warm-up still took ~70 % of a core beside a cold start, and the app's
    sim thread waited for a CPU while it held the GIL (frames 3-5 blocked 0.5-0.6 s)."""
    os.nice(19)
    try:
        with open("/proc/self/autogroup", "w") as f:
            f.write("19")
    except OSError:  # no autogroups (another OS, or a kernel without them)
        pass


def warm_generic() -> int:
    """Compile the generic solver, plain and avoiding (Panda and a table), write taichi's cache
    (``engine.destroy`` does), then the marker, naming the kernel files that appeared (none where
    the solver was in the cache already). Returns 0, 3 when another process is warming this cache
    up, 4 when taichi could not write its cache (its lock stayed taken): no marker then, so the
    next start tries again."""
    lowest_priority()
    cache = os.environ.get("IKSTUDIO_WARM_CACHE")  # the parent's cache folder: its lock is tried before taichi starts
    lock = _one_warmup_lock(Path(cache)) if cache else True
    if lock is None:
        return 3  # another process is warming this cache up
    import engine
    from engine.runtime import kernel_cache

    engine.init(backend=os.environ.get("IKSTUDIO_WARM_BACKEND", "cpu"))
    lock = lock if cache else _one_warmup_lock(_cache_dir())
    if lock is None:
        return 3
    marker = marker_path()
    folder = marker.parent
    before = _kernel_files(folder)
    solve_generic_once(avoid=(False, True))
    engine.destroy()  # writes taichi's offline cache (new kernels only: none where all were loaded from it)
    settled = kernel_cache.last_settled()
    if settled is not None and settled.held:  # taichi found its lock taken, and wrote nothing
        return 4
    listed = _listed_files(marker) if marker.exists() else []  # an earlier warm-up's, those still there kept
    written = sorted((_kernel_files(folder) - before) | {name for name in listed if (folder / name).is_file()})
    marker.write_text("the generic IK solver of this code is in this cache (app/sim/solver_proc.py); "
                      "its kernel files:\n" + "".join(f"{name}\n" for name in written))
    return 0


def _listed_files(marker: Path) -> list[str]:
    """The kernel file names a warm-up's marker lists (after its first line)."""
    return [name for name in marker.read_text().splitlines()[1:] if name]


def _kernel_files(folder: Path) -> set[str]:
    """Names of the kernel files in taichi's cache ``folder``."""
    try:
        return {p.name for p in folder.iterdir() if p.suffix == ".tic"}
    except OSError:
        return set()


def warmup_running(folder: Path) -> bool:
    """A warm-up holds cache ``folder``'s lock now (one starting beside it would stop), or the lock
    cannot be taken at all (an unwritable cache: no warm-up could write it either)."""
    try:
        lock = _one_warmup_lock(folder, tries=1)
    except OSError:
        return True
    if lock is None:
        return True
    if lock is not True:
        lock.close()  # closing the file lets the lock go
    return False


def _one_warmup_lock(folder: Path, tries: int = 10):
    """An exclusive lock on cache ``folder``'s warm-up lock file (held until this process exits or the
    returned file is closed), or None when another process held it at each of ``tries`` attempts
    0.05 s apart (an app's :func:`warmup_running` holds it for a moment); where there is no flock,
    no lock is taken (True)."""
    try:
        import fcntl
    except ImportError:
        return True
    folder.mkdir(parents=True, exist_ok=True)
    f = open(folder / f"{MARKER_PREFIX}lock", "w")  # kept open: the lock lives as long as the process
    for attempt in range(tries):
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return f
        except OSError:
            if attempt + 1 < tries:
                time.sleep(0.05)
    f.close()
    return None
