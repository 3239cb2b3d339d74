"""Data temporality in pretraining (Pilchen et al., 2026; code kyutai-labs/kairos).

``world.py`` (the generated temporal world), ``corpus.py`` (yearly snapshots as byte
rows), ``schedules.py`` (row orders over the same rows, the one LR schedule),
``kairos.py`` (the KairosQA schema, choice construction and scoring rules) and
``probes.py`` (dated cloze, freshness, invariant and generative probes of a model).
"""

from .corpus import Mixture, filler_rows, snapshot, split_filler
from .kairos import (
                     KairosFormatError,
                     build_choices,
                     cloze_prediction,
                     exact_match,
                     f1_score,
                     is_similar,
                     normalize_answer,
                     read_kairosqa,
                     write_kairosqa,
)
from .probes import (
                     DatedResult,
                     dated_probe,
                     forgetting,
                     freshness_probe,
                     generative_probe,
                     gpt_generator,
                     gpt_scorer,
                     invariant_probe,
                     recency_slope,
                     world_records,
)
from .schedules import order, parse, wsd_lr
from .world import World, make_world

__all__ = ["DatedResult", "KairosFormatError", "Mixture", "World", "build_choices",
           "cloze_prediction", "dated_probe", "exact_match", "f1_score", "filler_rows",
           "forgetting", "freshness_probe", "generative_probe", "gpt_generator", "gpt_scorer",
           "invariant_probe", "is_similar", "make_world", "normalize_answer", "order", "parse",
           "read_kairosqa", "recency_slope", "snapshot", "split_filler", "world_records",
           "write_kairosqa", "wsd_lr"]
