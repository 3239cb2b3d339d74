"""Registered studies. Imports are lazy so ``raystudy list`` stays fast."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from raystudy.errors import UserError
from raystudy.platform.study import Study


@dataclass(frozen=True)
class StudyEntry:
    name: str
    module: str
    description: str


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
)


def entries() -> tuple[StudyEntry, ...]:
    return STUDIES


def get_study(name: str) -> Study:
    """Import and return a study by name; an unknown name is a UserError listing the valid ones."""
    for entry in STUDIES:
        if entry.name == name:
            return importlib.import_module(entry.module).STUDY
    valid = ", ".join(e.name for e in STUDIES)
    raise UserError(f"unknown study '{name}'; available studies: {valid}")
