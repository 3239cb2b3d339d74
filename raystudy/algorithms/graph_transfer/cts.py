r"""The CoTask Score (CTS): how well one shared encoder serves NC and LP at once.

The paper names the score but its formula is not public (RESEARCH.md, section 5);
this is the project's definition. For task :math:`t \in \{NC, LP\}` with test metric
:math:`m_t` (accuracy, ROC-AUC), chance level :math:`c_t` (the majority-class share
of the training labels; 0.5) and single-task baseline :math:`m_t^{single}` of the
same backbone and seed, the shared encoder keeps the skill ratio

.. math::  r_t = \max\Big(0,\ \frac{m_t^{shared} - c_t}{m_t^{single} - c_t}\Big),

the fraction of the specialist's above-chance skill it retains, and

.. math::  \mathrm{CTS} = \frac{2\, r_{NC}\, r_{LP}}{r_{NC} + r_{LP}}
           \quad (0 \text{ if either } r_t = 0),

their harmonic mean. Why this form:

* **relative to the single-task baseline**, so CTS = 1 means "as good as two
  specialists", > 1 better, < 1 a cost of sharing, on any dataset;
* **above chance**, so accuracy and AUC are on one scale: AUC 0.90 against a
  specialist's 0.95 loses 10 % of its skill (0.40 of 0.45), not 5 %;
* **harmonic mean**, so one task cannot buy the other: ratios (1.6, 0.4) average to
  1.0 but give CTS 0.64; an encoder that gives up a task entirely (:math:`r = 0`)
  scores 0, as a shared encoder that fails one of its tasks should;
* undefined (NaN) when a baseline is at or below chance (no skill to retain).
"""

from __future__ import annotations

import math

CTS_LABEL = "CTS (raystudy's definition; the paper gives no formula)"
"""How the report, figures and docs name the score wherever it appears."""


def skill_ratio(shared: float, single: float, chance: float) -> float:
    """Skill ratio max(0, (shared - chance) / (single - chance)); NaN if single <= chance."""
    if any(math.isnan(v) for v in (shared, single, chance)) or single <= chance:
        return math.nan
    return max(0.0, (shared - chance) / (single - chance))


def cotask_score(nc_shared: float, nc_single: float, lp_shared: float, lp_single: float,
                 nc_chance: float, lp_chance: float = 0.5) -> float:
    """CTS of a shared encoder (module docstring): harmonic mean of the two skill ratios."""
    r_nc = skill_ratio(nc_shared, nc_single, nc_chance)
    r_lp = skill_ratio(lp_shared, lp_single, lp_chance)
    if math.isnan(r_nc) or math.isnan(r_lp):
        return math.nan
    if r_nc == 0 or r_lp == 0:
        return 0.0
    return 2 * r_nc * r_lp / (r_nc + r_lp)
