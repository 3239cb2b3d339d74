"""A learned, debiased, consistent judge: raystudy's reading of FairJudge (Yang, Feng, Chen,
Xu, Zhang & Li, "FairJudge", arXiv 2602.06625, ICML 2026) as a mechanism study in a
generated judging world (the paper's data, code and model are not public).

``world.py`` (the judging world: latent quality, cues drawn independently of it, tokens,
``swap()``; the biased teacher), ``metrics.py`` (agreement, macro F1, tie rate, position and
cue biases, position and mode consistency), ``objectives.py`` (DPO, GRPO advantages and
loss, the judge reward) and ``judge.py`` (TinyJudge: GPT blocks, a verdict head and a score
head). Verdicts: 0 = the response shown first wins, 1 = the second wins, 2 = tie.
"""

from .judge import TinyJudge
from .metrics import (
    agreement,
    cue_bias,
    macro_f1,
    mode_consistency,
    position_bias,
    position_consistency,
    tie_rate,
    verdict_of_scores,
)
from .objectives import dpo_loss, group_advantages, grpo_loss, judge_reward
from .world import (
    FIRST,
    SECOND,
    TIE,
    JudgePairs,
    biased_teacher,
    make_world,
    teacher_margin,
    teacher_scores,
)

__all__ = ["FIRST", "SECOND", "TIE", "JudgePairs", "TinyJudge", "agreement",
           "biased_teacher", "cue_bias", "dpo_loss", "group_advantages", "grpo_loss",
           "judge_reward", "macro_f1", "make_world", "mode_consistency", "position_bias",
           "position_consistency", "teacher_margin", "teacher_scores", "tie_rate",
           "verdict_of_scores"]
