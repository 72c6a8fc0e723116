"""Taichi kernels over batches of configurations (one thread per env, or per env x IK restart).

Every kernel takes plain arrays (numpy on the CPU, zero-copy; taichi copies them to the device on
GPU backends), so one compiled kernel serves every robot and every batch size: kernels are
compiled once per float precision, never per call or env count. The one exception is by choice:
large IK batches of small robots also get a solver compiled for the robot's exact sizes
(:func:`engine.ik.fixed_sizes`), once per robot structure. :mod:`engine.kernels.launch` keeps
repeated launches cheap.
"""
