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
ahead of BC-on-all and level with the best baseline.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from raystudy import Analysis, Metric, RunResults, Study, Table, TrialContext
from raystudy.algorithms.imitation import (
    MixSpec,
    ReferenceReturns,
    comparison,
    d4rl_reference,
    sac,
    sources,
)
from raystudy.algorithms.imitation.bc import BC, BCConfig
from raystudy.algorithms.imitation.demodice import DemoDICE, DemoDICEConfig
from raystudy.algorithms.imitation.dualcoil import PAPER_CONSTANTS, DualCOIL, DualCOILConfig
from raystudy.algorithms.imitation.dwbc import DWBC, DWBCConfig
from raystudy.algorithms.imitation.nets import EnvPolicy, Learner, average_gradients
from raystudy.algorithms.imitation.rollouts import EvalItem, evaluate_episodes
from raystudy.algorithms.imitation.safedice import SafeDICE, SafeDICEConfig
from raystudy.errors import DataError
from raystudy.platform.config import apply_overrides, flatten_mapping

METHODS = ("dualcoil", "bc_good", "bc_all", "demodice", "safedice", "dwbc")
ORACLE = "bc_oracle"  # a reference, not a method: BC on the unlabeled expert episodes (hidden)
SAC = "sac"  # not an imitation method: trains the SAC expert of a MuJoCo task (--profile sac)
METHOD_SOURCES = {"dualcoil": DualCOIL.sources, "bc_good": ("good",), "bc_all": ("all",),
                  ORACLE: ("oracle",), "demodice": DemoDICE.sources,
                  "safedice": SafeDICE.sources, "dwbc": DWBC.sources, SAC: ()}
EVAL_SEED = 900_000  # evaluation resets: the same for every trial, apart from the data's


@dataclass
class DataConfig:
    source: str = "generate"
    """generate (roll the task's policies out here) | d4rl (HDF5 files) | minari (local store)."""
    task: str = "pendulum"
    """pendulum, invertedpendulum, hopper, halfcheetah, walker2d, ant (env: sources.TASKS)."""
    mix: str = "random/1/10/30"
    """SOURCE/GOOD/BAD/UNLABELED_EXPERT[/UNLABELED_BAD]: whole episodes per set."""
    overlap: bool = True
    """Good/bad episodes are also the first unlabeled ones, as in the public code."""
    root: str = ""
    """d4rl: folder of D4RL's files, {task}_{expert,random,medium}-v2.hdf5."""
    expert: str = ""
    """Expert episodes: a file (d4rl) or Minari id; '' = derived from task."""
    random: str = ""
    """Random episodes: a file (d4rl) or Minari id; '' = derived from task."""
    medium: str = ""
    """Medium episodes: a file (d4rl) or Minari id; '' = derived from task."""
    reference: str = ""
    """'RANDOM,EXPERT' returns for the normalised score; '' = from the data."""
    cache_dir: str = "~/.cache/raystudy/contrastive_imitation"
    """generate: where the generated episodes are written once and reused."""
    expert_episodes: int = 40
    """generate: expert episodes rolled out."""
    random_episodes: int = 1000
    """generate: random episodes (the whole random source, as D4RL's 1M-step files)."""
    medium_episodes: int = 1000
    """generate: medium episodes."""
    expert_dir: str = ""
    """generate on MuJoCo tasks: folder with the SAC trainer's expert.pt and medium.pt."""
    reference_episodes: int = 100
    """generate: episodes of the random and expert policy for the reference returns."""
    state_norm: bool = True
    """Normalise states by the unlabeled set's mean/std (overridden by dualcoil.preset)."""


@dataclass
class DualCOILParams:
    preset: str = "none"
    """auto (paper constants for task + mix source), a PAPER_CONSTANTS key, or none."""
    alpha: float = 0.6
    """Repulsion from the bad data, in [0, 1)."""
    c: float = 3.0
    """Weight scale: good +c, bad -c alpha."""
    beta: float = 20.0
    """Gumbel value-loss temperature."""
    actor_q_scale: float = 2.0
    """Actor weights exp(actor_q_scale / beta * Q)."""
    weight_decay: float = 0.01
    """L2 of the actor's and discriminators' Adam."""
    tau: float = 0.005
    """Target critic step."""
    extraction: str = "q"
    """q (the paper's Q-weighted BC) | advantage (the public code's optional variant)."""


