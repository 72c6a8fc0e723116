"""The exact search of the checks split into launches a software Vulkan device runs whole.

Mesa's lavapipe stops every loop of a shader invocation after ~65k loop iterations in all
(``docs/backends.md``); :data:`engine.runtime.dispatch.SOFTWARE_LOOP_LIMIT` keeps a launch's
worst case under it. The checks' search (:func:`engine.kernels.avoid.answer_distance`) visits
every counted self pair and every link against every obstacle; with the pieces' exact tier the
Panda's worst case is ~0.6M iterations. Its distance is the least over those items, so the
same kernel over tables that each hold some of them, the least of the launches taken, gives the
same distance: :func:`split` makes such tables.

Each part's ``coll_i`` holds a run of the self pairs (its links checked against no obstacle) or
a run of links checked against the obstacles (no self pair); the sphere, bound, obstacle and
piece rows are the whole tables' (``coll_f`` is shared). An item whose worst case alone is over
the limit (UR5's forearm against its base: ~1.6M, 64 x 32 pieces of many vertices) runs alone, in
launches that each give its links only some of their pieces (their ``LINK_C`` piece ranges cut):
the pieces' bound is the least over the piece pairs, so the least over those launches is the
whole pair's distance (in each, the spheres' distance is the same, and the pair's distance is
the larger of it and the pieces' bound). Only where even one piece pair is over the limit, or the
spheres of one pair alone, does :func:`split` return None, and the caller take the numpy twins.
"""

from __future__ import annotations

import numpy as np

from ..kernels.tables import AVOID_HEAD, LINK_C, PAIR_I, link_row_c, pair_row

# Launches per row checked beyond which the numpy twins are the cheaper way: a launch costs ~1.5 ms
# on lavapipe whatever it holds, and the twins' cost grows with the rows. Measured at 16 rows
# (`bench/collision_time.py ROBOT --backend vulkan --envs 16 --vs-numpy --world`, one box): Panda,
# 16 launches, 26 ms against 314 ms; UR5, 135 launches, 208 against 524 ms; Baxter, 321 launches,
# 562 against 709 ms: the two cost the same at about 12-25 launches a row.
LAUNCHES_PER_ROW = 16


def _hull_loops(ca, sa, cb, sb):
    """Worst-case loop iterations of the pieces' bound (:func:`engine.kernels.gjk.bound`) between
    ``ca`` pieces of ``sa`` vertices in all and ``cb`` of ``sb`` (an obstacle: 1 and 0), every piece
    pair searched to :data:`engine.collision.gjk.ITERATIONS` steps, each a pass over both pieces'
    vertices; 0 where a side has none. Ints or arrays alike."""
    from ..kernels.gjk import EXITS, STEP_LOOPS
    from .gjk import ITERATIONS

    n = ca * cb
    return np.where(n > 0, 2 * n + EXITS + (ITERATIONS + 1) * (cb * sa + ca * sb + n * STEP_LOOPS), 0)


