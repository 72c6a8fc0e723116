"""Datasets of IK solutions at scale: every row of a table of targets solved, in chunks, into a
Parquet dataset, resumable, in this process or on a Ray cluster.

    import engine.batch
    summary = engine.batch.solve("panda", "targets.parquet", links="hand", out="solutions/")
    print(summary.line())                       # rows, success %, wall time, solves/s
    table = pyarrow.parquet.read_table("solutions/")   # or pandas.read_parquet("solutions/")

This package is a layer above the engine core and :mod:`engine.scenefile` (whose solver
settings and robot names it uses): the core never imports it (``tests/test_boundaries.py``).
Its modules: :mod:`~engine.batch.settings` (the job, validated), :mod:`~engine.batch.targets`
(reading and checking the input, hashed as read), :mod:`~engine.batch.files` (fingerprints of
the meshes the answers depend on), :mod:`~engine.batch.manifest` (the manifest's shape,
self-checksum and atomic write), :mod:`~engine.batch.dataset` (the output folder: lock, parts
checked against their recorded SHA-256 on resume, atomic parts), :mod:`~engine.batch.verify`
(``ikstudio solve --verify``), :mod:`~engine.batch.worker` (a chunk solver, the same in-process and in
a Ray actor), :mod:`~engine.batch.cluster` (Ray), :mod:`~engine.batch.progress` and
:mod:`~engine.batch.runner` (:func:`solve`). pyarrow is needed; Ray only with ``ray=``.
"""

from .dataset import finished_parts
from .progress import Progress, SolveSummary
from .runner import solve
from .settings import CPU_CHUNK, GPU_CHUNK, chunk_seed

__all__ = ["CPU_CHUNK", "GPU_CHUNK", "Progress", "SolveSummary", "chunk_seed", "finished_parts", "solve"]
