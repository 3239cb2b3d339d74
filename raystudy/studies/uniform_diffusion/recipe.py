"""Simple denoising loss vs the UDLM NELBO for uniform-state diffusion language models.

Paper: Zhu et al., "Simple Denoising Diffusion Language Models" (arXiv 2510.22926; ICML
2026, PMLR v306 zhu26i). Claims of the abstract tested here: a simplified denoising loss
on noise-replaced tokens matches prior uniform-state objectives (the UDLM/Duo NELBO) at
less cost, and a regulariser against uniform output improves it further. The paper's
equations are not public: the loss's mask, weight and normaliser and the regulariser's
form are **raystudy's reading** (config fields ``loss.*``), and the data is a generated
Markov chain whose exact likelihood makes Gen NLL exact (a stand-in for LM1B/OWT).

Launch::

    raystudy sweep uniform_diffusion --profile quick                 # 2 CPUs, minutes
    raystudy sweep uniform_diffusion --profile claim                 # 48 trials, 8 seeds
    raystudy sweep uniform_diffusion --profile claim --space reg     # the regulariser's selection
    raystudy run uniform_diffusion --in-process --set loss.name=nelbo --set train.steps=50

A trial trains one loss (``nelbo``, ``simple``, ``simple_reg``; one mask) on fresh batches
from the data, and on the cadence reports the validation NELBO (a fixed t-grid and
common noise, so every loss is judged by the same bound), samples drawn by the plug-in
ancestral sampler at each step count S (fanned out with ``ctx.map``) with their exact
Gen NLL, entropy and bigram JS, and the time of both losses' forward + backward on the
same batch (so the cost claim is paired inside the trial).
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from typing import Any

import torch

from raystudy import Metric, Study, TrialContext
from raystudy.algorithms.discrete_diffusion import (
    LinearAlpha,
    ancestral_sample,
    bigram_js,
    nelbo_per_token,
    q_sample,
    sample_entropy,
    simple_loss,
    uniform_regulariser,
)
from raystudy.algorithms.models import Denoiser
from raystudy.studies.uniform_diffusion.analysis import analyze
from raystudy.studies.uniform_diffusion.config import LossConfig, UniformDiffusionConfig
from raystudy.studies.uniform_diffusion.data import (
    DATA_COMMANDS,
    Corpus,
    check_tokens,
    corpus_of,
)
from raystudy.studies.uniform_diffusion.evaluator import load_ar_evaluator, score

NOISE_SEED = 20_011
"""Seed of the validation NELBO's noise: common random numbers across trials."""
TRUE_SAMPLE_SEED = 30_011
"""Seed of the true samples the sample metrics are compared with."""


