"""Forward kinematics and Jacobians, one thread per row (env) of the batch.

Robot constants ``robot_i`` / ``robot_f`` and pose buffers are laid out as in
:mod:`engine.kernels.layout`.
"""

import taichi as ti

from .. import backend
from .launch import fast
from .quat import qaxis_angle, qcolumn, qmul, qnormalize, qrot

FIXED, HINGE, SLIDE, BALL, FREE = 0, 1, 2, 3, 4
SERIAL_MAX_ROWS = 256  # FK / Jacobian rows up to which a CPU launch runs in the calling thread


def serial_for(rows: int, max_rows: int = SERIAL_MAX_ROWS) -> bool:
    """Whether a CPU kernel over ``rows`` items should run serially in the calling thread: handing
    a small batch to taichi's thread pool costs more than the work (measured here: ~0.15 ms per
    launch on an idle 2-core VM against ~0.03 ms serial; FK is ~0.3 us per row). Never on a GPU."""
    return backend.STATE.arch == "cpu" and rows <= max_rows


@ti.func
def vec3(a: ti.template(), i, j, k0: ti.template()):
    return ti.Vector([a[i, j, k0], a[i, j, k0 + 1], a[i, j, k0 + 2]])


@ti.func
def vec4(a: ti.template(), i, j, k0: ti.template()):
    return ti.Vector([a[i, j, k0], a[i, j, k0 + 1], a[i, j, k0 + 2], a[i, j, k0 + 3]])


@ti.func
def const3(a: ti.template(), i, k0: ti.template()):
    return ti.Vector([a[i, k0], a[i, k0 + 1], a[i, k0 + 2]])


@ti.func
def joint_value(r, jr, q: ti.template(), robot_i: ti.template(), robot_f: ti.template()):
    """Scalar q of the 1-dof joint in robot_i row ``jr`` (1 + L + j), derived from the leader for a
    mimic joint."""
    v = q[r, robot_i[jr, 1]]
    if robot_i[jr, 3] >= 0:
        v = robot_f[jr - 1, 7] * q[r, robot_i[jr, 3]] + robot_f[jr - 1, 8]
    return v


@ti.func
def fk_row(r, q: ti.template(), robot_i: ti.template(), robot_f: ti.template(), pose: ti.template(),
           frames: ti.template() = True):
    """Forward kinematics of row r of ``q`` (B, n_qs) into row r of ``pose`` (B, L + J, 7); the
    joint frames (rows L..) only when ``frames`` (a compile-time flag: the Jacobian needs them)."""
    L = robot_i[0, 0]
    for l in range(L):
        pos = const3(robot_f, l, 0)
        quat = ti.Vector([robot_f[l, 3], robot_f[l, 4], robot_f[l, 5], robot_f[l, 6]])
        p = robot_i[1 + l, 0]
        if p >= 0:
            pquat = vec4(pose, r, p, 3)
            pos = vec3(pose, r, p, 0) + qrot(pquat, pos)
            quat = qmul(pquat, quat)
        for j in range(robot_i[1 + l, 1], robot_i[1 + l, 2]):
            jr = 1 + L + j
            kind = robot_i[jr, 0]
            qs = robot_i[jr, 1]
            if kind == HINGE or kind == BALL:
                anchor = const3(robot_f, L + j, 0)
                rot = ti.Vector([1.0, 0.0, 0.0, 0.0])
                if kind == HINGE:
                    rot = qaxis_angle(const3(robot_f, L + j, 3),
                                      joint_value(r, jr, q, robot_i, robot_f) - robot_f[L + j, 6])
                else:
                    rot = qnormalize(ti.Vector([q[r, qs], q[r, qs + 1], q[r, qs + 2], q[r, qs + 3]]))
                anchor_w = pos + qrot(quat, anchor)
                quat = qmul(quat, rot)
                pos = anchor_w - qrot(quat, anchor)
            elif kind == SLIDE:
                pos = pos + qrot(quat, const3(robot_f, L + j, 3)) * (
                    joint_value(r, jr, q, robot_i, robot_f) - robot_f[L + j, 6])
            elif kind == FREE:
                pos = ti.Vector([q[r, qs], q[r, qs + 1], q[r, qs + 2]])
                quat = qnormalize(ti.Vector([q[r, qs + 3], q[r, qs + 4], q[r, qs + 5], q[r, qs + 6]]))
            if ti.static(frames):
                for k in ti.static(range(3)):
                    pose[r, L + j, k] = pos[k]
                for k in ti.static(range(4)):
                    pose[r, L + j, 3 + k] = quat[k]
        for k in ti.static(range(3)):
            pose[r, l, k] = pos[k]
        for k in ti.static(range(4)):
            pose[r, l, 3 + k] = quat[k]


