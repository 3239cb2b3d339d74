"""Each intervention's effect on a hand-built case."""

from __future__ import annotations

import pytest
import torch

from raystudy.algorithms.plasticity import (
    L2,
    MLP,
    Compose,
    ConvNet,
    EffectiveRankAscent,
    EffectiveRankPenalty,
    FullReset,
    L2Init,
    ReDo,
    ShrinkPerturb,
    effective_rank,
    mean_effective_rank,
    redo_reset,
)
from raystudy.algorithms.plasticity.ranks import dormant_mask


def small_mlp(seed=0, **kwargs) -> MLP:
    torch.manual_seed(seed)
    return MLP(4, (6, 5), 3, **kwargs)


def adam_step(model, x, y):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return opt


def flat(model):
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def test_l2_and_l2_init_penalties_and_gradients():
    model = small_mlp()
    theta = flat(model)
    penalty = L2(0.3).penalty(model, [])
    assert penalty.item() == pytest.approx(0.15 * float(theta @ theta), rel=1e-6)
    penalty.backward()
    grads = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
    assert torch.allclose(grads, 0.3 * theta, atol=1e-7)  # coupled weight decay

    piece = L2Init(2.0)
    piece.task_start(model, None, 0)
    assert piece.penalty(model, []).item() == 0.0
    with torch.no_grad():
        model.head.bias += torch.tensor([1.0, 0.0, -2.0])  # ||delta||^2 = 5
    assert piece.penalty(model, []).item() == pytest.approx(5.0)
    piece.task_start(model, None, 1)  # theta_0 stays the first task's
    assert piece.penalty(model, []).item() == pytest.approx(5.0)
    restored = L2Init(2.0)
    restored.load_state_dict(piece.state_dict())
    assert restored.penalty(model, []).item() == pytest.approx(5.0)


def test_shrink_perturb_scales_exactly_and_adds_noise_of_scale_sigma():
    model = small_mlp()
    before = flat(model)
    piece = ShrinkPerturb(shrink=0.25, sigma=0.0)
    piece.task_start(model, None, 0)
    piece.after_step(model, None, torch.zeros(1, 4))
    assert torch.equal(flat(model), before * 0.75)

    big = MLP(50, (400,), 10)
    before = flat(big)
    piece = ShrinkPerturb(shrink=0.0, sigma=0.1, seed=3)
    piece.task_start(big, None, 0)
    piece.after_step(big, None, torch.zeros(1, 50))
    noise = flat(big) - before
    assert abs(float(noise.mean())) < 2e-3 and float(noise.std()) == pytest.approx(0.1, rel=0.02)
    again = MLP(50, (400,), 10)  # from the same start, seed and task: the same noise
    with torch.no_grad():
        for p, q in zip(again.parameters(), before.split([p.numel() for p in big.parameters()]),
                        strict=True):
            p.copy_(q.view_as(p))
    piece.task_start(again, None, 0)
    piece.after_step(again, None, torch.zeros(1, 50))
    assert torch.equal(flat(again), flat(big))


