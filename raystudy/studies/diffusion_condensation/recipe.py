"""GADC: geometry-aware real-subset selection by one-sided partial OT for diffusion training.

Paper: Cui et al., "Geometry-Aware Dataset Condensation for Diffusion Model Training"
(arXiv 2606.05883, ICML 2026; code 2018cx/GADC). Claim of the abstract tested here: a real
subset chosen by one-sided partial OT (capacity kappa > 1 leaves low-density mass
unmatched) plus feature-statistics and semantic (classifier CE) terms, by greedy + single
swaps, trains a diffusion model closer to the data than random, k-center, herding,
D2C-style (a reconstruction) and balanced-OT subsets.

Launch::

    raystudy sweep diffusion_condensation --profile quick            # 2 CPUs, ~3 minutes
    raystudy sweep diffusion_condensation --profile quick --space paper_ratio  # 5 of 500
    raystudy sweep diffusion_condensation --profile digits           # scikit-learn's digits
    raystudy run diffusion_condensation --in-process --set method=gadc --set per_class=5

A trial takes its pool (``data.py``: the class-conditional 8-d Gaussian mixture with a 5 %
wide tail per class; scikit-learn's digits; CIFAR pickles; ``.npy`` features), selects
``per_class`` points per class in the pool's selection space (classes fanned out with
``ctx.map_chunks``), reports the raw subset's metrics once (``subset/*``, ``select/*``),
then trains a small class-conditional DDPM (MLP, DiT's linear schedule) on the subset and
reports the metrics of its DDIM samples on the cadence: in the pool's metric space
(``eval/*``: on the mixture the data space, which is also the selection space) and in the
pool's probe, a fixed random-feature space no selection runs in (``eval/*_rf``, the
claims' reading). Every method of a seed shares the data, the diffusion seed and the step
count. ``select/shipped_row_err`` is the row error of the authors' 20-iteration solver on
the trial's own subset (``select/row_err``: the converged solver's), and
``select/eps_over_median_c`` the temperature over the median cost of that subset.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import torch

from raystudy import (
    Metric,
    Study,
    TrialContext,
)
from raystudy.algorithms.condensation import (
    Denoiser,
    GaussianDiffusion,
    SelectionObjective,
    class_accuracy,
    frechet_distance,
    median_bandwidth,
    mmd2_unbiased,
    precision_recall_knn,
    select_class,
    sliced_wasserstein,
    tail_recall,
)
from raystudy.algorithms.condensation.select import sqdist
from raystudy.studies.diffusion_condensation.analysis import analyze
from raystudy.studies.diffusion_condensation.config import CondensationConfig
from raystudy.studies.diffusion_condensation.data import Pool, check_source, generate, pool_of


# ----------------------------------------------------------------------------- selection
def select_one(args: tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]
               ) -> tuple[list[int], dict[str, float]]:
    """One class's subset (local indices) and its greedy/swap trace; ``args`` = (X, ce,
    D2C score, options)."""
    X, ce, score, o = args
    return select_class(X, o["per_class"], o["method"], np.random.default_rng(
        [o["seed"], o["klass"]]), scores=score, ce=ce, eps_rel=o["eps_rel"], kappa=o["kappa"],
        ce_weight=o["ce_weight"], refine_iters=o["refine_iters"], solver=o["solver"],
        n_iter=o["n_iter"])


def select_chunk(items: list[Any]) -> list[tuple[list[int], dict[str, float]]]:
    """``select_one`` over one ``ctx.map_chunks`` chunk of classes (on a Ray worker)."""
    return [select_one(a) for a in items]


def subset_objective(cfg: CondensationConfig, X: np.ndarray, ce: np.ndarray,
                     local: np.ndarray) -> dict[str, float]:
    """J and its terms of one class's subset under the converged gadc objective, the row
    error of the shipped solver (``n_iter`` iterations, the authors' 20) on the same subset
    (``shipped_row_err``) and the temperature over the subset's median cost, eps /
    median(C) (``eps_over_median_c``: the ratio that decides how far those iterations are
    from converged)."""
    D = sqdist(X, X)
    sets, scaled_ce = np.asarray(local)[None], ce * float(np.median(D))
    obj = SelectionObjective(kappa=cfg.kappa, eps_rel=cfg.eps_rel, ce_weight=cfg.ce_scale,
                             n_iter=cfg.n_iter)
    out = {k: float(v[0]) for k, v in obj.terms(X, D, sets, scaled_ce).items()}
    shipped = dataclasses.replace(obj, solver="shipped").terms(X, D, sets, scaled_ce)
    out["shipped_row_err"] = float(shipped["row_err"][0])
    out["eps_over_median_c"] = cfg.eps_rel * float(np.median(D)) / float(np.median(D[sets[0]]))
    return out


# ----------------------------------------------------------------------------- metrics
PROBE_POINTS = 1000
"""Points per side of the probe-space metrics (samples and held-out data, each a fixed
draw): half the metric space's 2,000, a quarter of its pairwise cost per evaluation."""


def metrics(pool: Pool, x: np.ndarray, y: np.ndarray, h: float,
            h_probe: float) -> dict[str, float]:
    """Fidelity/coverage of points ``x`` (labels ``y``, data space) against the held-out
    data, in the pool's metric space and (``*_rf``) in its random-feature probe space
    (bandwidths ``h`` and ``h_probe``)."""
    rng = np.random.default_rng(0)
    rows = rng.choice(len(pool.e_test), min(len(pool.e_test), 2000), replace=False)
    ref, e = pool.e_test[rows], pool.embed(x)
    p, r = precision_recall_knn(ref, e, 3)
    drawn = rng.choice(len(x), min(len(x), PROBE_POINTS), replace=False)
    probe_ref, probe_x = pool.probe(pool.x_test[rows[:PROBE_POINTS]]), pool.probe(x[drawn])
    p_rf, r_rf = precision_recall_knn(probe_ref, probe_x, 3)
    return {"mmd2": mmd2_unbiased(e, ref, h), "fd": frechet_distance(e, ref),
            "swd": sliced_wasserstein(e, ref), "precision": p, "recall": r,
            "tail_recall": tail_recall(pool.e_test[pool.tail_test], e, 3),
            "class_acc": class_accuracy(pool.log_probs(x), y),
            "mmd2_rf": mmd2_unbiased(probe_x, probe_ref, h_probe),
            "fd_rf": frechet_distance(probe_x, probe_ref), "precision_rf": p_rf,
            "recall_rf": r_rf}


# ----------------------------------------------------------------------------- loop
def selection_items(config: CondensationConfig, pool: Pool
                    ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]]:
    """``select_one``'s arguments, one per class: its points in the selection space, its CE
    in units of its median squared distance, its D2C-style scores and the options."""
    options = {"per_class": config.per_class, "method": config.method, "seed": config.seed,
               "eps_rel": config.eps_rel, "kappa": config.kappa, "ce_weight": config.ce_scale,
               "refine_iters": config.refine_iters, "solver": config.ot_solver,
               "n_iter": config.n_iter}
    items = []
    for k in range(pool.classes):
        idx = np.flatnonzero(pool.y_train == k)
        distances = sqdist(pool.select_x[idx], pool.select_x[idx])
        # D2C-style difficulty (a reconstruction): the point's rarity in its class
        items.append((pool.select_x[idx], pool.ce_train[idx] * float(np.median(distances)),
                      pool.rarity_train[idx], {**options, "klass": k}))
    return items


