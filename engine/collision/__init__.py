"""The collision model: a robot's collision geometry, the spheres fitted to it, the link pairs that
count, the scene's obstacles, the kernel tables of both, and every batched distance check.

- :mod:`.geometry`: each link's collision geometry (URDF ``<collision>``, MJCF collision geoms).
- :mod:`.spheres`: spheres fitted per link, conservative, cached on disk.
- :mod:`.robot`: ``RobotCollision``: a robot's spheres and counted pairs; numpy distances.
- :mod:`.world`: the scene's fixed bodies as obstacles, and their tables.
- :mod:`.checks`: the kernel tables of pairs and obstacles; every batched distance (one kernel).
- :mod:`.api`: the entity's calls (``in_collision``, ``collision_distance``, pairs, the model).

Imports :mod:`engine.model`, :mod:`engine.kernels` and :mod:`engine.runtime`; never the IK.
"""
