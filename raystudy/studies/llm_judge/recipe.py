"""A learned judge trained on a biased teacher, with and without FairJudge's debiasing stages.

Paper: Yang, Feng, Chen, Xu, Zhang, Li, "FairJudge" (arXiv 2602.06625; ICML 2026, PMLR
v306 yang26n). Its data, code, model, reward weights and schedule are not public: this is
**raystudy's reading**, a **mechanism** study in a **generated** judging world
(``raystudy.algorithms.judging``): do invariance-targeted DPO and RL stages remove the cues
a judge learned from a biased teacher without losing accuracy?

Launch::

    raystudy sweep llm_judge --profile quick                   # 8 trials, 2 CPUs, minutes
    raystudy sweep llm_judge --profile quick --space claim     # 7 arms x 8 seeds
    raystudy run llm_judge --in-process --set arm.name=sft --set sft.steps=100
    raystudy sweep llm_judge --profile paper --set judge.checkpoint=DIR   # a GPU

A trial is one arm x seed (the world and the teacher's labels come from the seed alone).
Its stages run on one step counter, each with a fresh AdamW decaying linearly to 0; DPO and
RL take the model at their start as the reference. Each evaluation judges the cue-balanced
test pairs in both orders and scores each response alone, through ``ctx.map``. Checkpoints
hold the model, reference, optimizer, schedule and generator: a resume is exact.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from raystudy import Metric, Study, TrialContext
from raystudy.algorithms.judging import (
    FIRST,
    SECOND,
    TIE,
    JudgePairs,
    TinyJudge,
    agreement,
    biased_teacher,
    cue_bias,
    dpo_loss,
    group_advantages,
    grpo_loss,
    judge_reward,
    macro_f1,
    make_world,
    mode_consistency,
    position_bias,
    position_consistency,
    teacher_scores,
    tie_rate,
    verdict_of_scores,
)
from raystudy.algorithms.models.hf import checkpoint_folder, load_encoder
from raystudy.studies.llm_judge.analysis import analyze
from raystudy.studies.llm_judge.config import LlmJudgeConfig

MIRROR = np.array([SECOND, FIRST, TIE])  # a verdict read in the other order
CUES = ("length", "format", "provenance")
SEED_STRIDE = 100
"""Every draw of one seed s uses s * SEED_STRIDE + a part number, so arms share them."""
STAGE_CODES = {"sft": 0, "sft_swap": 1, "dpo": 2, "rl": 3, "joint": 4}  # train/stage


# ----------------------------------------------------------------------------- the world
def cue_balanced(pairs: JudgePairs) -> JudgePairs:
    """``pairs`` then the same pairs with every cue mirrored between the two responses: each
    cue favours the better response exactly as often as the worse (the oracle's cue biases
    are 0 on it)."""
    mirrored = pairs.with_cues(**{c: getattr(pairs, c)[:, ::-1] for c in CUES})
    arrays: dict[str, Any] = {k: np.concatenate([getattr(pairs, k), getattr(mirrored, k)])
                              for k in ("quality", "length", "format", "provenance", "label",
                                        "question", "answer", "tokens", "point_tokens")}
    return replace(pairs, **arrays)


def consensus(v: np.ndarray, v_swapped: np.ndarray, v_padded: np.ndarray,
              v_padded_swapped: np.ndarray) -> np.ndarray:
    """The teacher's cue-averaged verdict (``n``) from its four (``n`` each): as shown,
    swapped, with the two paddings exchanged, and both. Each is read as +1 (the response
    shown first wins), -1 or 0 (tie); a winner where the mean passes 1/4, else a tie.
    Position and padding leans cancel in the mean; the content's does not."""
    sign = np.array([1, -1, 0])
    mean = (sign[v] - sign[v_swapped] + sign[v_padded] - sign[v_padded_swapped]) / 4
    return np.where(mean > 0.25, FIRST, np.where(mean < -0.25, SECOND, TIE))


