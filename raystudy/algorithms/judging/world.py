r"""A generated judging world and a biased teacher: raystudy's reading of FairJudge's setting.

FairJudge (Yang et al., arXiv 2602.06625, ICML 2026) trains a judge on a large LLM's
verdicts, which carry non-semantic cues (position, length, format, provenance). The paper's
data are not public; this module builds a world where quality and cues are known and drawn
independently, so any dependence of a judge's verdicts on a cue is a bias it learned.

**Pairs.** Each pair is one question and two responses, shown first and second. The question
is ``K`` digits and the task is to copy it (a checkable answer). A response copies ``c`` of
the ``K`` digits right and corrupts the others (the digit plus 1..9, mod 10), so its latent
quality is :math:`q = c / K`, a graded degree of correctness; ``c`` is uniform on
``0..K``, drawn independently for both responses (so the better one sits first with
probability 1/2). Its cues, drawn independently of quality and of each other:

* ``length``: content-free padding, a count uniform on ``0..max_pad`` of FILL tokens;
* ``format``: a marker, 0 (plain) or 1 (marked), each with probability 1/2;
* ``provenance``: a source tag uniform on ``0..n_sources-1``.

``label`` is the latent verdict: 2 (tie) when :math:`|q_1 - q_2| <` ``tie_margin``,
otherwise 0 (the first shown is better) or 1 (the second). Verdicts everywhere in
:mod:`raystudy.algorithms.judging` use these codes.

**Tokens.** The judge gets reference support, as JudgeLM's does, already aligned: each
answer digit shows as OK where it matches the reference (the question's digit) and as the
digit written where it does not, so a response's degree of correctness is its count of OK
tokens. A pair renders as (``L = 2K + 2 max_pad + 8`` tokens)::

    CLS_PAIR SEP_FIRST src fmt d_1..d_K FILL*len BLANK*  SEP_SECOND src fmt d_1..d_K ... VERDICT

and one response alone, for the pointwise mode, as
``CLS_POINT SEP_FIRST src fmt d_1..d_K FILL*len BLANK* SCORE`` (``K + max_pad + 5``).
Every cue has its own token, so a judge can pick each one up.

**Teacher** (:func:`biased_teacher`). A stand-in for verdicts distilled from a large LLM: it
sees the latent quality gap plus cue terms and noise,

.. math::
    u = (q_1 - q_2) + b_{pos} + b_{len}\,\mathrm{sign}(\ell_1 - \ell_2)
        + b_{fmt}\,\mathrm{sign}(f_1 - f_2) + b_{prov}\,\mathrm{sign}(p_1 - p_2)
        + \varepsilon, \qquad \varepsilon \sim N(0, \sigma^2),

and says 0 when :math:`u > m`, 1 when :math:`u < -m`, 2 otherwise (``m`` the world's tie
margin). With the quick defaults (:math:`b_{pos} = b_{len} = 0.15`, :math:`\sigma = 0.05`,
one quality step 0.2) it is right on clear gaps and leans to the first and the longer
response on near-ties. :func:`teacher_scores` is its pointwise mode, 1..10.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

# Token ids. 0..9: a wrong digit as written; OK: a digit that matches the reference.
DIGITS = 10
OK, BLANK, FILL, CLS_PAIR, CLS_POINT, SEP_FIRST, SEP_SECOND, VERDICT, SCORE = range(10, 19)
FORMAT_TOKENS = (19, 20)  # plain, marked
SOURCE0 = 21  # provenance tag s renders as SOURCE0 + s

FIRST, SECOND, TIE = 0, 1, 2
"""Verdict codes: the response shown first wins, the second wins, a tie."""


def vocab_size(n_sources: int) -> int:
    """Number of token ids a world with ``n_sources`` provenance tags uses."""
    return SOURCE0 + n_sources


@dataclass(frozen=True)
class JudgePairs:
    """``n`` judging pairs (module docstring): latent quality, cues, label and tokens.

    Fields (``n`` pairs, column 0 the response shown first, column 1 the second):
        quality: ``n x 2`` float, correct digits / ``K``.
        length, format, provenance: ``n x 2`` int cues.
        label: ``n`` int, the latent verdict (0, 1, 2).
        question: ``n x K`` int digits; answer: ``n x 2 x K`` int digits shown.
        tokens: ``n x L`` int, the pairwise judge input.
        point_tokens: ``n x 2 x Lp`` int, each response alone (pointwise input).
        tie_margin, max_pad, n_sources: the world's constants.
    """

    quality: np.ndarray
    length: np.ndarray
    format: np.ndarray
    provenance: np.ndarray
    label: np.ndarray
    question: np.ndarray
    answer: np.ndarray
    tokens: np.ndarray
    point_tokens: np.ndarray
    tie_margin: float
    max_pad: int
    n_sources: int

    def __len__(self) -> int:
        return int(self.label.shape[0])

    @property
    def vocab_size(self) -> int:
        """Number of token ids in ``tokens`` and ``point_tokens``."""
        return vocab_size(self.n_sources)

    def swap(self) -> JudgePairs:
        """The same pairs shown in the other order: columns swapped, labels 0 <-> 1."""
        flip = np.array([SECOND, FIRST, TIE])[self.label]
        return _build(self.quality[:, ::-1], self.length[:, ::-1], self.format[:, ::-1],
                      self.provenance[:, ::-1], self.question, self.answer[:, ::-1],
                      flip, self.tie_margin, self.max_pad, self.n_sources)

    def with_cues(self, length: np.ndarray | None = None, format: np.ndarray | None = None,
                  provenance: np.ndarray | None = None) -> JudgePairs:
        """The same content with other cues (each ``n x 2``; None keeps it), re-rendered:
        padding or re-tagging a response without changing what it says."""
        new = {"length": length, "format": format, "provenance": provenance}
        cues = {}
        for name, value in new.items():
            old = getattr(self, name)
            cues[name] = old if value is None else _cue(name, value, old.shape)
        if (cues["length"] < 0).any() or (cues["length"] > self.max_pad).any():
            raise ValueError(f"length must lie in 0..max_pad={self.max_pad}")
        if not np.isin(cues["format"], (0, 1)).all():
            raise ValueError("format must be 0 or 1")
        if (cues["provenance"] < 0).any() or (cues["provenance"] >= self.n_sources).any():
            raise ValueError(f"provenance must lie in 0..n_sources-1={self.n_sources - 1}")
        return _build(self.quality, cues["length"], cues["format"], cues["provenance"],
                      self.question, self.answer, self.label, self.tie_margin, self.max_pad,
                      self.n_sources)

    def subset(self, index: np.ndarray | slice) -> JudgePairs:
        """The pairs at ``index`` (an index array, boolean mask or slice over ``n``)."""
        arrays = {k: getattr(self, k)[index] for k in ("quality", "length", "format",
                                                        "provenance", "label", "question",
                                                        "answer", "tokens", "point_tokens")}
        return replace(self, **arrays)


def _cue(name: str, value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    array = np.asarray(value)
    if array.shape != shape:
        raise ValueError(f"{name} has shape {array.shape}, expected {shape}")
    return array.astype(np.int64)


def make_world(n_pairs: int, *, seed: int = 0, n_digits: int = 5, max_pad: int = 8,
               n_sources: int = 2, tie_margin: float = 0.1, cues: bool = True) -> JudgePairs:
    """``n_pairs`` generated judging pairs (module docstring), deterministic per ``seed``.

    Args:
        n_pairs: number of pairs (>= 1).
        seed: numpy Generator seed (default 0).
        n_digits: ``K``, digits per question and answer; quality steps are 1/K (default 5).
        max_pad: the most FILL tokens a response carries (default 8).
        n_sources: provenance tags (default 2).
        tie_margin: quality gaps below it are ties (default 0.1: equal quality).
        cues: False gives the cue-free base split: both responses of a pair share their
            cues (drawn as usual), so no cue says which is better.
    """
    if n_pairs < 1:
        raise ValueError(f"n_pairs={n_pairs} must be >= 1")
    if n_digits < 1 or max_pad < 0 or n_sources < 1:
        raise ValueError(f"n_digits={n_digits} must be >= 1, max_pad={max_pad} >= 0, "
                         f"n_sources={n_sources} >= 1")
    if not tie_margin >= 0:
        raise ValueError(f"tie_margin={tie_margin} must be >= 0")
    rng = np.random.default_rng(seed)
    K = n_digits
    question = rng.integers(0, DIGITS, size=(n_pairs, K))
    correct_count = rng.integers(0, K + 1, size=(n_pairs, 2))
    # Which digits are right: a random subset of size c per response.
    order = rng.random((n_pairs, 2, K)).argsort(axis=2)
    right = order < correct_count[:, :, None]
    offset = rng.integers(1, DIGITS, size=(n_pairs, 2, K))
    answer = np.where(right, question[:, None, :], (question[:, None, :] + offset) % DIGITS)
    quality = correct_count / K
    length = rng.integers(0, max_pad + 1, size=(n_pairs, 2))
    format_ = rng.integers(0, 2, size=(n_pairs, 2))
    provenance = rng.integers(0, n_sources, size=(n_pairs, 2))
    if not cues:
        length, format_, provenance = (np.repeat(c[:, :1], 2, axis=1)
                                       for c in (length, format_, provenance))
    gap = quality[:, 0] - quality[:, 1]
    label = np.where(np.abs(gap) < tie_margin, TIE, np.where(gap > 0, FIRST, SECOND))
    return _build(quality, length, format_, provenance, question, answer, label,
                  float(tie_margin), max_pad, n_sources)


def _build(quality: np.ndarray, length: np.ndarray, format_: np.ndarray,
           provenance: np.ndarray, question: np.ndarray, answer: np.ndarray,
           label: np.ndarray, tie_margin: float, max_pad: int, n_sources: int) -> JudgePairs:
    """Pairs with their tokens rendered (module docstring's layout)."""
    n = question.shape[0]
    checked = np.where(answer == question[:, None, :], OK, answer)
    sides = [_render_response(checked[:, s], length[:, s], format_[:, s], provenance[:, s],
                              max_pad) for s in (0, 1)]
    column = np.full((n, 1), 0)
    tokens = np.concatenate([column + CLS_PAIR, column + SEP_FIRST, sides[0],
                             column + SEP_SECOND, sides[1], column + VERDICT], axis=1)
    point = [np.concatenate([column + CLS_POINT, column + SEP_FIRST, side, column + SCORE],
                            axis=1) for side in sides]
    return JudgePairs(
        quality=np.ascontiguousarray(quality, dtype=np.float64),
        length=np.ascontiguousarray(length, dtype=np.int64),
        format=np.ascontiguousarray(format_, dtype=np.int64),
        provenance=np.ascontiguousarray(provenance, dtype=np.int64),
        label=np.ascontiguousarray(label, dtype=np.int64),
        question=np.ascontiguousarray(question, dtype=np.int64),
        answer=np.ascontiguousarray(answer, dtype=np.int64),
        tokens=tokens.astype(np.int64), point_tokens=np.stack(point, axis=1).astype(np.int64),
        tie_margin=tie_margin, max_pad=max_pad, n_sources=n_sources)


def _render_response(checked: np.ndarray, length: np.ndarray, format_: np.ndarray,
                     provenance: np.ndarray, max_pad: int) -> np.ndarray:
    """``n x (K + max_pad + 2)``: source tag, format marker, checked digits, padding."""
    fill = np.where(np.arange(max_pad)[None, :] < length[:, None], FILL, BLANK)
    return np.concatenate([(SOURCE0 + provenance)[:, None],
                           np.array(FORMAT_TOKENS)[format_][:, None], checked, fill], axis=1)


def _cue_sign(cue: np.ndarray) -> np.ndarray:
    return np.sign(cue[:, 0] - cue[:, 1]).astype(np.float64)


def teacher_margin(pairs: JudgePairs, *, position: float = 0.15, length: float = 0.15,
                   format: float = 0.0, provenance: float = 0.0) -> np.ndarray:
    r"""The teacher's noiseless evidence :math:`u - \varepsilon` (module docstring), ``n``."""
    gap = pairs.quality[:, 0] - pairs.quality[:, 1]
    return (gap + position + length * _cue_sign(pairs.length)
            + format * _cue_sign(pairs.format) + provenance * _cue_sign(pairs.provenance))


def biased_teacher(pairs: JudgePairs, *, seed: int = 0, position: float = 0.15,
                   length: float = 0.15, format: float = 0.0, provenance: float = 0.0,
                   noise: float = 0.05) -> np.ndarray:
    r"""The teacher's verdicts (``n`` ints 0/1/2) on ``pairs`` as shown (module docstring).

    Args:
        position: :math:`b_{pos}`, evidence added for the first shown (default 0.15).
        length: :math:`b_{len}`, for the longer response (default 0.15).
        format: :math:`b_{fmt}`, for the marked one (default 0).
        provenance: :math:`b_{prov}`, for the larger source tag (default 0).
        noise: :math:`\sigma`, the evidence's noise (default 0.05), drawn per ``seed``.
    """
    if not noise >= 0:
        raise ValueError(f"noise={noise} must be >= 0")
    rng = np.random.default_rng(seed)
    u = teacher_margin(pairs, position=position, length=length, format=format,
                       provenance=provenance) + noise * rng.standard_normal(len(pairs))
    m = pairs.tie_margin
    return np.where(u > m, FIRST, np.where(u < -m, SECOND, TIE)).astype(np.int64)


def teacher_scores(pairs: JudgePairs, *, seed: int = 0, length: float = 0.0,
                   noise: float = 0.0) -> np.ndarray:
    r"""Pointwise 1..10 scores (``n x 2``) of each response alone:
    :math:`\mathrm{clip}(\mathrm{round}(1 + 9q + b_{len}\,\ell / \ell_{max} + \varepsilon),
    1, 10)`, :math:`\varepsilon \sim N(0, \sigma^2)`. The defaults (``length=0``,
    ``noise=0``) give the oracle's scores; position cannot enter a pointwise score.
    """
    if not noise >= 0:
        raise ValueError(f"noise={noise} must be >= 0")
    rng = np.random.default_rng(seed)
    padding = pairs.length / max(pairs.max_pad, 1)
    raw = 1 + 9 * pairs.quality + length * padding + noise * rng.standard_normal((len(pairs), 2))
    return np.clip(np.rint(raw), 1, 10).astype(np.int64)