@dataclass
class BaselineParams:
    demodice_alpha: float = 0.05
    """DemoDICE's KL(d || d_U) weight (its paper's 0.05)."""
    safedice_alpha: float = 0.5
    """SafeDICE's assumed share of bad data in the unlabeled set."""
    dwbc_alpha: float = 10.0
    """DWBC's plain-BC weight (its code's default)."""
    dwbc_eta: float = 0.5
    """DWBC's positive-unlabeled prior."""


@dataclass
class TrainConfig:
    steps: int = 6000
    """Gradient steps after the discriminator pre-training."""
    disc_steps: int = 1000
    """Discriminator-only steps (DualCOIL, DemoDICE, SafeDICE)."""
    batch_size: int = 256
    """Transitions per source per step (the paper's 1024)."""
    hidden: int = 128
    """Width of the hidden layers of every network (the paper's 256)."""
    layers: int = 2
    """Hidden layers of every network."""
    lr: float = 3e-4
    """Learning rate of every network."""
    gamma: float = 0.99
    """Discount."""
    eval_every: int = 500
    """Gradient steps between evaluations (and at the end)."""
    eval_episodes: int = 10
    """Deterministic evaluation episodes per evaluation."""
    seed: int = 0
    """Seed of the networks and the minibatches."""
    threads: int = 1
    """torch CPU threads per trial."""
    checkpoint_every: int = 0
    """Evaluations between checkpoints (0: only the last step's)."""


@dataclass
class ContrastiveImitationConfig:
    method: str = "dualcoil"
    """dualcoil | bc_good | bc_all | demodice | safedice | dwbc | bc_oracle | sac."""
    data: DataConfig = field(default_factory=DataConfig)
    dualcoil: DualCOILParams = field(default_factory=DualCOILParams)
    baselines: BaselineParams = field(default_factory=BaselineParams)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        if self.method not in (*METHODS, ORACLE, SAC):
            raise ValueError(f"method={self.method!r} is not one of {', '.join(METHODS)} "
                             f"(or {ORACLE}: the hidden-label reference; {SAC}: train a "
                             "MuJoCo expert)")
        d, t = self.data, self.train
        if self.method == SAC and d4rl_reference(d.task) is None:
            raise ValueError(f"method=sac trains MuJoCo experts; data.task={d.task!r} is not "
                             "one of hopper, halfcheetah, walker2d, ant")
        if d.source not in sources.SOURCES:
            raise ValueError(f"data.source={d.source!r} is not one of {', '.join(sources.SOURCES)}")
        sources.env_id(d.task)
        try:
            MixSpec.parse(d.mix)
            dualcoil_settings(self)
        except ValueError as exc:
            raise ValueError(f"{'data.mix' if 'mix' in str(exc) else 'dualcoil'}: {exc}") from None
        if d.reference:
            parse_reference(d.reference)
        if min(t.steps, t.batch_size, t.hidden, t.layers, t.eval_every, t.eval_episodes,
               t.threads, d.expert_episodes, d.random_episodes, d.medium_episodes,
               d.reference_episodes) < 1:
            raise ValueError("train.steps/batch_size/hidden/layers/eval_every/eval_episodes/"
                             "threads and data.*_episodes must be >= 1")
        if t.disc_steps < 0 or t.checkpoint_every < 0:
            raise ValueError("train.disc_steps and train.checkpoint_every must be >= 0")
        if not (t.lr > 0 and math.isfinite(t.lr)) or not 0 < t.gamma < 1:
            raise ValueError("train.lr must be > 0 and train.gamma in (0, 1)")
        b = self.baselines
        if not 0 < b.safedice_alpha < 1 or b.demodice_alpha < 0 or not 0 < b.dwbc_eta < 1:
            raise ValueError("baselines.safedice_alpha and dwbc_eta must lie in (0, 1), "
                             "demodice_alpha >= 0")


