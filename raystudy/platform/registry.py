"""Registered studies. Imports are lazy so ``raystudy list`` stays fast.

A study whose own dependencies live in an extra (``pip install 'raystudy[graph]'``)
names the modules it needs; a missing one is a one-line ``UserError`` saying which
extra to install, before anything else is imported.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

from raystudy.errors import UserError
from raystudy.platform.study import Study


@dataclass(frozen=True)
class StudyEntry:
    name: str
    module: str
    description: str
    extra: str | None = None
    """The pyproject extra holding the study's own dependencies."""
    requires: tuple[str, ...] = ()
    """Top-level modules of that extra the study imports."""


STUDIES: tuple[StudyEntry, ...] = (
    StudyEntry(
        "optimizer_robustness",
        "raystudy.studies.optimizer_robustness",
        "Learning-rate robustness of MuonMax/Momo vs AdamW, MuonAdam (Crawshaw et al., ICML 2026)",
    ),
    StudyEntry(
        "cell_classifier",
        "raystudy.studies.cell_classifier",
        "Block sampling vs random vs streaming for a cell-line classifier (scDataset, ICML 2026)",
    ),
    StudyEntry(
        "empirical_gp",
        "raystudy.studies.empirical_gp",
        "GP priors learned by EM from a corpus vs per-task kernels (Empirical GPs, ICML 2026)",
        extra="gp",
        requires=("gpytorch", "linear_operator"),
    ),
    StudyEntry(
        "graph_transfer",
        "raystudy.studies.graph_transfer",
        "Same-graph NC <-> LP transfer, leakage-free vs leaky (Akula et al., ICML 2026)",
        extra="graph",
        requires=("torch_geometric",),
    ),
    StudyEntry(
        "plasticity",
        "raystudy.studies.plasticity",
        "Hessian spectral collapse and L2-ER in continual supervised and RL (ICML 2026)",
        extra="plasticity",
        requires=("gymnasium", "mujoco", "sklearn"),
    ),
    StudyEntry(
        "contrastive_imitation",
        "raystudy.studies.contrastive_imitation",
        "Offline imitation from good + bad demonstrations: DualCOIL vs BC, DemoDICE, "
        "SafeDICE, DWBC (ICML 2026)",
        extra="imitation",
        requires=("gymnasium", "mujoco", "minari"),
    ),
)


def entries() -> tuple[StudyEntry, ...]:
    return STUDIES


def missing_modules(modules: tuple[str, ...]) -> list[str]:
    """The modules of ``modules`` that cannot be imported here."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


def require_extra(what: str, extra: str, modules: tuple[str, ...]) -> None:
    """Raise a one-line UserError naming the extra to install when a module is missing."""
    missing = missing_modules(modules)
    if missing:
        raise UserError(f"{what} needs {', '.join(missing)}: "
                        f"pip install 'raystudy[{extra}]'")


def get_study(name: str) -> Study:
    """Import and return a study by name; an unknown name is a UserError listing the valid ones."""
    for entry in STUDIES:
        if entry.name == name:
            if entry.extra:
                require_extra(f"study {name}", entry.extra, entry.requires)
            return importlib.import_module(entry.module).STUDY
    valid = ", ".join(e.name for e in STUDIES)
    raise UserError(f"unknown study '{name}'; available studies: {valid}")
