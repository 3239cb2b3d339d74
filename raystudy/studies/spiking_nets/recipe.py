"""UltraLIF (ultradiscretized spiking neurons) against true surrogate-gradient LIF.

Paper: Minoza, "UltraLIF: Fully Differentiable Spiking Neural Networks via
Ultradiscretization and Max-Plus Algebra" (arXiv 2602.11206, ICML 2026; code
JomaMinoza/UltraLIF). Claims of the abstract tested here: log-sum-exp neurons beat
surrogate-gradient baselines, most of all at a single time step (T = 1) on temporal data.
The paper's own baselines are smooth in the forward pass; this study adds true
surrogate-gradient LIF/PLIF (Heaviside forward), evaluates every network soft (the
authors' forward) and hard (binary spikes), picks the epoch on a validation split carved
from train (the authors' best-test-epoch figure is reported beside it, never in a claim),
and adds SigmaLIF (UltraLIF's learnable-eps sigmoid, no LSE) and a tuned baseline: SG-LIF
with a learned threshold, and space ``tune``, where every arm's learning rate and
threshold are chosen on validation from the same grid.

Launch::

    raystudy sweep spiking_nets --profile quick                   # 2 CPUs, minutes
    raystudy run spiking_nets --in-process --set neuron.name=ultradlif --set data.timesteps=1
    raystudy sweep spiking_nets --profile quick --space conv      # the authors' ConvSNN
    raystudy sweep spiking_nets --profile quick --space tune      # every arm tuned
    raystudy data make-events /tmp/events   # then --set data.name=shd --set data.path=/tmp/events
    raystudy data make-nmnist /tmp/nm       # then --set data.name=nmnist --set data.path=/tmp/nm

A trial trains the authors' FC network (fc -> neuron -> fc readout, logits averaged over
T) or their ConvSNN (train.network=conv) with Adam; every epoch it evaluates validation
and test in the soft, hard and tropical modes, keeps each mode's best-validation epoch,
and reports on the cadence.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from raystudy import (
    DataError,
    Metric,
    MissingDataError,
    Study,
    TrialContext,
)
from raystudy.algorithms.snn import (
    MODES,
    SGLIF,
    SNN,
    ConvSNN,
    DSpike,
    SigmaLIF,
    SoftLIF,
    UltraDLIF,
    UltraLIF,
    events_to_frames,
    rate_encode,
)
from raystudy.algorithms.snn.data import (
    DataFormatError,
    DataMissingError,
    load_static,
    make_temporal_order,
    read_dvs_gesture,
    read_nmnist,
    read_shd,
)
from raystudy.studies.spiking_nets.analysis import analyze
from raystudy.studies.spiking_nets.config import EVENT_SETS, IMAGES, NeuronConfig, SpikingConfig
from raystudy.studies.spiking_nets.data import DATA_COMMANDS, cached_nmnist, is_generated


# ----------------------------------------------------------------------------- data
@dataclass
class Split:
    """Inputs ``n x D`` (static, encoded per batch) or ``n x T x D`` frames; labels."""

    x: torch.Tensor
    y: torch.Tensor


@functools.lru_cache(maxsize=8)
def load(name: str, path: str, timesteps: int, events_train: int, events_test: int,
         normalize: bool) -> tuple[Split, Split, int, bool]:
    """(train, test, classes, is_events); cached across trials of one worker."""
    try:
        if name in EVENT_SETS:
            if name == "temporal_order":
                tr = make_temporal_order(events_train, seed=0)
                te = make_temporal_order(events_test, seed=1)
            elif name == "nmnist":
                root = path or str(cached_nmnist())
                tr, te = read_nmnist(root, "Train"), read_nmnist(root, "Test")
            elif name == "dvs_gesture":
                tr, te = read_dvs_gesture(path, "train"), read_dvs_gesture(path, "test")
            else:
                tr, te = read_shd(f"{path}/shd_train.h5"), read_shd(f"{path}/shd_test.h5")
            t_max = max(tr.t_max, te.t_max)

            def frames(ev: Any) -> Split:
                f = np.stack([events_to_frames(t, u, ev.n_units, timesteps, t_max)
                              for t, u in zip(ev.times, ev.units, strict=True)])
                return Split(torch.from_numpy(f), torch.from_numpy(ev.labels))
            classes = int(max(tr.labels.max(), te.labels.max())) + 1
            return frames(tr), frames(te), classes, True
        s = load_static(name, path)
    except DataMissingError as exc:
        raise MissingDataError(str(exc)) from None
    except DataFormatError as exc:
        raise DataError(str(exc)) from None
    x_tr, x_te = torch.from_numpy(s.x_train), torch.from_numpy(s.x_test)
    if normalize:  # the authors: Normalize(mean, std) then rate_encode's clamp to [0, 1]
        mean, std = x_tr.mean(), x_tr.std()
        x_tr, x_te = (x_tr - mean) / std, (x_te - mean) / std
    return (Split(x_tr, torch.from_numpy(s.y_train)), Split(x_te, torch.from_numpy(s.y_test)),
            s.classes, False)


def check_data(config: SpikingConfig) -> None:
    d = config.data
    load(d.name, d.path, d.timesteps, d.events_train, d.events_test, d.normalize_then_clamp)


def inputs(x: torch.Tensor, events: bool, config: SpikingConfig,
           generator: torch.Generator) -> torch.Tensor:
    """``T x B x D``: frames as they are (events), Bernoulli rate code (static)."""
    if events:
        return x.transpose(0, 1)
    return rate_encode(x, config.data.timesteps, config.data.rate_gain, generator)


# ----------------------------------------------------------------------------- model
def make_neuron(c: NeuronConfig) -> Any:
    ultra: dict[str, Any] = {"init_eps": c.init_eps, "learn_eps": c.learn_eps,
                             "threshold": c.theta}
    makers: dict[str, Any] = {
        "ultralif": lambda n: UltraLIF(n, c.tau, **ultra),
        "ultraplif": lambda n: UltraLIF(n, c.tau, learn_tau=True, **ultra),
        "ultradlif": lambda n: UltraDLIF(n, c.dlif_form, c.tau, **ultra),
        "ultradplif": lambda n: UltraDLIF(n, "library", c.tau, learn_tau=True, **ultra),
        "sigmalif": lambda n: SigmaLIF(n, c.tau, **ultra),
        "sg_lif": lambda n: SGLIF(n, c.tau, c.theta, c.surrogate, c.slope, c.reset),
        "sg_plif": lambda n: SGLIF(n, c.tau, c.theta, c.surrogate, c.slope, c.reset,
                                   learn_tau=True),
        "sg_lif_learned_threshold": lambda n: SGLIF(n, c.tau, c.theta, c.surrogate, c.slope,
                                                    c.reset, learn_threshold=True),
        "soft_lif": lambda n: SoftLIF(n, c.tau),
        "soft_plif": lambda n: SoftLIF(n, c.tau, learn_tau=True),
        "dspike": lambda n: DSpike(n, c.tau)}
    return makers[c.name]


def build(config: SpikingConfig, inputs_dim: int, classes: int) -> SNN | ConvSNN:
    neuron: Any = make_neuron(config.neuron)
    maker: Any = lambda n: neuron(n)  # noqa: E731
    if config.train.network == "conv":
        return ConvSNN(IMAGES[config.data.name], classes, maker)
    return SNN(inputs_dim, config.train.hidden, classes, maker, config.train.layers)


@torch.no_grad()
def evaluate(model: SNN | ConvSNN, split: Split, events: bool, config: SpikingConfig, mode: str
             ) -> tuple[float, dict[str, float]]:
    """Accuracy and spike statistics in ``mode``; the rate code drawn from a fixed seed, so
    every epoch and neuron sees the same encoded inputs."""
    model.set_mode(mode)  # type: ignore[arg-type]
    gen = torch.Generator().manual_seed(12345)
    correct, stats = 0, []
    for i in range(0, len(split.y), 512):
        logits = model(inputs(split.x[i:i + 512], events, config, gen))
        correct += int((logits.argmax(1) == split.y[i:i + 512]).sum())
        stats.append(model.spike_stats)
    model.set_mode("soft")
    return correct / len(split.y), {k: float(np.mean([s[k] for s in stats])) for k in stats[0]}


# ----------------------------------------------------------------------------- loop
def train_loop(config: SpikingConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.train.threads)
    d, t = config.data, config.train
    train, test, classes, events = load(d.name, d.path, d.timesteps, d.events_train,
                                        d.events_test, d.normalize_then_clamp)
    generated = is_generated(d.name, d.path)
    order = torch.randperm(len(train.y), generator=torch.Generator().manual_seed(t.seed))
    n_val = max(1, round(d.val_fraction * len(order)))
    val = Split(train.x[order[:n_val]], train.y[order[:n_val]])
    fit = Split(train.x[order[n_val:]], train.y[order[n_val:]])
    torch.manual_seed(t.seed)
    model = build(config, train.x.shape[-1], classes)
    opt = torch.optim.Adam(model.parameters(), lr=t.lr)
    gen = torch.Generator().manual_seed(t.seed + 1)
    best: dict[str, Any] = {m: {"val": -1.0, "test": 0.0, "epoch": 0} for m in MODES}
    best["best_test"] = 0.0
    state = ctx.load_checkpoint()
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["generator"])
        torch.set_rng_state(state["torch"])
        best = state["best"]
    cadence = ctx.cadence(t.epochs, t.eval_every, t.checkpoint_every)
    for epoch in cadence:
        perm = torch.randperm(len(fit.y))
        losses = []
        for i in range(0, len(perm), t.batch_size):
            idx = perm[i:i + t.batch_size]
            logits = model(inputs(fit.x[idx], events, config, gen))
            loss = torch.nn.functional.cross_entropy(logits, fit.y[idx])
            loss = loss + t.sparsity_lambda * model.rate
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        metrics: dict[str, float] = {"train/loss": float(np.mean(losses)),
                                     "train/epoch": float(epoch), "data/chance": 1 / classes,
                                     "data/generated": float(generated)}
        for mode in MODES:
            acc_val, _ = evaluate(model, val, events, config, mode)
            acc_test, spikes = evaluate(model, test, events, config, mode)
            if acc_val > best[mode]["val"]:
                best[mode] = {"val": acc_val, "test": acc_test, "epoch": epoch, **spikes}
            if mode == "soft":
                best["best_test"] = max(best["best_test"], acc_test)
                metrics["eval/acc_now"] = acc_test
        suffix = {"soft": "", "hard": "_hard", "tropical": "_tropical"}
        for mode in MODES:
            metrics[f"eval/acc{suffix[mode]}"] = best[mode]["test"]
            metrics[f"eval/val_acc{suffix[mode]}"] = best[mode]["val"]
        metrics["eval/epoch"] = float(best["soft"]["epoch"])
        metrics["eval/acc_best_test"] = best["best_test"]
        for k in ("spike_rate_soft", "spike_rate_hard", "binary_fraction", "synops"):
            metrics[f"eval/{k}"] = best["soft"][k]
        metrics.update({f"train/{k}": v for k, v in model.scales().items()})
        if cadence.evaluates(epoch):
            checkpoint = ({"model": model.state_dict(), "optimizer": opt.state_dict(),
                           "generator": gen.get_state(), "torch": torch.get_rng_state(),
                           "best": best} if cadence.checkpoints(epoch) else None)
            ctx.report(metrics, checkpoint=checkpoint, step=epoch)


STUDY = Study(
    name="spiking_nets",
    description="UltraLIF (ultradiscretized LIF) vs surrogate-gradient LIF, soft and hard, "
                "on static and temporal event data",
    config_cls=SpikingConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/acc", "max", "test accuracy at the best-validation epoch, soft forward"),
        Metric("eval/acc_hard", "max", "the same with Heaviside spikes (epoch by hard val)"),
        Metric("eval/acc_best_test", "max", "the authors' protocol: best test accuracy over "
               "epochs (reported, never in a claim)"),
        Metric("eval/spike_rate_soft", "min", "mean spike value on test (soft)"),
    ),
    analyze=analyze,
    check_data=check_data,
    data_commands=DATA_COMMANDS,
)