def test_redo_reinitialises_exactly_the_dormant_units():
    model = small_mlp(seed=1)
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, 3, (32,), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model.layers[0].bias[[1, 4]] = -100.0  # units 1 and 4 of layer 1 never fire
        model.layers[1].bias[:] = 5.0          # layer 2 fires everywhere ...
        model.layers[1].weight[2] = 0.0        # ... except unit 2, silent
        model.layers[1].bias[2] = -1.0         # on every input
    opt = adam_step(model, x, y)
    w0, b0 = model.layers[0].weight.clone(), model.layers[0].bias.clone()
    w1, w2 = model.layers[1].weight.clone(), model.head.weight.clone()
    moments = opt.state[model.layers[0].weight]["exp_avg_sq"].clone()
    assert moments[[0, 2]].abs().sum() > 0

    _, features = model.forward_features(x)
    counts = redo_reset(model, features, tau=0.0, optimizer=opt,
                        generator=torch.Generator().manual_seed(5))
    assert counts == [2, 1]
    reset, kept = [1, 4], [0, 2, 3, 5]
    assert torch.equal(model.layers[0].weight[kept], w0[kept])
    assert torch.equal(model.layers[0].bias[kept], b0[kept])
    assert not torch.equal(model.layers[0].weight[reset], w0[reset])
    bound = 1 / 4 ** 0.5
    assert model.layers[0].weight[reset].abs().max() <= bound
    assert model.layers[0].bias[reset].abs().max() <= bound
    # Layer 1's reset units: zero outgoing weights into layer 2's kept units; layer 2's
    # unit 2 is itself reset, so its whole incoming row is fresh.
    live = [0, 1, 3, 4]
    assert torch.equal(model.layers[1].weight[live][:, reset], torch.zeros(4, 2))
    assert torch.equal(model.layers[1].weight[live][:, kept], w1[live][:, kept])
    assert model.layers[1].weight[2].abs().min() > 0 and w1[2].abs().max() < 0.05
    assert torch.equal(model.head.weight[:, 2], torch.zeros(3))
    assert torch.equal(model.head.weight[:, [0, 1, 3, 4]], w2[:, [0, 1, 3, 4]])
    state = opt.state[model.layers[0].weight]["exp_avg_sq"]
    assert torch.equal(state[reset], torch.zeros(2, 4))
    assert torch.equal(state[kept], moments[kept])
    _, after = model.forward_features(x)
    assert (after[0][:, reset].abs().sum(0) > 0).all()  # the reset units fire again


def test_redo_piece_runs_every_k_steps_with_layernorm_entries_reset():
    model = small_mlp(seed=2, layernorm=True)
    with torch.no_grad():
        model.norms[0].bias[3] = -50.0  # unit 3 dead after LayerNorm
        model.norms[0].weight[3] = 0.5
    piece = ReDo(tau=0.0, every=2)
    piece.task_start(model, None, 0)
    x = torch.randn(16, 4)
    piece.after_step(model, None, x)
    assert piece.reset_units == 0 and model.norms[0].bias[3].item() == -50.0
    piece.after_step(model, None, x)
    assert piece.reset_units >= 1
    assert model.norms[0].bias[3].item() == 0.0 and model.norms[0].weight[3].item() == 1.0


def test_full_reset_gives_fresh_deterministic_parameters_and_clears_the_optimizer():
    model = small_mlp()
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    opt = adam_step(model, x, y)
    trained = flat(model)
    piece = FullReset(seed=7)
    piece.task_start(model, opt, 0)
    assert torch.equal(flat(model), trained)  # the first task starts from the init anyway
    piece.task_start(model, opt, 3)
    assert not opt.state and not torch.allclose(flat(model), trained)
    other = small_mlp(seed=99)
    FullReset(seed=7).task_start(other, torch.optim.SGD(other.parameters(), 0.1), 3)
    assert torch.equal(flat(other), flat(model))


def test_effective_rank_ascent_steps_on_the_buffered_minibatches_only():
    model = small_mlp(seed=3)
    batches = [torch.randn(5, 4, generator=torch.Generator().manual_seed(i)) for i in range(3)]
    piece = EffectiveRankAscent(lr=0.05, every=3)
    piece.task_start(model, None, 0)
    start = flat(model)
    piece.after_step(model, None, batches[0])
    piece.after_step(model, None, batches[1])
    assert torch.equal(flat(model), start)  # nothing before the third minibatch

    reference = small_mlp(seed=3)  # the step by hand: theta + lr * grad mean erank(cat)
    _, features = reference.forward_features(torch.cat(batches))
    grads = torch.autograd.grad(mean_effective_rank(features), list(reference.parameters()),
                                allow_unused=True)
    expected = torch.cat([(p.detach() + 0.05 * (g if g is not None else 0)).reshape(-1)
                          for p, g in zip(reference.parameters(), grads, strict=True)])
    piece.after_step(model, None, batches[2])
    assert torch.allclose(flat(model), expected, atol=1e-7)
    assert piece.buffer == []
    with torch.no_grad():
        before = mean_effective_rank(reference.forward_features(torch.cat(batches))[1]).item()
        after = mean_effective_rank(model.forward_features(torch.cat(batches))[1]).item()
    assert after > before  # a small ascent step raises the effective rank


