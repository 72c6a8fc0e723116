"""The engine's runtime: starting taichi on a backend, the process-wide state and lock, device
memory, kernel launches, and every choice of which compiled form runs and how.

- :mod:`.state`: what ``init`` chose (``STATE``) and the launch lock (``LOCK``); imported by
  kernels and launch helpers, it imports nothing of the engine.
- :mod:`.backend`: ``init`` (backend choice with an honest GPU fallback, precision, seed).
- :mod:`.devices`: the GPUs the drivers report (CUDA, Vulkan; software devices named as such).
- :mod:`.locking`: per-entity locks and the count of engine calls in progress.
- :mod:`.memory`: arrays that live on the device on a GPU.
- :mod:`.launch`: cheap repeated kernel launches and bounded caches of compiled kernels.
- :mod:`.kernel_cache`: taichi's disk cache of kernels kept usable beside other processes (its lock).
- :mod:`.spirv_cache`: Vulkan kernels in that cache without SPIR-V debug names (loads in seconds).
- :mod:`.threads`: serial or pooled CPU launches, chosen by timing both.
- :mod:`.dispatch`: which compiled solver and FK form run, and launch budgets.

Nothing here imports :mod:`engine.kernels` (the kernels import this package).
"""
