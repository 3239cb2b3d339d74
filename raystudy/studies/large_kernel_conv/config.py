"""The large_kernel_conv study's config: its frozen dataclasses (the timing block, the
accuracy proxy) and the shape parser its validation uses (imported by the recipe)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from raystudy import PositiveFloat, PositiveInt, Range
from raystudy.studies.large_kernel_conv.proxy import parse_mixer


@dataclass(frozen=True)
class TimingConfig:
    device: Literal["cpu", "cuda"] = "cpu"
    """Where the block runs (cuda: CUDA events, checked on the trial's node)."""
    dtype: Literal["float32", "float64"] = "float32"
    """Dtype of the inputs, kernels and tables of every candidate."""
    phase: Literal["fwd", "train"] = "fwd"
    """fwd: inference (no grad; WBMM NC and C); train: forward + backward of a sum."""
    windows: tuple[int, ...] = (4, 7, 14)
    """WBMM window sizes w timed (wbmm{w}, wbmmc{w}); those over twice the map are left out."""
    kernels: tuple[int, ...] = (3, 5, 7, 13, 27)
    """Depthwise kernel sizes k timed (dw{k}; odd, must include 5: ratios are read to dw5)."""
    reps: PositiveInt = 5
    """Interleaved repetitions in the block (the block's median is its unit value)."""
    warmup: Annotated[int, Range(ge=0)] = 1
    """Untimed calls of every candidate before the first repetition this process times."""
    clock: Literal["cpu", "wall"] = "cpu"
    """cpu: process CPU time (one thread); wall: perf_counter."""
    threads: PositiveInt = 1
    """torch.set_num_threads for the block (1: comparable timings on shared cores)."""
    block: Annotated[int, Range(ge=0)] = 0
    """The repetition block: the unit of the paired tests (and the seed of the inputs)."""
    check_tolerance: PositiveFloat = 1e-5
    """Max abs error of wbmm vs the per-window conv2d reference before timing (else fail)."""


@dataclass(frozen=True)
class ProxyConfig:
    mixer: str = "wbmm7"
    """Token mixer of the proxy net: wbmm<w> or dw<k> (k odd; wbmm7's same support: dw13)."""
    seed: int = 0
    """Seed of the init and the batches (the unit of the paired accuracy claim)."""
    epochs: PositiveInt = 6
    """Passes over the generated training set."""
    train_size: PositiveInt = 1000
    """Generated training images (the test set is 1000, drawn apart)."""
    noise: PositiveFloat = 0.4
    """Std of the Gaussian background the two markers sit on."""
    channels: PositiveInt = 16
    """Width of every stage."""
    lr: PositiveFloat = 3e-3
    """AdamW learning rate (batch 64); space proxy tries 1e-3, 3e-3 and 1e-2 per mixer and
    the analysis reads each mixer at its best on validation images."""


@dataclass(frozen=True)
class LargeKernelConfig:
    kind: Literal["timing", "proxy"] = "timing"
    """timing: one timing block (the speed claims); proxy: one training run of the accuracy
    proxy (space proxy)."""
    shape: str = "2x160x28"
    """BxCxS: batch, channels, H = W (WBMM-T's stages at 224 input: 160x28, 320x14, 640x7)."""
    timing: TimingConfig = field(default_factory=TimingConfig)
    proxy: ProxyConfig = field(default_factory=ProxyConfig)

    def validate(self) -> None:
        t = self.timing
        parse_mixer(self.proxy.mixer)
        shape_of(self)
        if 5 not in t.kernels:
            raise ValueError("timing.kernels needs 5: every ratio is read against dw5")
        if any(k % 2 == 0 or k < 1 for k in t.kernels):
            raise ValueError(f"timing.kernels={t.kernels}: odd sizes only")
        if any(w < 1 for w in t.windows) or not t.windows:
            raise ValueError(f"timing.windows={t.windows}: at least one window >= 1")


def shape_of(config: LargeKernelConfig) -> tuple[int, int, int, int]:
    """``"2x160x28"`` -> ``(2, 160, 28, 28)`` (one sentence if malformed)."""
    try:
        b, c, size = (int(v) for v in config.shape.lower().split("x"))
    except ValueError:
        raise ValueError(f"shape={config.shape!r}: expected BxCxS, e.g. 2x160x28") from None
    if min(b, c, size) < 1:
        raise ValueError(f"shape={config.shape!r}: every size must be >= 1")
    return (b, c, size, size)
