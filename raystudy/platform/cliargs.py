"""Small argparse pieces shared by the CLI and the ``raystudy data`` commands studies add."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def bounded(kind: type, low: float, high: float | None = None) -> Callable[[str], float]:
    """An argparse ``type``: ``kind`` (int or float) within [low, high], else one usage line
    (``--seq-len: 1 must be >= 2``)."""

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if value != value or value < low or (high is not None and value > high):
            bound = f">= {low:g}" if high is None else f"in [{low:g}, {high:g}]"
            raise argparse.ArgumentTypeError(f"{text} must be {bound}")
        return value

    parse.__name__ = kind.__name__
    return parse
