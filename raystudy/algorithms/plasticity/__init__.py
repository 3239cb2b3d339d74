"""Loss of plasticity in continual learning: feature ranks, Hessian spectra, interventions."""

from .hessian import (
    SpectralDensity,
    Tridiagonal,
    density_from_quadrature,
    epsilon_rank,
    full_hessian,
    hessian_eigenvalues,
    hessian_spectral_density,
    lanczos,
    make_hvp,
)
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
    "SpectralDensity", "Tridiagonal", "density_from_quadrature", "epsilon_rank", "full_hessian",
    "hessian_eigenvalues", "hessian_spectral_density", "lanczos", "make_hvp",
    "dead_units", "dormant_fraction", "dormant_mask", "dormant_scores", "effective_rank",
    "singular_values", "srank",
]
