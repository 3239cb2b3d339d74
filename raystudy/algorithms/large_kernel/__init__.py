"""WBMM (windowed batch matrix multiplication) and the depthwise-conv baselines it is timed
against (Song et al., ICML 2026, arXiv 2607.02097; code wansong-s/WBMM).

* ``wbmm(x, table, window, identity=True)``, ``WBMM`` (NC mode; ``.cache()`` for C),
  ``relative_position_index``, ``weight_matrix``, ``table_from_kernel`` /
  ``kernel_from_table`` (``wbmm.py``);
* ``windowed_conv``: the independent per-window ``F.conv2d`` reference (``reference.py``);
* ``candidates``/``check`` (``operators.py``) and ``interleaved`` (``timing.py``): the
  timed closures at one shape and the shuffled interleaved timer;
* ``depthwise``, ``unfold_depthwise``, ``fft_depthwise``, ``lka`` (``baselines.py``).
"""

from .baselines import (
    LKA_MISSING,
    depthwise,
    fft_depthwise,
    lka,
    lka_available,
    unfold_depthwise,
)
from .operators import candidates, check, size_of
from .reference import windowed_conv
from .timing import interleaved, time_once
from .wbmm import (
    WBMM,
    as_window,
    kernel_from_table,
    macs,
    relative_position_index,
    table_from_kernel,
    table_size,
    wbmm,
    weight_matrix,
)

__all__ = [
    "LKA_MISSING", "WBMM", "as_window", "candidates", "check", "interleaved", "size_of",
    "time_once", "depthwise", "fft_depthwise", "kernel_from_table",
    "lka", "lka_available", "macs", "relative_position_index", "table_from_kernel",
    "table_size", "unfold_depthwise", "wbmm", "weight_matrix", "windowed_conv",
]
