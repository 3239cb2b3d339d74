"""GADC subset selection (Cui et al., ICML 2026): partial OT, selection, metrics."""

from .metrics import (
    frechet_distance,
    mmd2_unbiased,
    precision_recall_knn,
)
from .partial_ot import (
    gadc_shipped_cost,
    partial_lp,
    partial_ot,
    row_error,
)
from .select import (
    METHODS,
    SelectionObjective,
    brute_force,
    greedy_select,
    herding,
    kcenter_greedy,
    select_subset,
    swap_refine,
)

__all__ = ["METHODS", "SelectionObjective", "brute_force", "frechet_distance",
           "gadc_shipped_cost", "greedy_select", "herding", "kcenter_greedy",
           "mmd2_unbiased", "partial_lp", "partial_ot", "precision_recall_knn", "row_error",
           "select_subset", "swap_refine"]
