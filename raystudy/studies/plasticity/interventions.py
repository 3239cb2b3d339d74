"""The plasticity study's ``intervention.spec``: ``method[/numbers]`` terms joined by ``+``.

``l2_er/1e-4/1e-2+layernorm`` is L2-ER with lambda 1e-4 and ER step 1e-2, plus
LayerNorm. The spec is read with raystudy's one ``name/arg+name`` grammar
(``parse_spec``); this module checks each method's name and numbers and builds the
pieces (:mod:`raystudy.algorithms.plasticity`) seeded from the trial's seed.
"""

from __future__ import annotations

import math
from typing import Any

from raystudy import parse_spec
from raystudy.algorithms.plasticity import (
    L2,
    Compose,
    EffectiveRankAscent,
    EffectiveRankPenalty,
    FullReset,
    Intervention,
    L2Init,
    ReDo,
    ShrinkPerturb,
)

KEY = "intervention.spec"
# method -> names of its numbers in the spec "method/x/y"
METHODS: dict[str, tuple[str, ...]] = {
    "none": (), "reset": (), "layernorm": (),
    "l2": ("lambda",), "l2_init": ("lambda",), "shrink_perturb": ("shrink", "sigma"),
    "redo": ("tau",), "er": ("er_lr",), "l2_er": ("lambda", "er_lr"),
    "er_penalty": ("beta",), "l2_er_penalty": ("lambda", "beta"),
}


def parse_intervention(spec: str) -> list[tuple[str, dict[str, float]]]:
    """``"l2_er/1e-4/1e-2+layernorm"`` -> ``[("l2_er", {"lambda": 1e-4, "er_lr": 1e-2}), ...]``."""
    parts = []
    for term in parse_spec(spec, KEY):
        if term.name not in METHODS:
            raise ValueError(f"{KEY}={spec!r}: unknown method {term.name!r}; choose "
                             f"{', '.join(METHODS)}")
        keys = METHODS[term.name]
        if len(term.args) != len(keys) or not all(
                isinstance(v, float) and v >= 0 and math.isfinite(v) for v in term.args):
            form = "/".join([term.name, *keys])
            raise ValueError(f"{KEY}={spec!r}: expected {form} with numbers >= 0")
        parts.append((term.name, dict(zip(keys, term.args, strict=True))))
    return parts


def method_of(spec: str) -> str:
    """The spec's method names joined by '+', without the numbers (``l2_er``)."""
    return "+".join(name for name, _ in parse_intervention(spec))


def build_intervention(config: Any) -> Compose:
    """The spec's pieces, seeded from the trial's seed (``config``: a PlasticityConfig)."""
    seed, every = config.train.seed, config.intervention
    pieces: list[Intervention] = []
    for name, v in parse_intervention(config.intervention.spec):
        if name in ("l2", "l2_er", "l2_er_penalty") and v["lambda"] > 0:
            pieces.append(L2(v["lambda"]))
        if name == "l2_init":
            pieces.append(L2Init(v["lambda"]))
        elif name == "shrink_perturb":
            pieces.append(ShrinkPerturb(v["shrink"], v["sigma"], seed))
        elif name == "redo":
            pieces.append(ReDo(v["tau"], every.redo_every, seed, every.redo_batch))
        elif name == "reset":
            pieces.append(FullReset(seed))
        elif name in ("er", "l2_er"):
            pieces.append(EffectiveRankAscent(v["er_lr"], every.er_every))
        elif name in ("er_penalty", "l2_er_penalty"):
            pieces.append(EffectiveRankPenalty(v["beta"]))
    return Compose(pieces)


def uses_layernorm(config: Any) -> bool:
    return any(name == "layernorm" for name, _ in parse_intervention(config.intervention.spec))
