"""Small reference models used by studies (plain PyTorch)."""

from .denoiser import Denoiser
from .gpt import GPT
from .mixer_lm import MixerLM

__all__ = ["GPT", "Denoiser", "MixerLM"]
