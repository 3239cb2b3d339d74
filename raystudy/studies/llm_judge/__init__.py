"""FairJudge's learned, debiased, consistent judge as a mechanism study (ICML 2026): a judge
trained SFT -> DPO -> RL on a biased teacher's labels in a generated judging world.

The study package: ``config.py`` (the frozen config, the arms and their stages),
``recipe.py`` (the world and teacher per seed, the stages on one step counter, the
evaluation, ``STUDY``), ``analysis.py`` (claims J1-J7, the table and the figure),
``profiles/`` and ``spaces/``. ``STUDY`` is built on first access.
"""

from __future__ import annotations

from raystudy import lazy_study

__all__ = ["STUDY"]


__getattr__ = lazy_study(__name__)  # STUDY, from .recipe on first access
