"""Every column of every kernel table, by name: the one place a column number is written.

The kernels read a robot and an IK request from a few 2-D arrays (few, large arguments keep a
launch cheap). Each array stacks row *sections* (a header row, one row per link, per joint, ...)
and each section has its own columns. A :class:`Columns` names them; the packers
(:mod:`engine.kernels.layout`, :mod:`engine.ik.request`) write through these names and the kernels
read through them (a plain int at trace time, so a read costs what a literal does). A field of
width 3 or 4 (a vector) is named by its first column.

Robot tables (:func:`engine.kernels.layout.pack_tree`), for L links, J joints, n_qs qpos entries:

- ``robot_i`` int32 (1 + L + J, :data:`ROBOT_I_WIDTH`): row 0 :data:`ROBOT_HEAD`; row
  :func:`link_row_i` (l) :data:`LINK_I`; row :func:`joint_row_i` (j) :data:`JOINT_I`.
- ``robot_f`` float (L + J + n_qs, :data:`ROBOT_F_WIDTH`): row l :data:`LINK_F`; row L + j
  :data:`JOINT_F`; row L + J + i :data:`QPOS_F`.

The row helpers (``link_row_i`` ...) are ``ti.pyfunc``: the same arithmetic in a kernel and in numpy.

Request tables (:mod:`engine.ik.request`), for Lt tasks with rows, n dofs:

- ``task_i`` int32 (1 + Lt + n, :data:`TASK_I_WIDTH`): row 0 :data:`SOLVE_I`; row 1 + i
  :data:`TASK_I`; row 1 + Lt + d :data:`DOF_I`.
- ``task_f`` float (1 + Lt + n_qs, :data:`TASK_F_WIDTH`): row 0 :data:`SOLVE_F`; row 1 + i
  :data:`TASK_F`; row 1 + Lt + i :data:`QPOS_REST_F`.
"""

from __future__ import annotations

import taichi as ti


class Columns:
    """Named columns of one row section: ``Columns(a=1, pos=3)`` has ``a`` at 0 and the 3-wide
    ``pos`` at 1..3; ``width`` is the total."""

    def __init__(self, **widths: int):
        self.width = 0
        self._names = tuple(widths)
        for name, width in widths.items():
            setattr(self, name, self.width)
            self.width += width

    def __repr__(self) -> str:
        return f"Columns({', '.join(f'{n}={getattr(self, n)}' for n in self._names)})"


# -- robot tables --------------------------------------------------------------------------------
ROBOT_HEAD = Columns(n_links=1, n_joints=1, n_qs=1, n_dofs=1)
LINK_I = Columns(parent=1, joint_start=1, joint_end=1)  # parent -1: the world; joints [start, end)
# type code (engine.kernels.fk: FIXED ...), qpos and dof start, the leader's qpos / dof start (-1: no mimic)
JOINT_I = Columns(kind=1, q=1, dof=1, lead_q=1, lead_dof=1)
# body offset in the parent frame (m, wxyz); mass (kg) and centre of mass in the body frame (m)
LINK_F = Columns(pos=3, quat=4, mass=1, com=3)
# anchor and unit axis in the link frame; qpos of zero motion; mimic q = mult * q_leader + offset
JOINT_F = Columns(anchor=3, axis=3, ref=1, mult=1, offset=1)
QPOS_F = Columns(lower=1, upper=1)  # limits, +-1e30 where unbounded

ROBOT_I_WIDTH = max(c.width for c in (ROBOT_HEAD, LINK_I, JOINT_I))
ROBOT_F_WIDTH = max(c.width for c in (LINK_F, JOINT_F, QPOS_F))


@ti.pyfunc
def link_row_i(l):
    """Row of link ``l`` in ``robot_i``."""
    return 1 + l


@ti.pyfunc
def joint_row_i(L, j):
    """Row of joint ``j`` in ``robot_i`` (L links)."""
    return 1 + L + j


@ti.pyfunc
def joint_row_f(L, j):
    """Row of joint ``j`` in ``robot_f`` (L links)."""
    return L + j


@ti.pyfunc
def qpos_row_f(L, J, i):
    """Row of qpos entry ``i`` in ``robot_f`` (L links, J joints)."""
    return L + J + i


# -- request tables ------------------------------------------------------------------------------
# iterations per sample, samples per env, restart slots per env, hash seed (set per call), joint
# limits respected (0/1), every sample runs for the posture choice (0/1), no task needs its rows
# transformed (every task a plain full world pose and every dof active: the fast path), continuity's
# window (0: off; W: when sample 0 fails, the success among samples 1 .. W-1 nearest the start wins),
# the samples run: first .. end - 1 (0 .. n_samples - 1 but in the later solves of an avoiding
# request, engine.ik.avoiding)
SOLVE_I = Columns(max_iters=1, n_samples=1, slots=1, seed=1, respect_limits=1, exhaustive=1, plain=1, continuity=1,
                  first=1, end=1)
