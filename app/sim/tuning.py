"""How the app's process is tuned so that its GUI thread keeps drawing: the garbage collector, and
how taichi compiles the few kernels this process runs (the IK solves run in
:mod:`app.sim.solver_proc`'s child processes)."""

from __future__ import annotations

import ctypes
import gc
import os
import sys

from engine.runtime import garbage


def freeze_heap() -> None:
    """Keep the objects alive now out of Python's garbage collections from now on. A full
    collection walks every tracked object with the GIL held: 0.1-0.3 s with the modules a scene
    needs imported (~200k objects frozen), every thread stopped, the GUI's too. Called when the
    sim thread starts and after its start-up imports, never with a scene alive: a frozen object is
    never collected, and a scene's meshes hold reference cycles, so each robot switch kept the old
    scene for good (~10 MB, Panda <-> UR5 at 16 envs). With the scene's own objects left out, a
    full collection in the window's process takes ~1 ms. Closed scenes whose meshes still wait for
    a collection (:mod:`engine.runtime.garbage`: none at the window's start-up) are collected
    first, so that they are not frozen with the rest."""
    if any(garbage.pending()):
        garbage.collect_now()
    gc.freeze()


def release_freed_memory() -> bool:
    """Collect the garbage (a replaced scene: its meshes hold reference cycles) and hand the
    memory malloc holds free back to the system; True where the second part ran (Linux, glibc).
    Call it with the heap frozen (:func:`freeze_heap`): the collection then takes ~1 ms.

    glibc gives each thread that allocates its own arena (up to 8 per core), and an arena returns
    memory only from the top of its heap. The window's GUI, sim, render and decimation threads
    allocate and free large blocks (images, meshes), so memory one of them freed mostly stayed
    with that thread: the window's process grew ~20 MB per robot switch (Panda <-> UR5: 533 ->
    811 MB over 6 switches), with every scene freed. ``malloc_trim(0)`` releases the free pages of
    every arena. (Capping the arenas with ``mallopt`` works only before any thread allocates, which
    a script that called ``engine.init`` first has already done.)"""
    garbage.collect_now()
    if not sys.platform.startswith("linux"):
        return False
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)  # ctypes releases the GIL for the call
    except (OSError, AttributeError):  # not glibc: its allocator manages this itself
        return False
    return True


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
