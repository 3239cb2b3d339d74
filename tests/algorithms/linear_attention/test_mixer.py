"""MultiStateMixer and MixerLM: shapes and gradients for every mixer, causality (the hard
DLA partition reads no future token), the equal budget, state statistics, bad input."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from raystudy.algorithms.linear_attention import (
    MultiStateMixer,
    loglinear_levels,
    mqar_sparse,
)
from raystudy.algorithms.models import MixerLM
from raystudy.algorithms.models.mixer_lm import MIXERS


@pytest.mark.parametrize("mixer", MIXERS)
def test_every_mixer_is_causal_and_trains(mixer):
    torch.manual_seed(0)
    model = MixerLM(32, 24, d_model=16, n_layers=2, n_heads=2, mixer=mixer, tau=0.2)
    idx = torch.randint(32, (3, 24))
    logits = model(idx)
    assert logits.shape == (3, 24, 32)
    changed = idx.clone()
    changed[:, 15:] = (changed[:, 15:] + 1) % 32                 # a different future
    torch.testing.assert_close(model(changed)[:, :15], logits[:, :15], atol=1e-6, rtol=0)
    loss = F.cross_entropy(logits.flatten(0, 1), idx.flatten())
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    if mixer != "softmax":
        lam = model.blocks[0].mixer.lam.weight.grad
        assert lam.abs().sum() > 0                               # the read weights learn


def test_equal_budget_and_state_statistics():
    T = 64
    idx = mqar_sparse(4, T, 48, 4, seed=0).inputs
    levels = loglinear_levels(T)
    for mixer in ("dla", "fifo", "fixed_chunk", "loglinear", "dla_tau0"):
        model = MixerLM(48, T, d_model=16, n_heads=2, mixer=mixer, tau=0.3)
        with torch.no_grad():
            model(idx)
        stats = model.state_stats()
        assert 1 <= stats["states/mean"] <= stats["states/max"] <= levels, mixer
    fifo = MixerLM(48, T, d_model=16, n_heads=2, mixer="fifo")
    with torch.no_grad():
        fifo(idx)
    assert fifo.state_stats()["states/max"] == levels           # fifo fills the budget
    dla0 = MixerLM(48, T, d_model=16, n_heads=2, mixer="dla_tau0")
    with torch.no_grad():
        dla0(idx)
    assert dla0.blocks[0].mixer.last_opened.all()               # tau = 0: every token opens
    assert MixerLM(48, T, mixer="linear").state_stats() == {}   # nothing run yet
    with torch.no_grad():
        linear = MixerLM(48, T, d_model=16, n_heads=2, mixer="linear")
        linear(idx)
    assert linear.state_stats() == {"states/mean": 1.0, "states/max": 1.0}


def test_an_explicit_capacity_binds_every_bounded_mixer():
    idx = torch.randint(40, (2, 40))
    for mixer in ("dla", "fifo", "fixed_chunk"):
        model = MixerLM(40, 40, d_model=16, n_heads=2, mixer=mixer, capacity=3, tau=0.0)
        with torch.no_grad():
            model(idx)
        assert model.state_stats()["states/max"] == 3, mixer


def test_bad_input_raises_one_line():
    cases = [
        (lambda: MultiStateMixer(16, 3), "d_model"),
        (lambda: MultiStateMixer(16, 2, "lru"), "policy"),
        (lambda: MultiStateMixer(16, 2, "dla", capacity=0), "capacity"),
        (lambda: MultiStateMixer(16, 2, "dla", tau=-1.0), "tau"),
        (lambda: MultiStateMixer(16, 2, "dla", score="kl"), "score"),
        (lambda: MixerLM(16, 8, mixer="mamba"), "mixer"),
        (lambda: MixerLM(16, 8, d_model=16, n_heads=2)(torch.zeros(1, 9, dtype=torch.long)),
         "idx"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError) as error:
            call()
        assert "\n" not in str(error.value) and str(error.value).startswith(name)