# ----------------------------------------------------------------------------- derived
def parse_reference(text: str) -> ReferenceReturns:
    try:
        low, high = (float(v) for v in text.split(","))
        return ReferenceReturns(low, high, source="data.reference")
    except ValueError as exc:
        raise ValueError(f"data.reference={text!r}: expected 'RANDOM,EXPERT' returns "
                         f"({exc})") from None


def dualcoil_settings(config: ContrastiveImitationConfig) -> tuple[DualCOILConfig, bool]:
    """DualCOIL's constants and state normalisation (derived: preset or the fields)."""
    p, t = config.dualcoil, config.train
    preset = p.preset
    if preset == "auto":
        preset = f"{config.data.task}-{MixSpec.parse(config.data.mix).bad_source}"
        preset = preset if preset in PAPER_CONSTANTS else "none"
    if preset == "none":
        values = (p.weight_decay, p.actor_q_scale, p.beta, p.c, p.alpha, p.tau,
                  config.data.state_norm)
    elif preset in PAPER_CONSTANTS:
        values = PAPER_CONSTANTS[preset]
    else:
        raise ValueError(f"preset {preset!r} is not auto, none or one of "
                         f"{', '.join(PAPER_CONSTANTS)}")
    wd, q_scale, beta, c, alpha, tau, norm = values
    return DualCOILConfig(alpha=alpha, c=c, beta=beta, actor_q_scale=q_scale, gamma=t.gamma,
                          tau=tau, lr=t.lr, weight_decay=wd, hidden=(t.hidden,) * t.layers,
                          pretrain_steps=t.disc_steps, extraction=p.extraction), norm


def make_learner(config: ContrastiveImitationConfig, obs_dim: int, act_dim: int,
                 grad_hook=None) -> Learner:
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
            alpha=b.safedice_alpha, gamma=t.gamma, lr=t.lr, hidden=hidden,
            pretrain_steps=t.disc_steps), grad_hook)
    return DWBC(obs_dim, act_dim, DWBCConfig(alpha=b.dwbc_alpha, eta=b.dwbc_eta, lr=t.lr,
                                             hidden=hidden), grad_hook)


# ----------------------------------------------------------------------------- data
def source_locations(data: DataConfig) -> dict[str, str]:
    """Where each kind's episodes are read from (files, Minari ids or generated files)."""
    kinds = ("expert", MixSpec.parse(data.mix).bad_source)
    if data.source == "generate":
        counts = {"expert": data.expert_episodes, "random": data.random_episodes,
                  "medium": data.medium_episodes}
        return {k: str(sources.generated_file(data.cache_dir, data.task, k, counts[k],
                                              data.expert_dir, data.reference_episodes))
                for k in kinds}
    explicit = {"expert": data.expert, "random": data.random, "medium": data.medium}
    return {k: sources.locate(data.source, data.task, k, data.root, explicit) for k in kinds}


def check_data(config: ContrastiveImitationConfig) -> None:
    """On the driver: every file exists and fits the task's env; generate missing data."""
    if config.method == SAC:
        return  # trains an expert: reads no data
    try:
        where = source_locations(config.data)  # generates (once) what a generate source lacks
    except (ValueError, FileNotFoundError) as exc:
        raise DataError(f"data.source={config.data.source}: {exc}") from None
    if config.data.source != "generate":
        sources.check_sources(config.data.source, config.data.task, where)


def _data_key(config: ContrastiveImitationConfig) -> str:
    return json.dumps({"data": dataclasses.asdict(config.data),
                       "dualcoil": dataclasses.asdict(config.dualcoil)}, sort_keys=True)


@functools.lru_cache(maxsize=4)
def _offline_data(key: str) -> sources.OfflineData:
    config = apply_overrides(ContrastiveImitationConfig(), flatten_mapping(json.loads(key)))
    data = config.data
    reference = parse_reference(data.reference) if data.reference else None
    return sources.assemble(data.source, data.task, source_locations(data),
                            MixSpec.parse(data.mix), data.overlap, reference,
                            dualcoil_settings(config)[1])


