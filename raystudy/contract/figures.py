"""One way to write a study's figure: folder made, PNG written, the figure closed."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def save_figure(fig: Any, path: Path | str, dpi: int = 110) -> Path:
    """Write the matplotlib ``fig`` to ``path`` (its folder made) and close it, so a long
    analysis never piles up open figures; returns the path."""
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    return path
