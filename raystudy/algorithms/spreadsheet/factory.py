"""``make_predictor``: every predictor of :mod:`.predictors` and :mod:`.transformer` by
name, with its options checked (kept apart so the two modules never import each other)."""

from __future__ import annotations

from typing import Any

from ...errors import ConfigError
from .online import Predictor
from .predictors import (
    PREDICTORS,
    FillPatternPredictor,
    NgramPredictor,
    OraclePredictor,
    RepeatPredictor,
)
from .transformer import TransformerPredictor

_OPTIONS = {"repeat": set(), "fill_pattern": set(), "ngram": {"train", "n", "threshold"},
            "transformer": {"train", "context", "d_model", "n_layers", "n_heads", "steps",
                            "batch_size", "lr", "seed", "threshold"},
            "oracle": {"trajectory"}}
_REQUIRED = {"ngram": {"train"}, "transformer": {"train"}, "oracle": {"trajectory"}}


def make_predictor(name: str, **options: Any) -> Predictor:
    """A predictor by name (:data:`PREDICTORS`; module docstring). Options: ``ngram``:
    ``train`` (trajectories), ``n`` (3), ``threshold`` (0); ``transformer``: ``train``,
    ``threshold`` and those of :class:`~.transformer.TransformerPredictor`; ``oracle``:
    ``trajectory``. An unknown name or option raises ``ConfigError`` listing the valid ones.
    """
    if name not in _OPTIONS:
        raise ConfigError(f"unknown predictor {name!r}; predictors: {', '.join(PREDICTORS)}")
    unknown, missing = set(options) - _OPTIONS[name], _REQUIRED.get(name, set()) - set(options)
    if unknown or missing:
        valid = ", ".join(sorted(_OPTIONS[name])) or "none"
        raise ConfigError(f"predictor {name}: unknown options {sorted(unknown)}, missing "
                          f"{sorted(missing)}; valid options: {valid}")
    if name == "repeat":
        return RepeatPredictor()
    if name == "fill_pattern":
        return FillPatternPredictor()
    if name == "ngram":
        return NgramPredictor(**options)
    if name == "oracle":
        return OraclePredictor(**options)
    return TransformerPredictor(**options)