def choose(config: CondensationConfig, pool: Pool, ctx: TrialContext
           ) -> tuple[np.ndarray, list[dict[str, float]]]:
    """The chosen pool indices, class by class (``full``: all of them), and the non-empty
    greedy/swap traces of the classes (fanned out to Ray workers)."""
    if config.method == "full":
        return np.arange(len(pool.y_train)), []
    picked = ctx.map_chunks(select_chunk, selection_items(config, pool))
    chosen = np.concatenate([np.flatnonzero(pool.y_train == k)[local]
                             for k, (local, _) in enumerate(picked)])
    return chosen, [trace for _, trace in picked if trace]


def objective_report(config: CondensationConfig, pool: Pool, chosen: np.ndarray,
                     traces: list[dict[str, float]]) -> dict[str, float]:
    """``select/*``: the converged gadc objective's terms on each class's subset, then the
    method's own greedy/swap trace, each averaged over the classes."""
    terms = []
    for k in range(pool.classes):
        in_class = pool.y_train == k
        local = np.searchsorted(np.flatnonzero(in_class), chosen[pool.y_train[chosen] == k])
        terms.append(subset_objective(config, pool.select_x[in_class],
                                      pool.ce_train[in_class], local))
    report = {f"select/{t}": float(np.mean([j[t] for j in terms]))
              for t in ("J", "ot", "moment", "ce", "row_err", "shipped_row_err",
                        "eps_over_median_c")}
    if traces:  # the method's own objective
        for t in ("J_greedy", "J_swapped", "swap_rounds"):
            report[f"select/{t}"] = float(np.mean([trace[t] for trace in traces]))
    return report