def offline_data(config: ContrastiveImitationConfig) -> sources.OfflineData:
    """The trial's data, built once per process for each distinct data config."""
    return _offline_data(_data_key(config))


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
    args = sac.Args(env_id=sources.env_id(config.data.task), total_timesteps=t.steps,
                    seed=t.seed, eval_every=t.eval_every, eval_episodes=t.eval_episodes,
                    out_dir=config.data.expert_dir, device=str(ctx.device), threads=t.threads)
    sac.train(args, report=lambda m: ctx.report(
        {"eval/score": reference.score(m["eval/return"]), **m}))


def train_loop(config: ContrastiveImitationConfig, ctx: TrialContext) -> None:
    t = config.train
    if config.method == SAC:
        return train_expert(config, ctx)
    torch.set_num_threads(t.threads)
    torch.manual_seed(t.seed)  # the same initial networks on every rank
    # Ray Train workers read their shard of the Ray Datasets; one process reads the files.
    data = shard_data(config, ctx) if ctx.world_size > 1 else offline_data(config)
    hook = average_gradients(ctx.world_size) if ctx.world_size > 1 else None
    learner = make_learner(config, len(data.shift), len(data.low), hook)
    for module in learner.modules.values():
        module.to(ctx.device)
    sampler = sources.Sampler(data, t.seed * 1000 + ctx.rank, ctx.device)
    # The learner counts its own steps (pretraining included); the cadence says which
    # training steps evaluate and checkpoint.
    cadence = ctx.cadence(t.steps, eval_every=t.eval_every, checkpoint_every=t.checkpoint_every)
    state = ctx.load_checkpoint()
    if state is not None:
        learner.load_state_dict(state["learner"])
        sampler.rng.bit_generator.state = state["rng"]
    names = tuple(dict.fromkeys(learner.sources))
    total = learner.pretrain_steps + t.steps
    sums: dict[str, list[float]] = {}
    started, first = time.perf_counter(), learner.steps
    while learner.steps < total:
        for key, value in learner.update(sampler.batch(names, t.batch_size)).items():
            sums.setdefault(key, []).append(value)
        step = learner.steps - learner.pretrain_steps
        if step <= 0 or not cadence.evaluates(step):
            continue
        mean, std = evaluate(config, ctx, data, learner)
        losses = {k: float(np.mean(v)) for k, v in sums.items()}
        if not all(math.isfinite(v) for v in losses.values()):
            mean = math.nan
        checkpoint = None
        if cadence.checkpoints(step):
            checkpoint = {"learner": learner.state_dict(), "rng": sampler.rng.bit_generator.state}
        record = data.record
        ctx.report({"eval/score": data.reference.score(mean), "eval/return": mean,
                    "eval/return_std": std, "train/step": step, "train/grad_steps": learner.steps,
                    "train/steps_per_s": (learner.steps - first) / (time.perf_counter() - started),
                    **{k: ctx.all_reduce_mean(v) for k, v in losses.items()},
                    "data/good_episodes": record["good"]["episodes"],
                    "data/bad_episodes": record["bad"]["episodes"],
                    "data/unlabeled_episodes": record["unlabeled"]["episodes"],
                    "data/unlabeled_transitions": record["unlabeled"]["transitions"],
                    "data/unlabeled_expert_fraction":
                        record["unlabeled"]["expert_transition_fraction"],
                    "data/ref_random": data.reference.random,
                    "data/ref_expert": data.reference.expert}, checkpoint=checkpoint,
                   step=step)
        sums = {}


