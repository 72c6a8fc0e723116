"""``CollisionState``: what an entity keeps for collision checks between calls, made at
``scene.build()`` and dropped at ``scene.destroy()`` in one place (:class:`engine.entity.RigidEntity`).

- ``model``: its :class:`~engine.collision.robot.RobotCollision` (spheres and counted pairs), made
  on first use;
- ``check_tables``: the kernel tables of ``collision_distance`` per (self pairs, world) choice;
- ``obstacle_spheres``: a fixed Mesh entity's ``(count, SphereModel)`` as an obstacle.
"""

from __future__ import annotations


class CollisionState:
    """An entity's collision model, check tables and (a Mesh obstacle's) spheres."""

    def __init__(self):
        self.model = None
        self.check_tables: dict = {}
        self.obstacle_spheres: tuple | None = None
