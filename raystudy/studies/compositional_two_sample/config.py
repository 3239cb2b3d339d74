"""The two-sample study's config: its frozen dataclasses, the baseline list and the rules
``validate`` checks (the scenario spec and the sizes it implies)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import PositiveFloat, PositiveInt, Range, parse_spec
from raystudy.algorithms.two_sample import FAMILIES, METHODS, Scenario
from raystudy.algorithms.two_sample.batch import HARMONIC

BASELINES = tuple(m for m in METHODS if m not in HARMONIC)
"""Every baseline of the library, in its seed order (baselines.methods' choices)."""
ZERO_DELTA = 0.65
"""The log-ratio baselines replace a zero by 0.65 x the smallest non-zero part (1 / depth
for counts) and scale the rest by 1 - k delta, so k zeros need k delta < 1
(raystudy.algorithms.two_sample.logratio)."""


# ----------------------------------------------------------------------------- config
@dataclass(frozen=True)
class DataConfig:
    scenario: str = "dirichlet"
    """family[/effect]: dirichlet, logistic_normal (nulls); concentration/E, mixture/E,
    shape/E (same mean), mean_shift/E, zeros/E, vmf/E (radians), file/E (E = 0: the null)."""
    n: Annotated[int, Range(ge=4)] = 50
    """Rows of x per replicate."""
    m_ratio: PositiveFloat = 1.0
    """Rows of y as a multiple of n: m = round(m_ratio * n) (at least 4)."""
    D: Annotated[int, Range(ge=2)] = 3
    """Parts of a composition (or the ambient dimension for vmf); file: read from the table."""
    a: PositiveFloat = 2.0
    """Dirichlet parameter per part of the base distribution (Dirichlet families, zeros)."""
    sigma: PositiveFloat = 0.5
    """Standard deviation of the ILR coordinates (logistic_normal, shape)."""
    kappa: PositiveFloat = 10.0
    """von Mises-Fisher concentration (vmf)."""
    depth: Annotated[int, Range(ge=2)] = 10
    """Counts per row before closing to proportions (zeros: exact zeros occur)."""
    path: str = ""
    """file: a local CSV/TSV of counts or proportions, one row per sample, a group column."""
    group_column: str = "group"
    """file: the column holding the group label."""
    groups: tuple[str, ...] = ()
    """file: the two groups to compare ('A,B'; empty: the file's only two)."""


@dataclass(frozen=True)
class HarmonicConfig:
    studentize: tuple[Literal["cross", "full"], ...] = ("cross", "full")
    """Studentizations run: cross (Shekhar-Kim-Ramdas split) | full (Chen-Qin); the first
    is the trial's eval/reject."""
    degree: Annotated[int, Range(ge=0)] = 10
    """Truncation L of the Gegenbauer expansion (0: the untruncated energy distance)."""
    distance: Literal["chordal", "geodesic"] = "chordal"
    """The energy distance on the sphere that the harmonics expand."""


@dataclass(frozen=True)
class BaselineConfig:
    methods: tuple[Literal[BASELINES], ...] = BASELINES  # type: ignore[valid-type]
    """Baselines run on the same replicates (those that do not apply to the data are
    skipped: log-ratio tests on vmf, mean_direction on compositions)."""
    permutations: PositiveInt = 99
    """B of the permutation energy and MMD tests (alpha (1 + B) an integer: exact)."""


@dataclass(frozen=True)
class MonteCarloConfig:
    batches: PositiveInt = 6
    """B: batches per trial, the units of the paired tests (6: the fewest an exact
    sign-flip test at 5 % can decide on)."""
    reps: PositiveInt = 100
    """R: replicates per batch (every method on each)."""
    alpha: Annotated[float, Range(gt=0, lt=0.5)] = 0.05
    """Level of every test."""
    seed: int = 0
    """Seed of the batches (with the data configuration and the batch index)."""
    checkpoint_every: Annotated[int, Range(ge=0)] = 1
    """Batches between checkpoints (0: only the last)."""


@dataclass(frozen=True)
class TwoSampleConfig:
    data: DataConfig = field(default_factory=DataConfig)
    harmonic: HarmonicConfig = field(default_factory=HarmonicConfig)
    baselines: BaselineConfig = field(default_factory=BaselineConfig)
    mc: MonteCarloConfig = field(default_factory=MonteCarloConfig)

    def validate(self) -> None:
        """Rules across fields (each field's own bounds and choices are declared on it)."""
        if not self.harmonic.studentize:
            raise ValueError("harmonic.studentize needs at least one of cross, full")
        if len(set(self.harmonic.studentize)) != len(self.harmonic.studentize):
            raise ValueError(f"harmonic.studentize={','.join(self.harmonic.studentize)} "
                             "names a studentization twice")
        if self.data.groups and len(self.data.groups) != 2:
            raise ValueError(f"data.groups={','.join(self.data.groups)}: name exactly two "
                             "groups (or none)")
        s = scenario(self)  # the family, its effect and the sizes, one sentence if wrong
        replaced = {"hotelling_ilr", "james_ilr", "cao_lin_li"} & set(self.baselines.methods)
        if s.family == "zeros" and replaced and self.data.depth <= ZERO_DELTA * (s.D - 1):
            raise ValueError(f"data.depth={self.data.depth} is too low for D={s.D}: the "
                             "log-ratio baselines' zero replacement needs depth > "
                             f"{ZERO_DELTA:g} (D - 1)")


# ----------------------------------------------------------------------------- scenario
def parse_scenario(text: str) -> tuple[str, float]:
    """``"mixture/0.3"`` -> ``("mixture", 0.3)``; a bare family is its null (effect 0)."""
    terms = parse_spec(text, "data.scenario")
    name, args = terms[0].name, terms[0].args
    if len(terms) > 1 or name not in FAMILIES or len(args) > 1 or (
            args and not isinstance(args[0], float)):
        raise ValueError(f"data.scenario={text!r}: expected family or family/effect with "
                         f"family one of {', '.join(FAMILIES)}")
    return name, float(args[0]) if args else 0.0


def m_of(data: DataConfig) -> int:
    """Rows of y (derived): round(m_ratio * n), at least 4."""
    return max(4, round(data.m_ratio * data.n))


def scenario(config: TwoSampleConfig) -> Scenario:
    """The library's Scenario of the trial (its ValueError is one sentence)."""
    family, effect = parse_scenario(config.data.scenario)
    d = config.data
    try:
        return Scenario(family, n=d.n, m=m_of(d), D=d.D, effect=effect, a=d.a, sigma=d.sigma,
                        kappa=d.kappa, depth=d.depth, path=d.path or None,
                        group_column=d.group_column,
                        groups=(d.groups[0], d.groups[1]) if d.groups else None)
    except ValueError as exc:
        raise ValueError(f"data.scenario={d.scenario}: {exc}") from None
