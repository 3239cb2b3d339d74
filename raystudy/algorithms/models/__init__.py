"""Small reference models used by studies (plain PyTorch)."""

from .denoiser import Denoiser
from .gpt import GPT

__all__ = ["GPT", "Denoiser"]
