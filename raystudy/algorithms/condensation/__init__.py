"""GADC subset selection (Cui et al., ICML 2026): partial OT, selection, a small diffusion
model, metrics."""

from .diffusion import Denoiser, GaussianDiffusion, gaussian_eps_fn, model_eps_fn
from .metrics import (
    class_accuracy,
    frechet_distance,
    median_bandwidth,
    mmd2_unbiased,
    precision_recall_knn,
    sliced_wasserstein,
    tail_recall,
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

__all__ = ["METHODS", "Denoiser", "GaussianDiffusion", "SelectionObjective", "brute_force",
           "class_accuracy", "frechet_distance", "gaussian_eps_fn", "median_bandwidth",
           "model_eps_fn", "sliced_wasserstein", "tail_recall",
           "gadc_shipped_cost", "greedy_select", "herding", "kcenter_greedy",
           "mmd2_unbiased", "partial_lp", "partial_ot", "precision_recall_knn", "row_error",
           "select_subset", "swap_refine"]
