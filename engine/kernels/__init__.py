"""Taichi kernels over batches of configurations (one thread per env, or per env x IK restart).

Two families, both taking plain arrays (numpy on the CPU, zero-copy; taichi copies them to the
device on GPU backends) and compiled once per float precision, never per call or env count:

- generic (:mod:`.fk`, :mod:`.ik`): the robot is read from two arrays (:mod:`.layout`) at run
  time, so one compiled kernel serves every robot. Large IK batches of small robots that the
  per-robot family does not take get a variant compiled for their exact sizes
  (:func:`engine.ik.fixed_sizes`).
- per robot (:mod:`.spec`, :mod:`.static_fk`, :mod:`.static_ik`): the tree unrolled from the
  robot's constants, the working set in registers; 2-3x the generic IK throughput and ~2x the FK,
  for ~10 s of compile the first time a robot is used (then taichi's disk cache). Robots of hinges
  and slides up to 16 dofs qualify; see ``kernel=`` on the IK calls.

:mod:`.launch` keeps repeated launches cheap.
"""
