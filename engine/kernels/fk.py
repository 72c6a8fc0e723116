"""Forward kinematics and Jacobians, one thread per row (env) of the batch.

Robot constants ``robot_i`` / ``robot_f`` are laid out as named in :mod:`engine.kernels.tables`,
pose buffers as in :mod:`engine.kernels.layout`.
"""

import taichi as ti

from ..runtime.launch import fast
from ..runtime.span import block_dim, thread_span
from .quat import qaxis_angle, qcolumn, qmul, qnormalize, qrot
from .tables import JOINT_F, JOINT_I, LINK_F, LINK_I, POSE, ROBOT_HEAD, joint_row_f, joint_row_i, link_row_i

FIXED, HINGE, SLIDE, BALL, FREE = 0, 1, 2, 3, 4
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
def const4(a: ti.template(), i, k0: ti.template()):
    return ti.Vector([a[i, k0], a[i, k0 + 1], a[i, k0 + 2], a[i, k0 + 3]])


@ti.func
def joint_value(r, j, q: ti.template(), robot_i: ti.template(), robot_f: ti.template()):
    """Scalar q of the 1-dof joint ``j`` in row r of ``q``, derived from the leader for a mimic joint."""
    L = robot_i[0, ROBOT_HEAD.n_links]
    jr = joint_row_i(L, j)
    v = q[r, robot_i[jr, JOINT_I.q]]
    if robot_i[jr, JOINT_I.lead_q] >= 0:
        jf = joint_row_f(L, j)
        v = robot_f[jf, JOINT_F.mult] * q[r, robot_i[jr, JOINT_I.lead_q]] + robot_f[jf, JOINT_F.offset]
    return v


@ti.func
def fk_row(r, q: ti.template(), robot_i: ti.template(), robot_f: ti.template(), pose: ti.template(),
           frames: ti.template() = True):
    """Forward kinematics of row r of ``q`` (B, n_qs) into row r of ``pose`` (B, L + J, 7); the
    joint frames (rows L..) only when ``frames`` (a compile-time flag: the Jacobian needs them)."""
    L = robot_i[0, ROBOT_HEAD.n_links]
    for l in range(L):
        pos = const3(robot_f, l, LINK_F.pos)
        quat = const4(robot_f, l, LINK_F.quat)
        p = robot_i[link_row_i(l), LINK_I.parent]
        if p >= 0:
            pquat = vec4(pose, r, p, POSE.quat)
            pos = vec3(pose, r, p, POSE.pos) + qrot(pquat, pos)
            quat = qmul(pquat, quat)
        for j in range(robot_i[link_row_i(l), LINK_I.joint_start], robot_i[link_row_i(l), LINK_I.joint_end]):
            jr = joint_row_i(L, j)
            jf = joint_row_f(L, j)
            kind = robot_i[jr, JOINT_I.kind]
            qs = robot_i[jr, JOINT_I.q]
            if kind == HINGE or kind == BALL:
                anchor = const3(robot_f, jf, JOINT_F.anchor)
                rot = ti.Vector([1.0, 0.0, 0.0, 0.0])
                if kind == HINGE:
                    rot = qaxis_angle(const3(robot_f, jf, JOINT_F.axis),
                                      joint_value(r, j, q, robot_i, robot_f) - robot_f[jf, JOINT_F.ref])
                else:
                    rot = qnormalize(ti.Vector([q[r, qs], q[r, qs + 1], q[r, qs + 2], q[r, qs + 3]]))
                anchor_w = pos + qrot(quat, anchor)
                quat = qmul(quat, rot)
                pos = anchor_w - qrot(quat, anchor)
            elif kind == SLIDE:
                pos = pos + qrot(quat, const3(robot_f, jf, JOINT_F.axis)) * (
                    joint_value(r, j, q, robot_i, robot_f) - robot_f[jf, JOINT_F.ref])
            elif kind == FREE:
                pos = ti.Vector([q[r, qs], q[r, qs + 1], q[r, qs + 2]])
                quat = qnormalize(ti.Vector([q[r, qs + 3], q[r, qs + 4], q[r, qs + 5], q[r, qs + 6]]))
            if ti.static(frames):
                for k in ti.static(range(3)):
                    pose[r, L + j, POSE.pos + k] = pos[k]
                for k in ti.static(range(4)):
                    pose[r, L + j, POSE.quat + k] = quat[k]
        for k in ti.static(range(3)):
            pose[r, l, POSE.pos + k] = pos[k]
        for k in ti.static(range(4)):
            pose[r, l, POSE.quat + k] = quat[k]


