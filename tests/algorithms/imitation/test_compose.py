"""Episodes, transitions and the good / bad / unlabeled composer (slices and episodes)."""

from __future__ import annotations

import numpy as np
import pytest

from raystudy.algorithms.imitation import Episode, MixSpec, Transitions, compose
from raystudy.algorithms.imitation.compose import cut


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


def test_compose_whole_episodes_overlapping_like_the_public_code_and_disjoint():
    expert = [episode(5, 100.0 + i) for i in range(40)]
    random = [episode(3, float(i)) for i in range(50)]
    mix = compose(expert, random, MixSpec.parse("random/1/10/30"), unit="episode")
    assert [e.observations[0, 0] for e in mix.good] == [100.0]
    assert len(mix.bad) == 10 and len(mix.unlabeled) == 80
    assert mix.unlabeled_is_expert.count(True) == 30
    assert mix.unlabeled_expert_mask().sum() == 150
    assert mix.record["unlabeled"]["expert_transition_fraction"] == pytest.approx(150 / 300)
    assert mix.record["good"] == {"episodes": 1, "transitions": 5, "mean_return": 5.0}
    assert mix.undesirable_share() == pytest.approx(150 / 300)
    disjoint = compose(expert, random, MixSpec.parse("random/1/10/30/20"), overlap=False,
                       unit="episode")
    good_ids = {e.observations[0, 0] for e in disjoint.good}
    unl_ids = {e.observations[0, 0] for e in disjoint.unlabeled}
    assert not good_ids & unl_ids and not {e.observations[0, 0] for e in disjoint.bad} & unl_ids
    with pytest.raises(ValueError, match="needs 30 expert episodes and 50 random episodes"):
        compose(expert[:20], random, MixSpec.parse("random/1/10/30"), unit="episode")


def stream(lengths: list[int]) -> list[Episode]:
    """Terminal episodes whose observation is the transition's index in the source."""
    out, start = [], 0
    for n in lengths:
        obs = np.arange(start, start + n, dtype=float)[:, None].repeat(2, 1)
        out.append(Episode(obs, obs[:, :1], np.ones(n), obs + 1, np.arange(n) == n - 1))
        start += n
    return out


def test_slices_are_consecutive_transitions_across_episode_ends_as_the_authors_cut():
    # 7 episodes of 3 terminal steps = 21 transitions; slices of 4: 5 full + 1 of 1
    slices = cut(stream([3] * 7), 4)
    assert [sum(len(p) for p in s) for s in slices] == [4, 4, 4, 4, 4, 1]
    rows = [p.observations[:, 0].tolist() for s in slices for p in s]
    assert sum(rows, []) == list(range(21))  # contiguous, in order, each transition once
    first = slices[0]  # episode 0 whole, then the first step of episode 1
    assert [len(p) for p in first] == [3, 1] and [p.first for p in first] == [True, True]
    assert first[0].terminals.tolist() == [False, False, True]  # its own terminal kept
    assert first[1].terminals.tolist() == [False]  # episode 1 goes on in slice 1
    second = slices[1]
    assert [len(p) for p in second] == [2, 2] and [p.first for p in second] == [False, True]
    assert second[0].terminals.tolist() == [False, True]
    t = Transitions.from_episodes(second)  # a piece cut mid-episode is no initial state
    assert t.initial_observations[:, 0].tolist() == [6.0]
    np.testing.assert_array_equal(t.next_observations, t.observations + 1)


def test_compose_bad_set_is_the_first_slices_of_1000_transitions():
    expert = [episode(1000, 100.0 + i) for i in range(31)]
    random = stream([20] * 600)  # 12_000 transitions of ~20-step episodes (random Hopper)
    mix = compose(expert, random, MixSpec.parse("random/1/10/30"))
    bad = np.concatenate([e.observations[:, 0] for e in mix.bad])
    assert bad.tolist() == list(range(10_000))  # 10 slices of 1000, from the start
    assert mix.record["bad"]["transitions"] == 10_000 and mix.record["unit"] == "slice"
    # overlap (the public code): the unlabeled undesirable part is the whole source
    unlabeled_bad = np.concatenate([e.observations[:, 0] for e, flag in zip(
        mix.unlabeled, mix.unlabeled_is_expert, strict=True) if not flag])
    assert unlabeled_bad.tolist() == list(range(12_000))
    # SafeDICE's alpha: undesirable transitions / all unlabeled transitions
    assert mix.undesirable_share() == pytest.approx(12_000 / (12_000 + 30_000))
    assert mix.record["unlabeled"]["undesirable_transition_fraction"] == \
        pytest.approx(12_000 / 42_000)
    disjoint = compose(expert, random, MixSpec.parse("random/1/2/30/1"), overlap=False)
    starts = [e.observations[0, 0] for e, flag in
              zip(disjoint.unlabeled, disjoint.unlabeled_is_expert, strict=True) if not flag]
    assert starts[0] == 2000 and len(disjoint.bad) == 100  # slice 2 follows slices 0-1
    assert disjoint.undesirable_share() == pytest.approx(1000 / 31_000)
    with pytest.raises(ValueError, match="needs 30 expert episodes and 13 random slices of "
                                         "1000 transitions; the sources have 31 and 12000"):
        compose(expert, random, MixSpec.parse("random/1/13/30/13"))
    with pytest.raises(ValueError, match="13 random slices"):  # the 13th holds only 500
        compose(expert, stream([20] * 625), MixSpec.parse("random/1/13/30"))
