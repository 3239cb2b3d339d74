"""A small hand-built batch shared by the learner tests."""

from __future__ import annotations

import torch


def source(n: int, obs_dim: int, act_dim: int, offset: float, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"observations": torch.randn(n, obs_dim, generator=g) + offset,
            "actions": torch.rand(n, act_dim, generator=g) * 2 - 1,
            "rewards": torch.zeros(n),
            "next_observations": torch.randn(n, obs_dim, generator=g) + offset,
            "terminals": torch.zeros(n)}


def batch(n: int = 8, obs_dim: int = 3, act_dim: int = 2) -> dict:
    """Good states near +2, bad near -2, unlabeled a mix; ``is_expert`` marks the good half."""
    good, bad = source(n, obs_dim, act_dim, 2.0, 0), source(n, obs_dim, act_dim, -2.0, 1)
    unlabeled = {k: torch.cat([good[k][: n // 2], bad[k][: n // 2]]) for k in good}
    unlabeled["is_expert"] = torch.cat([torch.ones(n // 2), torch.zeros(n // 2)])
    return {"good": good, "bad": bad, "unlabeled": unlabeled,
            "initial": unlabeled["observations"][:2]}


def params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def same(a: list[torch.Tensor], b: list[torch.Tensor]) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))