def projected(direction) -> bool:
    """Whether a Jacobian helper was given a direction to project onto (called while tracing:
    taichi's scope has no ``is``)."""
    return direction is not None


@ti.func
def add_column(J: ti.template(), r, row0, d, lin, ang, scale, accumulate: ti.template(), direction: ti.template()):
    """Column d of rows row0..row0+5: ``scale * (lin, ang)`` added, or (``accumulate`` False, scale
    ignored) written; with a ``direction`` (a world unit vector, not None) only row0, with
    ``scale * direction . lin`` added (the rate of a distance along it)."""
    if ti.static(projected(direction)):
        J[r, row0, d] += scale * direction.dot(lin)
    for k in ti.static(range(0 if projected(direction) else 3)):
        if ti.static(accumulate):
            J[r, row0 + k, d] += scale * lin[k]
            J[r, row0 + 3 + k, d] += scale * ang[k]
        else:
            J[r, row0 + k, d] = lin[k]
            J[r, row0 + 3 + k, d] = ang[k]


@ti.func
def zero_rows(J: ti.template(), r, row0, n):
    """Rows ``row0 .. row0+5`` of ``J`` (B, rows, n) set to zero (first n columns)."""
    for k in range(6):
        for d in range(n):
            J[r, row0 + k, d] = 0.0


@ti.func
def add_point_jacobian(r, link, point, row0, scale, robot_i: ti.template(), robot_f: ti.template(),
                       pose: ti.template(), J: ti.template(), accumulate: ti.template() = True,
                       direction: ti.template() = None):
    """Adds ``scale`` times the Jacobian of a world ``point`` fixed to ``link`` to rows ``row0 ..
    row0+5`` of ``J`` (B, rows, n_dofs): linear velocity of the point (3), then angular velocity
    (3), world axes; the joint frames of ``pose`` row r must be current. Mimic columns are folded
    into their leaders (so the mimic columns stay zero across several calls). ``accumulate``
    False writes the columns instead (rows zeroed before: the first contribution, one read of
    global memory less per entry). With a ``direction`` (world unit vector) only row ``row0`` gets
    ``scale`` times the point's velocity along it (see :func:`add_column`)."""
    L = robot_i[0, ROBOT_HEAD.n_links]
    n_joints = robot_i[0, ROBOT_HEAD.n_joints]
    cur = link
    while cur >= 0:
        for j in range(robot_i[link_row_i(cur), LINK_I.joint_start], robot_i[link_row_i(cur), LINK_I.joint_end]):
            jr = joint_row_i(L, j)
            jf = joint_row_f(L, j)
            kind = robot_i[jr, JOINT_I.kind]
            d0 = robot_i[jr, JOINT_I.dof]
            fpos = vec3(pose, r, L + j, POSE.pos)
            fquat = vec4(pose, r, L + j, POSE.quat)
            zero = ti.Vector([0.0, 0.0, 0.0])
            if kind == HINGE or kind == SLIDE:
                axis_w = qrot(fquat, const3(robot_f, jf, JOINT_F.axis))
                if kind == HINGE:
                    anchor_w = fpos + qrot(fquat, const3(robot_f, jf, JOINT_F.anchor))
                    add_column(J, r, row0, d0, axis_w.cross(point - anchor_w), axis_w, scale, accumulate, direction)
                else:
                    add_column(J, r, row0, d0, axis_w, zero, scale, accumulate, direction)
            elif kind == BALL:
                anchor_w = fpos + qrot(fquat, const3(robot_f, jf, JOINT_F.anchor))
                for k in ti.static(range(3)):
                    e = qcolumn(fquat, k)
                    add_column(J, r, row0, d0 + k, e.cross(point - anchor_w), e, scale, accumulate, direction)
            elif kind == FREE:
                for k in ti.static(range(3)):
                    e = qcolumn(fquat, k)
                    unit = ti.Vector([0.0, 0.0, 0.0])
                    unit[k] = 1.0
                    add_column(J, r, row0, d0 + k, unit, zero, scale, accumulate, direction)
                    add_column(J, r, row0, d0 + 3 + k, e.cross(point - fpos), e, scale, accumulate, direction)
        cur = robot_i[link_row_i(cur), LINK_I.parent]
    for j in range(n_joints):
        lead = robot_i[joint_row_i(L, j), JOINT_I.lead_dof]
        if lead >= 0:
            d = robot_i[joint_row_i(L, j), JOINT_I.dof]
            for k in range(ti.static(1 if projected(direction) else 6)):
                J[r, row0 + k, lead] += robot_f[joint_row_f(L, j), JOINT_F.mult] * J[r, row0 + k, d]
                J[r, row0 + k, d] = 0.0