@ti.func
def set_column(J: ti.template(), r, row0, d, lin, ang):
    for k in ti.static(range(3)):
        J[r, row0 + k, d] = lin[k]
        J[r, row0 + 3 + k, d] = ang[k]


@ti.func
def jacobian_row(r, link, point, row0, robot_i: ti.template(), robot_f: ti.template(), pose: ti.template(),
                 J: ti.template(), n):
    """Rows ``row0 .. row0+5`` of ``J`` (B, rows, n_dofs) for a world ``point`` fixed to ``link``:
    linear velocity of the point (3), then angular velocity (3), world axes. Zeroes those rows
    first; mimic columns are folded into their leaders."""
    L = robot_i[0, 0]
    n_joints = robot_i[0, 1]
    for k in range(6):
        for d in range(n):
            J[r, row0 + k, d] = 0.0
    cur = link
    while cur >= 0:
        for j in range(robot_i[1 + cur, 1], robot_i[1 + cur, 2]):
            jr = 1 + L + j
            kind = robot_i[jr, 0]
            d0 = robot_i[jr, 2]
            fpos = vec3(pose, r, L + j, 0)
            fquat = vec4(pose, r, L + j, 3)
            zero = ti.Vector([0.0, 0.0, 0.0])
            if kind == HINGE or kind == SLIDE:
                axis_w = qrot(fquat, const3(robot_f, L + j, 3))
                if kind == HINGE:
                    anchor_w = fpos + qrot(fquat, const3(robot_f, L + j, 0))
                    set_column(J, r, row0, d0, axis_w.cross(point - anchor_w), axis_w)
                else:
                    set_column(J, r, row0, d0, axis_w, zero)
            elif kind == BALL:
                anchor_w = fpos + qrot(fquat, const3(robot_f, L + j, 0))
                for k in ti.static(range(3)):
                    e = qcolumn(fquat, k)
                    set_column(J, r, row0, d0 + k, e.cross(point - anchor_w), e)
            elif kind == FREE:
                for k in ti.static(range(3)):
                    e = qcolumn(fquat, k)
                    unit = ti.Vector([0.0, 0.0, 0.0])
                    unit[k] = 1.0
                    set_column(J, r, row0, d0 + k, unit, zero)
                    set_column(J, r, row0, d0 + 3 + k, e.cross(point - fpos), e)
        cur = robot_i[1 + cur, 0]
    for j in range(n_joints):
        lead = robot_i[1 + L + j, 4]
        if lead >= 0:
            d = robot_i[1 + L + j, 2]
            for k in range(6):
                J[r, row0 + k, lead] += robot_f[L + j, 7] * J[r, row0 + k, d]
                J[r, row0 + k, d] = 0.0


@ti.func
def point_of(r, link, local: ti.template(), i, pose: ti.template()):
    """World position of point ``local[i, 0:3]`` (link frame) on ``link`` in row r."""
    return vec3(pose, r, link, 0) + qrot(vec4(pose, r, link, 3), const3(local, i, 0))


@fast
@ti.kernel
def forward_kinematics(q: ti.types.ndarray(), robot_i: ti.types.ndarray(), robot_f: ti.types.ndarray(),
                       pose: ti.types.ndarray(), serial: ti.template()):
    """FK of every row of ``q`` (B, n_qs) into the link rows of ``pose`` (B, L [+ J], 7); ``serial``
    (see :func:`serial_for`) runs the rows in the calling thread."""
    ti.loop_config(serialize=serial)
    for r in range(q.shape[0]):
        fk_row(r, q, robot_i, robot_f, pose, False)


@fast
@ti.kernel
def jacobian(q: ti.types.ndarray(), link: ti.i32, local: ti.types.ndarray(), robot_i: ti.types.ndarray(),
             robot_f: ti.types.ndarray(), pose: ti.types.ndarray(), J: ti.types.ndarray(), serial: ti.template()):
    """FK of every row of ``q``, then ``J`` (B, 6, n_dofs) of point ``local`` (1, 3) on ``link``."""
    ti.loop_config(serialize=serial)
    for r in range(q.shape[0]):
        fk_row(r, q, robot_i, robot_f, pose)
        jacobian_row(r, link, point_of(r, link, local, 0, pose), 0, robot_i, robot_f, pose, J, J.shape[2])


@ti.kernel
def touch(a: ti.types.ndarray()):
    """Writes 1 to a[0]: the first kernel :func:`engine.backend.init` runs, in its own thread."""
    a[0] = 1
