"""Task kinds, in one table: each kind's code, its kernel rows, the links it moves and its name.

Both solver forms (:mod:`engine.kernels.generic`, :mod:`engine.kernels.per_robot`) call a task's rows
through :data:`KINDS` (the generic one by the code read at run time, the per-robot one by the
code compiled in), and the packers ask :func:`used_links` which dofs a request moves, so a new
kind of task is: its code and entry here, its rows (a ``ti.func``, usually in
:mod:`engine.kernels.solver`), and its class in :mod:`engine.ik.tasks`.

A kind's ``rows`` is a ``ti.func`` ``(form, ctx, S, t, e, i, link, ref, plain, task_i, task_f,
targets) -> (met, score)`` writing rows ``6 i .. 6 i + 5`` (:mod:`engine.kernels.solver`); ``i``,
``link`` and ``ref`` are compile-time in the per-robot form and run-time in the generic one.
"""

from dataclasses import dataclass

import taichi as ti

from .avoid import collision_task
from .solver import com_task, frame_task, look_at_task
from .tables import COLLIDE, COM, FRAME

LOOK_AT = 3  # TASK_I.kind of a look-at task (FRAME, COM, COLLIDE: engine.kernels.tables)


@dataclass(frozen=True)
class TaskKind:
    """One kind of task. ``moves``: which links' dofs the solver moves for it: ``"links"`` its link
    and reference link, ``"massive"`` every link with a mass, ``"others"`` those of the other
    tasks (every link when it is alone); ``name``: how messages name a task of the kind that has
    no link; ``on_demand``: compiled into the generic solver only for requests that hold one
    (:func:`on_demand_mask`): the collision task's search is most of the solver's code, and the
    look-at rows would add ~60 % to every generic compile (37 -> 61 s cold on a 2-core CPU)."""

    code: int
    name: str
    rows: object
    moves: str = "links"
    on_demand: bool = False


@ti.func
def _frame(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, i: ti.template(), link: ti.template(),
           ref: ti.template(), plain, task_i: ti.template(), task_f: ti.template(), targets: ti.template()):
    met = 1
    score = 0.0
    if ti.static(form.STATIC_ROWS):  # ref known at compile time
        met, score = frame_task(form, ctx, S, t, e, i, link, ref, ref >= 0, plain, task_i, task_f, targets)
    elif ref >= 0:
        met, score = frame_task(form, ctx, S, t, e, i, link, ref, True, plain, task_i, task_f, targets)
    else:
        met, score = frame_task(form, ctx, S, t, e, i, link, ref, False, plain, task_i, task_f, targets)
    return met, score


@ti.func
def _com(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, i: ti.template(), link: ti.template(),
         ref: ti.template(), plain, task_i: ti.template(), task_f: ti.template(), targets: ti.template()):
    return com_task(form, ctx, S, t, e, i, task_i, task_f, targets)


@ti.func
def _collide(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, i: ti.template(), link: ti.template(),
             ref: ti.template(), plain, task_i: ti.template(), task_f: ti.template(), targets: ti.template()):
    return collision_task(form, ctx, S, t, e, i, task_i, task_f)


@ti.func
def _look_at(form: ti.template(), ctx: ti.template(), S: ti.template(), t, e, i: ti.template(), link: ti.template(),
             ref: ti.template(), plain, task_i: ti.template(), task_f: ti.template(), targets: ti.template()):
    return look_at_task(form, ctx, S, t, e, i, link, task_i, task_f, targets)


KINDS = (
    TaskKind(COM, "the centre of mass", _com, moves="massive"),
    TaskKind(COLLIDE, "collision avoidance", _collide, moves="others", on_demand=True),
    TaskKind(FRAME, "a link frame", _frame),
    TaskKind(LOOK_AT, "a look-at", _look_at, on_demand=True),
)
BY_CODE = {kind.code: kind for kind in KINDS}


def on_demand_mask(structure) -> int:
    """The on-demand kinds among a request's tasks (``(kind, link, ref)`` per task), as a bitmask
    (bit ``code``): the generic solver compiles exactly these in (a compile-time argument)."""
    return sum(1 << code for code in sorted({int(c) for c, _, _ in structure}) if BY_CODE[code].on_demand)


def kind_of(code: int) -> TaskKind:
    return BY_CODE[code]


def used_links(structure, massive_links, n_links: int) -> tuple[int, ...]:
    """The links whose dofs the solver moves for a task ``structure`` (``(kind, link, ref)`` per
    task): each kind's (:attr:`TaskKind.moves`; ``massive_links``: the links with a mass), and
    every link of ``n_links`` when only "others" kinds are there (local indices, sorted)."""
    out: set[int] = set()
    for code, link, ref in structure:
        moves = BY_CODE[code].moves
        if moves == "massive":
            out.update(int(l) for l in massive_links)
        elif moves == "links":
            out.update(l for l in (link, ref) if l >= 0)
    if not out and any(BY_CODE[code].moves == "others" for code, _, _ in structure):
        out.update(range(n_links))
    return tuple(sorted(out))
