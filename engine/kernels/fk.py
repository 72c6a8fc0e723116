"""Forward kinematics and Jacobians, one thread per row (env) of the batch.

Robot constants (see :func:`engine.kernels.layout.pack_tree`):

- ``link_i``  int   (n_links, 3):  parent index (-1 = world), first joint, end joint
- ``link_f``  float (n_links, 7):  body offset in the parent frame, pos xyz + quat wxyz
- ``joint_i`` int   (n_joints, 5): type code, q start, dof start, leader q start, leader dof start
  (the last two -1 unless the joint mimics a leader)
- ``joint_f`` float (n_joints, 9): anchor xyz, axis xyz (link frame), ref, mimic multiplier, offset

Per-row outputs: ``links_pos`` (B, n_links, 3), ``links_quat`` (B, n_links, 4) and ``frames``
(B, n_joints, 7): the world pose of each joint's frame right after its own motion, which the
Jacobian reads (axes, anchors).
"""

import taichi as ti

from .quat import qaxis_angle, qcolumn, qmul, qnormalize, qrot

FIXED, HINGE, SLIDE, BALL, FREE = 0, 1, 2, 3, 4


@ti.func
def joint_value(r, j, q: ti.template(), joint_i: ti.template(), joint_f: ti.template()):
    """Scalar q of a 1-dof joint in row r, derived from the leader for a mimic joint."""
    v = q[r, joint_i[j, 1]]
    if joint_i[j, 3] >= 0:
        v = joint_f[j, 7] * q[r, joint_i[j, 3]] + joint_f[j, 8]
    return v


@ti.func
def fk_row(r, q: ti.template(), link_i: ti.template(), link_f: ti.template(), joint_i: ti.template(),
           joint_f: ti.template(), links_pos: ti.template(), links_quat: ti.template(), frames: ti.template()):
    """Forward kinematics of row r of ``q`` (B, n_qs): fills the row's link poses and joint frames."""
    for l in range(link_i.shape[0]):
        pos = ti.Vector([link_f[l, 0], link_f[l, 1], link_f[l, 2]])
        quat = ti.Vector([link_f[l, 3], link_f[l, 4], link_f[l, 5], link_f[l, 6]])
        p = link_i[l, 0]
        if p >= 0:
            ppos = ti.Vector([links_pos[r, p, 0], links_pos[r, p, 1], links_pos[r, p, 2]])
            pquat = ti.Vector([links_quat[r, p, 0], links_quat[r, p, 1], links_quat[r, p, 2],
                               links_quat[r, p, 3]])
            pos = ppos + qrot(pquat, pos)
            quat = qmul(pquat, quat)
        for j in range(link_i[l, 1], link_i[l, 2]):
            kind = joint_i[j, 0]
            qs = joint_i[j, 1]
            anchor = ti.Vector([joint_f[j, 0], joint_f[j, 1], joint_f[j, 2]])
            axis = ti.Vector([joint_f[j, 3], joint_f[j, 4], joint_f[j, 5]])
            if kind == HINGE or kind == BALL:
                rot = ti.Vector([1.0, 0.0, 0.0, 0.0])
                if kind == HINGE:
                    rot = qaxis_angle(axis, joint_value(r, j, q, joint_i, joint_f) - joint_f[j, 6])
                else:
                    rot = qnormalize(ti.Vector([q[r, qs], q[r, qs + 1], q[r, qs + 2], q[r, qs + 3]]))
                anchor_w = pos + qrot(quat, anchor)
                quat = qmul(quat, rot)
                pos = anchor_w - qrot(quat, anchor)
            elif kind == SLIDE:
                pos = pos + qrot(quat, axis) * (joint_value(r, j, q, joint_i, joint_f) - joint_f[j, 6])
            elif kind == FREE:
                pos = ti.Vector([q[r, qs], q[r, qs + 1], q[r, qs + 2]])
                quat = qnormalize(ti.Vector([q[r, qs + 3], q[r, qs + 4], q[r, qs + 5], q[r, qs + 6]]))
            for k in ti.static(range(3)):
                frames[r, j, k] = pos[k]
            for k in ti.static(range(4)):
                frames[r, j, 3 + k] = quat[k]
        for k in ti.static(range(3)):
            links_pos[r, l, k] = pos[k]
        for k in ti.static(range(4)):
            links_quat[r, l, k] = quat[k]


