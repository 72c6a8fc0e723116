"""``RigidEntity``: one robot in a scene, its per-env state, FK, Jacobians and IK entry points.

State per env: ``qpos`` (n_qs,), link poses (n_links, 3 | 4) kept in step with qpos, and dof
position targets for :meth:`control_dofs_position`. Every method follows the seed's shape rule:
a batched scene takes and returns a leading env axis, an unbatched one none. Arrays come back in
the engine's precision (float32 or float64, as set by ``engine.init``), as fresh copies. Methods
validate all input before touching state, so a call that raises leaves the entity as it was.
"""

from __future__ import annotations

import numpy as np

from . import dofs as dofs_mod
from . import inputs
from .base_pose import BasePoseMethods
from .collision.api import CollisionMethods
from .collision.state import CollisionState
from .configuration import Configuration, allocate, kernel_array
from .dof_gains import DofGains
from .elements import RigidJoint, RigidLink
from .errors import InvalidTypeError, InvalidValueError, StateError, UnknownNameError
from .ik.api import IKMethods
from .ik.state import IKState
from .kernels import fk as fk_kernels
from .kernels import lane_fk
from .kinematic_readers import KinematicReaders
from .model.tree import MAX_JOINT_VALUE, KinematicTree
from .morphs import Shape
from .plan.api import PlanMethods
from .runtime import dispatch, span, threads
from .runtime.locking import new_lock, serialised
from .runtime.state import float_dtype


