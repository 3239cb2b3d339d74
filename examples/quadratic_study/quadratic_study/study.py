"""SGD vs Adam on an ill-conditioned least-squares problem, across learning rates.

    pip install ./examples/quadratic_study   # registers the study `quadratic`
    raystudy sweep quadratic                 # profile quick, space default
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import torch
from matplotlib.figure import Figure

from raystudy import (
    Analysis,
    Metric,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    Range,
    RunResults,
    Study,
    Table,
    TrialContext,
    claims,
)
from raystudy.algorithms import stats


@dataclass(frozen=True)
class QuadraticConfig:
    optimizer: Literal["sgd", "adam"] = "sgd"
    """The torch optimizer."""
    lr: PositiveFloat = 0.01
    """Learning rate."""
    steps: PositiveInt = 200
    """Optimizer steps."""
    eval_every: NonNegativeInt = 50
    """Steps between reports (and the last step)."""
    checkpoint_every: NonNegativeInt = 1
    """Reports between checkpoints (0: only the last)."""
    condition: Annotated[float, Range(ge=1)] = 100.0
    """Ratio of the largest to the smallest column scale of A."""
    seed: int = 0
    """Seed of A, the solution and the start."""


def train_loop(config: QuadraticConfig, ctx: TrialContext) -> None:
    """Minimise mean((A x - b)^2) from x = 0, reporting the loss on the cadence's steps."""
    gen = torch.Generator().manual_seed(config.seed)
    A = torch.randn(100, 10, generator=gen) * torch.logspace(0, -math.log10(config.condition), 10)
    b = A @ torch.randn(10, generator=gen)
    x = torch.zeros(10, requires_grad=True)
    opt = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam}[config.optimizer]([x], lr=config.lr)
    cadence = ctx.cadence(config.steps, config.eval_every, config.checkpoint_every)
    state = ctx.load_checkpoint()
    if state is not None:
        x.data.copy_(state["x"])
        opt.load_state_dict(state["optimizer"])
    for step in cadence:
        loss = ((A @ x - b) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if cadence.evaluates(step):
            checkpoint = ({"x": x.detach().clone(), "optimizer": opt.state_dict()}
                          if cadence.checkpoints(step) else None)
            ctx.report({"eval/loss": loss.item(), "train/step": step}, checkpoint, step=step)


def _tuned(rows: list[tuple[str, float, int, float]], name: str) -> claims.Precondition:
    """Each arm tuned: its best learning rate lies inside the swept grid, not at an edge."""
    grid = sorted({r[1] for r in rows if r[0] == name})
    best_lr = min((r for r in rows if r[0] == name), key=lambda r: r[3], default=None)
    inside = best_lr is not None and len(grid) >= 3 and grid[0] < best_lr[1] < grid[-1]
    return claims.Precondition(
        f"{name} is tuned: its best learning rate lies inside the swept grid", inside,
        f"best lr {best_lr[1]:g} of {', '.join(f'{g:g}' for g in grid)}" if best_lr
        else f"no {name} trial finished")


def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """Final loss per optimizer and learning rate (table, figure), and the claim that Adam
    ends lower than SGD, each at its best learning rate, paired over seeds."""
    rows = sorted((t.config["optimizer"], t.config["lr"], t.config["seed"], t.metric("eval/loss"))
                  for t in results.trials if t.history)
    fig = Figure(figsize=(5, 3.5))
    ax = fig.subplots()
    for name in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == name and r[2] == rows[0][2]]  # one seed's curve
        ax.loglog([r[1] for r in mine], [r[3] for r in mine], "o-", label=name)
    ax.set(xlabel="learning rate", ylabel="final loss")
    ax.legend()
    fig.savefig(figures_dir / "loss_vs_lr.png", dpi=120, bbox_inches="tight")
    best = {(name, seed): min(r[3] for r in rows if (r[0], r[2]) == (name, seed))
            for name, _, seed, _ in rows}
    seeds = sorted({s for (_, s) in best if ("sgd", s) in best and ("adam", s) in best})
    claim = claims.paired_claim(
        "Adam ends lower than SGD, each at its best learning rate", "best loss: SGD - Adam",
        stats.paired_comparison([best["sgd", s] for s in seeds], [best["adam", s] for s in seeds]),
        "greater", scope="a generated 100 x 10 least-squares problem, CPU",
        preconditions=[_tuned(rows, name) for name in ("sgd", "adam")])
    return Analysis(tables=[Table("Final loss", ["optimizer", "lr", "seed", "eval/loss"],
                                  [list(r) for r in rows])],
                    figures=[("Final loss vs learning rate", figures_dir / "loss_vs_lr.png")],
                    claims=[claim], summary={"best_loss": {n: min(r[3] for r in rows if r[0] == n)
                                                           for n, _, _, _ in rows}})


STUDY = Study(name="quadratic", description=__doc__.splitlines()[0],
              config_cls=QuadraticConfig, train_loop=train_loop,
              metrics=(Metric("eval/loss", "min", "mean squared residual at the end"),),
              analyze=analyze)
