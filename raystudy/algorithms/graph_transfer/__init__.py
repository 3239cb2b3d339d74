"""Same-graph node-classification <-> link-prediction transfer (Akula et al., ICML 2026).

The leakage-free protocol (:mod:`.split`, :mod:`.audit`), the leaky contrast
(:mod:`.leaky`), metrics and hard negatives. See README.md in this folder.
"""

from .audit import LeakageError, audit
from .leaky import LeakySplit, randomlinksplit_split
from .split import GraphSplit, leakage_free_split

__all__ = ["GraphSplit", "LeakageError", "LeakySplit", "audit", "leakage_free_split",
           "randomlinksplit_split"]
