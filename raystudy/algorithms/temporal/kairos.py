"""The KairosQA protocol: its ``.jsonl`` schema, the choice construction and the scoring rules.

Ported from the rules of kyutai-labs/kairos (dbdffbf): ``kairos/evaluation/metrics.py``
(``normalize_answer``, ``exact_match``, SQuAD token ``f1_score``, max over gold answers)
and ``load_temporal`` in ``kairos/evaluation/evaluate_tasks.py``:

1. skip a record without year y, or with a None answer anywhere; gold = one of year y's
   non-empty answers, ``random.Random(y + i).choice`` (i the line index);
2. distractors: the other years' answers (each answer keeps the *last* year listed for
   it), not similar to a correct answer (same set of normalised words), nearest year
   first (stable sort), until ``n_choices - n_distractor``;
3. top up with the year -1 (LLM) distractors to ``n_choices`` (kairos iterates a Python
   set, whose order depends on the hash seed; here they are taken in sorted order,
   raystudy's reading for determinism);
4. shuffle with ``random.Random(y + i)``; gold = where choice 0 went;
5. ``k_shot > 0`` yields only the first k built questions (the shots), ``k_shot < 0``
   skips them.

Cloze: the prediction is the argmin of the summed negative log-likelihood of ``" " +
choice`` (``none``), or of it divided by ``len(" " + choice)`` (``character``).
"""

from __future__ import annotations

import json
import random
import re
import string
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

Norm = Literal["none", "character"]


class KairosFormatError(ValueError):
    """A KairosQA ``.jsonl`` line that does not follow the schema."""


