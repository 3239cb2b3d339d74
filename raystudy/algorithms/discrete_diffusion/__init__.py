"""Uniform-state discrete diffusion LMs: the UDLM NELBO, a simple denoising loss on
noise-replaced tokens with a regulariser against uniform output (raystudy's reading of
Zhu et al., "Simple Denoising Diffusion Language Models", arXiv 2510.22926), the plug-in
ancestral sampler, and an exact Markov source with its metrics."""

from .losses import simple_loss, uniform_regulariser
from .markov import MarkovSource
from .metrics import bigram_js, oracle_gen_nll, sample_entropy
from .sampler import ancestral_sample
from .schedules import CosineAlpha, LinearAlpha
from .uniform import nelbo_per_token, posterior, q_sample

__all__ = [
    "LinearAlpha", "CosineAlpha",
    "q_sample", "posterior", "nelbo_per_token",
    "simple_loss", "uniform_regulariser",
    "MarkovSource",
    "ancestral_sample",
    "oracle_gen_nll", "sample_entropy", "bigram_js",
]
