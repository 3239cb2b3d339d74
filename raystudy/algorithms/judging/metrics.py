r"""Judge metrics: agreement, macro F1, position/cue biases, position and mode consistency.

Conventions of JudgeLM (Zhu et al. 2023), PandaLM (Wang et al. 2023) and the MT-Bench judge
study (Zheng et al. 2023, arXiv 2306.05685), as FairJudge reports them. Verdicts ``v`` are
ints: 0 = the response shown first wins, 1 = the second wins, 2 = tie; ``v_swapped`` are the
same judge's verdicts on the same pairs shown in the other order (``JudgePairs.swap()``), so a
consistent judge answers 1 there where it answered 0.

* ``agreement`` :math:`= \frac1n \sum_i 1[v_i = y_i]`; ``tie_rate`` :math:`= \frac1n
  \sum_i 1[v_i = 2]`.
* ``macro_f1``: the mean over classes :math:`c` of :math:`F_1^c = 2TP_c / (2TP_c + FP_c +
  FN_c)`, over the classes present in the verdicts or the labels (a class absent from both
  is left out; one present only in the verdicts scores 0), as scikit-learn's
  ``f1_score(average="macro", labels=present)``.
* ``position_bias``: :math:`P(\text{first shown wins} \mid \text{decisive})` over both orders
  pooled, minus 1/2. A judge with no position preference scores 0 whatever the quality
  order, since each pair is shown both ways.
* ``position_consistency``: the fraction of pairs with the same winner in both orders
  (0 then 1, 1 then 0) or a tie both times.
* ``cue_bias``: :math:`P(\text{the winner has the larger cue} \mid \text{decisive, cues
  differ}) - 1/2`. Quality is drawn independently of the cues (:mod:`.world`), so the
  oracle (the labels) scores about 0, and a judge's excess over it is learned bias.
* ``mode_consistency``: the fraction of pairs whose pairwise verdict equals the verdict
  implied by the pointwise scores, :math:`\mathrm{sign}(s_1 - s_2)` (equal scores: a tie).

Biases with nothing to measure (no decisive verdicts, or no pair whose cues differ) are 0:
a judge that never picks a winner prefers no position and no cue.
"""

from __future__ import annotations

import numpy as np

VERDICTS = (0, 1, 2)


def _verdicts(v: object, name: str) -> np.ndarray:
    array = np.asarray(v)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array of verdicts, "
                         f"got shape {array.shape}")
    if not np.isin(array, VERDICTS).all():
        raise ValueError(f"{name} must hold verdicts 0 (first), 1 (second) or 2 (tie)")
    return array.astype(np.int64)


def _pair(v: object, other: object, names: tuple[str, str]) -> tuple[np.ndarray, np.ndarray]:
    a, b = _verdicts(v, names[0]), _verdicts(other, names[1])
    if a.shape != b.shape:
        raise ValueError(f"{names[1]} has shape {b.shape}, {names[0]} has {a.shape}")
    return a, b


def _per_pair(values: object, n: int, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.shape != (n, 2):
        raise ValueError(f"{name} has shape {array.shape}, expected ({n}, 2) "
                         f"(first shown, second shown)")
    return array


def verdict_of_scores(scores: object) -> np.ndarray:
    """The pairwise verdict pointwise ``scores`` (``n x 2``) imply: 0 if the first is
    higher, 1 if the second, 2 if equal."""
    s = np.asarray(scores)
    if s.ndim != 2 or s.shape[1] != 2:
        raise ValueError(f"scores has shape {s.shape}, expected (n, 2)")
    return np.where(s[:, 0] > s[:, 1], 0, np.where(s[:, 0] < s[:, 1], 1, 2))


def agreement(v: object, label: object) -> float:
    """Fraction of verdicts ``v`` (``n``) equal to ``label`` (``n``)."""
    a, y = _pair(v, label, ("v", "label"))
    return float(np.mean(a == y))


def tie_rate(v: object) -> float:
    """Fraction of ties among verdicts ``v`` (``n``)."""
    return float(np.mean(_verdicts(v, "v") == 2))


def macro_f1(v: object, label: object) -> float:
    """Macro F1 of verdicts ``v`` (``n``) against ``label`` (``n``) over the classes present
    in either (module docstring)."""
    a, y = _pair(v, label, ("v", "label"))
    scores = []
    for c in VERDICTS:
        tp = np.sum((a == c) & (y == c))
        fp = np.sum((a == c) & (y != c))
        fn = np.sum((a != c) & (y == c))
        if tp + fp + fn:
            scores.append(2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores))


def position_bias(v: object, v_swapped: object) -> float:
    """P(first shown wins | decisive) over both orders pooled, minus 1/2 (``n`` each)."""
    a, b = _pair(v, v_swapped, ("v", "v_swapped"))
    both = np.concatenate([a, b])
    decisive = both != 2
    if not decisive.any():
        return 0.0
    return float(np.mean(both[decisive] == 0) - 0.5)


def position_consistency(v: object, v_swapped: object) -> float:
    """Fraction of pairs whose winner survives the swap, or that tie both times (``n`` each)."""
    a, b = _pair(v, v_swapped, ("v", "v_swapped"))
    mirrored = np.array([1, 0, 2])[a]
    return float(np.mean(b == mirrored))


def cue_bias(v: object, cue: object) -> float:
    """P(winner's cue > loser's | decisive, cues differ) - 1/2; ``v`` ``n``, ``cue`` ``n x 2``."""
    a = _verdicts(v, "v")
    c = _per_pair(cue, a.size, "cue")
    counted = (a != 2) & (c[:, 0] != c[:, 1])
    if not counted.any():
        return 0.0
    winner_larger = np.where(a == 0, c[:, 0] > c[:, 1], c[:, 1] > c[:, 0])
    return float(np.mean(winner_larger[counted]) - 0.5)


def mode_consistency(scores: object, v: object) -> float:
    """Fraction of pairwise verdicts ``v`` (``n``) equal to sign(s_first - s_second) of the
    pointwise ``scores`` (``n x 2``), equal scores meaning a tie."""
    a = _verdicts(v, "v")
    implied = verdict_of_scores(_per_pair(scores, a.size, "scores"))
    return float(np.mean(a == implied))