def item_loops(coll_i: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Worst-case loop iterations of the checks' search over the packed tables ``coll_i``
    (:func:`engine.collision.checks.pack`), every pair close: ``(per self pair (P,), per link
    against the obstacles (L,), per launch)``. A self pair costs its first link's spheres times one
    more than its second's, plus one; where both links have pieces, the pieces' bound
    (:func:`engine.kernels.gjk.bound`) with every piece pair searched to
    :data:`engine.collision.gjk.ITERATIONS` steps, each a pass over both pieces' vertices. A link
    checked against the obstacles costs its spheres and, with pieces, their bound per obstacle
    (0 where it is not checked: the kernel skips it). A launch costs one pass over the links per
    obstacle and one more, and a few exit tests."""
    head = coll_i[0]
    P, L, O = (int(head[c]) for c in (AVOID_HEAD.n_pairs, AVOID_HEAD.n_links, AVOID_HEAD.n_shapes))
    counts, sizes = piece_sizes(coll_i)
    pairs = coll_i[pair_row(0):pair_row(P)].astype(np.int64)
    on_a = pairs[:, PAIR_I.a1] - pairs[:, PAIR_I.a0]
    on_b = pairs[:, PAIR_I.b1] - pairs[:, PAIR_I.b0]
    a, b = pairs[:, PAIR_I.link_a], pairs[:, PAIR_I.link_b]
    per_pair = on_a * (on_b + 1) + 1 + _hull_loops(counts[a], sizes[a], counts[b], sizes[b])
    links = coll_i[link_row_c(P, 0):link_row_c(P, L)].astype(np.int64)
    spheres = links[:, LINK_C.s1] - links[:, LINK_C.s0]
    per_link = np.where(links[:, LINK_C.world] == 1, O * (spheres + _hull_loops(counts, sizes, 1, 0)), 0)
    return per_pair, per_link, L * (O + 1) + 6


def piece_sizes(coll_i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(counts (L,), vertices (L,))``: each link's pieces and their vertices in the packed tables."""
    from ..kernels.tables import PIECE_I, piece_row_i

    head = coll_i[0]
    P, L, O, N = (int(head[c]) for c in (AVOID_HEAD.n_pairs, AVOID_HEAD.n_links, AVOID_HEAD.n_shapes,
                                         AVOID_HEAD.n_pieces))
    rows = coll_i[link_row_c(P, 0):link_row_c(P, L)]
    first = piece_row_i(P, L, O, 0)
    per_piece = coll_i[first:first + N, PIECE_I.h1] - coll_i[first:first + N, PIECE_I.h0]
    ends = np.concatenate([[0], np.cumsum(per_piece, dtype=np.int64)])
    return ((rows[:, LINK_C.p1] - rows[:, LINK_C.p0]).astype(np.int64),
            ends[rows[:, LINK_C.p1]] - ends[rows[:, LINK_C.p0]])


def split(coll_i: np.ndarray, limit: int) -> list[np.ndarray] | None:
    """``coll_i`` as the tables of launches whose worst case (:func:`item_loops`) is at most
    ``limit`` loop iterations each, every self pair and every link checked against the obstacles
    in one run of launches, in order (runs packed greedily; an item over the limit alone in
    launches of some of its pieces each); None where that cannot be (see the module doc)."""
    per_pair, per_link, base = item_loops(coll_i)
    budget = limit - base
    if budget <= 0:
        return None
    P = len(per_pair)
    parts = []
    fits = per_pair <= budget
    for run in _runs(per_pair, budget):
        small = run[fits[run]]
        if len(small):
            parts.append(_part(coll_i, small, None))
        for p in run[~fits[run]]:
            cuts = _piece_cuts(coll_i, int(p), None, budget)
            if cuts is None:
                return None
            parts += [_part(coll_i, np.array([p]), None, cut) for cut in cuts]
    checked = np.flatnonzero(per_link > 0)
    fits = per_link[checked] <= budget
    for run in _runs(per_link[checked], budget):
        small = checked[run][fits[run]]
        if len(small):
            parts.append(_part(coll_i, np.zeros(0, np.int64), small))
        for link in checked[run][~fits[run]]:
            cuts = _piece_cuts(coll_i, None, int(link), budget)
            if cuts is None:
                return None
            parts += [_part(coll_i, np.zeros(0, np.int64), np.array([link]), cut) for cut in cuts]
    if not parts:  # nothing to check: one launch says so
        parts.append(_part(coll_i, np.arange(P), None))
    return parts


def _piece_cuts(coll_i: np.ndarray, pair: int | None, link: int | None, budget: int) -> list[dict] | None:
    """The piece ranges (``{link: (p0, p1)}``) of the launches that check self pair ``pair``, or
    ``link`` against the obstacles, over all their piece pairs with each launch's worst case
    within ``budget``: the second link's pieces (none for the obstacles) in runs that fit against
    one piece of the first, then the first's in runs that fit against each of those; None where
    even one piece pair, or the spheres alone, are over it."""
    from ..kernels.tables import PIECE_I, piece_row_i

    head = coll_i[0]
    P, L, O, N = (int(head[c]) for c in (AVOID_HEAD.n_pairs, AVOID_HEAD.n_links, AVOID_HEAD.n_shapes,
                                         AVOID_HEAD.n_pieces))
    first = piece_row_i(P, L, O, 0)
    vertices = (coll_i[first:first + N, PIECE_I.h1] - coll_i[first:first + N, PIECE_I.h0]).astype(np.int64)

    def pieces(l: int) -> np.ndarray:
        row = coll_i[link_row_c(P, l)]
        return np.arange(row[LINK_C.p0], row[LINK_C.p1])

    if pair is not None:
        row = coll_i[pair_row(pair)].astype(np.int64)
        la, lb = int(row[PAIR_I.link_a]), int(row[PAIR_I.link_b])
        spheres = (row[PAIR_I.a1] - row[PAIR_I.a0]) * (row[PAIR_I.b1] - row[PAIR_I.b0] + 1) + 1
        times = 1
    else:
        la, lb = link, None
        lrow = coll_i[link_row_c(P, link)].astype(np.int64)
        spheres = O * (lrow[LINK_C.s1] - lrow[LINK_C.s0])
        times = O

    def cost(a: np.ndarray, b: np.ndarray | None) -> int:
        """Worst case of the item with ``a`` (and ``b``: the second link's, None: an obstacle's one)."""
        cb, sb = (1, 0) if b is None else (len(b), int(vertices[b].sum()))
        return int(spheres + times * _hull_loops(len(a), int(vertices[a].sum()), cb, sb))

    a_all = pieces(la)
    largest = a_all[np.argmax(vertices[a_all])][None] if len(a_all) else a_all  # b's runs fit beside any one of a's
    b_runs = [None] if lb is None else _fitting(pieces(lb), lambda run: cost(largest, run), budget)
    if b_runs is None:
        return None
    cuts = []
    for b in b_runs:
        a_runs = _fitting(a_all, lambda run, b=b: cost(run, b), budget)
        if a_runs is None:
            return None
        for a in a_runs:
            cut = {la: (int(a[0]), int(a[-1]) + 1)}
            if b is not None:
                cut[lb] = (int(b[0]), int(b[-1]) + 1)
            cuts.append(cut)
    return cuts


def _fitting(items: np.ndarray, cost, budget: int) -> list[np.ndarray] | None:
    """``items`` in consecutive runs, each as long as ``cost(run)`` stays within ``budget``; None
    where one item alone is over it."""
    runs, start = [], 0
    while start < len(items):
        end = start + 1
        if cost(items[start:end]) > budget:
            return None
        while end < len(items) and cost(items[start:end + 1]) <= budget:
            end += 1
        runs.append(items[start:end])
        start = end
    return runs


def _runs(costs: np.ndarray, budget: int) -> list[np.ndarray]:
    """Consecutive index runs of ``costs`` (each at most ``budget``) whose sums are at most ``budget``."""
    runs, start, total = [], 0, 0
    for i, c in enumerate(costs.tolist()):
        if total + c > budget and i > start:
            runs.append(np.arange(start, i))
            start, total = i, 0
        total += c
    if start < len(costs):
        runs.append(np.arange(start, len(costs)))
    return runs


def _part(coll_i: np.ndarray, pairs: np.ndarray, world_links: np.ndarray | None,
          cut: dict | None = None) -> np.ndarray:
    """``coll_i`` with only the self pairs ``pairs`` (indices) and only the links ``world_links``
    checked against the obstacles (None: none); ``cut``: ``{link: (p0, p1)}``, those links with
    only those pieces."""
    P = int(coll_i[0, AVOID_HEAD.n_pairs])
    head = coll_i[:1].copy()
    head[0, AVOID_HEAD.n_pairs] = len(pairs)
    rest = coll_i[pair_row(P):].copy()  # the links' rows first, then the obstacles' and pieces'
    L = int(coll_i[0, AVOID_HEAD.n_links])
    checked = np.zeros(L, bool)
    if world_links is not None:
        checked[world_links] = True
    rest[:L, LINK_C.world] = np.where(checked, rest[:L, LINK_C.world], 0)
    for link, (p0, p1) in (cut or {}).items():
        rest[link, LINK_C.p0], rest[link, LINK_C.p1] = p0, p1
    return np.ascontiguousarray(np.concatenate([head, coll_i[pair_row(0) + pairs], rest]))


__all__ = ["LAUNCHES_PER_ROW", "item_loops", "piece_sizes", "split"]
