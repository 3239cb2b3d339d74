"""Same-graph node-classification <-> link-prediction transfer (Akula et al., ICML 2026).

The leakage-free protocol and its audit, the leaky RandomLinkSplit contrast, GCN /
GraphSAGE / GPS encoders, the transfer mechanisms, the CoTask Score and the
statistics-based recommender; see README.md in this folder for the file map.
"""

from .audit import LeakageError, audit
from .cts import cotask_score
from .datasets import load_graph
from .leaky import LeakySplit, randomlinksplit_split
from .mechanisms import MECHANISMS, RunSpec, run_mechanism
from .protocol import TaskData, prepare
from .split import GraphSplit, leakage_free_split

__all__ = ["MECHANISMS", "GraphSplit", "LeakageError", "LeakySplit", "RunSpec", "TaskData",
           "audit", "cotask_score", "leakage_free_split", "load_graph", "prepare",
           "randomlinksplit_split", "run_mechanism"]
