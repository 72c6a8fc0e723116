"""One warning line when an entity's first IK call after ``build()`` fails in every env, so a
script that never reads ``success`` is not left with wrong answers and no word.

The cheap check behind the cause it names: from a fixed base, every point a link can reach lies
within the sum of the link-to-link distances along its chain (rigid segments between hinge
origins; a chain with a slide joint is not judged) of the base link's origin. A target farther
than that cannot be reached, and the likely cause is a base fixed where it should be free (URDF's
``fixed``: Genesis' default, and this engine's, is False).
"""

from __future__ import annotations

import logging

import numpy as np

LOG = logging.getLogger("engine")


def check(entity, links, poss, success) -> None:
    """After an IK call: on the entity's first one since build, warn once if ``success`` (bool,
    ``([n_envs,])``) is False everywhere, naming the likely cause when the reach check finds one.
    ``links``: the target links (or names); ``poss``: their target positions ``([n_envs,] 3)`` or None."""
    state = entity.ik_state
    if state.first_call_checked:
        return
    state.first_call_checked = True
    if np.any(np.asarray(success)):
        return
    cause = _unreachable(entity, links, poss)
    LOG.warning(f"inverse_kinematics: the first IK call on '{entity.tree.name}' failed in every env"
                + (f": {cause}" if cause else " (read the answer's error with return_error=True)"))


def _unreachable(entity, links, poss) -> str:
    """A sentence naming a target that no configuration reaches from a fixed base, or ""."""
    if entity.is_free or entity.is_placed_body:
        return ""
    pos = entity.get_links_pos().reshape(-1, entity.n_links, 3)[0].astype(float)
    tree = entity.tree
    moving_by_link = {}
    for joint in tree.joints:
        moving_by_link.setdefault(joint.link, []).append(joint.type)
    for link, target in zip(links, poss, strict=True):
        if target is None:
            continue
        link = entity.get_link(link)
        idx, reach, chain_ok = link.idx_local, 0.0, True
        while tree.links[idx].parent >= 0:
            parent = tree.links[idx].parent
            reach += float(np.linalg.norm(pos[idx] - pos[parent]))
            chain_ok &= not any(t in ("prismatic", "slide", "free") for t in moving_by_link.get(idx, []))
            idx = parent
        if not chain_ok:
            continue
        base = pos[idx]
        far = float(np.min(np.linalg.norm(np.asarray(target, float).reshape(-1, 3) - base, axis=-1)))
        if far > reach + 1e-3:
            return (f"the target of link '{link.name}' is {far:.2f} m from the fixed base '{tree.links[idx].name}', "
                    f"farther than the chain reaches ({reach:.2f} m); is the base meant to be free? "
                    f"(URDF(fixed=False), Genesis' default, gives it a free joint)")
    return ""