def test_effective_rank_penalty_and_compose():
    model = small_mlp()
    _, features = model.forward_features(torch.randn(10, 4))
    penalty = EffectiveRankPenalty(0.5).penalty(model, features)
    expected = -0.5 * (effective_rank(features[0]) + effective_rank(features[1])) / 2
    assert penalty.item() == pytest.approx(expected.item())
    both = Compose([L2(0.1), EffectiveRankPenalty(0.5)])
    assert both.penalty(model, features).item() == pytest.approx(
        (L2(0.1).penalty(model, features) + expected).item())
    with pytest.raises(ValueError):
        ShrinkPerturb(shrink=1.0, sigma=0.0)


def test_layernorm_mlp_is_invariant_to_scaling_the_first_layer_and_convnet_features():
    model = small_mlp(layernorm=True)
    x = torch.randn(7, 4)
    out = model(x)
    with torch.no_grad():
        model.layers[0].weight *= 10
        model.layers[0].bias *= 10
    assert torch.allclose(model(x), out, atol=1e-4)
    net = ConvNet(3, 10)
    logits, features = net.forward_features(torch.randn(2, 3, 32, 32))
    assert logits.shape == (2, 10) and [f.shape for f in features] == [(2, 128), (2, 128)]
    assert len(net.unit_pairs()) == 2


def test_redo_scores_a_batch_of_its_own_not_a_one_sample_minibatch():
    """On one sample about half of a healthy ReLU layer is silent, so scoring the training
    minibatch (batch 1) re-initialises ~half the units; on a 256-input scoring batch drawn
    from the task's data only the few units (nearly) silent on all of them are."""
    torch.manual_seed(0)
    model = MLP(8, (64, 64), 3)
    data = torch.randn(1000, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model.layers[0].bias[[5, 9]] = -100.0  # two dead units in layer 1
    x, y = data[:1], torch.tensor([0])

    def one_step(piece):
        net = MLP(8, (64, 64), 3)
        net.load_state_dict(model.state_dict())
        opt = torch.optim.SGD(net.parameters(), lr=0.0)  # the step itself changes nothing
        piece.task_start(net, opt, 0)
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
        piece.after_step(net, opt, x)
        return piece.reset_units

    minibatch = one_step(ReDo(tau=0.025, every=1))  # no scoring data: the old behaviour
    assert 0.3 * 128 < minibatch < 0.7 * 128
    piece = ReDo(tau=0.025, every=1, batch=256)
    piece.scoring_data(data)
    reset = one_step(piece)
    batch = piece.scoring_batch(x)  # the batch of step 1 again: seeded by (seed, task, step)
    assert len(batch) == 256 and len(torch.unique(batch, dim=0)) == 256  # no repeats
    with torch.no_grad():
        _, features = model.forward_features(batch)
    masks = [dormant_mask(h, 0.025) for h in features]
    assert masks[0][[5, 9]].all()
    assert reset == sum(int(m.sum()) for m in masks) < 0.1 * 128  # the dead two and a few
    again = ReDo(tau=0.025, every=1, batch=256)
    again.scoring_data(data)
    again.task_start(model, None, 0)
    piece.steps = again.steps = 7  # same seed, task and step: the same batch (resumable)
    assert torch.equal(piece.scoring_batch(x), again.scoring_batch(x))
    with pytest.raises(ValueError, match="batch=0 >= 1"):
        ReDo(tau=0.025, batch=0)
