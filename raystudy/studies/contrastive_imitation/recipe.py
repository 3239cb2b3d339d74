"""Does learning from good *and* bad demonstrations beat imitating everything? (DualCOIL)

Paper: Hoang, Mai, Varakantham, Verma, "DualCOIL: Offline Imitation Learning from
Contrasting Demonstrations" (ICML 2026; arXiv 2505.21182 as ContraDICE). Claim: with one
expert episode, ten undesirable ones and a large unlabeled mix, minimising
KL(d || d_good) - alpha KL(d || d_bad) beats BC on all the data and the baselines that
use only one kind of label (DemoDICE, DWBC: good; SafeDICE: bad).

Launch::

    raystudy sweep contrastive_imitation --profile quick      # generated Pendulum data, 2 CPUs
    raystudy sweep contrastive_imitation --profile paper --set data.root=/data/d4rl \\
        --gpus-per-worker 1 --map-tasks 2

Each trial trains one method (``method``) on one mix (``data.mix``) with one seed:
``train.disc_steps`` discriminator-only updates for the methods that pre-train one, then
``train.steps`` gradient steps, evaluating every ``train.eval_every`` steps with
deterministic rollouts in the task's gymnasium env (spread over ``--map-tasks`` Ray
tasks by ``ctx.map``). ``analyze`` tabulates the normalised score (mean +- std over
seeds) per method and mix, plots the learning curves, and says whether DualCOIL is
ahead of BC-on-all and level with the best baseline. Beside this recipe: ``config.py``
(the config and the names it chooses from), ``data.py`` (which sets each method reads,
where episodes come from, the data check, ``raystudy data make-offline-rl``) and
``analysis.py`` (the report).
"""


from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raystudy import (
    Metric,
    Study,
    TrialContext,
)
from raystudy.algorithms.imitation import (
    MixSpec,
    d4rl_reference,
    sac,
    sources,
)
from raystudy.algorithms.imitation.bc import BC, BCConfig
from raystudy.algorithms.imitation.demodice import DemoDICE, DemoDICEConfig
from raystudy.algorithms.imitation.dualcoil import DualCOIL
from raystudy.algorithms.imitation.dwbc import DWBC, DWBCConfig
from raystudy.algorithms.imitation.nets import EnvPolicy, Learner, average_gradients
from raystudy.algorithms.imitation.rollouts import EvalItem, evaluate_episodes
from raystudy.algorithms.imitation.safedice import SafeDICE, SafeDICEConfig
from raystudy.studies.contrastive_imitation.analysis import analyze
from raystudy.studies.contrastive_imitation.config import (
    ORACLE,
    SAC,
    ContrastiveImitationConfig,
    dualcoil_settings,
    reference_returns,
)
from raystudy.studies.contrastive_imitation.data import (
    DATA_COMMANDS,
    check_data,
    source_locations,
)

EVAL_SEED = 900_000  # evaluation resets: the same for every trial, apart from the data's
METHOD_SOURCES = {"dualcoil": DualCOIL.sources, "bc_good": ("good",), "bc_all": ("all",),
                  ORACLE: ("oracle",), "demodice": DemoDICE.sources,
                  "safedice": SafeDICE.sources, "dwbc": DWBC.sources, SAC: ()}
"""The offline sets each method reads."""


# ----------------------------------------------------------------------------- derived
def safedice_alpha(config: ContrastiveImitationConfig, record: dict[str, Any]) -> float:
    """baselines.safedice_alpha if set, else the unlabeled set's undesirable share."""
    alpha = config.baselines.safedice_alpha
    return alpha if alpha is not None else record["unlabeled"]["undesirable_transition_fraction"]


