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
        ce_weight=o["ce_weight"], refine_iters=o["refine_iters"], solver=o["solver"])


def select_chunk(items: list[Any]) -> list[tuple[list[int], dict[str, float]]]:
    return [select_one(a) for a in items]


def subset_objective(cfg: CondensationConfig, X: np.ndarray, ce: np.ndarray,
                     local: np.ndarray) -> dict[str, float]:
    """J and its terms of one class's subset under the converged gadc objective, the row
    error of the authors' 20-iteration solver on the same subset (``shipped_row_err``) and
    the temperature over the subset's median cost, eps / median(C) (``eps_over_median_c``:
    the ratio that decides how far 20 iterations are from converged)."""
    D = sqdist(X, X)
    sets, scaled_ce = np.asarray(local)[None], ce * float(np.median(D))
    obj = SelectionObjective(kappa=cfg.kappa, eps_rel=cfg.eps_rel, ce_weight=cfg.ce_scale)
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
def train_loop(config: CondensationConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.threads)
    c = config
    m = pool_of(c)
    h = median_bandwidth(m.e_test[:1000])
    h_probe = median_bandwidth(m.probe(m.x_test[:1000]))
    state = ctx.load_checkpoint()
    diff = GaussianDiffusion(1000)
    if state is None:
        t0 = time.time()
        if c.method == "full":
            chosen = np.arange(len(m.y_train))
        else:
            opts = {"per_class": c.per_class, "method": c.method, "seed": c.seed,
                    "eps_rel": c.eps_rel, "kappa": c.kappa, "ce_weight": c.ce_scale,
                    "refine_iters": c.refine_iters, "solver": c.ot_solver}
            items = []
            for k in range(m.classes):
                idx = np.flatnonzero(m.y_train == k)
                D = sqdist(m.select_x[idx], m.select_x[idx])
                # D2C-style difficulty (a reconstruction): the point's rarity in its class
                items.append((m.select_x[idx], m.ce_train[idx] * float(np.median(D)),
                              m.rarity_train[idx], {**opts, "klass": k}))
            picked = ctx.map_chunks(select_chunk, items)
            chosen = np.concatenate([np.flatnonzero(m.y_train == k)[loc]
                                     for k, (loc, _) in enumerate(picked)])
            traces = [trace for _, trace in picked if trace]
        seconds = time.time() - t0
        sub = {f"subset/{k}": v for k, v in
               metrics(m, m.x_train[chosen], m.y_train[chosen], h, h_probe).items()}
        sub["subset/tail_share"] = float(np.mean(
            m.rarity_train[chosen] > np.quantile(m.rarity_train, 0.95)))
        if c.method != "full":
            js = [subset_objective(c, m.select_x[m.y_train == k], m.ce_train[m.y_train == k],
                                   np.searchsorted(np.flatnonzero(m.y_train == k),
                                                   chosen[m.y_train[chosen] == k]))
                  for k in range(m.classes)]
            for t in ("J", "ot", "moment", "ce", "row_err", "shipped_row_err",
                      "eps_over_median_c"):
                sub[f"select/{t}"] = float(np.mean([j[t] for j in js]))
            for t in ("J_greedy", "J_swapped", "swap_rounds"):  # the method's own objective
                if traces:
                    sub[f"select/{t}"] = float(np.mean([tr[t] for tr in traces]))
        sub["select/seconds"] = seconds
        torch.manual_seed(c.seed)
        model = Denoiser(m.dim, m.classes, c.hidden)
        opt = torch.optim.Adam(model.parameters(), lr=c.lr)
        gen = torch.Generator().manual_seed(c.seed)
    else:
        chosen, sub = state["chosen"], state["subset"]
        torch.manual_seed(c.seed)
        model = Denoiser(m.dim, m.classes, c.hidden)
        model.load_state_dict(state["model"])
        opt = torch.optim.Adam(model.parameters(), lr=c.lr)
        opt.load_state_dict(state["optimizer"])
        gen = torch.Generator()
        gen.set_state(state["generator"])
    x0_all = torch.tensor(m.x_train[chosen], dtype=torch.float32)
    y0_all = torch.tensor(m.y_train[chosen], dtype=torch.long)
    cadence = ctx.cadence(c.steps, c.eval_every, c.checkpoint_every)
    first = True
    for step in cadence:
        b = torch.randint(0, len(y0_all), (c.batch_size,), generator=gen)
        loss = diff.loss(model, x0_all[b], y0_all[b], gen)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if cadence.evaluates(step):
            x, y = generate(model, diff, c, m)
            out = {f"eval/{k}": v for k, v in metrics(m, x, y, h, h_probe).items()}
            out["eval/chance"] = 1.0 / m.classes  # class_acc's chance level
            out["train/loss"] = float(loss.detach())
            out["train/step"] = float(step)
            if first:
                out.update(sub)
                first = False
            ckpt = ({"model": model.state_dict(), "optimizer": opt.state_dict(),
                     "generator": gen.get_state(), "chosen": chosen, "subset": sub}
                    if cadence.checkpoints(step) else None)
            ctx.report(out, checkpoint=ckpt, step=step)


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
