"""RRT and RRT-Connect over every env of a batch at once.

Every round, each unfinished env draws a sample per tree it grows (:mod:`engine.plan.draws`;
with probability :data:`GOAL_BIAS` the root of the other tree instead), finds the nearest node of
that tree (:class:`engine.plan.trees.Forest`, one kernel over all envs), steps towards the
sample by at most ``resolution`` per joint (Genesis' steering), and keeps the new node when the
step is certified free (:meth:`engine.plan.checks.Checker.certify`). It then tries to join the new
node to the nearest node of the other tree by one straight certified segment: RRT-Connect's
*connect*, done as one segment instead of a chain of steps. RRT-Connect grows both trees every
round, as (env, tree) rows of the same kernels and checks (one tree, alternating, when the node
budget leaves room for one node only); RRT grows the start's tree only and the goal is its other
tree's only node.

An env stops when joined, when its trees hold ``max_nodes`` nodes together (or its rounds reach
four times that: :data:`~engine.plan.result.NODE_BUDGET`), or when ``deadline`` passes
(:data:`~engine.plan.result.TIMEOUT`).
"""

from __future__ import annotations

import time

import numpy as np

from .draws import uniform
from .result import NODE_BUDGET, OK, TIMEOUT
from .trees import Forest

GOAL_BIAS = 0.05  # Genesis' share of samples taken at the other tree's root
CONNECT_EVALS = 256  # configurations one join attempt may check before it counts as blocked


def grow(checker, starts, goals, c_start, c_goal, envs, lo, hi, step, planner, seed, attempt,
         max_nodes, deadline):
    """Search from ``starts`` to ``goals`` (M, n_qs), whose clearances ``c_start``, ``c_goal`` (M,) are
    positive, for the envs ``envs`` (M,) (global indices: they pick the obstacle poses and the
    draws). ``lo``, ``hi`` (n_qs,): the sampling box; ``step``: per joint. Returns ``(reason (M,)
    list of str, paths: list of (k, n_qs) arrays or None, nodes (M,))``."""
    M, n = starts.shape
    forest = Forest(M, max(int(max_nodes), 2), n, checker.dtype)
    rows = np.arange(M)
    forest.add(rows, np.zeros(M, np.int32), starts, -1, c_start)
    forest.add(rows, np.ones(M, np.int32), goals, -1, c_goal)
    reason = [None] * M
    paths = [None] * M
    joined = checker.certify(starts, goals, c_start, c_goal, envs)  # a straight line first
    for r in np.flatnonzero(joined):
        reason[r], paths[r] = OK, np.stack([starts[r], goals[r]])
    live = ~joined
    for rnd in range(4 * int(max_nodes)):
        act = np.flatnonzero(live)
        if not len(act):
            break
        if time.monotonic() > deadline:
            for r in act:
                reason[r] = TIMEOUT
            live[act] = False
            break
        full = forest.count[act].sum(axis=1) >= max_nodes
        for r in act[full]:
            reason[r] = NODE_BUDGET
        live[act[full]] = False
        act = act[~full]
        if not len(act):
            break
        if planner == "RRTConnect":  # both trees grow each round while the node budget allows two nodes
            both = forest.count[act].sum(axis=1) <= max_nodes - 2
            act = np.concatenate([act, act[both]])
            a = np.concatenate([np.full(len(act) - int(both.sum()), rnd % 2), np.full(int(both.sum()), 1 - rnd % 2)])
            a = a.astype(np.int32)
        else:
            a = np.zeros(len(act), np.int32)
        b = 1 - a
        u = uniform(seed, attempt, 2 * envs[act] + a, rnd, n + 1)  # one stream per (env, tree)
        target = lo + u[:, :n] * (hi - lo)
        bias = u[:, n] < GOAL_BIAS
        target[bias] = forest.host[act[bias], b[bias], 0]
        near = forest.nearest(act, a, target)
        qn = forest.host[act, a, near].astype(float)
        cand = qn + np.clip(target - qn, -step, step)
        cand = checker.entity.tree.apply_mimic(cand)
        moved = np.abs(cand - qn).max(axis=1) > 0
        cc = np.full(len(act), -1.0)
        cc[moved] = checker.clearance(cand[moved], envs[act[moved]])
        good = cc > 0
        idx = np.flatnonzero(good)
        good[idx] = checker.certify(qn[idx], cand[idx], forest.clearance[act[idx], a[idx], near[idx]], cc[idx],
                                    envs[act[idx]])
        idx = np.flatnonzero(good)
        if not len(idx):
            continue
        rows_, a_, b_ = act[idx], a[idx], b[idx]
        new = forest.add(rows_, a_, cand[idx], near[idx], cc[idx])
        other = forest.nearest(rows_, b_, cand[idx])
        qo = forest.host[rows_, b_, other].astype(float)
        ok = checker.certify(cand[idx], qo, cc[idx], forest.clearance[rows_, b_, other], envs[rows_],
                             max_evals=CONNECT_EVALS)
        for k in np.flatnonzero(ok):
            r = int(rows_[k])
            if not live[r]:  # both trees joined this round: the first join counts
                continue
            mine, theirs = forest.branch(r, int(a_[k]), int(new[k])), forest.branch(r, int(b_[k]), int(other[k]))
            from_start, to_goal = (mine, theirs) if a_[k] == 0 else (theirs, mine)
            paths[r] = np.concatenate([from_start[::-1], to_goal]).astype(float)
            reason[r] = OK
            live[r] = False
    for r in np.flatnonzero(live):
        reason[r] = NODE_BUDGET
    return reason, paths, forest.count.sum(axis=1)


__all__ = ["CONNECT_EVALS", "GOAL_BIAS", "grow"]