@ti.func
def set_column(J: ti.template(), r, row0, d, lin, ang):
    for k in ti.static(range(3)):
        J[r, row0 + k, d] = lin[k]
        J[r, row0 + 3 + k, d] = ang[k]


@ti.func
def jacobian_row(r, link, point, row0, link_i: ti.template(), joint_i: ti.template(), joint_f: ti.template(),
                 frames: ti.template(), J: ti.template()):
    """Rows ``row0 .. row0+5`` of ``J`` (B, rows, n_dofs) for a world ``point`` fixed to ``link``:
    linear velocity of the point (3), then angular velocity (3), world axes. Zeroes those rows first;
    mimic columns are folded into their leaders."""
    for k in range(6):
        for d in range(J.shape[2]):
            J[r, row0 + k, d] = 0.0
    cur = link
    while cur >= 0:
        for j in range(link_i[cur, 1], link_i[cur, 2]):
            kind = joint_i[j, 0]
            d0 = joint_i[j, 2]
            fpos = ti.Vector([frames[r, j, 0], frames[r, j, 1], frames[r, j, 2]])
            fquat = ti.Vector([frames[r, j, 3], frames[r, j, 4], frames[r, j, 5], frames[r, j, 6]])
            anchor_w = fpos + qrot(fquat, ti.Vector([joint_f[j, 0], joint_f[j, 1], joint_f[j, 2]]))
            axis_w = qrot(fquat, ti.Vector([joint_f[j, 3], joint_f[j, 4], joint_f[j, 5]]))
            zero = ti.Vector([0.0, 0.0, 0.0])
            if kind == HINGE:
                set_column(J, r, row0, d0, axis_w.cross(point - anchor_w), axis_w)
            elif kind == SLIDE:
                set_column(J, r, row0, d0, axis_w, zero)
            elif kind == BALL:
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
        cur = link_i[cur, 0]
    for j in range(joint_i.shape[0]):
        lead = joint_i[j, 4]
        if lead >= 0:
            d = joint_i[j, 2]
            for k in range(6):
                J[r, row0 + k, lead] += joint_f[j, 7] * J[r, row0 + k, d]
                J[r, row0 + k, d] = 0.0


@ti.kernel
def forward_kinematics(q: ti.types.ndarray(), link_i: ti.types.ndarray(), link_f: ti.types.ndarray(),
                       joint_i: ti.types.ndarray(), joint_f: ti.types.ndarray(),
                       links_pos: ti.types.ndarray(), links_quat: ti.types.ndarray(),
                       frames: ti.types.ndarray()):
    """FK of every row of ``q`` (B, n_qs)."""
    for r in range(q.shape[0]):
        fk_row(r, q, link_i, link_f, joint_i, joint_f, links_pos, links_quat, frames)


@ti.kernel
def jacobian(q: ti.types.ndarray(), link: ti.i32, local_point: ti.types.ndarray(),
             link_i: ti.types.ndarray(), link_f: ti.types.ndarray(), joint_i: ti.types.ndarray(),
             joint_f: ti.types.ndarray(), links_pos: ti.types.ndarray(), links_quat: ti.types.ndarray(),
             frames: ti.types.ndarray(), J: ti.types.ndarray()):
    """FK of every row of ``q``, then ``J`` (B, 6, n_dofs) of ``local_point`` (3,) on ``link``."""
    for r in range(q.shape[0]):
        fk_row(r, q, link_i, link_f, joint_i, joint_f, links_pos, links_quat, frames)
        lq = ti.Vector([links_quat[r, link, 0], links_quat[r, link, 1], links_quat[r, link, 2],
                        links_quat[r, link, 3]])
        point = ti.Vector([links_pos[r, link, 0], links_pos[r, link, 1], links_pos[r, link, 2]]) + qrot(
            lq, ti.Vector([local_point[0], local_point[1], local_point[2]]))
        jacobian_row(r, link, point, 0, link_i, joint_i, joint_f, frames, J)
