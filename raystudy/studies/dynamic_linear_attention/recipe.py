"""DLA's information-aware state merging vs fixed multi-state policies at an equal budget.

Paper: Wang et al., "Dynamic Linear Attention" (arXiv 2606.10650, ICML 2026). Claims tested
here, in miniature: at an equal state budget K, DLA (boundaries where the information score
I_t >= tau, the least dense adjacent states merged over capacity) recalls better than
Log-Linear's Fenwick states and fixed chunks (D1), more so as T grows (D2); its partition
has a smaller Theorem 3.1 bound than fixed blocks on piecewise streams (D3) and recalls
needles better at low load (D4). The paper's text and code are not public: the score, the
read weights lambda and the hard partitions are **raystudy's reading** of a third-party
note and proof of concept (``raystudy.algorithms.linear_attention``, README).

Launch::

    raystudy sweep dynamic_linear_attention --profile quick            # 2 CPUs, minutes
    raystudy sweep dynamic_linear_attention --profile quick --space tau    # tau's selection
    raystudy sweep dynamic_linear_attention --profile quick --space claim  # 8 seeds, hours
    raystudy run dynamic_linear_attention --in-process --set model.mixer=loglinear
    raystudy run dynamic_linear_attention --in-process --set task=mechanism

``task=recall``: a trial trains one MixerLM (one mixer x T x seed) on fresh generated
batches and on the cadence reports test accuracy (all queries, far and near keys), the
states each query read, which tokens opened a DLA state, and the step time; it checkpoints
model and optimiser, and a resumed trial ends where an uninterrupted one does.
``task=mechanism``: training-free; every policy on seeded piecewise and needle streams,
fanned out over stream families with ``ctx.map``, so D3's and D4's pairs lie inside one
trial. Step 1 chooses DLA's tau per score on selection streams 100-102, step 2 freezes it
for the claim streams 0 .. mechanism.streams - 1.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import torch
import torch.nn.functional as F

from raystudy import Metric, Study, TrialContext
from raystudy.algorithms.linear_attention import (
    FILLER,
    IGNORE,
    KEY,
    SCORES,
    VALUE,
    MultiStateMixer,
    RecallBatch,
    contributions,
    deviation_bound,
    dla_partition,
    fenwick_rank,
    fifo_partition,
    mqar,
    mqar_sparse,
    needle_stream,
    piecewise_stream,
    realised_deviation,
    recall_best_state,
)
from raystudy.algorithms.linear_attention import boundary_f1 as f1_of
from raystudy.algorithms.models import MixerLM
from raystudy.studies.dynamic_linear_attention.analysis import analyze
from raystudy.studies.dynamic_linear_attention.config import (
    DataConfig,
    DynamicLinearAttentionConfig,
    MechanismConfig,
    capacity_of,
)

TEST_SEED = 2**40
"""Test sets are seeded from here (per T and data seed); training batches below 2**32."""
SELECTION_STREAMS = (100, 101, 102)
"""Stream seeds that choose the mechanism's tau; the claims read seeds 0 .. streams - 1."""


# ----------------------------------------------------------------------------- recall data
def recall_batch(data: DataConfig, n: int, seed: int) -> RecallBatch:
    """n generated sequences of the configured task (one seed, one batch)."""
    if data.kind == "mqar":
        return mqar(n, data.seq_len, data.vocab_size, data.num_kv_pairs, power_a=data.power_a,
                    seed=seed)
    return mqar_sparse(n, data.seq_len, data.vocab_size, data.num_kv_pairs,
                       filler_vocab=data.filler_vocab, filler_run_mean=data.filler_run_mean,
                       seed=seed)


def batch_seed(seed: int, step: int) -> int:
    """The seed of training step ``step``'s batch: fixed by the step, so resume is exact."""
    return (seed * 1_000_003 + step) % 2**32


def test_seed(data: DataConfig) -> int:
    """One test set per (T, data seed), shared by every mixer and model seed."""
    return TEST_SEED + data.data_seed * 65_537 + data.seq_len


def build_model(c: DynamicLinearAttentionConfig) -> MixerLM:
    """The trial's MixerLM; every bounded policy gets K = capacity_of(dla.capacity, T)."""
    return MixerLM(c.data.vocab_size, c.data.seq_len, c.model.d_model, c.model.n_layers,
                   c.model.n_heads, mixer=c.model.mixer,
                   capacity=capacity_of(c.dla.capacity, c.data.seq_len), tau=c.dla.tau,
                   score=c.dla.score, short_conv=c.model.short_conv)