# damping of the Levenberg-Marquardt term, largest dof step (rad or m), posture pull weight
SOLVE_F = Columns(damping=1, max_step=1, rest_weight=1)
# task kind (FRAME, COM), link (-1 for COM), reference link (-1: the world), has a position
# target (0/1), rotation mode (-1 free, 3 full, 0/1/2 align that local axis)
TASK_I = Columns(kind=1, link=1, ref=1, has_pos=1, rot_mode=1)
# point on the link (link frame, m); position mask per axis (0/1, the reference frame's axes);
# weight; success tolerances (m, rad); a COLLIDE task's margin (m: the least distance it accepts); a
# unit axis of the link (link frame: a look-at task's, engine.kernels.kinds)
TASK_F = Columns(point=3, pos_mask=3, weight=1, pos_tol=1, rot_tol=1, margin=1, axis=3)
DOF_I = Columns(active=1)  # 1: the solver may move this dof
# the posture the pull aims at; the weight of the entry in the distance from the start that continuity
# judges by (1 / range^2 of a hinge or slide the solver moves, in 1/rad^2 or 1/m^2; else 0)
QPOS_REST_F = Columns(rest=1, span=1)

TASK_I_WIDTH = max(c.width for c in (SOLVE_I, TASK_I, DOF_I))
TASK_F_WIDTH = max(c.width for c in (SOLVE_F, TASK_F, QPOS_REST_F))

# TASK_I.kind: a link frame's pose (world or relative), the centre of mass, collision avoidance
FRAME, COM, COLLIDE = 0, 1, 2
ROWS_PER_TASK = 6  # each task owns 6 rows of the Jacobian: linear 3, angular 3 (zero for COM)

# a pose row of a pose buffer (engine.kernels.layout) and of a link pose: position then wxyz quaternion
POSE = Columns(pos=3, quat=4)
# a target row of ``targets`` (n_envs, Lt, TARGET.width): position then wxyz quaternion
TARGET = Columns(pos=3, quat=4)

# per-thread kept solution ``best_i`` (T, BEST_I.width): first successful sample (-1 none; with
# continuity the kept one's), iterations of the kept iterate, samples run
BEST_I = Columns(success=1, iters=1, samples=1)
# after a kept qpos in ``best_q`` (T, n_qs + KEPT_F.width): its score and distance to the rest posture
# (with continuity: its weighted squared distance from the start, -1 for a successful sample 0,
# 1e6 + s for a sample s beyond the window)
KEPT_F = Columns(score=1, rest_dist=1)
# a thread's place in its samples between launches of a solve split into several (engine.runtime.dispatch.
# solver_budget): ``resume_i`` (T, RESUME_I.width) the sample it is on (>= n_samples: finished) and
# its iteration; ``resume_f`` (T, RESUME_F.width) the scores of the two iterations before
RESUME_I = Columns(sample=1, iter=1)
RESUME_F = Columns(lag1=1, lag2=1)
# choice of each env (engine.kernels.answers) ``info_out`` (n_envs, CHOICE_I.width)
# the sample that won (-1: none), its iterations, whether sample 0 (the warm start) succeeded (0/1)
CHOICE_I = Columns(sample=1, iters=1, warm=1)


# the start configurations ``q0`` (B, n_qs) of a solve, or with a box on the dofs (a limit of
# engine.ik.limits other than the joint limits) START_BLOCKS blocks of n_qs columns: the start, the
# box's lower bounds, its upper bounds (rad or m; +-1e30 where unbounded)
START_BLOCKS = 3


@ti.pyfunc
def box_col(n_qs, bound, i):
    """Column of qpos entry ``i``'s lower (``bound`` 0) or upper (1) box bound in ``q0`` (n_qs per block)."""
    return (1 + bound) * n_qs + i


@ti.pyfunc
def task_row(i):
    """Row of task ``i`` in ``task_i`` / ``task_f``."""
    return 1 + i


@ti.pyfunc
def dof_row(Lt, d):
    """Row of dof ``d`` in ``task_i`` (Lt tasks)."""
    return 1 + Lt + d


@ti.pyfunc
def rest_row(Lt, i):
    """Row of qpos entry ``i``'s rest value in ``task_f`` (Lt tasks)."""
    return 1 + Lt + i


