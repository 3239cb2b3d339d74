"""Small reference models used by studies (plain PyTorch)."""

from raystudy.algorithms.models.gpt import GPT

__all__ = ["GPT"]