class RigidEntity(IKMethods, CollisionMethods, PlanMethods, DofGains, KinematicReaders, BasePoseMethods):
    """An entity added with ``scene.add_entity(morph)`` (a robot, or a single body: Plane, Box,
    Sphere, Cylinder, Mesh); usable once the scene is built. ``surface`` and ``material`` are the
    ones it was added with (:mod:`engine.surfaces`, :mod:`engine.materials`)."""

    def __init__(self, scene, tree: KinematicTree, morph, entity_id: int, link_start: int, joint_start: int,
                 surface=None, material=None):
        self._scene = scene
        self.tree = tree
        self.morph = morph
        self.surface = surface
        self.material = material
        self.idx = entity_id
        self.links = [RigidLink(link.name, i, link_start + i, link.parent, entity_id, self)
                      for i, link in enumerate(tree.links)]
        self.joints = [RigidJoint(j.name, j.type, i, joint_start + i, j.link, tuple(j.qs_idx),
                                  tuple(j.dofs_idx), entity_id) for i, j in enumerate(tree.joints)]
        self._lock = new_lock()  # held by every call that touches state or buffers (engine.runtime.locking)
        self._link_by_name = {link.name: link for link in self.links}
        self._joint_by_name = {joint.name: joint for joint in self.joints}
        self._config = self._ik = self._collision = None
        self._destroyed = False

    # -- structure ----------------------------------------------------------------------------
    @property
    def n_links(self) -> int:
        return self.tree.n_links

    @property
    def n_joints(self) -> int:
        return self.tree.n_joints

    @property
    def n_qs(self) -> int:
        return self.tree.n_qs

    @property
    def n_dofs(self) -> int:
        return self.tree.n_dofs

    @property
    def is_free(self) -> bool:
        """True when the base link has a free joint (a floating robot, or a single body not fixed)."""
        joints = self.tree.joints
        return bool(joints) and joints[0].type == "free" and joints[0].link == 0

    @property
    def is_placed_body(self) -> bool:
        """True for a fixed single body (Plane, or a Box, Sphere, Cylinder or Mesh with ``fixed=True``):
        no joint, and a pose per env that ``set_pos`` / ``set_quat`` move."""
        return isinstance(self.morph, Shape) and self.morph.fixed

    @property
    def base_link(self) -> RigidLink:
        return self.links[0]

    @property
    def q_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper qpos bounds ``(n_qs,)`` each (inf where unbounded)."""
        return self.tree.q_limits()

    def get_link(self, name: str) -> RigidLink:
        """The link called ``name``; KeyError listing the valid names otherwise."""
        if isinstance(name, RigidLink):
            return self.own_link(name, "link")
        if name not in self._link_by_name:
            raise UnknownNameError(f"name: no link '{name}' in '{self.tree.name}'; links are: "
                                   f"{', '.join(self._link_by_name)}")
        return self._link_by_name[name]

    def get_joint(self, name: str) -> RigidJoint:
        """The joint called ``name``; KeyError listing the valid names otherwise."""
        if name not in self._joint_by_name:
            raise UnknownNameError(f"name: no joint '{name}' in '{self.tree.name}'; joints are: "
                                   f"{', '.join(self._joint_by_name)}")
        return self._joint_by_name[name]

    def own_link(self, link, arg: str = "link") -> RigidLink:
        """``link`` (a RigidLink of this entity, or a link name) as this entity's link; errors name
        ``arg``."""
        if isinstance(link, str):
            try:
                return self.get_link(link)
            except KeyError as err:  # get_link's message names its own argument
                raise UnknownNameError(f"{arg}: {str(err.args[0]).removeprefix('name: ')}") from None
        if not isinstance(link, RigidLink):
            raise InvalidTypeError(f"{arg}: expected a RigidLink or a link name, got {type(link).__name__}")
        if link.entity_id != self.idx or link.idx_local >= self.n_links or self.links[link.idx_local] != link:
            raise InvalidValueError(f"{arg}: link '{link.name}' belongs to another entity")
        return link

    # -- lifecycle: the state objects, made at build and dropped at destroy, here only ----------
    @serialised
    def on_build(self, n_envs: int, batched: bool) -> None:
        """Called by ``scene.build()``: the entity's state over ``n_envs`` envs."""
        self._config = Configuration(self.tree, n_envs, batched, self.is_placed_body)
        self._ik = IKState()
        self._collision = CollisionState()

    @serialised
    def on_destroy(self) -> None:
        """Called by ``scene.destroy()``: every state object dropped; later calls are refused."""
        self._config = self._ik = self._collision = None
        self._destroyed = True

    def require_built(self) -> None:
        """StateError, saying why, unless the entity's scene is built and still valid."""
        if self._config is None:
            if self._destroyed:
                raise StateError(f"'{self.tree.name}': the scene was destroyed (scene.destroy()); build a new "
                                 "scene to use this robot again")
            raise StateError(f"'{self.tree.name}': the scene is not built: call scene.build() first")
        if not self._config.is_current:  # its kernels and device arrays are gone
            raise StateError("the scene was built before engine.init() was called again, which starts the "
                             "engine anew: build a new scene")

    @property
    def configuration(self) -> Configuration:
        """The entity's kinematic state (:class:`~engine.configuration.Configuration`); StateError
        before ``scene.build()``, after ``scene.destroy()`` or after a new ``engine.init()``."""
        self.require_built()
        return self._config

    @property
    def ik_state(self) -> IKState:
        """The entity's IK plans, kept requests and working arrays (:mod:`engine.ik.state`); the
        same StateError as :attr:`configuration` when not usable."""
        self.require_built()
        return self._ik

    @property
    def collision_state(self) -> CollisionState:
        """The entity's collision model, tables and obstacle spheres (:mod:`engine.collision.state`);
        the same StateError as :attr:`configuration` when not usable."""
        self.require_built()
        return self._collision

    @property
    def scene(self):
        """The :class:`~engine.scene.Scene` the entity was added to."""
        return self._scene

    @property
    def lock(self):
        """The entity's re-entrant lock, held by every call that touches its state
        (:mod:`engine.runtime.locking`)."""
        return self._lock

    def state_bytes_per_env(self) -> int:
        """Bytes of per-env state one env costs (what :meth:`state_nbytes` holds per env), known
        before the scene is built."""
        size = np.dtype(float_dtype()).itemsize
        body = 2 * 7 * size if self.is_placed_body else 0
        return 2 * self.n_qs * size + self.n_links * 7 * size + self.n_dofs * (8 + 1) + body

    def widest_row(self) -> int:
        """Elements per env of the widest per-env array a kernel indexes (a pose buffer of links and
        joint frames)."""
        return (self.n_links + self.n_joints) * 7

    @serialised
    def state_nbytes(self) -> int:
        """Bytes held in per-env state arrays (all envs)."""
        return self.configuration.state_nbytes()

    def _select(self, name: str, idx, size: int, what: str) -> np.ndarray:
        sel = inputs.as_index_list(name, idx, size, what)
        return np.arange(size) if sel is None else sel

    # -- qpos and dofs ----------------------------------------------------------------------------
    @serialised
    def get_qpos(self, qs_idx_local=None, envs_idx=None) -> np.ndarray:
        """qpos ``([n_envs,] n_qs)``, or the selected entries / envs."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        qs = self._select("qs_idx_local", qs_idx_local, self.n_qs, "qpos")
        return cfg.out(cfg.qpos[np.ix_(envs, qs)])

    @serialised
    def set_qpos(self, qpos, qs_idx_local=None, envs_idx=None, *, zero_velocity: bool = True,
                 skip_forward: bool = False) -> None:
        """Teleport: write qpos ``([n_envs,] n)`` (n = len(qs_idx_local) or n_qs) and update link poses.
        Mimic joints are set from their leaders; ball/free quaternions are normalised.
        ``zero_velocity`` False keeps the dof velocities the readers report; ``skip_forward`` is
        accepted (link poses are always updated)."""
        cfg = self.configuration
        kept = self.velocities_kept(zero_velocity, skip_forward)
        envs = cfg.envs(envs_idx)
        qs = self._select("qs_idx_local", qs_idx_local, self.n_qs, "qpos")
        values = inputs.batched("qpos", qpos, (len(qs),), len(envs), cfg.batched)
        full = cfg.qpos[envs].astype(float)
        full[:, qs] = values
        full = self.tree.apply_mimic(dofs_mod.normalize_quaternions(self.tree, full))
        self.tree.check_joint_values("qpos", full)
        cfg.commit_qpos(envs, full)
        cfg.dof_velocity = kept

    @serialised
    def get_dofs_position(self, dofs_idx_local=None, envs_idx=None) -> np.ndarray:
        """Dof positions ``([n_envs,] n)`` (see :mod:`engine.dofs` for ball and free joints)."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        dofs = self._select("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        return cfg.out(dofs_mod.qpos_to_dofs(self.tree, cfg.qpos[envs].astype(float))[:, dofs].astype(cfg.dtype))

    @serialised
    def set_dofs_position(self, position, dofs_idx_local=None, envs_idx=None, *, zero_velocity: bool = True) -> None:
        """Teleport: write dof positions ``([n_envs,] n)`` and update link poses (``zero_velocity``:
        as in :meth:`set_qpos`)."""
        cfg = self.configuration
        kept = self.velocities_kept(zero_velocity)
        envs = cfg.envs(envs_idx)
        dofs = self._select("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        values = inputs.batched("position", position, (len(dofs),), len(envs), cfg.batched)
        full = dofs_mod.qpos_to_dofs(self.tree, cfg.qpos[envs].astype(float))
        full[:, dofs] = values
        qpos = dofs_mod.dofs_to_qpos(self.tree, full)
        self.tree.check_joint_values("position", qpos)
        cfg.commit_qpos(envs, qpos)
        cfg.dof_velocity = kept

    @serialised
    def control_dofs_position(self, position, dofs_idx_local=None, envs_idx=None) -> None:
        """Set position targets ``([n_envs,] n)``; ``scene.step()`` moves each dof toward its target
        by at most its velocity limit x dt."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        dofs = self._select("dofs_idx_local", dofs_idx_local, self.n_dofs, "dof")
        values = inputs.batched("position", position, (len(dofs),), len(envs), cfg.batched)
        if np.abs(values).max(initial=0) > MAX_JOINT_VALUE:
            raise InvalidValueError(f"position: expected dof targets of at most {MAX_JOINT_VALUE:g} (rad or m) in "
                                    f"magnitude, got {float(np.abs(values).max()):.3g}")
        cfg.dof_target[np.ix_(envs, dofs)] = values
        cfg.dof_controlled[np.ix_(envs, dofs)] = True

    @serialised
    def on_step(self, dt: float, joint_limits: bool = False) -> None:
        """Move controlled dofs toward their targets for ``dt`` s; with ``joint_limits`` the moved
        hinges and slides stop at their limits (RigidOptions.enable_joint_limit)."""
        cfg = self._config
        if not cfg.dof_controlled.any():
            cfg.dof_velocity = None  # nothing moved: zero velocities
            return
        before = cfg.qpos
        qpos = dofs_mod.step_towards(self.tree, cfg.qpos.astype(float), cfg.dof_target,
                                     cfg.dof_controlled, cfg.velocity_limit * dt)
        if joint_limits:
            qpos = self.tree.apply_mimic(_clamp_controlled(self.tree, qpos, cfg.dof_controlled, cfg.q_limits))
        cfg.commit_qpos(np.arange(cfg.n_envs), qpos)
        cfg.note_step(before, dt)

    @serialised
    def on_reset(self, envs: np.ndarray, qpos: np.ndarray | None = None, body_pose: np.ndarray | None = None) -> None:
        """Back to the initial state in ``envs``: the qpos at build (or the one ``qpos`` (B, n_qs)
        registers as initial), no dof targets; a fixed body back to its pose at build (or the one
        ``body_pose`` (B, 7) registers)."""
        cfg = self._config
        if qpos is not None:
            cfg.init_qpos = np.array(qpos, dtype=cfg.dtype)
        if body_pose is not None and cfg.body_pose.shape[1]:
            cfg.init_body_pose = np.array(body_pose, dtype=cfg.dtype)
        if cfg.body_pose.shape[1]:
            placed = cfg.body_pose.copy()
            placed[envs] = cfg.init_body_pose[envs]
            cfg.body_pose = placed
        cfg.dof_target[envs] = dofs_mod.qpos_to_dofs(self.tree, cfg.init_qpos[envs].astype(float))
        cfg.dof_controlled[envs] = False
        cfg.commit_qpos(envs, cfg.init_qpos[envs].astype(float))

    # -- link poses, FK, Jacobian -----------------------------------------------------------------
    @serialised
    def get_links_pos(self, links_idx_local=None, envs_idx=None) -> np.ndarray:
        """Link origins ``([n_envs,] n_links, 3)`` in the (env-local) world frame, m."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        links = self._select("links_idx_local", links_idx_local, self.n_links, "link")
        return cfg.out(cfg.pose[np.ix_(envs, links)][..., :3])

    @serialised
    def get_links_quat(self, links_idx_local=None, envs_idx=None) -> np.ndarray:
        """Link orientations ``([n_envs,] n_links, 4)``, (w, x, y, z)."""
        cfg = self.configuration
        envs = cfg.envs(envs_idx)
        links = self._select("links_idx_local", links_idx_local, self.n_links, "link")
        return cfg.out(cfg.pose[np.ix_(envs, links)][..., 3:])

    @serialised
    def forward_kinematics(self, qpos, qs_idx_local=None, links_idx_local=None, envs_idx=None):
        """Link poses for a configuration, without touching the scene's state.

        ``qpos``: ``([n_envs,] n)`` with n = len(qs_idx_local) or n_qs; entries not selected by
        ``qs_idx_local`` are taken from the current state. Returns ``(links_pos, links_quat)`` of
        shapes ``([n_envs,] n_links, 3)`` and ``([n_envs,] n_links, 4)`` for the selected links/envs.
        """
        cfg = self.configuration
        envs = None if envs_idx is None else cfg.envs(envs_idx)
        n = cfg.n_envs if envs is None else len(envs)
        links = inputs.as_index_list("links_idx_local", links_idx_local, self.n_links, "link")
        if qs_idx_local is None:
            full = inputs.batched("qpos", qpos, (self.n_qs,), n, cfg.batched, dtype=cfg.dtype)
        else:
            qs = self._select("qs_idx_local", qs_idx_local, self.n_qs, "qpos")
            values = inputs.batched("qpos", qpos, (len(qs),), n, cfg.batched)
            full = (cfg.qpos if envs is None else cfg.qpos[envs]).astype(float)
            full[:, qs] = values
        self.tree.check_joint_values("qpos", full)
        if cfg.has_quaternions:  # as set_qpos does: zero quaternions are an error, others made unit
            full = dofs_mod.normalize_quaternions(self.tree, full)
        # mimic joints need no fix-up here: the kernels derive them from their leaders
        full = np.ascontiguousarray(full, dtype=cfg.dtype)
        if dispatch.fk_form(cfg.spec, n) == "lane":
            pos, quat = cfg.fk_buffers(n)
            # serial or parallel, whichever has lately been faster here (kernels.threads)
            threads.CHOICE.launch(("lane_fk", id(cfg.spec)), n,
                                  lambda serial: lane_fk.run_fk(cfg.spec, full, pos, quat, serial))
        else:
            pose = allocate("forward_kinematics", (n, self.n_links, 7), cfg.dtype)
            cfg.run_fk(full, pose)
            pos, quat = pose[..., :3], pose[..., 3:]
        if cfg.body_pose.shape[1]:  # a fixed body: where set_pos / set_quat put it, whatever qpos says
            placed = cfg.body_pose if envs is None else cfg.body_pose[envs]
            pos[:, 0], quat[:, 0] = placed[:, :3], placed[:, 3:]
        if links is not None:
            pos, quat = pos[:, links], quat[:, links]
        return cfg.out(pos), cfg.out(quat)

    @serialised
    def get_jacobian(self, link, local_point=None, envs_idx=None) -> np.ndarray:
        """Jacobian ``([n_envs,] 6, n_dofs)`` of a point fixed to ``link`` at the current state.

        ``local_point`` (3,) is in the link frame (default: the link origin). Rows 0-2: linear
        velocity of the point; rows 3-5: angular velocity; world axes; one column per dof.
        """
        cfg = self.configuration
        link = self.own_link(link)
        envs = cfg.envs(envs_idx)
        point = np.zeros(3) if local_point is None else np.array(inputs.as_point("local_point", local_point))
        n = len(envs)
        pose = cfg.jacobian_pose(n)
        J = allocate("get_jacobian", (n, 6, max(self.n_dofs, 1)), cfg.dtype, zero=True)
        q, point = kernel_array(cfg.qpos[envs]), point.astype(cfg.dtype)[None]
        for offset in span.thread_offsets(n):
            threads.CHOICE.launch(("jacobian", id(cfg.packed)), n,
                                  lambda serial, at=offset: fk_kernels.jacobian(q, link.idx_local, point,
                                                                                *cfg.robot_args, pose, J, serial, at))
        return cfg.out(J[:, :, : self.n_dofs])


def _clamp_controlled(tree: KinematicTree, qpos: np.ndarray, controlled: np.ndarray, limits) -> np.ndarray:
    """``qpos`` (B, n_qs) with every controlled hinge or slide clipped into its limits."""
    lo, hi = limits
    out = qpos.copy()
    for joint in tree.joints:
        if joint.n_qs == 1 and joint.mimic is None:
            q, moved = joint.q_start, controlled[:, joint.dof_start]
            out[moved, q] = np.clip(out[moved, q], lo[q], hi[q])
    return out