def make_learner(config: ContrastiveImitationConfig, obs_dim: int, act_dim: int,
                 grad_hook=None, record: dict[str, Any] | None = None) -> Learner:
    """The method's learner; ``record`` (the composed data's) gives SafeDICE's alpha."""
    t, b, m = config.train, config.baselines, config.method
    hidden = (t.hidden,) * t.layers
    if m == "dualcoil":
        return DualCOIL(obs_dim, act_dim, dualcoil_settings(config)[0], grad_hook)
    if m in ("bc_good", "bc_all", ORACLE):
        return BC(obs_dim, act_dim, m[3:], BCConfig(lr=t.lr, hidden=hidden), grad_hook)
    if m == "demodice":
        return DemoDICE(obs_dim, act_dim, DemoDICEConfig(
            alpha=b.demodice_alpha, gamma=t.gamma, lr=t.lr, hidden=hidden,
            pretrain_steps=t.disc_steps), grad_hook)
    if m == "safedice":
        return SafeDICE(obs_dim, act_dim, SafeDICEConfig(
            alpha=safedice_alpha(config, record or {}), gamma=t.gamma, lr=t.lr, hidden=hidden,
            pretrain_steps=t.disc_steps), grad_hook)
    return DWBC(obs_dim, act_dim, DWBCConfig(alpha=b.dwbc_alpha, eta=b.dwbc_eta, lr=t.lr,
                                             hidden=hidden), grad_hook)


# ----------------------------------------------------------------------------- data
def _data_key(config: ContrastiveImitationConfig) -> str:
    return json.dumps({"data": dataclasses.asdict(config.data),
                       "dualcoil": dataclasses.asdict(config.dualcoil)}, sort_keys=True)


@functools.lru_cache(maxsize=4)
def _offline_data(config: ContrastiveImitationConfig) -> sources.OfflineData:
    data = config.data
    reference = reference_returns(data.reference) if data.reference else None
    return sources.assemble(data.source, data.task, source_locations(data),
                            MixSpec.parse(data.mix), data.overlap, reference,
                            dualcoil_settings(config)[1], data.bad_unit, data.slice_length)


def offline_data(config: ContrastiveImitationConfig) -> sources.OfflineData:
    """The trial's data, built once per process for each distinct data config (the cache
    keys on a config that keeps only the fields the data depends on)."""
    return _offline_data(ContrastiveImitationConfig(data=config.data, dualcoil=config.dualcoil))


def mix_folder(config: ContrastiveImitationConfig) -> Path:
    """Where the composed sets are written for Ray Data (one folder per data config)."""
    digest = hashlib.sha1(_data_key(config).encode()).hexdigest()[:16]
    return Path(config.data.cache_dir).expanduser() / "mixes" / digest


def ray_datasets(config: ContrastiveImitationConfig) -> dict[str, Any]:
    """The method's sets as lazy Ray Datasets of normalised ``[s | a | r | s' | terminal]``
    rows, and the initial states.

    Read by Ray Train workers (``--workers N``) from their shards; a run in one process
    samples from memory instead. The files and ``meta.json`` (normalisation, reference
    returns, the mix) go to ``mix_folder``, which every node must be able to read.
    """
    import ray.data

    if config.method == SAC:
        return {}
    folder = mix_folder(config)
    if not folder.is_dir():
        sources.save_offline_data(offline_data(config), folder)
    return {name: ray.data.read_numpy(str(folder / f"{name}.npy"))
            for name in (*METHOD_SOURCES[config.method], "initial")}


def shard_data(config: ContrastiveImitationConfig, ctx: TrialContext) -> sources.OfflineData:
    """This Ray Train worker's shard of every set (``iter_torch_batches``)."""
    def rows(name: str) -> np.ndarray:
        parts = [b["data"] for b in ctx.dataset(name).iter_torch_batches(batch_size=65536)]
        return torch.cat(parts).numpy()

    return sources.load_offline_data(mix_folder(config), rows, METHOD_SOURCES[config.method])


