"""Multi-state linear attention: DLA (raystudy's reading), Log-Linear, fixed and FIFO policies.

See README.md for the file map and the readings raystudy chose.
"""

from .data import FILLER, IGNORE, KEY, QUERY, VALUE, RecallBatch, mqar, mqar_sparse
from .mixer import MIXER_POLICIES, MultiStateMixer
from .multistate import (
    POLICIES,
    SCORES,
    Partition,
    chunk_rank,
    dla_partition,
    fenwick_rank,
    fifo_partition,
    information,
    loglinear_levels,
    multistate_attention,
    multistate_recurrent,
    partition_rank,
    states_per_query,
)
from .streams import (
    boundary_f1,
    contributions,
    deviation_bound,
    needle_stream,
    piecewise_stream,
    realised_deviation,
    recall_best_state,
)

__all__ = [
    "FILLER", "IGNORE", "KEY", "QUERY", "VALUE", "RecallBatch", "mqar", "mqar_sparse",
    "MIXER_POLICIES", "MultiStateMixer",
    "POLICIES", "SCORES", "Partition", "chunk_rank", "dla_partition", "fenwick_rank",
    "fifo_partition", "information", "loglinear_levels", "multistate_attention",
    "multistate_recurrent", "partition_rank", "states_per_query",
    "boundary_f1", "contributions", "deviation_bound", "needle_stream", "piecewise_stream",
    "realised_deviation", "recall_best_state",
]