@dataclass
class Data:
    """One seed's world, its teacher labels and DPO preferences, as tensors on a device."""

    train: JudgePairs
    test: JudgePairs
    base: JudgePairs
    tokens: torch.Tensor          # n x L, training pairs as shown
    swapped: torch.Tensor         # n x L, the same pairs swapped
    point: torch.Tensor           # n x 2 x Lp, each response alone
    y: torch.Tensor               # n, the teacher's verdicts as shown
    scores: torch.Tensor          # n x 2, the teacher's pointwise scores 1..10
    dpo_tokens: torch.Tensor      # 4m x L, the preference pairs in their four presentations
    chosen: torch.Tensor          # 4m, the cue-averaged verdict
    rejected: torch.Tensor        # 4m, the teacher's verdict as shown, in each presentation
    teacher_agreement: float      # the teacher's verdicts against the latent labels


def teacher_of(config: LlmJudgeConfig) -> dict[str, float]:
    """``biased_teacher``'s arguments: the pairwise fields of ``teacher.*``."""
    return {k: v for k, v in asdict(config.teacher).items() if not k.startswith("score")}


def build_data(config: LlmJudgeConfig, device: torch.device) -> Data:
    """The world and the teacher's labels of seed ``train.seed`` (the same for every arm)."""
    w, s = config.world, config.train.seed * SEED_STRIDE
    shape: dict[str, Any] = {"n_digits": w.n_digits, "max_pad": w.max_pad,
                             "n_sources": w.n_sources, "tie_margin": w.tie_margin}
    train, base = make_world(w.n_train, seed=s, **shape), make_world(
        w.n_base, seed=s + 2, cues=False, **shape)
    test, teach = cue_balanced(make_world(w.n_test, seed=s + 1, **shape)), teacher_of(config)
    padded = train.with_cues(length=train.length[:, ::-1])
    shown = (train, train.swap(), padded, padded.swap())
    y, y_swapped, y_padded, y_both = (biased_teacher(p, seed=s + 10 + k, **teach)
                                      for k, p in enumerate(shown))
    chosen = consensus(y, y_swapped, y_padded, y_both)
    index = np.flatnonzero(chosen != y)  # the teacher's verdict flips under swap/padding
    # each preference in all four presentations (content terms kept), so no cue rides on it
    dpo_tokens = np.concatenate([p.tokens[index] for p in shown])
    dpo_chosen = np.concatenate([chosen[index], MIRROR[chosen[index]]] * 2)
    dpo_rejected = np.concatenate([y[index], MIRROR[y[index]]] * 2)
    scores = teacher_scores(train, seed=s + 14, length=config.teacher.score_length,
                            noise=config.teacher.score_noise)

    def tensor(a: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(np.ascontiguousarray(a), device=device)

    return Data(train, test, base, tensor(train.tokens), tensor(shown[1].tokens),
                tensor(train.point_tokens), tensor(y), tensor(scores),
                tensor(dpo_tokens), tensor(dpo_chosen), tensor(dpo_rejected),
                agreement(y, train.label))


# ----------------------------------------------------------------------------- the judge
def judge_spec(config: LlmJudgeConfig, data: Data) -> dict[str, Any]:
    """What builds the judge anywhere (``ctx.map`` tasks rebuild it from its state)."""
    j = config.judge
    return {"vocab_size": data.train.vocab_size, "d_model": j.d_model,
            "seq_len": max(data.train.tokens.shape[1], data.train.point_tokens.shape[2]),
            "n_layers": j.n_layers, "n_heads": j.n_heads, "backbone": j.backbone,
            "checkpoint": j.checkpoint}


def build_judge(spec: dict[str, Any]) -> TinyJudge:
    encoder = load_encoder(spec["checkpoint"]) if spec["backbone"] == "hf" else None
    return TinyJudge(spec["vocab_size"], spec["seq_len"], spec["d_model"], spec["n_layers"],
                     spec["n_heads"], encoder=encoder)


def judge_chunk(item: tuple[dict[str, Any], dict[str, Any], np.ndarray, np.ndarray]
                ) -> tuple[np.ndarray, np.ndarray]:
    """Greedy verdicts of pair tokens (``n x L``) and scores of point tokens (``m x Lp``)
    from a judge's state (run by ``ctx.map``, anywhere)."""
    state, spec, pairs, point = item
    judge = build_judge(spec)
    judge.load_state_dict(state)
    judge.eval()
    verdicts = torch.cat([judge.judge(x) for x in torch.as_tensor(pairs).split(1024)])
    scores = torch.cat([judge.score(x) for x in torch.as_tensor(point).split(1024)])
    return verdicts.numpy(), scores.numpy()


# ----------------------------------------------------------------------------- the stages
def point_loss(judge: TinyJudge, data: Data, batch: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the score head on the teacher's pointwise scores of both responses."""
    return F.cross_entropy(judge.score_logits(data.point[batch].flatten(0, 1)),
                           data.scores[batch].flatten() - 1)


def sft_loss(judge: TinyJudge, data: Data, batch: torch.Tensor, swap: bool,
             generator: torch.Generator) -> torch.Tensor:
    """Cross-entropy on the teacher's verdicts; ``swap`` shows half the pairs swapped with
    the verdict mirrored (JudgeLM's swap augmentation)."""
    x, y = data.tokens[batch], data.y[batch]
    if swap:
        flip = (torch.rand(len(batch), generator=generator) < 0.5).to(x.device)
        x = torch.where(flip[:, None], data.swapped[batch], x)
        y = torch.where(flip, torch.as_tensor(MIRROR, device=y.device)[y], y)
    return F.cross_entropy(judge.verdict_logits(x), y)


def dpo_term(judge: TinyJudge, ref: TinyJudge | None, data: Data, batch_size: int,
             beta: float, generator: torch.Generator) -> torch.Tensor:
    """DPO (Rafailov et al. Eq. 7) on preference pairs; no reference (joint) is uniform."""
    if len(data.chosen) == 0:
        return torch.zeros((), device=data.tokens.device)
    pick = torch.randint(0, len(data.chosen), (batch_size,), generator=generator)
    pick = pick.to(data.tokens.device)
    x, answers = data.dpo_tokens[pick], torch.stack([data.chosen[pick], data.rejected[pick]], 1)
    policy = torch.log_softmax(judge.verdict_logits(x), -1).gather(1, answers)  # B x 2
    with torch.no_grad():
        reference = (torch.log_softmax(ref.verdict_logits(x), -1).gather(1, answers)
                     if ref is not None else torch.zeros_like(policy))
    return dpo_loss(policy[:, 0], policy[:, 1], reference[:, 0], reference[:, 1], beta)


def rl_term(judge: TinyJudge, ref: TinyJudge | None, data: Data, batch: torch.Tensor,
            config: LlmJudgeConfig, generator: torch.Generator) -> torch.Tensor:
    """GRPO on the judge reward: G verdicts sampled per pair on each order, verdict i as
    shown paired with verdict i swapped for the swap term; the mode term reads the judge's
    own greedy pointwise scores; the label of the swapped order is the teacher's, mirrored."""
    r, G, B = config.rl, config.rl.group_size, len(batch)
    weights = ({"w_swap": 0.0, "w_mode": 0.0} if config.arm.name == "plain_rl" else
               {"w_swap": r.w_swap, "w_mode": r.w_mode})
    x = torch.cat([data.tokens[batch], data.swapped[batch]])
    logp = torch.log_softmax(judge.verdict_logits(x), dim=-1)           # 2B x 3
    with torch.no_grad():
        v = torch.multinomial(logp.exp().cpu(), G, replacement=True, generator=generator)
        v = v.to(x.device)                                               # 2B x G
        scores = judge.score(data.point[batch].flatten(0, 1)).view(B, 2)
    label, mirror = data.y[batch], torch.as_tensor(MIRROR, device=x.device)
    shown, swapped = v[:B].flatten(), v[B:].flatten()
    rewards = torch.cat([
        judge_reward(shown, label.repeat_interleave(G), swapped,
                     scores.repeat_interleave(G, 0), w_tie=r.w_tie, **weights),
        judge_reward(swapped, mirror[label].repeat_interleave(G), shown,
                     scores.flip(1).repeat_interleave(G, 0), w_tie=r.w_tie, **weights)])
    advantages = group_advantages(rewards, G)                           # groups: rows of v
    logps = logp.gather(1, v).flatten()
    with torch.no_grad():
        ref_logps = (torch.log_softmax(ref.verdict_logits(x), -1).gather(1, v).flatten()
                     if ref is not None and r.kl > 0 else None)
    return grpo_loss(logps, logps.detach(), advantages, clip=r.clip, ref_logps=ref_logps,
                     beta=r.kl if ref_logps is not None else 0.0)


def train_step(stage: str, judge: TinyJudge, ref: TinyJudge | None, data: Data,
               config: LlmJudgeConfig, generator: torch.Generator) -> torch.Tensor:
    """One step's loss: the pointwise term, then the stage's (joint: all three at once)."""
    B = config.train.batch_size
    batch = torch.randint(0, len(data.y), (B,), generator=generator).to(data.tokens.device)
    loss = config.train.point_weight * point_loss(judge, data, batch)
    if stage in ("sft", "sft_swap", "joint"):
        loss = loss + sft_loss(judge, data, batch, stage == "sft_swap", generator)
    if stage in ("dpo", "joint"):
        loss = loss + dpo_term(judge, ref, data, B, config.dpo.beta, generator)
    if stage in ("rl", "joint"):
        loss = loss + rl_term(judge, ref, data, batch, config, generator)
    return loss


@dataclass
class Stage:
    """The running stage: its index in the arm's plan, name, reference, AdamW and schedule."""

    index: int
    name: str
    ref: TinyJudge | None
    optimizer: torch.optim.Optimizer
    schedule: torch.optim.lr_scheduler.LambdaLR


def begin_stage(index: int, plan: list[tuple[str, int]], judge: TinyJudge,
                config: LlmJudgeConfig) -> Stage:
    """Stage ``index`` of ``plan``: its reference (DPO, RL: the model at its start,
    frozen), a fresh AdamW and its linear decay to 0 over the stage's steps."""
    name, steps = plan[index]
    ref = copy.deepcopy(judge).eval().requires_grad_(False) if name in ("dpo", "rl") else None
    lr = {"dpo": config.dpo.lr, "rl": config.rl.lr}.get(name, config.sft.lr)
    optimizer = torch.optim.AdamW(judge.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: 1 - k / steps)
    return Stage(index, name, ref, optimizer, schedule)


# ----------------------------------------------------------------------------- evaluation
def judge_metrics(data: Data, v: np.ndarray, v_swapped: np.ndarray, scores: np.ndarray,
                  base: np.ndarray, base_swapped: np.ndarray) -> dict[str, float]:
    """The report's metrics from verdicts on the test pairs as shown and swapped (``n``
    each), the pointwise scores (``n x 2``) and verdicts on the base pairs (both orders);
    agreement, F1, ties and cue biases pool both orders, each bias beside the oracle's."""
    test, swapped = data.test, data.test.swap()
    both, label = np.concatenate([v, v_swapped]), np.concatenate([test.label, swapped.label])
    out = {"eval/agreement": agreement(both, label), "eval/macro_f1": macro_f1(both, label),
           "eval/tie_rate": tie_rate(both),
           "eval/majority_rate": float(np.bincount(label).max() / len(label)),
           "eval/point_agreement": agreement(verdict_of_scores(scores), test.label),
           "eval/base_agreement": agreement(
               np.concatenate([base, base_swapped]),
               np.concatenate([data.base.label, data.base.swap().label])),
           "bias/position": position_bias(v, v_swapped),
           "bias/position_oracle": position_bias(test.label, swapped.label),
           "consistency/position": position_consistency(v, v_swapped),
           "consistency/mode": mode_consistency(np.concatenate([scores, scores[:, ::-1]]),
                                                both)}
    for cue in CUES:
        values = np.concatenate([getattr(test, cue), getattr(swapped, cue)])
        out[f"bias/{cue}"] = cue_bias(both, values)
        out[f"bias/{cue}_oracle"] = cue_bias(label, values)
    return out


def evaluate(judge: TinyJudge, spec: dict[str, Any], data: Data,
             ctx: TrialContext) -> dict[str, float]:
    """The judge's metrics: its verdicts and scores fanned out over chunks with ``ctx.map``."""
    test, base = data.test, data.base
    pairs = np.concatenate([test.tokens, test.swap().tokens, base.tokens, base.swap().tokens])
    point = test.point_tokens.reshape(-1, test.point_tokens.shape[2])
    state = {k: v.detach().cpu().clone() for k, v in judge.state_dict().items()}
    parts = max(1, min(ctx.slots, len(point)))
    items = [(state, spec, p, q) for p, q in zip(np.array_split(pairs, parts),
                                                 np.array_split(point, parts), strict=True)]
    out = ctx.map(judge_chunk, items)
    v = np.concatenate([o[0] for o in out])
    scores = np.concatenate([o[1] for o in out]).reshape(-1, 2)
    n, m = len(test), len(base)
    return judge_metrics(data, v[:n], v[n:2 * n], scores, v[2 * n:2 * n + m], v[2 * n + m:])


def teacher_metrics(config: LlmJudgeConfig, data: Data) -> dict[str, float]:
    """The static judge: the teacher's own verdicts and pointwise scores on the test pairs."""
    s, teach = config.train.seed * SEED_STRIDE, teacher_of(config)
    verdicts = [biased_teacher(p, seed=s + 20 + k, **teach) for k, p in enumerate(
        (data.test, data.test.swap(), data.base, data.base.swap()))]
    scores = teacher_scores(data.test, seed=s + 24, length=config.teacher.score_length,
                            noise=config.teacher.score_noise)
    return judge_metrics(data, verdicts[0], verdicts[1], scores, verdicts[2], verdicts[3])


# ----------------------------------------------------------------------------- loop
def train_loop(config: LlmJudgeConfig, ctx: TrialContext) -> None:
    torch.set_num_threads(config.train.threads)
    c = config
    data = build_data(c, ctx.device)
    context = {"data/teacher_agreement": data.teacher_agreement, "run/cuda": float(
        ctx.device.type == "cuda"), "data/dpo_pairs": float(len(data.chosen) // 4)}
    if c.arm.name == "teacher":
        for step in ctx.cadence(1, 1, 1):
            ctx.report({**teacher_metrics(c, data), **context, "train/step": 0.0}, step=step)
        return
    plan = c.stage_steps()
    ends = np.cumsum([steps for _, steps in plan])
    spec = judge_spec(c, data)
    torch.manual_seed(c.train.seed)
    judge = ctx.prepare_model(build_judge(spec))
    generator = torch.Generator().manual_seed(c.train.seed)
    stage: Stage | None = None
    state = ctx.load_checkpoint()
    if state is not None:
        judge.load_state_dict(state["model"])
        generator.set_state(state["generator"])
        stage = begin_stage(state["stage"], plan, judge, c)
        stage.optimizer.load_state_dict(state["optimizer"])
        stage.schedule.load_state_dict(state["schedule"])
        if stage.ref is not None:
            stage.ref.load_state_dict(state["ref"])
    cadence = ctx.cadence(int(ends[-1]), c.train.eval_every, c.train.checkpoint_every)
    for step in cadence:
        index = int(np.searchsorted(ends, step))  # the stage whose steps hold this one
        if stage is None or stage.index != index:
            stage = begin_stage(index, plan, judge, c)
        loss = train_step(stage.name, judge, stage.ref, data, c, generator)
        stage.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        stage.optimizer.step()
        stage.schedule.step()
        if cadence.evaluates(step):
            metrics = {**evaluate(judge, spec, data, ctx), **context,
                       "train/loss": float(loss.detach()), "train/step": float(step),
                       "train/stage": float(STAGE_CODES[stage.name])}
            checkpoint = ({"model": judge.state_dict(), "stage": stage.index,
                           "optimizer": stage.optimizer.state_dict(),
                           "schedule": stage.schedule.state_dict(),
                           "ref": stage.ref.state_dict() if stage.ref is not None else None,
                           "generator": generator.get_state()}
                          if cadence.checkpoints(step) else None)
            ctx.report(metrics, checkpoint=checkpoint, step=step)


def check_data(config: LlmJudgeConfig) -> None:
    """judge.backbone=hf: a local checkpoint folder with config.json, or one line."""
    if config.judge.backbone == "hf":
        checkpoint_folder(config.judge.checkpoint, "judge.checkpoint")


STUDY = Study(
    name="llm_judge",
    description="FairJudge's reading as a mechanism study: a judge trained SFT -> DPO -> RL "
                "on a biased teacher in a generated judging world, with and without its "
                "debiasing and consistency terms",
    config_cls=LlmJudgeConfig,
    train_loop=train_loop,
    metrics=(Metric("eval/agreement", "max", "verdicts equal to the latent label, both orders"),
             Metric("consistency/position", "max", "the same winner (or a tie) in both orders"),
             Metric("consistency/mode", "max", "pairwise verdict = sign of pointwise scores"),
             Metric("eval/macro_f1", "max", "macro F1 over first / second / tie"),
             Metric("eval/base_agreement", "max", "agreement on the cue-free base split (J5)"),
             Metric("eval/tie_rate", "min", "share of ties among the verdicts"),
             Metric("train/loss", "min", "the stage's loss at the evaluation's step")),
    analyze=analyze,
    check_data=check_data,
)
