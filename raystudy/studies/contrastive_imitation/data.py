"""The contrastive_imitation study's data: which sets each method reads, where each kind
of episode comes from (generated here, D4RL's HDF5 files or a Minari store), and the
driver-side check of every file before Ray starts.
"""

from __future__ import annotations

from typing import Any

from raystudy.algorithms.imitation import MixSpec, sources
from raystudy.algorithms.imitation.demodice import DemoDICE
from raystudy.algorithms.imitation.dualcoil import DualCOIL
from raystudy.algorithms.imitation.dwbc import DWBC
from raystudy.algorithms.imitation.safedice import SafeDICE
from raystudy.errors import DataError

METHODS = ("dualcoil", "bc_good", "bc_all", "demodice", "safedice", "dwbc")
ORACLE = "bc_oracle"  # a reference, not a method: BC on the unlabeled expert episodes (hidden)
SAC = "sac"  # not an imitation method: trains the SAC expert of a MuJoCo task (--profile sac)
METHOD_SOURCES = {"dualcoil": DualCOIL.sources, "bc_good": ("good",), "bc_all": ("all",),
                  ORACLE: ("oracle",), "demodice": DemoDICE.sources,
                  "safedice": SafeDICE.sources, "dwbc": DWBC.sources, SAC: ()}


def source_locations(data: Any) -> dict[str, str]:
    """Where each kind's episodes are read from (files, Minari ids or generated files);
    ``data``: the config's DataConfig."""
    kinds = ("expert", MixSpec.parse(data.mix).bad_source)
    if data.source == "generate":
        counts = {"expert": data.expert_episodes, "random": data.random_episodes,
                  "medium": data.medium_episodes}
        return {k: str(sources.generated_file(data.cache_dir, data.task, k, counts[k],
                                              data.expert_dir, data.reference_episodes))
                for k in kinds}
    explicit = {"expert": data.expert, "random": data.random, "medium": data.medium}
    return {k: sources.locate(data.source, data.task, k, data.root, explicit) for k in kinds}


def check_data(config: Any) -> None:
    """On the driver: every file exists and fits the task's env; generate missing data."""
    if config.method == SAC:
        return  # trains an expert: reads no data
    try:
        where = source_locations(config.data)  # generates (once) what a generate source lacks
    except (ValueError, FileNotFoundError) as exc:
        raise DataError(f"data.source={config.data.source}: {exc}") from None
    if config.data.source != "generate":
        sources.check_sources(config.data.source, config.data.task, where)
