"""GADC subset selection (Cui et al., ICML 2026): partial OT, selection, a small diffusion
model, metrics."""

from .diffusion import Denoiser, GaussianDiffusion, gaussian_eps_fn, model_eps_fn
from .metrics import (
    class_accuracy,
    frechet_distance,
    knn_radii,
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
    partial_ot_exact,
    row_error,
)
from .select import (
    METHODS,
    SelectionObjective,
    brute_force,
    greedy_select,
    herding,
    kcenter_greedy,
    select_class,
    select_subset,
    swap_refine,
)

__all__ = ["METHODS", "Denoiser", "GaussianDiffusion", "SelectionObjective", "brute_force",
           "class_accuracy", "frechet_distance", "gadc_shipped_cost", "gaussian_eps_fn",
           "greedy_select", "herding", "kcenter_greedy", "knn_radii", "median_bandwidth",
           "mmd2_unbiased", "model_eps_fn", "partial_lp", "partial_ot", "partial_ot_exact",
           "precision_recall_knn", "row_error", "select_class", "select_subset",
           "sliced_wasserstein", "swap_refine", "tail_recall"]