# ----------------------------------------------------------------------------- report
def analyze(results: RunResults, figures_dir: Path) -> Analysis:
    """Score table (mean +- std over seeds), learning curves, the claim, the data mixes."""
    scores: dict[str, dict[str, list[float]]] = {}
    curves: dict[str, dict[str, list]] = {}
    mixes: dict[str, dict[str, float]] = {}
    diverged: dict[tuple[str, str], int] = {}
    for trial in results.trials:
        if trial.status not in ("finished", "diverged"):
            continue
        mix, method = str(trial.config["data.mix"]), str(trial.config["method"])
        if method == SAC:
            continue  # experts, not imitation: in the trials table only
        if trial.status == "diverged":
            diverged[mix, method] = diverged.get((mix, method), 0) + 1
            continue
        scores.setdefault(mix, {}).setdefault(method, []).append(trial.metric("eval/score"))
        curves.setdefault(mix, {}).setdefault(method, []).append(
            [(row["train/step"], row["eval/score"]) for row in trial.history
             if "eval/score" in row and math.isfinite(row["eval/score"])])
        mixes[mix] = {k[5:]: v for k, v in trial.last.items() if k.startswith("data/")}
    if not scores:
        return Analysis(notes=["no finished trials yet: nothing to tabulate"])
    rows, summary, notes = [], {"scores": {}, "claim": {}, "mixes": mixes}, []
    for mix in sorted(scores):
        ranked = sorted(scores[mix], key=lambda m: -comparison.mean_std(scores[mix][m])[0])
        for method in ranked:
            mean, std = comparison.mean_std(scores[mix][method])
            rows.append([mix, method, f"{mean:.1f} +- {std:.1f}", len(scores[mix][method]),
                         diverged.get((mix, method), 0)])
            summary["scores"].setdefault(mix, {})[method] = {
                "mean": mean, "std": std, "values": scores[mix][method]}
        verdict = summary["claim"][mix] = comparison.claim(scores[mix])
        if verdict:
            best = verdict["best_baseline"]
            notes.append(
                f"mix {mix}: DualCOIL {verdict['dualcoil']:.1f} vs BC-on-all "
                f"{verdict['bc_all']:.1f} "
                f"({'ahead' if verdict['ahead_of_bc_all'] else 'NOT ahead'})"
                f"; best other method {best} {verdict['best_baseline_score']:.1f} "
                f"({'level or ahead' if verdict.get('level_with_best') else 'DualCOIL behind'})")
    table = Table("Normalised score", ["mix", "method", "score (mean +- std)", "seeds",
                                       "diverged"], rows,
                  note="final evaluation of each trial; 100 (R - R_random) / (R_expert - "
                       "R_random); std over seeds (ddof 0); ranked within each mix; "
                       "bc_oracle uses hidden labels (a reference, not a method)")
    data_rows = [[mix, m.get("good_episodes"), m.get("bad_episodes"),
                  m.get("unlabeled_episodes"), m.get("unlabeled_transitions"),
                  m.get("unlabeled_expert_fraction"), m.get("ref_random"), m.get("ref_expert")]
                 for mix, m in sorted(mixes.items())]
    data_table = Table("Data mixes", ["mix", "good episodes", "bad episodes",
                                      "unlabeled episodes", "unlabeled transitions",
                                      "expert share of unlabeled", "R_random", "R_expert"],
                       data_rows, note="whole episodes; R_random/R_expert: reference returns")
    diagnostics = dualcoil_diagnostics(results)
    figures = [
        ("learning curves", comparison.plot_learning_curves(curves, figures_dir / "curves.png")),
        ("final scores", comparison.plot_final_scores(scores, figures_dir / "scores.png")),
    ]
    summary["dualcoil_diagnostics"] = {row[0]: dict(zip(DIAGNOSTICS, row[1:], strict=True))
                                       for row in diagnostics.rows}
    return Analysis(tables=[table, data_table, diagnostics], figures=figures, summary=summary,
                    notes=notes)


DIAGNOSTICS = ("train/w_unlabeled_expert", "train/w_unlabeled_other",
               "train/q_unlabeled_expert", "train/q_unlabeled_other",
               "train/actor_expert_share", "data/unlabeled_expert_fraction")


def dualcoil_diagnostics(results: RunResults) -> Table:
    """What DualCOIL's weights do with the unlabeled set's hidden expert/other parts."""
    values: dict[str, list[list[float]]] = {}
    for trial in results.trials:
        if trial.status == "finished" and trial.config["method"] == "dualcoil":
            values.setdefault(str(trial.config["data.mix"]), []).append(
                [trial.metric(k) for k in DIAGNOSTICS])
    rows = [[mix, *np.nanmean(np.array(v, dtype=float), axis=0).tolist()]
            for mix, v in sorted(values.items())]
    return Table("DualCOIL's weights on the unlabeled data (hidden labels)",
                 ["mix", "reward weight w: expert", "w: other", "Q: expert", "Q: other",
                  "actor BC weight on expert", "expert share of unlabeled"], rows,
                 note="means over seeds of the last interval; the actor learns from the "
                      "unlabeled set with these shares of its BC weight")


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
)
