"""Exact speculative decoding's acceptance length by domain, on real vs random prompts,
diverse prompt subsets and pruned draft vocabularies (SPEED-Bench, ICML 2026), with
in-house byte-level GPTs on domains derived from Python's standard library.

The study package: ``config.py`` (the frozen config, the draft kinds), ``recipe.py`` (the
models trained or loaded per seed, the decoding per domain on the cadence, the subset
errors, ``STUDY``), ``analysis.py`` (claims S1-S4, tables, figures), ``data.py`` (the byte
domains or a JSONL prompt folder, as the models' tokens), ``subsets.py`` (S3's subset rules
and their errors), ``profiles/`` and ``spaces/``.
``STUDY`` is built on first access.
"""

from __future__ import annotations

from raystudy import lazy_study

__all__ = ["STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