def normalize_answer(s: str) -> str:
    """Lower-case, drop punctuation and the articles a/an/the, squash whitespace (SQuAD)."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    return float(any(normalize_answer(prediction) == normalize_answer(g) for g in golds))


def _f1(prediction: str, gold: str) -> float:
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str]) -> float:
    """SQuAD token F1, the max over the gold answers."""
    return max((_f1(prediction, g) for g in golds), default=0.0)


def is_similar(answer: str, others: str | Sequence[str]) -> bool:
    """True when ``answer``'s set of normalised words equals one of ``others``'."""
    words = set(normalize_answer(answer).split())
    others = [others] if isinstance(others, str) else others
    return any(words == set(normalize_answer(o).split()) for o in others)


def read_kairosqa(path: str | Path) -> list[dict[str, Any]]:
    """The records of a KairosQA ``.jsonl`` (``question`` with ``{year}``,
    ``multi_choice_answers`` = ``[[answers], year]`` pairs, ``subject``, ``relation``,
    ``subject_rank``). Raises FileNotFoundError / KairosFormatError in one line."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"KairosQA file not found: {p} (write it with kairos' "
                                "scripts/data/download_kairosqa.py or `raystudy data "
                                "make-temporal-world OUT`)")
    records = []
    with p.open() as fin:
        for n, line in enumerate(fin, 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                raise KairosFormatError(f"{p}:{n}: not JSON ({exc.msg})") from None
            if not isinstance(data, dict) or not isinstance(data.get("question"), str):
                raise KairosFormatError(f"{p}:{n}: no string field 'question'")
            answers = data.get("multi_choice_answers")
            if not isinstance(answers, list) or not all(
                    isinstance(a, list) and len(a) == 2 and isinstance(a[0], list)
                    for a in answers):
                raise KairosFormatError(f"{p}:{n}: 'multi_choice_answers' must be a list of "
                                        "[[answers], year] pairs")
            try:
                [int(a[1]) for a in answers]
            except (TypeError, ValueError):
                raise KairosFormatError(f"{p}:{n}: a year in 'multi_choice_answers' is not "
                                        "an integer") from None
            records.append(data)
    return records


def write_kairosqa(path: str | Path, records: Sequence[dict[str, Any]]) -> None:
    with Path(path).open("w") as out:
        for r in records:
            out.write(json.dumps(r) + "\n")


def build_choices(records: Sequence[dict[str, Any]], year: int, n_choices: int = 4,
                  n_distractor: int = 0, k_shot: int = 0) -> Iterator[dict[str, Any]]:
    """The questions of target ``year`` with their choices (the module docstring's rules).

    Each item: ``choices``, ``choice_years``, ``gold`` (index), ``gt`` (all of year y's
    answers), ``question`` (formatted), ``relation``, ``subject``, ``subject_rank``.
    """
    if n_choices <= n_distractor:
        raise ValueError("n_choices must exceed n_distractor")
    built = 0
    for i, data in enumerate(records):
        answers = [a[0] for a in data["multi_choice_answers"]]
        years = [int(a[1]) for a in data["multi_choice_answers"]]
        flat = [(x, y) for xs, y in zip(answers, years, strict=True) for x in xs]
        if year not in years or any(x is None for x, _ in flat):
            continue
        correct = [a for a in answers[years.index(year)] if a is not None and a.strip()]
        if not correct:
            continue
        choices = [random.Random(year + i).choice(correct)]
        choice_years = [year]
        last_year: dict[str, int] = {}
        for x, y in flat:  # dict order: first appearance; value: the last year listed
            if y != -1 and not is_similar(x, correct) and x.strip():
                last_year[x] = y
        others = sorted(last_year.items(), key=lambda xy: abs(xy[1] - year))
        llm = sorted({x for x, y in flat if y == -1})
        for x, y in others:
            if len(choices) >= n_choices - n_distractor:
                break
            if not is_similar(x, choices + correct):
                choices.append(x)
                choice_years.append(y)
        for x in llm:
            if len(choices) >= n_choices:
                break
            if x.strip() and not is_similar(x, choices + correct):
                choices.append(x)
                choice_years.append(-1)
        perm = list(range(len(choices)))
        random.Random(year + i).shuffle(perm)
        if k_shot < 0 and built < -k_shot:
            built += 1
            continue
        if k_shot > 0 and built >= k_shot:
            break
        built += 1
        yield {"choices": [choices[j].strip() for j in perm],
               "choice_years": [choice_years[j] for j in perm], "gold": perm.index(0),
               "gt": correct, "question": data["question"].format(year=year),
               "relation": data.get("relation"), "subject": data.get("subject"),
               "subject_rank": data.get("subject_rank")}


def cloze_prediction(nll: Sequence[float] | np.ndarray, continuations: Sequence[str],
                     norm: Norm) -> int:
    """argmin of the summed NLL of each continuation (``" " + choice``; ``none``) or of it
    divided by the continuation's length in characters (``character``); ties: the first."""
    scores = np.asarray(nll, dtype=float)
    if norm == "character":
        scores = scores / np.array([len(c) for c in continuations], dtype=float)
    return int(np.argmin(scores))


def kairos_context(question: str, shots: Sequence[dict[str, Any]] = ()) -> str:
    """The kairos cloze/generative context: shots as ``Question: q\\nAnswer: gold`` joined
    by blank lines, then ``Question: q\\nAnswer:``."""
    parts = [f"Question: {s['question']}\nAnswer: {s['choices'][s['gold']]}" for s in shots]
    return "\n\n".join([*parts, f"Question: {question}\nAnswer:"])


LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def multi_choice_context(question: str, choices: Sequence[str],
                         shots: Sequence[dict[str, Any]] = ()) -> str:
    """The kairos multiple-choice prompt ``Question: q\n A. c1\n B. c2 ...\nAnswer:``,
    after the shots in the same layout each ending ``Answer: <gold letter>`` (raystudy's
    reading of the shots' layout), joined by blank lines."""
    def block(q: str, cs: Sequence[str]) -> str:
        return "\n".join([f"Question: {q}", *(f" {LETTERS[i]}. {c}" for i, c in enumerate(cs)),
                          "Answer:"])
    parts = [f"{block(s['question'], s['choices'])} {LETTERS[s['gold']]}" for s in shots]
    return "\n\n".join([*parts, block(question, choices)])


def multi_choice_prediction(letter_nll: Sequence[float] | np.ndarray) -> int:
    """The letter with the lowest NLL of ``" " + letter`` after the prompt: the kairos JAX
    rule (argmax over the letter tokens); ties: the first."""
    return int(np.argmin(np.asarray(letter_nll, dtype=float)))


def cut_generation(text: str) -> str:
    """The kairos cut: at the first blank line or ``Question:``."""
    return text.split("\n\n")[0].split("Question:")[0].strip()