@torch.no_grad()
def evaluate(model: MixerLM, test: RecallBatch) -> dict[str, float]:
    """Query accuracy (all, keys >= T/2 back = far, the rest near), loss, states read per
    query and, for DLA, the share of key/value vs filler tokens (t > 0) that opened a state."""
    model.eval()
    n, T = test.inputs.shape
    device = next(model.parameters()).device
    chunk = max(1, min(n, 2**22 // (model.blocks[0].mixer.n_heads * T * T)))
    sums = dict.fromkeys(("hit", "q", "far_hit", "far", "loss", "kv_open", "kv", "fill_open",
                          "fill"), 0.0)
    means, maxima = [], []
    t = torch.arange(T, device=device)
    for lo in range(0, n, chunk):
        x, y, kind, source = (a[lo:lo + chunk].to(device) for a in (
            test.inputs, test.labels, test.kind, test.source))
        logits = model(x)
        asked = y != IGNORE
        hit = (logits.argmax(-1) == y) & asked
        far = asked & (t - source >= T // 2)
        sums["hit"] += float(hit.sum())
        sums["q"] += float(asked.sum())
        sums["far_hit"] += float((hit & far).sum())
        sums["far"] += float(far.sum())
        sums["loss"] += float(F.cross_entropy(logits[asked], y[asked], reduction="sum"))
        stats = model.state_stats()
        if stats:
            means.append(stats["states/mean"])
            maxima.append(stats["states/max"])
        opened = [b.mixer.last_opened.double().mean(1) for b in model.blocks  # (B, T) per layer
                  if isinstance(b.mixer, MultiStateMixer) and b.mixer.last_opened is not None]
        if opened:
            rate = torch.stack(opened).mean(0)[:, 1:]
            kv = ((kind == KEY) | (kind == VALUE))[:, 1:]
            fill = (kind == FILLER)[:, 1:]
            sums["kv_open"] += float(rate[kv].sum())
            sums["kv"] += float(kv.sum())
            sums["fill_open"] += float(rate[fill].sum())
            sums["fill"] += float(fill.sum())
    model.train()
    near = sums["q"] - sums["far"]
    out = {"eval/acc": sums["hit"] / sums["q"], "eval/loss": sums["loss"] / sums["q"],
           "eval/acc_far": sums["far_hit"] / sums["far"] if sums["far"] else float("nan"),
           "eval/acc_near": (sums["hit"] - sums["far_hit"]) / near if near else float("nan")}
    out = {k: v for k, v in out.items() if v == v}          # no far (or near) query: no key
    if means:
        out.update({"states/mean": statistics.fmean(means), "states/max": max(maxima)})
    if sums["kv"]:
        out["boundary/kv_rate"] = sums["kv_open"] / sums["kv"]
        out["boundary/filler_rate"] = sums["fill_open"] / max(sums["fill"], 1.0)
    return out


def train_recall(c: DynamicLinearAttentionConfig, ctx: TrialContext) -> None:
    """One mixer x T x seed on the cadence: fresh batches, AdamW, the test set's metrics."""
    test = recall_batch(c.data, c.data.test_size, test_seed(c.data))
    torch.manual_seed(c.train.seed)
    model = build_model(c).to(ctx.device)
    opt = torch.optim.AdamW(model.parameters(), lr=c.train.lr, weight_decay=c.train.weight_decay)
    warmup = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda k: min(1.0, (k + 1) / c.train.warmup) if c.train.warmup else 1.0)
    state = ctx.load_checkpoint()
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        warmup.load_state_dict(state["warmup"])
    K = capacity_of(c.dla.capacity, c.data.seq_len)
    cadence = ctx.cadence(c.train.steps, c.train.eval_every, c.train.checkpoint_every)
    step_ms: list[float] = []
    for step in cadence:
        start = time.perf_counter()
        batch = recall_batch(c.data, c.train.batch_size, batch_seed(c.train.seed, step))
        logits = model(batch.inputs.to(ctx.device))
        loss = F.cross_entropy(logits.flatten(0, 1), batch.labels.to(ctx.device).flatten(),
                               ignore_index=IGNORE)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        warmup.step()
        step_ms.append(1000 * (time.perf_counter() - start))
        if cadence.evaluates(step):
            metrics = evaluate(model, test)
            metrics.update({"train/loss": float(loss.detach()), "train/step": float(step),
                            "time/step_ms": statistics.median(step_ms), "data/capacity": K,
                            "hw/cuda": float(ctx.device.type == "cuda")})
            step_ms = []
            checkpoint = ({"model": model.state_dict(), "optimizer": opt.state_dict(),
                           "warmup": warmup.state_dict()} if cadence.checkpoints(step) else None)
            ctx.report(metrics, checkpoint=checkpoint, step=step)


# ----------------------------------------------------------------------------- mechanism
def streams(family: str, load: float, seeds: list[int], m: MechanismConfig, K: int
            ) -> tuple[torch.Tensor, torch.Tensor, list[torch.Tensor]]:
    """k (S, 1, T, dk), v (S, 1, T, dv) of one family's streams stacked over seeds, and each
    stream's truth: its change points (piecewise) or needle positions (needles)."""
    ks, vs, truths = [], [], []
    for seed in seeds:
        if family == "piecewise":
            gen = torch.Generator().manual_seed(seed)
            cuts = torch.sort(torch.randint(m.length - 4 * m.segments + 1, (m.segments - 1,),
                                            generator=gen)).values
            bounds = [0, *(cuts + 4 * torch.arange(1, m.segments)).tolist(), m.length]
            lengths = [b - a for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
            k, v, truth = piecewise_stream(lengths, m.dk, m.dv, noise=m.noise, seed=seed)
        else:
            n = needles_at(load, K)
            k, v, truth = needle_stream(n, m.length // n - 1, m.dk, m.dv,
                                        theme_noise=m.theme_noise, seed=seed)
        ks.append(k)
        vs.append(v)
        truths.append(truth)
    return torch.stack(ks)[:, None], torch.stack(vs)[:, None], truths


def needles_at(load: float, K: int) -> int:
    """Needles of a needle stream at ``load`` = needles / K."""
    return max(1, round(load * K))


def dla_final(k: torch.Tensor, v: torch.Tensor, tau: float, K: int, score: str
              ) -> list[torch.Tensor]:
    """Each stream's DLA block starts after its last token (no decay)."""
    p = dla_partition(k, v, None, tau=tau, capacity=K, score=score)
    T = k.shape[2]
    return [row[row < T] for row in p.starts[:, 0, -1]]


def equal_blocks(T: int, m: int) -> torch.Tensor:
    """Fixed blocks: [0, T) cut into m near-equal blocks (starts j T // m)."""
    return torch.arange(m) * T // m


def fixed_policies(T: int, K: int) -> dict[str, torch.Tensor]:
    """The content-blind partitions after the last token: K equal blocks, FIFO, Fenwick."""
    fifo = fifo_partition(T, K).starts[0, 0, -1]
    level = fenwick_rank(T)[T - 1]
    fenwick = torch.cat([torch.zeros(1, dtype=torch.long),
                         torch.nonzero(level[1:] != level[:-1])[:, 0] + 1])
    return {"fixed_K": equal_blocks(T, K), "fifo": fifo[fifo < T], "loglinear": fenwick}


def measure(family: str, k: torch.Tensor, v: torch.Tensor, truth: torch.Tensor,
            starts: torch.Tensor, seed: int, tol: int) -> dict[str, float]:
    """One partition of one stream: blocks and, piecewise, Theorem 3.1's bound B, a realised
    deviation (unit q, g ~ U[-1, 1]) and boundary F1; needles, the mean best-state recall."""
    out = {"blocks": float(len(starts))}
    if family == "piecewise":
        U = contributions(k, v)
        gen = torch.Generator().manual_seed(seed + 7919)
        q = torch.randn(U.shape[1], generator=gen, dtype=torch.float64)
        g = 2 * torch.rand(U.shape[0], generator=gen, dtype=torch.float64) - 1
        out.update(bound=deviation_bound(U, starts),
                   realised=realised_deviation(U, starts, q / q.norm(), g),
                   f1=f1_of(starts, truth, tol))
    else:
        out["recall"] = float(recall_best_state(k, v, starts, truth).mean())
    return out


def mechanism_item(item: tuple[str, str, float, MechanismConfig, str, int, dict[str, float]]
                   ) -> dict[str, Any]:
    """One stream family (piecewise, or needles at one load) through ``ctx.map``. ``select``:
    DLA's tau candidates per score on the selection streams, {"score@tau": [bound or recall
    per stream]}; ``claim``: every policy on the claim streams at the chosen taus,
    {policy: [measures per stream]}."""
    phase, family, load, m, score, K, taus = item
    torch.set_num_threads(1)
    seeds = list(SELECTION_STREAMS) if phase == "select" else list(range(m.streams))
    k, v, truths = streams(family, load, seeds, m, K)
    T, key = k.shape[2], "bound" if family == "piecewise" else "recall"
    if phase == "select":
        out: dict[str, Any] = {}
        for s in SCORES:
            for tau in m.taus:
                finals = dla_final(k, v, tau, K, s)
                out[f"{s}@{tau:g}"] = [measure(family, k[i, 0], v[i, 0], truths[i], finals[i],
                                               seeds[i], m.tol)[key] for i in range(len(seeds))]
        return out
    partitions: dict[str, list[torch.Tensor]] = {}
    for s in SCORES:                                # each reading and its matched fixed blocks
        partitions[f"dla/{s}"] = dla_final(k, v, taus[s], K, s)
        partitions[f"fixed/{s}"] = [equal_blocks(T, len(p)) for p in partitions[f"dla/{s}"]]
    partitions["dla_tau0"] = dla_final(k, v, 0.0, K, score)
    for name, starts in fixed_policies(T, K).items():
        partitions[name] = [starts] * len(seeds)
    if family == "piecewise":
        partitions["oracle"] = [torch.cat([torch.zeros(1, dtype=torch.long), t]) for t in truths]
    return {name: [measure(family, k[i, 0], v[i, 0], truths[i], rows[i], seeds[i], m.tol)
                   for i in range(len(seeds))] for name, rows in partitions.items()}


def choose_tau(taus: tuple[float, ...], rows: list[dict[str, Any]], score: str,
               sign: float) -> float:
    """The candidate with the least ``sign`` x mean metric over the selection streams (the
    least bound: sign 1; the best recall: sign -1); ties go to the first listed."""
    means = [sign * statistics.fmean(x for r in rows for x in r[f"{score}@{tau:g}"])
             for tau in taus]
    return taus[means.index(min(means))]


def run_mechanism(c: DynamicLinearAttentionConfig, ctx: TrialContext) -> None:
    """Step 1 chooses tau per score on the selection streams; step 2 measures every policy on
    the claim streams and reports per-stream values (D3's and D4's pairs) and means."""
    m, score = c.mechanism, c.dla.score
    K = capacity_of(c.dla.capacity, m.length)
    families = [("piecewise", 0.0)] + [("needles", load) for load in m.loads]
    state = ctx.load_checkpoint() or {}
    taus: dict[str, dict[str, float]] = state.get("taus", {})
    cadence = ctx.cadence(2, 1, 1)
    for step in cadence:
        if step == 1:
            selected = ctx.map(mechanism_item, [("select", f, load, m, score, K, {})
                                                for f, load in families])
            metrics: dict[str, float] = {}
            for family, sign in (("piecewise", 1.0), ("needles", -1.0)):
                rows = [r for (f, _), r in zip(families, selected, strict=True) if f == family]
                taus[family] = {s: choose_tau(m.taus, rows, s, sign) for s in SCORES}
                metrics.update({f"mech/{family}/tau/{s}": t for s, t in taus[family].items()})
            ctx.report(metrics, checkpoint={"taus": taus}, step=step)
            continue
        results = ctx.map(mechanism_item, [("claim", f, load, m, score, K, taus[f])
                                           for f, load in families])
        metrics = {f"mech/{f}/tau/{s}": t for f in taus for s, t in taus[f].items()}
        metrics.update({"mech/capacity": float(K), "mech/streams": float(m.streams)})
        violations = 0
        for (family, load), result in zip(families, results, strict=True):
            name = family if family == "piecewise" else f"needles_{load:g}"
            if family == "needles":
                metrics[f"mech/{name}/load"] = needles_at(load, K) / K
            for policy, per_stream in result.items():
                for quantity in per_stream[0]:
                    values = [row[quantity] for row in per_stream]
                    metrics[f"mech/{name}/{policy}/{quantity}"] = statistics.fmean(values)
                    if policy.startswith(("dla/", "fixed/")):   # D3's and D4's pairs
                        metrics.update({f"mech/{name}/{policy}/{quantity}@{i}": x
                                        for i, x in enumerate(values)})
                if family == "piecewise":
                    violations += sum(row["realised"] > row["bound"] + 1e-9 for row in per_stream)
        metrics["mech/bound_violations"] = float(violations)
        ctx.report(metrics, checkpoint={"taus": taus}, step=step)


# ----------------------------------------------------------------------------- trainable
def train_loop(config: DynamicLinearAttentionConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.train.threads)
    if config.task == "mechanism":
        run_mechanism(config, ctx)
    else:
        train_recall(config, ctx)


STUDY = Study(
    name="dynamic_linear_attention",
    description="DLA's information-aware state merging vs Log-Linear, fixed chunks and FIFO at "
                "an equal state budget, on generated recall and piecewise/needle streams",
    config_cls=DynamicLinearAttentionConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/acc", "max", "query accuracy on the test set (recall)"),
        Metric("eval/acc_far", "max", "accuracy on queries whose key lies >= T/2 back"),
        Metric("eval/acc_near", "max", "accuracy on queries whose key lies < T/2 back"),
        Metric("states/max", "min", "most states a query read (multi-state mixers)"),
        Metric("time/step_ms", "min", "median wall ms of a training step (CPU, a Python scan)"),
    ),
    analyze=analyze,
    supports_workers=False,
)
