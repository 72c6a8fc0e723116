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
the limit (UR5's forearm against its base: ~1.6M, many pieces of many vertices) cannot be split
so: :func:`split` then returns None and the caller takes the numpy twins.
"""

from __future__ import annotations

import numpy as np

from ..kernels.tables import AVOID_HEAD, LINK_C, PAIR_I, link_row_c, pair_row


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
    from ..kernels.gjk import EXITS, STEP_LOOPS
    from .gjk import ITERATIONS

    head = coll_i[0]
    P, L, O = (int(head[c]) for c in (AVOID_HEAD.n_pairs, AVOID_HEAD.n_links, AVOID_HEAD.n_shapes))
    counts, sizes = piece_sizes(coll_i)
    steps = ITERATIONS + 1
    pairs = coll_i[pair_row(0):pair_row(P)].astype(np.int64)
    on_a = pairs[:, PAIR_I.a1] - pairs[:, PAIR_I.a0]
    on_b = pairs[:, PAIR_I.b1] - pairs[:, PAIR_I.b0]
    a, b = pairs[:, PAIR_I.link_a], pairs[:, PAIR_I.link_b]
    n = counts[a] * counts[b]
    hulls = 2 * n + EXITS + steps * (counts[b] * sizes[a] + counts[a] * sizes[b] + n * STEP_LOOPS)
    per_pair = on_a * (on_b + 1) + 1 + np.where(n > 0, hulls, 0)
    links = coll_i[link_row_c(P, 0):link_row_c(P, L)].astype(np.int64)
    spheres = links[:, LINK_C.s1] - links[:, LINK_C.s0]
    pieces = np.where(counts > 0, 2 * counts + EXITS + steps * (sizes + counts * STEP_LOOPS), 0)
    per_link = np.where(links[:, LINK_C.world] == 1, O * (spheres + pieces), 0)
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
    in exactly one, in order (runs packed greedily); None where one item alone is over it."""
    per_pair, per_link, base = item_loops(coll_i)
    budget = limit - base
    if budget <= 0 or (per_pair > budget).any() or (per_link > budget).any():
        return None
    P = len(per_pair)
    parts = [_part(coll_i, run, None) for run in _runs(per_pair, budget)]
    checked = np.flatnonzero(per_link > 0)
    for run in _runs(per_link[checked], budget):
        parts.append(_part(coll_i, np.zeros(0, np.int64), checked[run]))
    if not parts:  # nothing to check: one launch says so
        parts.append(_part(coll_i, np.arange(P), None))
    return parts


def _runs(costs: np.ndarray, budget: int) -> list[np.ndarray]:
    """Consecutive index runs of ``costs`` (each at most ``budget``) whose sums are at most ``budget``."""
    runs, start, total = [], 0, 0
    for i, c in enumerate(costs.tolist()):
        if total + c > budget:
            runs.append(np.arange(start, i))
            start, total = i, 0
        total += c
    if start < len(costs):
        runs.append(np.arange(start, len(costs)))
    return runs


def _part(coll_i: np.ndarray, pairs: np.ndarray, world_links: np.ndarray | None) -> np.ndarray:
    """``coll_i`` with only the self pairs ``pairs`` (indices) and only the links ``world_links``
    checked against the obstacles (None: none)."""
    P = int(coll_i[0, AVOID_HEAD.n_pairs])
    head = coll_i[:1].copy()
    head[0, AVOID_HEAD.n_pairs] = len(pairs)
    rest = coll_i[pair_row(P):].copy()  # the links' rows first, then the obstacles' and pieces'
    L = int(coll_i[0, AVOID_HEAD.n_links])
    checked = np.zeros(L, bool)
    if world_links is not None:
        checked[world_links] = True
    rest[:L, LINK_C.world] = np.where(checked, rest[:L, LINK_C.world], 0)
    return np.ascontiguousarray(np.concatenate([head, coll_i[pair_row(0) + pairs], rest]))


__all__ = ["item_loops", "piece_sizes", "split"]
