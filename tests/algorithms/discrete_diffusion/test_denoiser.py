"""The Denoiser: bidirectional, conditioned on the noise level, strict about its input."""

from __future__ import annotations

import pytest
import torch

from raystudy.algorithms.discrete_diffusion import CosineAlpha, ancestral_sample
from raystudy.algorithms.models import GPT, Denoiser

V, L = 11, 8


def model(**kwargs) -> Denoiser:
    torch.manual_seed(0)
    return Denoiser(V, L, d_model=32, n_layers=2, n_heads=4, **kwargs).eval()


def test_logits_shape_and_gradients():
    net = model()
    z = torch.randint(V, (3, L), generator=torch.Generator().manual_seed(1))
    logits = net(z, torch.tensor([0.1, 0.5, 0.9]))
    assert logits.shape == (3, L, V)
    logits.logsumexp(-1).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in net.parameters())


def test_changing_a_later_token_changes_earlier_logits():
    net = model()
    z = torch.randint(V, (1, L), generator=torch.Generator().manual_seed(2))
    edited = z.clone()
    edited[0, -1] = (z[0, -1] + 1) % V
    t = torch.tensor([0.4])
    before, after = net(z, t), net(edited, t)
    assert (before[0, 0] - after[0, 0]).abs().max() > 1e-5             # non-causal
    # the GPT reference is causal: the same edit leaves its first position alone
    torch.manual_seed(0)
    gpt = GPT(V, L, d_model=32).eval()
    assert torch.equal(gpt(z)[0, :-1], gpt(edited)[0, :-1])


def test_output_depends_on_the_noise_level_through_the_schedule():
    net = model()
    z = torch.randint(V, (2, L), generator=torch.Generator().manual_seed(3))
    low, high = net(z, torch.tensor([0.05, 0.05])), net(z, torch.tensor([0.95, 0.95]))
    assert (low - high).abs().max() > 1e-5
    # sigma_t = -log alpha_t of the schedule given
    cosine = model(schedule=CosineAlpha())
    t = torch.tensor([0.3])
    assert float(cosine.sigma(t)) == pytest.approx(-torch.log(CosineAlpha().alpha(t)).item())


def test_ids_outside_the_vocabulary_raise_one_line():
    net = model()
    for bad in (torch.full((1, L), V), torch.full((1, L), -1)):
        with pytest.raises(ValueError, match=rf"outside \[0, {V}\)") as info:
            net(bad, torch.tensor([0.5]))
        assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match="seq_len"):
        net(torch.zeros(1, L + 1, dtype=torch.long), torch.tensor([0.5]))
    with pytest.raises(ValueError, match="t must have shape"):
        net(torch.zeros(2, L, dtype=torch.long), torch.tensor([0.5]))


def test_ancestral_sample_runs_a_denoiser_end_to_end():
    net = model()
    out = ancestral_sample(net, 6, L, V, 4, generator=torch.Generator().manual_seed(4))
    assert out.shape == (6, L) and out.min() >= 0 and out.max() < V
