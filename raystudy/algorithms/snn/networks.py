"""The authors' fully connected SNNs (``ultralif/networks/fc.py``): ``fc -> neuron`` per
hidden layer, then a non-spiking ``fc`` readout; logits are the mean over T of the readout
of the last layer's spikes; cross-entropy on them. ``SNN(..., layers=1)`` is their ``SNN``,
2 and 3 their ``DeepSNN``/``TripleSNN`` without BN or residual.

Spike statistics of the last forward (``spike_stats``): the soft rate (mean spike value,
the authors' ``spike_rate``), the hard-equivalent rate (share of values >= 0.5), the share
of near-binary values (in [0, 0.01] or [0.99, 1]), and SynOps per sample (sum of spikes x
the fan-out of the layer they feed).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from .neurons import MODES, Mode, SpikingNeuron


class SNN(nn.Module):
    """``inputs -> [fc -> neuron] x layers -> fc readout``; forward ``T x B x D -> B x C``."""

    def __init__(self, inputs: int, hidden: int, classes: int,
                 neuron: Callable[[int], SpikingNeuron], layers: int = 1) -> None:
        super().__init__()
        sizes = [inputs] + [hidden] * layers
        self.fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:],
                                                                   strict=False))
        self.neurons = nn.ModuleList(neuron(hidden) for _ in range(layers))
        self.readout = nn.Linear(hidden, classes)
        self.spike_stats: dict[str, float] = {}
        self.rate: torch.Tensor = torch.zeros(())

    def set_mode(self, mode: Mode) -> None:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}: choose {', '.join(MODES)}")
        for n in self.neurons:
            n.mode = mode  # type: ignore[assignment]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T, B = x.shape[0], x.shape[1]
        for n in self.neurons:
            n.reset(B, x)  # type: ignore[operator]
        logits, spikes = 0.0, []
        for t in range(T):
            h = x[t]
            for fc, n in zip(self.fcs, self.neurons, strict=True):
                h = n(fc(h))
                spikes.append(h)
            logits = logits + self.readout(h)
        all_s = torch.stack(spikes)
        self.rate = all_s.mean()  # the sparsity penalty's term (differentiable)
        with torch.no_grad():
            fan_out = [fc.out_features for fc in self.fcs[1:]] + [self.readout.out_features]
            synops = sum(float(s.sum()) * fan_out[i % len(self.neurons)]
                         for i, s in enumerate(spikes)) / B
            self.spike_stats = {
                "spike_rate_soft": float(all_s.mean()),
                "spike_rate_hard": float((all_s >= 0.5).float().mean()),
                "binary_fraction": float(((all_s <= 0.01) | (all_s >= 0.99)).float().mean()),
                "synops": synops}
        return logits / T  # type: ignore[return-value]

    def scales(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for i, n in enumerate(self.neurons):
            for k, v in n.scales().items():  # type: ignore[operator]
                out[f"{k}{i}" if len(self.neurons) > 1 else k] = v
        return out
