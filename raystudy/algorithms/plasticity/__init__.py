"""Loss of plasticity in continual learning: feature ranks, Hessian spectra, interventions."""

from .ranks import (
    dead_units,
    dormant_fraction,
    dormant_mask,
    dormant_scores,
    effective_rank,
    singular_values,
    srank,
)

__all__ = [
    "dead_units", "dormant_fraction", "dormant_mask", "dormant_scores", "effective_rank",
    "singular_values", "srank",
]