# -- collision tables (engine.collision.checks; read by engine.kernels.avoid) --
# For P counted link pairs, L links, O obstacles, S spheres and N pieces (engine.collision.pieces):
#
# - ``coll_i`` int32 (1 + P + L + O + N, COLL_I_WIDTH): row 0 AVOID_HEAD; row pair_row(p) PAIR_I; row
#   link_row_c(P, l) LINK_C; row shape_row_i(P, L, o) SHAPE_I; row piece_row_i(P, L, O, k) PIECE_I.
# - ``coll_f`` float (S + L + O + N + V, COLL_F_WIDTH): row s SPHERE_F; row bound_row(S, l) BOUND_F; row
#   shape_row_f(S, L, o) SHAPE_F; row piece_row_f(S, L, O, k) PIECE_F; then the V vertices of the
#   pieces' convex hulls (HULL_F), each piece's rows [h0, h1) named in its PIECE_I row, each link's
#   pieces [p0, p1) in its LINK_C row (engine.kernels.gjk, the checks' exact tier).
# - ``shape_pose`` float (n_envs, max(O, 1), POSE.width): each obstacle's pose per env.
# search_rows: the solver's search's row budget (engine.kernels.avoid.SEARCH_ROWS when packed), read at
# run time, so that a budget of another size needs no kernel of its own
AVOID_HEAD = Columns(n_pairs=1, n_links=1, n_shapes=1, n_spheres=1, n_pieces=1, search_rows=1)
# the two links of a pair and their sphere index ranges [a0, a1), [b0, b1)
PAIR_I = Columns(link_a=1, link_b=1, a0=1, a1=1, b0=1, b1=1)
# a link's sphere index range [s0, s1) (empty: no spheres), whether it is checked against obstacles,
# and its pieces [p0, p1) (indices 0 .. N - 1; empty: none, the spheres stand alone)
LINK_C = Columns(s0=1, s1=1, world=1, p0=1, p1=1)
SHAPE_I = Columns(kind=1)  # the obstacle code (engine.kernels.collide; engine.obstacle_kinds.SHAPES)
PIECE_I = Columns(h0=1, h1=1)  # the coll_f rows [h0, h1) of a piece's hull vertices
# a robot sphere: its link (as a float), centre (link frame, m), radius; count > 0: the bounding
# ball of the next ``count`` rows, a group of the link's spheres (engine.collision.groups)
SPHERE_F = Columns(link=1, center=3, radius=1, count=1)
# a link's bounding ball of its spheres (link frame; radius < 0: none), how far its spheres stand
# out of its pieces at most (m; engine.collision.pieces.protrusion: the solver's cue that GJK cannot
# help), and the radius (m) of a ball about the same centre that holds all its pieces (grown)
BOUND_F = Columns(center=3, radius=1, protrusion=1, reach=1)
# a piece's bounding ball (link frame, m; it holds the piece grown by ``grown``) and how far its hull
# (HULL_F rows) is grown (m; 0: the hull as it is: engine.collision.hulls.reduced)
PIECE_F = Columns(center=3, radius=1, grown=1)
# box half extents; sphere radius; cylinder radius, half height; plane unit normal; the radius of a
# ball about the shape's origin that holds it (m; 1e30 for a plane)
SHAPE_F = Columns(size=3, bound=1)
HULL_F = Columns(vertex=3)  # a vertex of a piece's convex hull (link frame, m)

COLL_I_WIDTH = max(c.width for c in (AVOID_HEAD, PAIR_I, LINK_C, SHAPE_I, PIECE_I))
COLL_F_WIDTH = max(c.width for c in (SPHERE_F, BOUND_F, SHAPE_F, PIECE_F, HULL_F))


@ti.pyfunc
def pair_row(p):
    """Row of pair ``p`` in ``coll_i``."""
    return 1 + p


@ti.pyfunc
def link_row_c(P, l):
    """Row of link ``l`` in ``coll_i`` (P pairs)."""
    return 1 + P + l


@ti.pyfunc
def shape_row_i(P, L, o):
    """Row of obstacle ``o`` in ``coll_i`` (P pairs, L links)."""
    return 1 + P + L + o


@ti.pyfunc
def bound_row(S, l):
    """Row of link ``l``'s bounding ball in ``coll_f`` (S spheres)."""
    return S + l


@ti.pyfunc
def shape_row_f(S, L, o):
    """Row of obstacle ``o``'s size in ``coll_f`` (S spheres, L links)."""
    return S + L + o


@ti.pyfunc
def piece_row_i(P, L, O, k):
    """Row of piece ``k`` in ``coll_i`` (P pairs, L links, O obstacles)."""
    return 1 + P + L + O + k


@ti.pyfunc
def piece_row_f(S, L, O, k):
    """Row of piece ``k``'s ball in ``coll_f`` (S spheres, L links, O obstacles)."""
    return S + L + O + k