def select_subset(config: CondensationConfig, pool: Pool, ctx: TrialContext, bandwidth: float,
                  probe_bandwidth: float) -> tuple[np.ndarray, dict[str, float]]:
    """The chosen pool indices and the raw subset's report, made once per trial: its
    metrics and tail share (``subset/*``), its objective and selection time (``select/*``)."""
    start = time.time()
    chosen, traces = choose(config, pool, ctx)
    seconds = time.time() - start
    report = {f"subset/{k}": v for k, v in metrics(
        pool, pool.x_train[chosen], pool.y_train[chosen], bandwidth, probe_bandwidth).items()}
    report["subset/tail_share"] = float(np.mean(
        pool.rarity_train[chosen] > np.quantile(pool.rarity_train, 0.95)))
    if config.method != "full":
        report.update(objective_report(config, pool, chosen, traces))
    report["select/seconds"] = seconds
    return chosen, report


def training_state(config: CondensationConfig, pool: Pool, state: dict[str, Any] | None
                   ) -> tuple[Denoiser, torch.optim.Adam, torch.Generator]:
    """The Denoiser, its Adam and the generator of batches and noise: fresh from
    ``config.seed``, or restored from the checkpoint ``state``."""
    torch.manual_seed(config.seed)  # the initial weights, resumed or not
    model = Denoiser(pool.dim, pool.classes, config.hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    generator = torch.Generator()
    if state is None:
        generator.manual_seed(config.seed)
    else:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        generator.set_state(state["generator"])
    return model, optimizer, generator


def train_step(diffusion: GaussianDiffusion, model: Denoiser, optimizer: torch.optim.Adam,
               generator: torch.Generator, x0: torch.Tensor, y0: torch.Tensor,
               batch_size: int) -> float:
    """One Adam step on the simple DDPM loss of a batch drawn from the subset; the loss."""
    batch = torch.randint(0, len(y0), (batch_size,), generator=generator)
    loss = diffusion.loss(model, x0[batch], y0[batch], generator)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def evaluation_report(config: CondensationConfig, pool: Pool, model: Denoiser,
                      diffusion: GaussianDiffusion, bandwidth: float,
                      probe_bandwidth: float) -> dict[str, float]:
    """``eval/*``: the metrics of the model's DDIM samples and class_acc's chance level."""
    x, y = generate(model, diffusion, config, pool)
    report = {f"eval/{k}": v for k, v in metrics(pool, x, y, bandwidth, probe_bandwidth).items()}
    report["eval/chance"] = 1.0 / pool.classes
    return report


def train_loop(config: CondensationConfig, ctx: TrialContext) -> None:
    """Select the subset (or restore it), train the DDPM on it, report its samples' metrics."""
    torch.set_num_threads(config.threads)
    pool = pool_of(config)
    bandwidth = median_bandwidth(pool.e_test[:1000])
    probe_bandwidth = median_bandwidth(pool.probe(pool.x_test[:1000]))
    state = ctx.load_checkpoint()
    if state is None:
        chosen, subset_report = select_subset(config, pool, ctx, bandwidth, probe_bandwidth)
    else:
        chosen, subset_report = state["chosen"], state["subset"]
    model, optimizer, generator = training_state(config, pool, state)
    diffusion = GaussianDiffusion(1000)
    x0 = torch.tensor(pool.x_train[chosen], dtype=torch.float32)
    y0 = torch.tensor(pool.y_train[chosen], dtype=torch.long)
    cadence = ctx.cadence(config.steps, config.eval_every, config.checkpoint_every)
    first = True
    for step in cadence:
        loss = train_step(diffusion, model, optimizer, generator, x0, y0, config.batch_size)
        if not cadence.evaluates(step):
            continue
        report = evaluation_report(config, pool, model, diffusion, bandwidth, probe_bandwidth)
        report["train/loss"] = loss
        report["train/step"] = float(step)
        if first:  # the subset's report rides on this run's first evaluation
            report.update(subset_report)
            first = False
        checkpoint = ({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                       "generator": generator.get_state(), "chosen": chosen,
                       "subset": subset_report} if cadence.checkpoints(step) else None)
        ctx.report(report, checkpoint=checkpoint, step=step)


def check_data(c: CondensationConfig) -> None:
    check_source(c.data, c.data_path)


STUDY = Study(
    name="diffusion_condensation",
    description="GADC: real-subset selection by one-sided partial OT vs random, k-center, "
                "herding, D2C-style and balanced OT, for training a small diffusion model",
    config_cls=CondensationConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/mmd2", "min", "unbiased MMD^2 of generated samples vs held-out data"),
        Metric("eval/fd", "min", "Frechet distance of samples vs held-out data"),
        Metric("eval/precision", "max", "k = 3 precision (ADM's estimator)"),
        Metric("eval/recall", "max", "k = 3 recall (ADM's estimator)"),
    ),
    analyze=analyze,
    check_data=check_data,
)