# ----------------------------------------------------------------------------- losses
def alphas(model: Denoiser, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """alpha_t and alpha'_t of the model's schedule at times t (B,), as (B, 1) columns."""
    return (torch.as_tensor(model.schedule.alpha(t)).reshape(-1, 1),
            torch.as_tensor(model.schedule.dalpha(t)).reshape(-1, 1))


def training_times(batch: int, t_min: float, generator: torch.Generator) -> torch.Tensor:
    """Antithetic times in [t_min, 1] (Duo's _sample_t): one uniform draw, spread by 1/B."""
    u = (torch.rand(1, generator=generator) + torch.arange(batch) / batch) % 1
    return t_min + (1 - t_min) * u


def loss_of(loss: LossConfig, model: Denoiser, x: torch.Tensor, z: torch.Tensor,
            moved: torch.Tensor, t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The trial's training loss on one noised batch (x, z, moved: (B, L); t: (B,))."""
    alpha_t, dalpha_t = alphas(model, t)
    logits = model(z, t)
    if loss.name == "nelbo":                                   # UDLM continuous-time NELBO
        return nelbo_per_token(torch.log_softmax(logits, -1), z, x, alpha_t, dalpha_t).mean()
    value = simple_loss(logits, x, z, moved, mask=loss.mask, weight=loss.weight,
                        normalize=loss.normalize, alpha_t=alpha_t, dalpha_t=dalpha_t)
    if loss.name == "simple_reg":
        mask = (z != x) if loss.mask == "changed" else moved
        value = value + loss.reg_weight * uniform_regulariser(
            logits, mask, kind=loss.reg, n_neg=loss.n_neg, generator=generator)
    return value


def loss_times_ms(model: Denoiser, x: torch.Tensor, repeats: int,
                  generator: torch.Generator) -> dict[str, float]:
    """Median forward + backward time of the NELBO and the simple loss on the same noised
    batch, interleaved (the cost claim's pair); gradients are cleared after."""
    t = training_times(len(x), 1e-3, generator)
    z, moved = q_sample(x, alphas(model, t)[0], model.vocab_size, generator)
    times: dict[str, list[float]] = {"nelbo": [], "simple": []}
    for _ in range(repeats):
        for name in times:
            start = time.perf_counter()
            loss_of(LossConfig(name=name, mask="moved"), model, x, z, moved, t,
                    generator).backward()
            times[name].append(1000 * (time.perf_counter() - start))
    model.zero_grad(set_to_none=True)
    return {f"time/loss_ms_{name}": statistics.median(v) for name, v in times.items()}


# ----------------------------------------------------------------------------- evaluation
@torch.no_grad()
def validation_nelbo(model: Denoiser, val: torch.Tensor, grid: int) -> tuple[float, float]:
    """The NELBO (nats/token) on the fixed validation sequences by the midpoint rule over
    ``grid`` times with common noise, and its standard error over sequences."""
    generator = torch.Generator().manual_seed(NOISE_SEED)
    per_sequence = torch.zeros(len(val), dtype=torch.float64)
    for k in range(grid):
        t = torch.full((len(val),), (k + 0.5) / grid)
        alpha_t, dalpha_t = alphas(model, t)
        z, _ = q_sample(val, alpha_t, model.vocab_size, generator)
        log_x_theta = torch.log_softmax(model(z, t).double(), -1)
        per_sequence += nelbo_per_token(log_x_theta, z, val, alpha_t, dalpha_t).mean(1) / grid
    return float(per_sequence.mean()), float(per_sequence.std() / len(val) ** 0.5)


def sampling_seed(seed: int, step: int, steps: int, chunk: int) -> int:
    """The seed of one chunk of samples: distinct per trial seed, step, S and chunk."""
    return (((seed * 1_000_003 + step) * 1_009 + steps) * 101 + chunk) % 2**63


def sample_chunk(item: tuple[dict[str, Any], dict[str, int], int, int, int]) -> torch.Tensor:
    """``n`` samples at S steps from a model state (run by ``ctx.map``, anywhere)."""
    state, shape, steps, n, seed = item
    model = Denoiser(shape["vocab_size"], shape["seq_len"], shape["d_model"], shape["n_layers"],
                     shape["n_heads"])
    model.load_state_dict(state)
    model.eval()
    return ancestral_sample(model, n, shape["seq_len"], shape["vocab_size"], steps,
                            generator=torch.Generator().manual_seed(seed))


def sample_metrics(samples: torch.Tensor, corpus: Corpus,
                   evaluator: torch.nn.Module | None = None) -> dict[str, float]:
    """Entropy of samples, their Gen PPL under the AR evaluator where one is given, and
    with an exact source their Gen NLL (and its SE) and JS."""
    out = {"entropy": sample_entropy(samples)}
    if evaluator is not None:
        out["gen_nll_ar"] = float(score(evaluator, samples).mean())
        out["gen_ppl_ar"] = math.exp(out["gen_nll_ar"])
    if corpus.source is not None:
        per_sample = -corpus.source.log_prob(samples) / samples.shape[1]
        out["gen_nll"] = float(per_sample.mean())
        out["gen_nll_se"] = float(per_sample.std() / len(per_sample) ** 0.5)
        out["bigram_js"] = bigram_js(samples, corpus.source)
    return out


def unigram_nll(corpus: Corpus, rows: int = 4096) -> float:
    """Held-out NLL (nats/token) of a unigram model fit on training rows (add-one): what
    the AR evaluator must beat to have learned any context."""
    train = corpus.batch(rows, torch.Generator().manual_seed(NOISE_SEED))
    counts = torch.bincount(train.flatten(), minlength=corpus.vocab_size).double() + 1.0
    log_q = (counts / counts.sum()).log()
    return float(-log_q[corpus.val[:, 1:].flatten()].mean())  # the positions AR scores


def data_metrics(corpus: Corpus, n: int, evaluator: torch.nn.Module | None = None
                 ) -> dict[str, float]:
    """What the true data scores on the sample metrics: the references of the claims."""
    ar = {}
    if evaluator is not None:  # the real rows' scores: a perfect sampler's, and a unigram's
        val_nll = float(score(evaluator, corpus.val[:n]).mean())
        ar = {"data/val_nll_ar": val_nll, "data/val_ppl_ar": math.exp(val_nll),
              "data/val_unigram_nll": unigram_nll(corpus)}
    if corpus.source is None:
        true = corpus.val[:n]
        return {"data/true_sample_entropy": sample_entropy(true), **ar}
    true = corpus.source.sample(n, corpus.seq_len,
                                generator=torch.Generator().manual_seed(TRUE_SAMPLE_SEED))
    own = sample_metrics(true, corpus)
    return {"data/entropy": corpus.source.entropy(corpus.seq_len),
            "data/true_sample_entropy": own["entropy"], "data/js_floor": own["bigram_js"],
            "data/true_gen_nll": own["gen_nll"], "data/true_gen_nll_se": own["gen_nll_se"],
            **ar}


def evaluate(model: Denoiser, config: UniformDiffusionConfig, corpus: Corpus,
             ctx: TrialContext, step: int, evaluator: torch.nn.Module | None = None
             ) -> tuple[dict[str, float], dict[str, Any]]:
    """The evaluation's metrics and the samples drawn (``samples@S`` -> (n, L) int16)."""
    model.eval()
    nelbo, nelbo_se = validation_nelbo(model, corpus.val, config.eval.nelbo_t_grid)
    out = {"eval/nelbo": nelbo, "eval/nelbo_se": nelbo_se}
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    shape = {"vocab_size": corpus.vocab_size, "seq_len": corpus.seq_len,
             "d_model": config.model.d_model, "n_layers": config.model.n_layers,
             "n_heads": config.model.n_heads}
    chunks = max(1, min(ctx.slots, config.eval.n_samples // 32))
    sizes = [config.eval.n_samples // chunks + (i < config.eval.n_samples % chunks)
             for i in range(chunks)]
    items = [(state, shape, S, size, sampling_seed(config.train.seed, step, S, i))
             for S in config.eval.sample_steps for i, size in enumerate(sizes)]
    drawn = ctx.map(sample_chunk, items)
    samples = {}
    for index, S in enumerate(config.eval.sample_steps):
        x = torch.cat(drawn[index * chunks:(index + 1) * chunks])
        samples[f"samples@{S}"] = x.to(torch.int16).numpy()
        out.update({f"eval/{k}@{S}": v
                    for k, v in sample_metrics(x, corpus, evaluator).items()})
    model.train()
    return out, samples


# ----------------------------------------------------------------------------- loop
def train_loop(config: UniformDiffusionConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.train.threads)
    c = config
    corpus = corpus_of(c.data, c.eval.val_sequences)
    torch.manual_seed(c.train.seed)
    model = Denoiser(corpus.vocab_size, corpus.seq_len, c.model.d_model, c.model.n_layers,
                     c.model.n_heads, schedule=LinearAlpha())
    ema = copy.deepcopy(model) if c.train.ema > 0 else None
    opt = torch.optim.AdamW(model.parameters(), lr=c.train.lr, weight_decay=0.0)
    warmup = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / c.train.warmup) if c.train.warmup else 1.0)
    generator = torch.Generator().manual_seed(c.train.seed)
    state = ctx.load_checkpoint()
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        warmup.load_state_dict(state["warmup"])
        generator.set_state(state["generator"])
        if ema is not None:
            ema.load_state_dict(state["ema"])
    evaluator = (load_ar_evaluator(c.eval.ar_evaluator, corpus.vocab_size, corpus.seq_len)[0]
                 if c.eval.ar_evaluator else None)
    references = data_metrics(corpus, c.eval.n_samples, evaluator)
    cadence = ctx.cadence(c.train.steps, c.train.eval_every, c.train.checkpoint_every)
    for step in cadence:
        x = corpus.batch(c.train.batch_size, generator)
        t = training_times(len(x), c.train.t_min, generator)
        z, moved = q_sample(x, alphas(model, t)[0], corpus.vocab_size, generator)
        loss = loss_of(c.loss, model, x, z, moved, t, generator)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        warmup.step()
        if ema is not None:
            with torch.no_grad():
                for e, p in zip(ema.parameters(), model.parameters(), strict=True):
                    e.lerp_(p, 1 - c.train.ema)
        if cadence.evaluates(step):
            metrics, samples = evaluate(ema or model, c, corpus, ctx, step, evaluator)
            metrics.update(loss_times_ms(model, corpus.batch(c.train.batch_size, generator),
                                         c.eval.timing_repeats, generator))
            metrics.update(references)
            metrics.update({"train/loss": float(loss.detach()), "train/step": float(step)})
            checkpoint = ({"model": model.state_dict(), "optimizer": opt.state_dict(),
                           "warmup": warmup.state_dict(), "generator": generator.get_state(),
                           **({"ema": ema.state_dict()} if ema is not None else {}),
                           **samples} if cadence.checkpoints(step) else None)
            ctx.report(metrics, checkpoint=checkpoint, step=step)


def check_data(config: UniformDiffusionConfig) -> None:
    """On the driver, before Ray: the token folder and the AR evaluator, one line each."""
    if config.data.source == "tokens":
        check_tokens(config.data)
    if config.eval.ar_evaluator:
        vocab_size = 256 if config.data.source == "stdlib" else config.data.vocab_size
        load_ar_evaluator(config.eval.ar_evaluator, vocab_size, config.data.seq_len)


STUDY = Study(
    name="uniform_diffusion",
    description="a simple denoising loss on noise-replaced tokens (+ a regulariser against "
                "uniform output) vs the UDLM NELBO, for uniform-state diffusion LMs",
    config_cls=UniformDiffusionConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/gen_nll@32", "min", "exact NLL per token of 32-step samples (nats)"),
        Metric("eval/nelbo", "min", "validation NELBO per token (nats), common noise"),
        Metric("eval/entropy@32", "max", "Duo's per-sample unigram entropy of 32-step samples"),
        Metric("eval/bigram_js@32", "min", "JS divergence of sample bigrams vs the exact ones"),
    ),
    analyze=analyze,
    check_data=check_data,
    data_commands=DATA_COMMANDS,
)
