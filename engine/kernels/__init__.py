"""Taichi kernels over batches of configurations (one thread per env, or per env x IK restart).

Two families, both taking plain arrays (numpy on the CPU, zero-copy; taichi copies them to the
device on GPU backends) and compiled once per float precision, never per call or env count:

- generic (:mod:`.fk`, :mod:`.generic`): the robot is read from two arrays (:mod:`.layout`) at run
  time, so one compiled kernel serves every robot. Large IK batches of small robots that the
  per-robot family does not take get a variant compiled for their exact sizes
  (:func:`engine.runtime.dispatch.fixed_sizes`).
- per robot (:mod:`.spec`, :mod:`.traced`, :mod:`.per_robot_fk`, :mod:`.lane_fk`, :mod:`.per_robot`):
  the tree traced with the robot's constants folded in, the working set in registers; 3-4x the
  generic IK throughput; on a CPU the FK runs 8 float32 rows per thread as AVX vectors (~5x the
  generic FK). ~1 s (FK) to ~10 s (IK, per tuple of task links) of compile the first time, then
  taichi's disk cache. Robots of hinges, slides and fixed joints up to 16 dofs qualify; see
  ``kernel=`` on the IK calls.

The IK solver's algorithm is written once (:mod:`.solver`); :mod:`.generic` and :mod:`.per_robot`
are its two forms. :mod:`.answers` picks each env's answer among its restarts, :mod:`.avoid` and
:mod:`.collide` are the collision task's search and the obstacle shapes' distances.
:mod:`engine.runtime.launch` keeps repeated launches cheap.
"""
