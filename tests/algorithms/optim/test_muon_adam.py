"""MuonAdam and MuonAdam-Momo against the formulas computed by hand on a 2-layer net."""

import pytest
import torch
from optim_helpers import hand_steps, run, two_layer_net

from raystudy.algorithms.optim import MuonAdam, MuonAdamMomo
from raystudy.algorithms.optim.hybrid import as_matrix_groups


@pytest.fixture
def net():
    return two_layer_net()


def test_muon_adam_matches_hand_computation(net):
    expected = hand_steps(net, steps=3, hybrid_norm=False, stale=True)
    got = run(net, MuonAdam, steps=3)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a.detach(), b, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("stale", [True, False])
def test_muon_adam_momo_matches_hand_computation(net, stale):
    expected = hand_steps(net, steps=3, hybrid_norm=False, stale=stale, momo=True, f_star=0.1)
    got = run(net, MuonAdamMomo, steps=3, stale_nuclear_norm=stale, f_star=0.1)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a.detach(), b, atol=1e-10, rtol=1e-10)


def test_plain_parameter_list_is_split_by_ndim(net):
    groups = as_matrix_groups(net.parameters())
    assert [g["matrix"] for g in groups] == [True, False]
    assert [len(g["params"]) for g in groups] == [2, 2]
    with pytest.raises(ValueError, match="ndim < 2"):
        as_matrix_groups([{"params": [net[0].bias], "matrix": True}])


def test_state_dict_round_trip(net):
    from optim_helpers import loss_and_grads

    opt = MuonAdamMomo(net.parameters(), lr=0.01)
    opt.step(loss=loss_and_grads(net, 0))
    clone = MuonAdamMomo(net.parameters(), lr=0.01)
    clone.load_state_dict(opt.state_dict())
    assert clone.state["momo"]["F_bar"] == opt.state["momo"]["F_bar"]
    assert torch.equal(clone.state[net[0].weight]["M"], opt.state[net[0].weight]["M"])
