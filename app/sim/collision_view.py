"""Collisions in the app, on the sim side: which envs' answers collide, their tint, and the robot's
collision spheres drawn as debug objects.

Only the sim thread (or the inline controller) calls this module, because it calls the engine
(``robot.in_collision``, the visualizer's debug drawings). The spheres are visualizer state only:
debug spheres, never entities, so showing them changes no solve, no link count and no state
array (docs/design.md, "Simulation state and visualizer state").

An env *collides* when its robot's spheres overlap one another (a counted pair) or an obstacle,
with the obstacles where they are now: ``robot.in_collision()`` (margin 0). The spheres hold the
collision meshes, so an env that does not collide is collision-free at mesh level. The checks run
when they can say something the user asked about: the scene has obstacles, avoidance is on, or
the spheres are shown (:func:`checks_wanted`); otherwise nothing is fitted or checked, and a
scene without obstacles starts as fast as before.
"""

from __future__ import annotations

import numpy as np

from engine.transforms import quat_to_matrix

OK, FAILED, COLLIDING, LAGGING = 0, 1, 2, 3  # an env's state, as tinted (collision wins over failure and lag)
COLLIDE_TINT = (0.95, 0.35, 0.95, 1.0)  # magenta: apart from the IK-failure red (app.sim.FAIL_TINT)
LAG_TINT = (1.0, 0.75, 0.1, 1.0)  # amber: velocity-limited tracking behind its target (issue 30)
SPHERE_RGBA = (0.2, 0.85, 1.0, 0.45)  # the collision spheres, translucent cyan


def checks_wanted(spec, spheres_shown: bool) -> bool:
    """Whether collisions are checked for ``spec`` (a scene spec): it has obstacles, its solver
    avoids collisions, or the spheres are shown."""
    return bool(spec.obstacles) or bool(spec.solver.avoid_collisions) or bool(spheres_shown)


def env_states(success: np.ndarray, colliding: np.ndarray | None, lagging: np.ndarray | None = None) -> np.ndarray:
    """``(n_envs,)`` int8: :data:`OK`, :data:`FAILED` (IK did not reach the targets),
    :data:`LAGGING` (short of them, but following as fast as its velocity limits allow:
    ``RunnerFrame.lagging``) or :data:`COLLIDING` (the answer collides, whether or not it reached
    them) per env; ``colliding`` / ``lagging`` None: no collision check ran / no tracking."""
    success = np.asarray(success, bool).reshape(-1)
    state = np.where(success, OK, FAILED).astype(np.int8)
    if lagging is not None:
        state[np.asarray(lagging, bool).reshape(-1) & ~success] = LAGGING
    if colliding is not None:
        state[np.asarray(colliding, bool).reshape(-1)] = COLLIDING
    return state


def sphere_centres(model, links_pos: np.ndarray, links_quat: np.ndarray) -> np.ndarray:
    """World (env-local) centres ``(n_envs, n_spheres, 3)`` m of the sphere model ``model`` (a
    :class:`engine.collision.spheres.SphereModel`: ``link`` (S,), ``centers`` (S, 3) in the link
    frame) at link poses ``links_pos`` (n_envs, n_links, 3) and ``links_quat`` (n_envs, n_links, 4)."""
    R = quat_to_matrix(links_quat[:, model.link])  # (n, S, 3, 3)
    return links_pos[:, model.link] + np.einsum("nsij,sj->nsi", R, model.centers)


class CollisionView:
    """The collision checks and sphere drawings of one scene (its ``robot`` and ``visualizer``)."""

    def __init__(self, robot, visualizer, checker=None):
        self.robot = robot
        self.visualizer = visualizer
        self.checker = checker  # () -> (n_envs,) bool of the robot's current state, checked elsewhere
        self.colliding: np.ndarray | None = None  # (n_envs,) bool of the last check, None: none ran
        self.error: str | None = None  # why the robot has no collision model (checks stay off)
        self._handles: list = []  # one debug sphere (batched over envs) per robot sphere
        self._model = None

    def _sphere_model(self):
        if self._model is None:
            self._model = self.robot.collision_model().spheres
        return self._model

    def check(self) -> np.ndarray | None:
        """``(n_envs,)`` bool: each env's answer collides (see the module docstring); None when the
        robot has no collision model (the reason is in :attr:`error`). With a ``checker`` (the app's
        solver child: taichi holds the GIL while it compiles the check's kernel, 3.5 s cold on the
        idle 2-core VM, which would stop the window's frames) the check runs there."""
        if self.error is not None:
            return None
        try:
            found = self.robot.in_collision() if self.checker is None else self.checker()
            self.colliding = np.asarray(found, bool).reshape(-1)
        except (ValueError, RuntimeError, OSError) as err:
            self.error = f"no collision checks for this robot: {err}"
            self.colliding = None
        return self.colliding

    def after_state(self, spec, min_distance: np.ndarray | None = None) -> np.ndarray | None:
        """After the robot's state changed (a solve, a joint): the drawn spheres follow it, and the
        envs are checked when ``spec`` (the runner's) asks for checks (:func:`checks_wanted`);
        returns :attr:`colliding` (None: no check). ``min_distance`` (n_envs,) m: the clearances
        the solve measured for this very state (``RunnerFrame.min_distance``), read instead of
        running the check again (NaN, nothing to check, is no collision, as ``in_collision``)."""
        self.update_spheres()
        if not checks_wanted(spec, self.spheres_shown):
            self.colliding = None
            return None
        if min_distance is not None and self.error is None:
            self.colliding = np.asarray(min_distance).reshape(-1) < 0.0
            return self.colliding
        return self.check()

    @property
    def spheres_shown(self) -> bool:
        return bool(self._handles)

    def show_spheres(self, show: bool) -> None:
        """Draw the robot's collision spheres in every env (debug spheres), or remove them."""
        vis = self.visualizer
        if not show:
            for handle in self._handles:
                if handle.is_drawn:
                    vis.clear_debug_object(handle)
            self._handles = []
            return
        if self._handles:
            return
        model = self._sphere_model()
        centres = self._centres(model)
        self._handles = [vis.draw_debug_sphere(centres[:, s], radius=float(model.radii[s]), color=SPHERE_RGBA)
                         for s in range(model.n_spheres)]

    def update_spheres(self) -> None:
        """Move the drawn spheres to the robot's current link poses (after a solve or a joint edit)."""
        if not self._handles:
            return
        centres = self._centres(self._model)
        for s, handle in enumerate(self._handles):
            T = np.tile(np.eye(4), (centres.shape[0], 1, 1))  # its own: a handle keeps the array it is given
            T[:, :3, 3] = centres[:, s]
            handle.set_pose(T)
        self.visualizer.update_debug_objects()

    def _centres(self, model) -> np.ndarray:
        robot, k = self.robot, self.robot.n_links
        return sphere_centres(model, robot.get_links_pos().reshape(-1, k, 3), robot.get_links_quat().reshape(-1, k, 4))
