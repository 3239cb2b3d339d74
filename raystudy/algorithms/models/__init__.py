"""Small reference models used by studies (plain PyTorch)."""

from .gpt import GPT

__all__ = ["GPT"]
