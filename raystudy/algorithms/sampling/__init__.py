"""Block sampling with batched fetching for on-disk single-cell data (scDataset).

Paper: D'Ascenzo & Cultrera di Montesano, "scDataset: Scalable Data Loading for
Deep Learning on Large-Scale Single-Cell Omics", arXiv 2506.01883.

    strategies.py  Streaming, BlockShuffling, BlockWeightedSampling, ClassBalancedSampling
    plan.py        plan_fetches: an epoch cut into sorted fetches and minibatches;
                   read_minibatches: a reader's minibatches for planned fetches
    direct.py      slices of unfiltered HDF5 datasets read straight from the file
    diversity.py   minibatch label entropy and its expectation under true random sampling
    runs.py        coalescing a sorted row set into slice reads
    readers.py     Rows, RowReader, HDF5ArrayReader, MemmapReader
    h5ad.py        H5ADReader, H5ADCollection (AnnData files read through h5py)
    synthetic.py   make_anndata_collection: a Tahoe-like collection, one file per plate

Plain NumPy/SciPy/h5py: nothing here imports Ray.
"""

from .diversity import (
    entropy_bits,
    expected_random_entropy,
    minibatch_entropies,
    monte_carlo_random_entropy,
)
from .h5ad import H5ADCollection, H5ADReader
from .plan import Fetch, epoch_seed, plan_fetches, read_minibatches
from .readers import HDF5ArrayReader, MemmapReader, RowReader, Rows
from .strategies import (
    BlockShuffling,
    BlockWeightedSampling,
    ClassBalancedSampling,
    SamplingStrategy,
    Streaming,
)
from .synthetic import make_anndata_collection

__all__ = [
    "BlockShuffling",
    "BlockWeightedSampling",
    "ClassBalancedSampling",
    "Fetch",
    "H5ADCollection",
    "H5ADReader",
    "HDF5ArrayReader",
    "MemmapReader",
    "RowReader",
    "Rows",
    "SamplingStrategy",
    "Streaming",
    "entropy_bits",
    "epoch_seed",
    "expected_random_entropy",
    "make_anndata_collection",
    "minibatch_entropies",
    "monte_carlo_random_entropy",
    "plan_fetches",
    "read_minibatches",
]
