"""Episodes, transitions and the good / bad / unlabeled composer."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.algorithms.imitation import Episode, MixSpec, Transitions, compose


def episode(n: int, value: float, terminal: bool = False) -> Episode:
    obs = np.full((n, 2), value)
    return Episode(obs, np.full((n, 1), value), np.ones(n), obs + 1,
                   np.arange(n) == n - 1 if terminal else np.zeros(n, bool), timeout=not terminal)


def test_episode_checks_lengths_and_terminals():
    with pytest.raises(ValueError, match="different lengths"):
        Episode(np.zeros((3, 2)), np.zeros((2, 1)), np.zeros(3), np.zeros((3, 2)), np.zeros(3))
    with pytest.raises(ValueError, match="terminal step before the last"):
        Episode(np.zeros((3, 2)), np.zeros((3, 1)), np.zeros(3), np.zeros((3, 2)),
                [True, False, False])
    e = episode(4, 1.0, terminal=True)
    assert e.terminated and not e.timeout and e.episode_return == 4.0


def test_transitions_stack_and_round_trip_through_one_array():
    episodes = [episode(3, 1.0, terminal=True), episode(2, 2.0)]
    t = Transitions.from_episodes(episodes)
    assert len(t) == 5 and t.initial_observations.tolist() == [[1.0, 1.0], [2.0, 2.0]]
    assert t.terminals.tolist() == [False, False, True, False, False]
    back = Transitions.from_array(t.as_array(), obs_dim=2)
    for name in ("observations", "actions", "rewards", "next_observations", "terminals"):
        np.testing.assert_array_equal(getattr(back, name), getattr(t, name))
    batch = t.sample(np.random.default_rng(0), 7)
    assert batch["observations"].shape == (7, 2) and batch["terminals"].shape == (7,)


def test_mix_spec_parse_and_label():
    spec = MixSpec.parse("random/1/10/30")
    assert (spec.bad_source, spec.good, spec.bad, spec.unlabeled_expert, spec.unlabeled_bad) == \
        ("random", 1, 10, 30, None)
    assert MixSpec.parse("medium/2/5/7/100").label == "medium/2/5/7/100"
    assert MixSpec.parse("medium/2/5/7/all").label == "medium/2/5/7"
    for bad in ("random/1/10", "good/1/10/30", "random/0/10/30", "random/a/1/2"):
        with pytest.raises(ValueError, match="mix"):
            MixSpec.parse(bad)


def test_compose_overlapping_like_the_public_code_and_disjoint():
    expert = [episode(5, 100.0 + i) for i in range(40)]
    random = [episode(3, float(i)) for i in range(50)]
    mix = compose(expert, random, MixSpec.parse("random/1/10/30"))
    assert [e.observations[0, 0] for e in mix.good] == [100.0]
    assert len(mix.bad) == 10 and len(mix.unlabeled) == 80
    assert mix.unlabeled_is_expert.count(True) == 30
    assert mix.unlabeled_expert_mask().sum() == 150
    assert mix.record["unlabeled"]["expert_transition_fraction"] == pytest.approx(150 / 300)
    assert mix.record["good"] == {"episodes": 1, "transitions": 5, "mean_return": 5.0}
    disjoint = compose(expert, random, MixSpec.parse("random/1/10/30/20"), overlap=False)
    good_ids = {e.observations[0, 0] for e in disjoint.good}
    unl_ids = {e.observations[0, 0] for e in disjoint.unlabeled}
    assert not good_ids & unl_ids and not {e.observations[0, 0] for e in disjoint.bad} & unl_ids
    with pytest.raises(ValueError, match="needs 30 expert and 50 random episodes"):
        compose(expert[:20], random, MixSpec.parse("random/1/10/30"))