# ----------------------------------------------------------------------------- loop
def evaluate(config: ContrastiveImitationConfig, ctx: TrialContext, data: sources.OfflineData,
             learner: Learner) -> tuple[float, float]:
    """Mean and std of the return over the evaluation episodes (split over ranks, map tasks)."""
    seeds = list(range(EVAL_SEED, EVAL_SEED + config.train.eval_episodes))[ctx.rank::ctx.world_size]
    state = {k: v.detach().cpu() for k, v in learner.actor.state_dict().items()}
    obs_dim, act_dim = len(data.shift), len(data.low)
    make = functools.partial(EnvPolicy, state, obs_dim, act_dim,
                             (config.train.hidden,) * config.train.layers, data.shift,
                             data.scale, data.low, data.high)
    values = ctx.map_chunks(functools.partial(evaluate_seeds, data.env_id, make), seeds)
    n = config.train.eval_episodes
    total = ctx.all_reduce_sum(float(sum(values)))
    squares = ctx.all_reduce_sum(float(sum(v * v for v in values)))
    mean = total / n
    return mean, math.sqrt(max(squares / n - mean * mean, 0.0))


def evaluate_seeds(env_id: str, make_policy: Any, seeds: list[int]) -> list[float]:
    """Returns of the episodes reset with ``seeds`` (one ``ctx.map_chunks`` chunk)."""
    return evaluate_episodes(EvalItem(env_id, tuple(seeds), make_policy))


def train_expert(config: ContrastiveImitationConfig, ctx: TrialContext) -> None:
    """method=sac: train the task's SAC expert; expert.pt/medium.pt go to data.expert_dir."""
    t, reference = config.train, d4rl_reference(config.data.task)
    if reference is None:  # validate() refuses such a task; a third party's call may not
        raise ValueError(f"method=sac: no D4RL reference returns for {config.data.task}")
    args = sac.Args(env_id=sources.env_id(config.data.task), total_timesteps=t.steps,
                    seed=t.seed, eval_every=t.eval_every, eval_episodes=t.eval_episodes,
                    out_dir=config.data.expert_dir, device=str(ctx.device), threads=t.threads)
    sac.train(args, report=lambda m: ctx.report(
        {"eval/score": reference.score(m["eval/return"]), **m}))


def trial_data(config: ContrastiveImitationConfig, ctx: TrialContext) -> sources.OfflineData:
    """The trial's sets: a Ray Train worker reads its shard of the Ray Datasets, one process
    reads the files."""
    return shard_data(config, ctx) if ctx.world_size > 1 else offline_data(config)


def training_state(config: ContrastiveImitationConfig, ctx: TrialContext,
                   data: sources.OfflineData, state: dict[str, Any] | None
                   ) -> tuple[Learner, sources.Sampler]:
    """The method's learner on the device (gradients averaged over the workers) and the
    sampler of its minibatches: fresh, or restored from the checkpoint ``state``."""
    hook = average_gradients(ctx.world_size) if ctx.world_size > 1 else None
    learner = make_learner(config, len(data.shift), len(data.low), hook, data.record)
    for module in learner.modules.values():
        module.to(ctx.device)
    if isinstance(learner, SafeDICE):  # its reward is standardised over the unlabeled set
        unlabeled = data.sets["unlabeled"]
        learner.use_unlabeled(torch.as_tensor(np.concatenate(
            [unlabeled.observations, unlabeled.actions], axis=1), dtype=torch.float32))
    sampler = sources.Sampler(data, config.train.seed * 1000 + ctx.rank, ctx.device)
    if state is not None:
        learner.load_state_dict(state["learner"])
        sampler.rng.bit_generator.state = state["rng"]
    return learner, sampler


def train_step(learner: Learner, sampler: sources.Sampler, names: tuple[str, ...],
               batch_size: int, sums: dict[str, list[float]]) -> int:
    """One update of the learner on a minibatch of its sets, its losses appended to ``sums``;
    the training step it ends (<= 0 while a discriminator pre-trains)."""
    for key, value in learner.update(sampler.batch(names, batch_size)).items():
        sums.setdefault(key, []).append(value)
    return learner.steps - learner.pretrain_steps


@dataclasses.dataclass(frozen=True)
class Throughput:
    """Gradient steps per second since this run (or this leg of a resumed one) started."""

    started: float
    first_steps: int

    def rate(self, steps: int) -> float:
        """Steps per second up to now, the learner having reached ``steps``."""
        return (steps - self.first_steps) / (time.perf_counter() - self.started)


