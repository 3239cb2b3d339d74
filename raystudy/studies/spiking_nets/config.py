"""The spiking_nets study's config: its frozen dataclasses, the neuron and data-set name
lists, and the extra check ``validate`` runs."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Literal

from raystudy import Fraction, NonNegativeFloat, NonNegativeInt, PositiveFloat, PositiveInt
from raystudy.algorithms.snn.data import DVS_GESTURE_SIZE, NMNIST_SIZE

NEURONS = ("ultralif", "ultraplif", "ultradlif", "ultradplif", "sigmalif", "sg_lif",
           "sg_plif", "sg_lif_learned_threshold", "soft_lif", "soft_plif", "dspike")
LSE_OR_EPS = ("ultralif", "ultraplif", "ultradlif", "ultradplif", "sigmalif")
"""The neurons with a learnable eps and a threshold theta (neuron.learn_eps, .threshold)."""
SURROGATE = ("sg_lif", "sg_plif", "sg_lif_learned_threshold")
"""The true surrogate-gradient neurons, firing at neuron.sg_threshold."""
EVENT_SETS = ("temporal_order", "nmnist", "shd", "dvs_gesture")
IMAGES = {"digits": (1, 8, 8), "mnist": (1, 28, 28), "fashion": (1, 28, 28),
          "cifar10": (3, 32, 32), "nmnist": (2, NMNIST_SIZE, NMNIST_SIZE),
          "dvs_gesture": (2, DVS_GESTURE_SIZE, DVS_GESTURE_SIZE)}
"""C x H x W of the image sets (event sets: polarity, y, x), for the conv network."""


# ----------------------------------------------------------------------------- config
@dataclass(frozen=True)
class NeuronConfig:
    name: Literal[NEURONS] = "ultralif"  # type: ignore[valid-type]
    """ultralif/ultraplif/ultradlif/ultradplif (LSE), sigmalif (control), sg_lif/sg_plif
    (surrogate gradient), sg_lif_learned_threshold (SG-LIF whose threshold is one learnable
    scalar per layer, init sg_threshold), soft_lif/soft_plif/dspike (the authors' smooth
    baselines)."""
    tau: Fraction = 0.9
    """Leak (fixed-tau neurons; the P- variants learn it)."""
    init_eps: PositiveFloat = 1.0
    """Initial eps of the LSE neurons and SigmaLIF (one per layer, learnable)."""
    learn_eps: bool = True
    """False: eps fixed at init_eps (the ablation)."""
    threshold: float = 0.0
    """theta of the Ultra neurons and SigmaLIF (library 0, the authors' ablation 1)."""
    dlif_form: Literal["library", "readme"] = "library"
    """UltraDLIF's published form (ultradplif: library only)."""
    surrogate: Literal["fast_sigmoid", "atan", "sigmoid"] = "fast_sigmoid"
    """sg_*: the surrogate derivative."""
    slope: PositiveFloat = 25.0
    """sg_*: the surrogate's slope k."""
    sg_threshold: PositiveFloat = 1.0
    """sg_*: firing threshold."""
    reset: Literal["zero", "subtract"] = "zero"
    """sg_*: zero = V (1 - s) as the authors' neurons, subtract = V - s theta."""
    tuned_threshold: float | None = None
    """The tune space's one threshold axis: when set, the firing threshold of whichever
    neuron runs (threshold of the Ultra neurons and SigmaLIF, sg_threshold of the SG
    neurons, the init of a learned one), so every arm gets the same grid. None: each
    neuron's own field. The smooth baselines have no threshold to tune."""

    @property
    def theta(self) -> float:
        """The firing threshold this neuron runs with (Ultra/SigmaLIF: threshold; SG:
        sg_threshold), unless tuned_threshold sets it."""
        if self.tuned_threshold is not None:
            return self.tuned_threshold
        return self.sg_threshold if self.name in SURROGATE else self.threshold


@dataclass(frozen=True)
class DataConfig:
    name: Literal["digits", "temporal_order", "nmnist", "shd", "dvs_gesture", "mnist",
                  "fashion", "cifar10"] = "digits"
    """digits (bundled, rate-encoded), temporal_order (generated, SHD layout), nmnist
    (N-MNIST .bin in path; no path: digits along saccades, generated once), shd (.h5 in
    path), dvs_gesture (tonic's .npy in path), mnist/fashion (IDX in path), cifar10
    (pickles in path)."""
    path: str = ""
    """Folder of the files (shd: shd_train.h5, shd_test.h5; nmnist: Train/, Test/;
    dvs_gesture: ibmGestureTrain/, ibmGestureTest/)."""
    timesteps: PositiveInt = 1
    """T: rate-encoding steps (static) or time bins (events)."""
    rate_gain: Fraction = 0.5
    """Bernoulli p = gain * x per step (the authors' 0.5)."""
    normalize_then_clamp: bool = True
    """Static: standardise by the training mean/std, then clamp to [0, 1] (the authors')."""
    val_fraction: Fraction = 0.1
    """Share of train carved out (seeded) for the epoch choice."""
    events_train: PositiveInt = 800
    """temporal_order: generated training recordings."""
    events_test: PositiveInt = 400
    """temporal_order: generated test recordings."""


@dataclass(frozen=True)
class TrainConfig:
    epochs: PositiveInt = 15
    """Passes over the training split."""
    batch_size: PositiveInt = 128
    """Adam mini-batch (the authors' 128)."""
    lr: PositiveFloat = 1e-3
    """Adam learning rate (the authors' 1e-3)."""
    hidden: PositiveInt = 64
    """Units per hidden layer (the README's 64)."""
    network: Literal["fc", "conv"] = "fc"
    """fc: the authors' SNN/DeepSNN; conv: their ConvSNN (two conv 3x3 -> avg pool 2 ->
    neuron blocks, 32 and 64 channels; image data only)."""
    layers: Literal[1, 2, 3] = 1
    """Hidden spiking layers of the fc network (depth space)."""
    sparsity_lambda: NonNegativeFloat = 0.0
    """loss = CE + lambda * mean spike value."""
    seed: int = 0
    """Seed of the init, the split and the training encoding."""
    threads: PositiveInt = 1
    """torch threads per trial."""
    eval_every: NonNegativeInt = 5
    """Epochs between reports (selection still looks at every epoch)."""
    checkpoint_every: NonNegativeInt = 1
    """Reports between checkpoints (0: only the last)."""


@dataclass(frozen=True)
class SpikingConfig:
    neuron: NeuronConfig = field(default_factory=NeuronConfig)
    data: DataConfig = field(default_factory=DataConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def validate(self) -> None:
        if self.train.network == "conv":
            if self.data.name not in IMAGES:
                raise ValueError(f"train.network=conv needs image data ({', '.join(IMAGES)}),"
                                 f" not data.name={self.data.name}")
            if self.train.layers != 1:
                raise ValueError("train.layers applies to the fc network; conv has its two "
                                 "blocks")
        if self.neuron.tuned_threshold is not None and \
                self.neuron.name not in (*LSE_OR_EPS, *SURROGATE):
            raise ValueError(f"neuron.tuned_threshold: {self.neuron.name} has a fixed spike "
                             "function, no threshold to tune")
        if self.neuron.name == "ultradplif" and self.neuron.dlif_form == "readme":
            raise ValueError("neuron.dlif_form=readme has no tau: ultradplif is library-form")
        if self.data.name in ("shd", "dvs_gesture", "mnist", "fashion", "cifar10") \
                and not self.data.path:
            raise ValueError(f"data.name={self.data.name} needs data.path (a local folder)")
        if self.data.name == "digits" or (self.data.name == "nmnist" and not self.data.path):
            require("sklearn", f"data.name={self.data.name} needs scikit-learn (its bundled "
                    "digits)")


def require(module: str, what: str) -> None:
    """A ValueError (one line, exit 2) naming the extra when ``module`` is not installed."""
    if importlib.util.find_spec(module) is None:
        raise ValueError(f"{what}: pip install 'raystudy[spiking]'")