@ti.func
def jacobian_row(r, link, point, row0, robot_i: ti.template(), robot_f: ti.template(), pose: ti.template(),
                 J: ti.template(), n):
    """Rows ``row0 .. row0+5`` of ``J`` (B, rows, n_dofs, first n columns) for a world ``point``
    fixed to ``link``: see :func:`add_point_jacobian` (these rows are zeroed first)."""
    zero_rows(J, r, row0, n)
    add_point_jacobian(r, link, point, row0, 1.0, robot_i, robot_f, pose, J, False)


@ti.func
def link_com(r, l, robot_f: ti.template(), pose: ti.template()):
    """World position of link ``l``'s centre of mass in row r (its link pose must be current)."""
    return vec3(pose, r, l, POSE.pos) + qrot(vec4(pose, r, l, POSE.quat), const3(robot_f, l, LINK_F.com))


@ti.func
def point_of(r, link, local: ti.template(), i, pose: ti.template()):
    """World position of point ``local[i, 0:3]`` (link frame) on ``link`` in row r."""
    return vec3(pose, r, link, POSE.pos) + qrot(vec4(pose, r, link, POSE.quat), const3(local, i, 0))


@fast
@ti.kernel
def forward_kinematics(q: ti.types.ndarray(), robot_i: ti.types.ndarray(), robot_f: ti.types.ndarray(),
                       pose: ti.types.ndarray(), serial: ti.template(), offset: ti.i32):
    """FK of every row of ``q`` (B, n_qs) into the link rows of ``pose`` (B, L [+ J], 7); ``serial``
    (:func:`engine.runtime.dispatch.serial`) runs the rows in the calling thread. On a software
    Vulkan device only the rows ``offset`` to ``offset`` + :func:`~engine.runtime.span.thread_span`
    (the caller launches span by span: :func:`~engine.runtime.span.thread_offsets`)."""
    ti.loop_config(block_dim=ti.static(block_dim()), serialize=serial)
    for i in range(ti.static(thread_span()) if ti.static(thread_span() > 0) else q.shape[0]):
        r = offset + i
        if r < q.shape[0]:
            fk_row(r, q, robot_i, robot_f, pose, False)


@fast
@ti.kernel
def jacobian(q: ti.types.ndarray(), link: ti.i32, local: ti.types.ndarray(), robot_i: ti.types.ndarray(),
             robot_f: ti.types.ndarray(), pose: ti.types.ndarray(), J: ti.types.ndarray(), serial: ti.template(),
             offset: ti.i32):
    """FK of every row of ``q``, then ``J`` (B, 6, n_dofs) of point ``local`` (1, 3) on ``link``;
    on a software Vulkan device the rows ``offset`` to ``offset`` + :func:`~engine.runtime.span.thread_span`
    only (the caller launches span by span: :func:`~engine.runtime.span.thread_offsets`)."""
    ti.loop_config(block_dim=ti.static(block_dim()), serialize=serial)
    for i in range(ti.static(thread_span()) if ti.static(thread_span() > 0) else q.shape[0]):
        r = offset + i
        if r < q.shape[0]:
            fk_row(r, q, robot_i, robot_f, pose)
            jacobian_row(r, link, point_of(r, link, local, 0, pose), 0, robot_i, robot_f, pose, J, J.shape[2])
