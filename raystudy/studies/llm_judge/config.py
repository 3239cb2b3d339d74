"""The llm_judge study's config: frozen dataclasses (their defaults are the quick profile's)
and the arms a trial can train, with the stages each runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt, Range

ARMS = ("teacher", "sft", "sft_swap", "sft_dpo", "fairjudge", "plain_rl", "joint")
"""teacher: the static judge (its verdicts are the teacher's); sft; sft_swap (JudgeLM's swap
augmentation); sft_dpo; fairjudge (SFT -> DPO -> RL with the judge reward); plain_rl (the
same curriculum, w_swap = w_mode = 0); joint (one mixed objective, no curriculum)."""
STAGES = {"teacher": (), "sft": ("sft",), "sft_swap": ("sft_swap",), "sft_dpo": ("sft", "dpo"),
          "fairjudge": ("sft", "dpo", "rl"), "plain_rl": ("sft", "dpo", "rl"),
          "joint": ("joint",)}
"""The stages of each arm, in order, on one step counter."""


@dataclass(frozen=True)
class ArmConfig:
    name: Literal[ARMS] = "fairjudge"  # type: ignore[valid-type]
    """teacher | sft | sft_swap | sft_dpo | fairjudge | plain_rl | joint."""


@dataclass(frozen=True)
class WorldConfig:
    n_train: PositiveInt = 4000
    """Training pairs (the SFT, DPO and RL data; the teacher labels them)."""
    n_test: PositiveInt = 1000
    """Test pairs; each is also shown with every cue mirrored (cue-balanced: 2 n_test)."""
    n_base: PositiveInt = 500
    """Pairs of the cue-free base split (both responses share their cues; J5)."""
    n_digits: PositiveInt = 5
    """K: digits per answer; quality steps are 1/K."""
    max_pad: NonNegativeInt = 8
    """The most content-free FILL tokens a response carries (the length cue)."""
    n_sources: PositiveInt = 2
    """Provenance tags."""
    tie_margin: NonNegativeFloat = 0.1
    """Quality gaps below it are ties (0.1 with K = 5: equal quality)."""


@dataclass(frozen=True)
class TeacherConfig:
    position: float = 0.15
    """b_pos: evidence the teacher adds for the first shown response."""
    length: float = 0.15
    """b_len: for the longer (more padded) response."""
    format: float = 0.0
    """b_fmt: for the marked response."""
    provenance: float = 0.0
    """b_prov: for the larger source tag."""
    noise: NonNegativeFloat = 0.05
    """sigma: the noise of its evidence."""
    score_length: float = 0.0
    """Its pointwise mode's lean to padding (score points at full padding; raystudy's
    reading: the length lean is pairwise)."""
    score_noise: NonNegativeFloat = 0.5
    """The noise of its pointwise 1..10 scores (score points)."""


@dataclass(frozen=True)
class JudgeConfig:
    backbone: Literal["tiny", "hf"] = "tiny"
    """tiny (TinyJudge's GPT blocks) | hf (a local Hugging Face checkpoint's backbone)."""
    checkpoint: str = ""
    """hf: the checkpoint folder (config.json and weights; nothing is downloaded)."""
    d_model: PositiveInt = 64
    """tiny: residual width."""
    n_layers: PositiveInt = 2
    """tiny: GPT blocks."""
    n_heads: PositiveInt = 4
    """tiny: attention heads."""


@dataclass(frozen=True)
class SftConfig:
    steps: NonNegativeInt = 300
    """SFT steps (cross-entropy on the teacher's verdicts and pointwise scores)."""
    lr: PositiveFloat = 3e-3
    """AdamW peak learning rate, decayed linearly to 0 over the stage (a constant rate was
    unstable in the algorithm layer's checks). joint uses it over its whole run."""


@dataclass(frozen=True)
class DpoConfig:
    steps: NonNegativeInt = 150
    """DPO steps (chosen: the teacher's cue-averaged verdict; rejected: its verdict as shown,
    where that flips under a swap or padding)."""
    lr: PositiveFloat = 1e-3
    """Peak learning rate, decayed linearly to 0 over the stage."""
    beta: PositiveFloat = 0.1
    """DPO's beta (Rafailov et al.; trl's default)."""


@dataclass(frozen=True)
class RlConfig:
    steps: NonNegativeInt = 300
    """GRPO steps."""
    lr: PositiveFloat = 3e-4
    """Peak learning rate, decayed linearly to 0 over the stage (1e-3 collapsed plain_rl to
    one verdict in a measured quick trial)."""
    group_size: Annotated[int, Range(ge=2)] = 8
    """G: verdicts sampled per pair and order."""
    clip: PositiveFloat = 0.2
    """The surrogate's clip epsilon (trl's default)."""
    kl: NonNegativeFloat = 0.0
    """The k3 KL penalty to the stage's reference (trl's default: 0)."""
    w_swap: NonNegativeFloat = 1.0
    """Reward weight of swap consistency (plain_rl: 0)."""
    w_mode: NonNegativeFloat = 1.0
    """Reward weight of pointwise-pairwise agreement (plain_rl: 0)."""
    w_tie: NonNegativeFloat = 0.5
    """Penalty of a tie where the label is decisive."""


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    """The world, the teacher, the judge's initialisation and its batches."""
    batch_size: PositiveInt = 64
    """Pairs per step."""
    point_weight: NonNegativeFloat = 1.0
    """Weight of the pointwise cross-entropy on the teacher's scores, in every stage (it
    keeps the score head the mode-consistency reward reads)."""
    eval_every: NonNegativeInt = 150
    """Steps between evaluations (and the last)."""
    checkpoint_every: NonNegativeInt = 1
    """Evaluations between checkpoints (0: only the last)."""
    threads: PositiveInt = 1
    """torch threads per trial (2 threads under contention measured 15x slower)."""


@dataclass(frozen=True)
class LlmJudgeConfig:
    arm: ArmConfig = field(default_factory=ArmConfig)
    world: WorldConfig = field(default_factory=WorldConfig)
    teacher: TeacherConfig = field(default_factory=TeacherConfig)
    judge: JudgeConfig = field(default_factory=JudgeConfig)
    sft: SftConfig = field(default_factory=SftConfig)
    dpo: DpoConfig = field(default_factory=DpoConfig)
    rl: RlConfig = field(default_factory=RlConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def stage_steps(self) -> list[tuple[str, int]]:
        """Derived: the arm's stages and their steps, in order (joint: the sum of all)."""
        steps = {"sft": self.sft.steps, "sft_swap": self.sft.steps, "dpo": self.dpo.steps,
                 "rl": self.rl.steps,
                 "joint": self.sft.steps + self.dpo.steps + self.rl.steps}
        return [(stage, steps[stage]) for stage in STAGES[self.arm.name]]

    def validate(self) -> None:
        if self.judge.backbone == "tiny" and self.judge.d_model % self.judge.n_heads:
            raise ValueError(f"judge.d_model ({self.judge.d_model}) must be a multiple of "
                             f"judge.n_heads ({self.judge.n_heads})")
        if self.arm.name != "teacher" and sum(s for _, s in self.stage_steps()) < 1:
            raise ValueError(f"arm {self.arm.name} trains for 0 steps: set its stages' steps "
                             "(sft.steps, dpo.steps, rl.steps)")
