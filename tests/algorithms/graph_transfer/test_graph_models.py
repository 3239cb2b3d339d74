"""Encoders, heads and the random-walk encoding against independent computations."""

from __future__ import annotations

import pytest
import torch
from graph_helpers import one_thread  # noqa: F401  (autouse)

from raystudy.algorithms.graph_transfer import models
from raystudy.algorithms.graph_transfer.models import (
    EncoderConfig,
    build_model,
    no_mha_fastpath,
    random_walk_pe,
)

RING = torch.tensor([[0, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 0, 0, 3],
                     [1, 2, 3, 4, 5, 0, 0, 1, 2, 3, 4, 5, 3, 0]])


def test_random_walk_pe_is_the_diagonal_of_walk_powers():
    a = torch.zeros(6, 6)
    a[RING[0], RING[1]] = 1
    walk = a / a.sum(1, keepdim=True)                    # D^-1 A
    expected = torch.stack([torch.linalg.matrix_power(walk, k).diagonal()
                            for k in range(1, 5)], 1)
    torch.testing.assert_close(random_walk_pe(RING, 6, 4), expected)
    assert random_walk_pe(RING, 6, 4)[:, 0].abs().max() == 0   # no self loops: P_v1 = 0


def test_gcn_layers_are_not_cached_across_graphs():
    torch.manual_seed(0)
    model = build_model("gcn", 3, 6, EncoderConfig(hidden=4, dropout=0.0)).eval()
    x = torch.randn(6, 3)
    other = RING[:, :6]                                    # a different graph
    model(x, RING)
    after_ring = model(x, other)
    fresh = build_model("gcn", 3, 6, EncoderConfig(hidden=4, dropout=0.0)).eval()
    fresh.load_state_dict(model.state_dict())
    torch.testing.assert_close(after_ring, fresh(x, other))
    assert not torch.allclose(after_ring, model(x, RING))


@pytest.mark.parametrize("backbone", ["gcn", "sage", "gps"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_encoders_and_heads_shapes(backbone, dtype):
    torch.manual_seed(0)
    config = EncoderConfig(hidden=8, heads=2, pe_steps=3)
    model = build_model(backbone, 5, 6, config, num_classes=3, link=True).to(dtype)
    pe = random_walk_pe(RING, 6, 3).to(dtype)
    z = model(torch.randn(6, 5, dtype=dtype), RING, pe)
    assert z.shape == (6, 8) and z.dtype == dtype
    assert model.nc_head(z).shape == (6, 3)
    pairs = torch.tensor([[0, 2], [3, 5]])
    logits = model.lp_head(z, pairs)
    h = model.lp_head
    manual = h.lin2(torch.relu(h.lin1(torch.cat([z[[0, 2]], z[[3, 5]]], 1)))).squeeze(-1)
    torch.testing.assert_close(logits, manual)


def test_gps_switches_to_performer_on_large_graphs(monkeypatch):
    monkeypatch.setattr(models, "DENSE_ATTENTION_MAX_NODES", 5)
    model = build_model("gps", 5, 6, EncoderConfig(hidden=8, pe_steps=3))
    assert model.encoder.attention == "performer"
    z = model(torch.randn(6, 5), RING, random_walk_pe(RING, 6, 3))
    assert z.shape == (6, 8)
    small = build_model("gps", 5, 4, EncoderConfig(hidden=8, pe_steps=3))
    assert small.encoder.attention == "multihead"


def test_mha_fastpath_off_inside_and_restored_with_the_same_output():
    torch.manual_seed(0)
    model = build_model("gps", 5, 6, EncoderConfig(hidden=8, pe_steps=3)).eval()
    x, pe = torch.randn(6, 5), random_walk_pe(RING, 6, 3)
    with torch.no_grad():
        fused = model(x, RING, pe)
        assert torch.backends.mha.get_fastpath_enabled()
        with no_mha_fastpath():
            assert not torch.backends.mha.get_fastpath_enabled()
            plain = model(x, RING, pe)
    assert torch.backends.mha.get_fastpath_enabled()
    torch.testing.assert_close(fused, plain, atol=1e-5, rtol=1e-5)


def test_gps_without_pe_input_is_an_error():
    model = build_model("gps", 5, 6, EncoderConfig(hidden=8, pe_steps=3))
    with pytest.raises(ValueError, match="got no pe"):
        model(torch.randn(6, 5), RING)
    with pytest.raises(ValueError, match="not divisible by heads=3"):
        build_model("gps", 5, 6, EncoderConfig(hidden=8, heads=3))
