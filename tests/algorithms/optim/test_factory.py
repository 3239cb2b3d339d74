"""make_optimizer for every name: trains a tiny model; zero gradients; p.grad untouched."""

import math

import pytest
import torch
from torch import nn

from raystudy.algorithms.optim import OPTIMIZER_NAMES, Muon, make_optimizer, optimizer_step

LRS = {
    "adamw": 1e-2,
    "sgd": 5e-2,
    "muon_adam": 2e-3,
    "muonmax": 1e-3,
    "momo": 1.0,
    "momo_adam": 1e-2,
    "muonmax_momo": 1e-2,
    "muon_adam_momo": 2e-3,
}


def tiny_model(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Embedding(10, 16),
        nn.Flatten(),
        nn.Linear(64, 32),
        nn.ReLU(),
        nn.LayerNorm(32),
        nn.Linear(32, 32),
        nn.ReLU(),
        nn.Linear(32, 5),
    )


def batch():
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, 10, (64, 4), generator=gen)
    return tokens, tokens.sum(dim=1) % 5


@pytest.mark.parametrize("name", OPTIMIZER_NAMES)
def test_every_optimizer_trains(name):
    model = tiny_model()
    opt = make_optimizer(name, model, lr=LRS[name], weight_decay=0.0)
    tokens, labels = batch()
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(tokens), labels)
        loss.backward()
        optimizer_step(opt, loss)
        losses.append(float(loss.detach()))
    assert math.isfinite(losses[-1]) and losses[-1] < 0.8 * losses[0], losses[::5]


def all_optimizers(model):
    opts = [make_optimizer(n, model, lr=1e-2, weight_decay=0.1) for n in OPTIMIZER_NAMES]
    matrices = [p for p in model.parameters() if p.ndim == 2]
    return opts + [Muon(matrices, lr=1e-2)]


def test_zero_gradient_gives_no_nan():
    model = tiny_model()
    for opt in all_optimizers(model):
        for _ in range(2):
            for p in model.parameters():
                p.grad = torch.zeros_like(p)
            optimizer_step(opt, 1.0)
            for p in model.parameters():
                assert torch.isfinite(p).all(), type(opt).__name__


def test_gradients_not_modified():
    model = tiny_model()
    tokens, labels = batch()
    for opt in all_optimizers(model):
        for _ in range(2):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(tokens), labels)
            loss.backward()
            grads = [p.grad.clone() for p in model.parameters()]
            optimizer_step(opt, loss)
            for p, g in zip(model.parameters(), grads, strict=True):
                assert torch.equal(p.grad, g), type(opt).__name__


def test_uses_loss_flags():
    model = tiny_model()
    flags = {n: getattr(make_optimizer(n, model, lr=0.1), "uses_loss", False) for n in LRS}
    assert {n for n, f in flags.items() if f} == {
        "momo",
        "momo_adam",
        "muonmax_momo",
        "muon_adam_momo",
    }


def test_unknown_name_and_invalid_lr():
    model = tiny_model()
    with pytest.raises(ValueError, match="valid: adamw, sgd, muon_adam"):
        make_optimizer("lamb", model, lr=0.1)
    for bad in (0.0, -1e-3, float("nan")):
        with pytest.raises(ValueError, match="lr must be a positive finite number"):
            make_optimizer("muonmax", model, lr=bad)


def test_is_matrix_option_reaches_the_split():
    model = tiny_model()
    opt = make_optimizer("muonmax", model, lr=0.1, is_matrix=lambda n, p, m: False)
    assert [g["matrix"] for g in opt.param_groups] == [False]
    with pytest.raises(ValueError, match="is_matrix applies"):
        make_optimizer("adamw", model, lr=0.1, is_matrix=lambda n, p, m: False)
