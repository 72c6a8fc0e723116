"""A robot's self-collision model: its spheres (:mod:`engine.collision.spheres`) and the link pairs
that count; their batched distances are :func:`engine.collision.checks.distance` (in numpy:
:meth:`RobotCollision.distance_numpy`).

Pairs (:class:`RobotCollision`):

* Only links with spheres take part, and *adjacent* links never count. Links joined by fixed
  joints move as one rigid body; two links are adjacent when they belong to the same rigid body
  or to rigid bodies joined by one moving joint.
* Where the robot ships an SRDF (:func:`engine.model.srdf.find_srdf`), its
  ``<disable_collisions>`` pairs are excluded, and nothing else is.
* Otherwise, as MoveIt's setup assistant does, ``samples`` random configurations (seeded; uniform
  within the joint limits, +-pi for unlimited rotations, +-1 m for unlimited slides; free and ball
  joints stay at the default) are checked, and pairs whose spheres overlap in every one, or in
  none, are excluded, and so are pairs that overlap in the default configuration (MoveIt's
  "default" rule: a robot file's home pose is taken as collision-free). The result is cached on
  disk with the spheres.
* :meth:`RobotCollision.add_pair` / :meth:`remove_pair` edit the set afterwards.

Distance of a pair: the smallest ``|c_i - c_j| - r_i - r_j`` over its spheres (m; negative when
they overlap). A pair's sphere distance is at most its mesh distance (the spheres contain the
meshes), so a positive sphere distance proves the meshes apart.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidValueError, UnknownNameError
from ..model.srdf import disabled_pairs, find_srdf
from ..transforms import quat_rotate_unit
from . import fit_store
from .geometry import collision_geometry, mesh_files
from .groups import sphere_rows
from .spheres import FIT_VERSION, check_spheres_per_link, check_tolerance, growth_params, sphere_model

DEFAULT_SAMPLES = 1000
PAIRS_VERSION = 3
CHUNK = 256  # configurations per block in the distance computation (bounds the temporary arrays)
PAIR_ELEMENTS = 1 << 20  # sphere pairs times configurations per step of one link pair's distances


def rigid_groups(tree) -> np.ndarray:
    """``(n_links,)`` the rigid body of each link: the topmost link reached through fixed joints."""
    group = np.arange(tree.n_links)
    for link in tree.links:
        moving = any(tree.joints[j].type != "fixed" for j in link.joints)
        if link.parent >= 0 and not moving:
            group[link.idx] = group[link.parent]
    return group


def adjacent(tree) -> np.ndarray:
    """``(n_links, n_links)`` bool: the same rigid body, or rigid bodies one moving joint apart."""
    group = rigid_groups(tree)
    parent_group = np.array([group[tree.links[g].parent] if tree.links[g].parent >= 0 else -1 for g in group])
    same = group[:, None] == group[None, :]
    return same | (parent_group[:, None] == group[None, :]) | (group[:, None] == parent_group[None, :])


def sample_qpos(tree, n: int, seed: int) -> np.ndarray:
    """``(n, n_qs)`` configurations: uniform within the limits of each 1-dof joint (+-pi / +-1 m where
    unlimited), the default elsewhere, mimic joints following their leaders."""
    rng = np.random.default_rng(seed)
    q = np.tile(tree.default_qpos, (n, 1))
    for joint in tree.joints:
        if joint.n_qs != 1:
            continue
        wide = np.pi if joint.type in ("revolute", "continuous") else 1.0
        lo = joint.lower if np.isfinite(joint.lower) else -wide
        hi = joint.upper if np.isfinite(joint.upper) else wide
        q[:, joint.q_start] = rng.uniform(lo, hi, n)
    return tree.apply_mimic(q)


class RobotCollision:
    """The sphere model and counted link pairs of one entity (``entity.collision_model()``).

    Attributes: ``spheres`` (:class:`~engine.collision.spheres.SphereModel`), ``srdf`` (the SRDF used,
    or None), ``excluded`` (``{(a, b): reason}``, link indices a < b, reason "adjacent",
    "srdf", "always", "never", "default" or "user"). The fit: ``spheres_per_link`` (the cluster
    fit's count) or, when that is None, the cover fit at ``tolerance`` m (None: its default).
    ``hulls``: the checks also read each link's pieces near contact (:meth:`link_pieces`: convex
    hulls whose union holds the link, its one convex hull where that is tight)."""

    def __init__(self, entity, spheres_per_link: int | None = None, seed: int = 0,
                 samples: int = DEFAULT_SAMPLES, use_cache: bool = True, tolerance: float | None = None,
                 hulls: bool = True):
        from .cover import DEFAULT_TOLERANCE

        self.entity = entity
        tree = self.tree = entity.tree
        if spheres_per_link is None:
            self.spheres_per_link, self.tolerance = None, check_tolerance(
                DEFAULT_TOLERANCE if tolerance is None else tolerance)
        else:
            self.spheres_per_link, self.tolerance = check_spheres_per_link(spheres_per_link), None
        if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
            raise InvalidValueError(f"samples: expected an int >= 1, got {samples!r}")
        self.seed, self.samples, self.use_cache = int(seed), int(samples), use_cache
        if not isinstance(hulls, (bool, np.bool_)):
            raise InvalidValueError(f"hulls: expected True or False, got {hulls!r}")
        self.hulls = bool(hulls)
        self._hulls = None  # each link's convex hull (link_hulls), made on first use
        self._pieces = None  # each link's pieces and their balls (link_pieces), made or read on first use
        self._scale = None
        self.geometry = collision_geometry(tree, entity.morph)
        raw = getattr(entity.morph, "scale", 1.0)  # one factor, or 3 (a Mesh's)
        scale = float(raw) if np.ndim(raw) == 0 else tuple(float(x) for x in np.ravel(raw))
        self._scale = scale
        self.spheres = sphere_model(tree, self.geometry, self.spheres_per_link, self.seed, scale, use_cache,
                                    self.tolerance)
        self._balls = None  # the links' bounding balls (link_balls), made on first use
        has = np.zeros(tree.n_links, bool)
        has[self.spheres.link] = True
        self.srdf = find_srdf(tree.source) if str(tree.source).endswith(".urdf") else None
        near = adjacent(tree)
        candidates = [(a, b) for a in range(tree.n_links) for b in range(a + 1, tree.n_links) if has[a] and has[b]]
        self.excluded: dict[tuple[int, int], str] = {p: "adjacent" for p in candidates if near[p]}
        rest = [p for p in candidates if not near[p]]
        if self.srdf is not None:
            names = tree.link_names()
            off = disabled_pairs(self.srdf, names)
            self.excluded.update({p: "srdf" for p in rest if frozenset((names[p[0]], names[p[1]])) in off})
        else:
            self.excluded.update(self._sampled_exclusions(rest, scale))
        self._pairs = [p for p in candidates if p not in self.excluded]
        self._candidates = set(candidates)
        self._index()

    # -- pairs ----------------------------------------------------------------------------------
    def _sampled_exclusions(self, pairs, scale) -> dict[tuple[int, int], str]:
        if not pairs:
            return {}
        params = {"what": "pairs", "v": PAIRS_VERSION, "fit": FIT_VERSION, "samples": self.samples, "seed": self.seed,
                  "scale": scale, "spheres_per_link": self.spheres_per_link, "tolerance": self.tolerance,
                  "links": ",".join(self.tree.link_names()), **growth_params(self.geometry)}
        name = None
        if self.use_cache and self.tree.source.is_file():
            name = f"pairs_{fit_store.cache_key(self.tree.source, mesh_files(self.geometry), params)}.npz"
            held = fit_store.load(name, ("a", "b", "reason"))
            if held is not None:
                return {(int(a), int(b)): str(r) for a, b, r in zip(held["a"], held["b"], held["reason"])}
        qpos = sample_qpos(self.tree, self.samples, self.seed)
        hits = self._overlapping(pairs, qpos).sum(0)
        at_default = self._overlapping(pairs, self.tree.default_qpos[None])[0]
        out = {}
        for p, h, default in zip(pairs, hits, at_default):
            if h == 0 or h == len(qpos):
                out[p] = "never" if h == 0 else "always"
            elif default:
                out[p] = "default"
        if name is not None:
            keys = sorted(out)
            fit_store.save(name, a=np.array([k[0] for k in keys], np.int64),
                           b=np.array([k[1] for k in keys], np.int64), reason=np.array([out[k] for k in keys]))
        return out

    def _overlapping(self, pairs, qpos: np.ndarray) -> np.ndarray:
        """``(n, len(pairs))`` bool: the pair's spheres overlap in configuration ``qpos[i]``."""
        hits = np.zeros((len(qpos), len(pairs)), bool)
        for start in range(0, len(qpos), CHUNK):
            pose = self.entity.configuration.fk_poses(qpos[start:start + CHUNK])
            centers, balls = self.world_centers(pose), self._world_balls(pose)
            for k, (a, b) in enumerate(pairs):
                rows = np.flatnonzero(_ball_gap(balls, a, b) < 0)  # only where the links' balls overlap
                if len(rows):
                    hits[start + rows, k] = self._pair_distance(centers[rows], a, b) < 0
        return hits

    def _link(self, link, arg: str) -> int:
        if isinstance(link, str):
            names = self.tree.link_names()
            if link not in names:
                raise UnknownNameError(f"{arg}: no link named '{link}' in this robot")
            return names.index(link)
        if hasattr(link, "idx_local"):
            return self.entity.own_link(link, arg).idx_local
        raise InvalidValueError(f"{arg}: expected a link name or a link of this robot, got {type(link).__name__}")

    def _key(self, link_a, link_b) -> tuple[int, int]:
        a, b = self._link(link_a, "link_a"), self._link(link_b, "link_b")
        if a == b:
            raise InvalidValueError(f"link_b: the same link as link_a ('{self.tree.links[a].name}')")
        return (a, b) if a < b else (b, a)

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The counted pairs, as link names, sorted by link index."""
        names = self.tree.link_names()
        return [(names[a], names[b]) for a, b in self._pairs]

    def add_pair(self, link_a, link_b) -> None:
        """Count the pair (links by name or :class:`RigidLink`), whatever excluded it. Both links need
        spheres (a link without collision geometry has none)."""
        key = self._key(link_a, link_b)
        if key not in self._candidates:
            raise InvalidValueError(f"link_a, link_b: '{self.tree.links[key[0]].name}' or "
                                    f"'{self.tree.links[key[1]].name}' has no collision geometry")
        if key not in self._pairs:
            self.excluded.pop(key, None)
            self._pairs = sorted([*self._pairs, key])
            self._index()

    def remove_pair(self, link_a, link_b) -> None:
        """Stop counting the pair (a pair not counted stays so)."""
        key = self._key(link_a, link_b)
        if key in self._pairs:
            self._pairs.remove(key)
            self.excluded[key] = "user"
            self._index()

    # -- distances ------------------------------------------------------------------------------
    def _index(self) -> None:
        self._tables = {}  # the kernel's tables per float dtype, made on first use

    def kernel_tables(self, dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(sphere rows (R, 6), bounds (L, 4), pairs int32 (P, 6))`` as :func:`engine.collision.checks.pack`
        takes them, in ``dtype``: the spheres in groups (:func:`engine.collision.groups.sphere_rows`),
        each link's bounding ball, and each counted pair's links and row ranges."""
        key = np.dtype(dtype).str
        if key not in self._tables:
            sp = self.spheres
            rows, ranges = sphere_rows(sp.link, sp.centers, sp.radii)
            pairs = np.array([[a, b, *ranges[a], *ranges[b]] for a, b in self._pairs], np.int32).reshape(-1, 6)
            self._tables[key] = (np.ascontiguousarray(rows, dtype), np.ascontiguousarray(self.link_balls(), dtype),
                                 pairs)
        return self._tables[key]

    def link_hulls(self) -> list[np.ndarray | None]:
        """Each link's convex hull vertices ``(n, 3)`` (link frame, m), the checks' exact tier
        (:mod:`engine.collision.hulls`); None for a link without one, and for every link when the
        model was made with ``hulls=False`` (the spheres alone)."""
        if self._hulls is None:
            from .hulls import link_hulls

            self._hulls = link_hulls(self.geometry) if self.hulls else [None] * self.tree.n_links
        return self._hulls

    def link_pieces(self) -> list[list]:
        """Each link's pieces (``[Hull]``, link frame, m; :mod:`engine.collision.pieces`): the checks'
        exact tier, ``[]`` for a link without any, and for every link when the model was made with
        ``hulls=False`` (the spheres alone). Read from the disk cache where a process made them."""
        if self._pieces is None:
            from .pieces import balls, robot_pieces

            pieces = robot_pieces(self.tree, self.geometry, self._scale, self.use_cache) if self.hulls else \
                [[] for _ in range(self.tree.n_links)]
            self._pieces = (pieces, [balls(p) for p in pieces])
        return self._pieces[0]

    def piece_balls(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Each link's pieces' bounding balls ``(centres (n, 3), radii (n,))`` (m, link frame:
        :func:`engine.collision.pieces.balls`)."""
        self.link_pieces()
        return self._pieces[1]

    def link_balls(self) -> np.ndarray:
        """``(n_links, 4)``: each link's bounding ball (centre in the link frame, m; radius, m), which
        holds all its spheres; radius -1 for a link without spheres."""
        if self._balls is None:
            sp = self.spheres
            balls = np.zeros((self.tree.n_links, 4))
            balls[:, 3] = -1.0
            for link in np.unique(sp.link):
                idx = sp.of_link(link)
                c = 0.5 * (sp.centers[idx].min(0) + sp.centers[idx].max(0))
                balls[link, :3] = c
                balls[link, 3] = (np.linalg.norm(sp.centers[idx] - c, axis=1) + sp.radii[idx]).max() * (1 + 1e-6)
            self._balls = balls
        return self._balls

    def _world_balls(self, pose: np.ndarray) -> np.ndarray:
        """``(B, n_links, 4)``: the links' bounding balls at link poses ``pose (B, n_links, 7)``."""
        balls = self.link_balls()
        p = pose.astype(float)
        out = np.empty(p.shape[:2] + (4,))
        out[..., :3] = p[..., :3] + quat_rotate_unit(p[..., 3:], np.broadcast_to(balls[:, :3], p[..., :3].shape))
        out[..., 3] = balls[:, 3]
        return out

    def _pair_distance(self, centers: np.ndarray, a: int, b: int) -> np.ndarray:
        """``(B,)``: the smallest sphere distance (m) between links ``a`` and ``b`` for sphere centres
        ``centers (B, n_spheres, 3)`` (world), sphere pair by sphere pair, a few rows at a time."""
        ia, ib = self.spheres.of_link(a), self.spheres.of_link(b)
        ra, rb = self.spheres.radii[ia], self.spheres.radii[ib]
        out = np.empty(len(centers))
        step = max(1, PAIR_ELEMENTS // max(len(ia) * len(ib), 1))
        for s in range(0, len(centers), step):
            ca, cb = centers[s:s + step, ia], centers[s:s + step, ib]
            gap = np.linalg.norm(ca[:, :, None, :] - cb[:, None, :, :], axis=-1) - ra[None, :, None] - rb[None, None, :]
            out[s:s + step] = gap.reshape(len(gap), -1).min(axis=1)
        return out

    def world_centers(self, pose: np.ndarray) -> np.ndarray:
        """Sphere centres ``(B, n_spheres, 3)`` m in the env-local world, from link poses
        ``pose (B, n_links, 7)`` (pos xyz, quat wxyz)."""
        link = self.spheres.link
        p = pose[:, link].astype(float)
        return p[..., :3] + quat_rotate_unit(p[..., 3:], np.broadcast_to(self.spheres.centers, p[..., :3].shape))

    def distance_numpy(self, pose: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Smallest sphere distance over the counted pairs ``(B,)`` m (inf without pairs) and the
        pair that sets it ``(B,)`` (an index into :attr:`pairs`; -1 without pairs), from link poses
        ``pose (B, n_links, 7)``, in numpy (float64), sphere pair by sphere pair (a pair whose links'
        balls are no nearer than the best so far is passed over): the reference of the kernel's
        distances (:func:`engine.collision.checks.distance`), and its stand-in where a software
        Vulkan device would stop the kernel's loops."""
        B = pose.shape[0]
        dist, which = np.full(B, np.inf), np.full(B, -1, np.int64)
        for start in range(0, B, CHUNK):
            part = pose[start:start + CHUNK]
            centers, balls = self.world_centers(part), self._world_balls(part)
            best, who = dist[start:start + CHUNK], which[start:start + CHUNK]  # views: filled in place
            bound = np.stack([_ball_gap(balls, a, b) for a, b in self._pairs], axis=1) if self._pairs else None
            for k in (np.argsort(bound.min(axis=0)) if bound is not None else []):  # likely nearest first
                a, b = self._pairs[k]
                rows = np.flatnonzero(bound[:, k] < best)
                if len(rows):
                    d = self._pair_distance(centers[rows], a, b)
                    d = self._hull_refined(d, part[rows], best[rows], a, b)
                    closer = d < best[rows]
                    best[rows[closer]] = d[closer]
                    who[rows[closer]] = k
        return dist, which


    def _hull_refined(self, d: np.ndarray, pose: np.ndarray, best: np.ndarray, a: int, b: int) -> np.ndarray:
        """Sphere distances ``d (B,)`` of links ``a``, ``b`` at link poses ``pose (B, n_links, 7)``
        raised to their pieces' bound where they would lower ``best`` (as the kernels do, the bound's
        search cut at ``best``)."""
        from .gjk import pieces_pair_bound

        pieces, balls = self.link_pieces(), self.piece_balls()
        if not pieces[a] or not pieces[b]:
            return d
        out = d.copy()
        for r in np.flatnonzero(d < best):
            out[r] = max(d[r], pieces_pair_bound(pieces[a], balls[a], pose[r, a], pieces[b], balls[b], pose[r, b],
                                                 best[r]))
        return out


def _ball_gap(balls: np.ndarray, a: int, b: int) -> np.ndarray:
    """``(B,)``: the distance (m) between links ``a``'s and ``b``'s bounding balls ``balls (B, L, 4)``
    (:meth:`RobotCollision._world_balls`), a lower bound of their spheres' distance."""
    return np.linalg.norm(balls[:, a, :3] - balls[:, b, :3], axis=-1) - balls[:, a, 3] - balls[:, b, 3]
