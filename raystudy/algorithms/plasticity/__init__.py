"""Loss of plasticity in continual learning: feature ranks, Hessian spectra, interventions."""

from .hessian import (
    EPSILON_RANKS,
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
from .interventions import (
    L2,
    Compose,
    EffectiveRankAscent,
    EffectiveRankPenalty,
    FullReset,
    Intervention,
    L2Init,
    ReDo,
    ShrinkPerturb,
    derive_seed,
    mean_effective_rank,
    redo_reset,
    reset_parameters,
)
from .models import MLP, ConvNet, UnitPair
from .ranks import (
    dead_units,
    dormant_fraction,
    dormant_mask,
    dormant_scores,
    effective_rank,
    effective_rank_of,
    singular_values,
    srank,
    srank_of,
)

__all__ = [
    "L2", "MLP", "Compose", "ConvNet", "EffectiveRankAscent", "EffectiveRankPenalty",
    "FullReset", "Intervention", "L2Init", "ReDo", "ShrinkPerturb", "UnitPair", "derive_seed",
    "mean_effective_rank", "redo_reset", "reset_parameters",
    "EPSILON_RANKS", "SpectralDensity", "Tridiagonal", "density_from_quadrature",
    "epsilon_rank", "full_hessian", "hessian_eigenvalues", "hessian_spectral_density",
    "lanczos", "make_hvp",
    "dead_units", "dormant_fraction", "dormant_mask", "dormant_scores", "effective_rank",
    "effective_rank_of", "singular_values", "srank", "srank_of",
]
