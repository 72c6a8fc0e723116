"""How the app's process is tuned so that its GUI thread keeps drawing: thread priorities, the
garbage collector, and how taichi compiles the few kernels this process runs (the IK solves run in
:mod:`app.sim.solver_proc`'s child processes)."""

from __future__ import annotations

import gc
import os
import sys
import threading

RENDER_THREAD = "ikstudio-render"  # engine.vis's name for its render thread


def lower_thread_priority(nice: int) -> bool:
    """Set the calling thread's nice value to ``nice`` (only ever lowered: an unprivileged process
    cannot raise it again), leaving the process's other threads as they are. Linux only (a thread's
    nice value is its own there; elsewhere a thread id is not a process id). Returns whether it was
    set."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except (AttributeError, OSError):
        return False
    return True


def lower_priority(nice: int) -> None:
    """Put the sim thread (the caller), the render thread and its rasteriser threads below the GUI,
    so that on a busy machine the GUI thread gets the CPU first. Done once the first scene solved:
    until then the robots' first image and the IK kernels want all of it (start-up time). Linux
    only (a thread's nice value is its own there); elsewhere nothing changes."""
    if not sys.platform.startswith("linux"):
        return
    try:
        tids = [threading.get_native_id()]
        render = next((t.native_id for t in threading.enumerate() if t.name == RENDER_THREAD), None)
        if render is not None:
            tids.append(render)
            # the software GL (llvmpipe) threads the render thread made for its context: made after
            # it, so with larger ids than it (the window's were made before, at start-up)
            for tid in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{tid}/comm") as f:
                    if f.read().startswith("llvmpipe") and int(tid) > render:
                        tids.append(int(tid))
        for tid in tids:
            os.setpriority(os.PRIO_PROCESS, tid, nice)
    except (AttributeError, OSError, ValueError):
        pass


def freeze_heap() -> None:
    """Keep the objects alive now (modules, the scene just built: a few million) out of Python's
    garbage collections from now on. A full collection walks every tracked object with the GIL
    held: 0.1-0.3 s here, every thread stopped, the GUI's too. (No collection first: that would be
    one such pause; what garbage is frozen with them stays, a little memory.)"""
    gc.freeze()


def quick_compiles() -> None:
    """Compile this process's kernels without taichi's IR optimiser. With the IK solves in the
    solver process, the app's own kernels are small ones (FK, collision checks); taichi holds the
    GIL while it compiles them (the GUI thread waits), and the optimiser is about half that time
    (FK on an empty cache: ~0.35 s -> ~0.18 s under the GIL); LLVM optimises the code anyway."""
    try:
        from taichi.lang import impl

        impl.current_cfg().advanced_optimization = False
    except Exception:  # taichi not initialised, or its config moved: compiles as before
        pass


def kernel_cache_files() -> set[str]:
    """The files in taichi's on-disk kernel cache. Taichi writes it when the process exits, so
    during a run it tells only whether a first run is compiling everything (an empty cache); which
    kernels a later run compiles or loads, taichi does not say."""
    try:
        from taichi.lang import impl

        root = impl.current_cfg().offline_cache_file_path
    except Exception:  # taichi not initialised, or its config moved: no answer
        return set()
    found = set()
    for folder, _, files in os.walk(root):
        found.update(os.path.join(folder, f) for f in files)
    return found
