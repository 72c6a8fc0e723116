"""A hand URDF loaded without ``fixed=`` (Genesis' default: a free base, as in its shadow-hand IK
example): multilink IK on three fingertips whose targets lie 0.4-0.6 m away, beyond what the
fingers reach from where the hand stands, so only a free base reaches them. Every answer is
checked by forward kinematics here (and by Pinocchio in tests/test_genesis_scripts.py)."""

import numpy as np

import engine as gs

gs.init(backend=gs.cpu, precision="32", logging_level="warning")

scene = gs.Scene(show_viewer=False)
hand = scene.add_entity(gs.morphs.URDF(file="allegro_right_hand"))
scene.build()

assert hand.is_free and hand.n_qs == 7 + 16 and hand.n_dofs == 6 + 16  # a free joint, as in Genesis
tips = [hand.get_link(name) for name in ("link_3.0_tip", "link_7.0_tip", "link_15.0_tip")]
lower, upper = hand.q_limits
rng = np.random.default_rng(0)
answers = []  # (qpos, targets) per step, for the test's reference check
for i in range(3):
    goal = hand.get_qpos().astype(float).copy()
    goal[:3] = [0.4 + 0.1 * i, -0.2, 0.3]
    goal[7:] = lower[7:] + (upper[7:] - lower[7:]) * rng.uniform(0.3, 0.7, 16)
    links_pos, _ = hand.forward_kinematics(goal)
    targets = [links_pos[tip.idx_local] for tip in tips]
    q, err = hand.inverse_kinematics_multilink(links=tips, poss=targets, return_error=True)
    assert q.shape == (hand.n_qs,) and err.shape == (3, 6)
    got, _ = hand.forward_kinematics(q)
    for tip, target in zip(tips, targets, strict=True):
        miss = np.linalg.norm(got[tip.idx_local] - target)
        assert miss < 1e-3, (i, tip.name, miss)
    assert np.linalg.norm(q[:3]) > 0.3  # the base itself moved to get there
    hand.set_qpos(q)
    answers.append((q.copy(), np.array(targets)))

print(f"ok: the free-based hand put three fingertips on their targets in {len(answers)} steps")
