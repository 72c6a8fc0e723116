"""Taichi kernels over batches of configurations (one thread per env, or per env x IK restart).

Two families, both taking plain arrays (numpy on the CPU, zero-copy; taichi copies them to the
device on GPU backends) and compiled once per float precision, never per call or env count:

- generic (:mod:`.fk`, :mod:`.ik`): the robot is read from two arrays (:mod:`.layout`) at run
  time, so one compiled kernel serves every robot. Large IK batches of small robots that the
  per-robot family does not take get a variant compiled for their exact sizes
  (:func:`engine.ik.fixed_sizes`).
- per robot (:mod:`.spec`, :mod:`.traced`, :mod:`.static_fk`, :mod:`.lane_fk`, :mod:`.static_ik`):
  the tree traced with the robot's constants folded in, the working set in registers; 3-4x the
  generic IK throughput; on a CPU the FK runs 8 float32 rows per thread as AVX vectors (~5x the
  generic FK). ~1 s (FK) to ~10 s (IK, per tuple of task links) of compile the first time, then
  taichi's disk cache. Robots of hinges, slides and fixed joints up to 16 dofs qualify; see
  ``kernel=`` on the IK calls.

:mod:`.launch` keeps repeated launches cheap.
"""