def data_report(data: sources.OfflineData) -> dict[str, float]:
    """``data/*``: the composed sets' episode and transition counts, the unlabeled set's
    expert share and the reference returns the score is normalised by."""
    record = data.record
    return {"data/good_episodes": record["good"]["episodes"],
            "data/bad_episodes": record["bad"]["episodes"],
            "data/bad_transitions": record["bad"]["transitions"],
            "data/unlabeled_episodes": record["unlabeled"]["episodes"],
            "data/unlabeled_transitions": record["unlabeled"]["transitions"],
            "data/unlabeled_expert_fraction": record["unlabeled"]["expert_transition_fraction"],
            "data/ref_random": data.reference.random,
            "data/ref_expert": data.reference.expert}


def evaluation_report(config: ContrastiveImitationConfig, ctx: TrialContext,
                      data: sources.OfflineData, learner: Learner, step: int,
                      sums: dict[str, list[float]], throughput: Throughput) -> dict[str, float]:
    """The report of an evaluation step: score and return of the learner's rollouts (NaN
    once a loss is not finite), the step counts and rate, the interval's mean losses
    (averaged over the workers) and ``data/*``."""
    mean, std = evaluate(config, ctx, data, learner)
    losses = {k: float(np.mean(v)) for k, v in sums.items()}
    if not all(math.isfinite(v) for v in losses.values()):
        mean = math.nan
    return {"eval/score": data.reference.score(mean), "eval/return": mean,
            "eval/return_std": std, "train/step": step, "train/grad_steps": learner.steps,
            "train/steps_per_s": throughput.rate(learner.steps),
            **{k: ctx.all_reduce_mean(v) for k, v in losses.items()}, **data_report(data)}


def train_loop(config: ContrastiveImitationConfig, ctx: TrialContext) -> None:
    """Train the method on its sets (its discriminator first, where it pre-trains one),
    evaluate by rollouts and report on the cadence (``method=sac``: train the expert)."""
    train = config.train
    if config.method == SAC:
        return train_expert(config, ctx)
    torch.set_num_threads(train.threads)
    torch.manual_seed(train.seed)  # the same initial networks on every rank
    data = trial_data(config, ctx)
    # The learner counts its own steps (pretraining included); the cadence says which
    # training steps evaluate and checkpoint.
    cadence = ctx.cadence(train.steps, eval_every=train.eval_every,
                          checkpoint_every=train.checkpoint_every)
    learner, sampler = training_state(config, ctx, data, ctx.load_checkpoint())
    names = tuple(dict.fromkeys(learner.sources))
    total = learner.pretrain_steps + train.steps
    sums: dict[str, list[float]] = {}
    throughput = Throughput(time.perf_counter(), learner.steps)
    while learner.steps < total:
        step = train_step(learner, sampler, names, train.batch_size, sums)
        if step <= 0 or not cadence.evaluates(step):
            continue
        report = evaluation_report(config, ctx, data, learner, step, sums, throughput)
        checkpoint = ({"learner": learner.state_dict(), "rng": sampler.rng.bit_generator.state}
                      if cadence.checkpoints(step) else None)
        ctx.report(report, checkpoint=checkpoint, step=step)
        sums = {}


STUDY = Study(
    name="contrastive_imitation",
    description="Offline imitation from good + bad + unlabeled demonstrations: DualCOIL "
                "vs BC, DemoDICE, SafeDICE, DWBC",
    config_cls=ContrastiveImitationConfig,
    train_loop=train_loop,
    metrics=(
        Metric("eval/score", "max", "normalised score of the last evaluation (0 random, "
                                    "100 expert)"),
        Metric("eval/return", "max", "mean undiscounted return of the last evaluation"),
        Metric("train/actor_loss", "min", "mean actor loss over the last interval"),
    ),
    analyze=analyze,
    datasets=ray_datasets,
    check_data=check_data,
    data_commands=DATA_COMMANDS,
)
