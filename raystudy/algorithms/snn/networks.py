"""The authors' spiking networks (``ultralif/networks/fc.py``, ``conv.py``).

* ``SNN``: ``fc -> neuron`` per hidden layer, then a non-spiking ``fc`` readout; logits are
  the mean over T of the readout of the last layer's spikes; cross-entropy on them.
  ``SNN(..., layers=1)`` is their ``SNN``, 2 and 3 their ``DeepSNN``/``TripleSNN`` without
  BN or residual.
* ``ConvSNN``: their ``ConvSNN`` without BN: per block ``conv 3x3 (padding 1) -> 2x2 average
  pool -> neuron`` on the flattened ``C x H x W`` map (so UltraDLIF's roll runs across
  channel and row boundaries, as theirs), channels 32 then 64, an ``fc`` readout, logits
  averaged over T. Inputs arrive flattened (``T x B x C*H*W``) as every loader here gives.

Spike statistics of the last forward (``spike_stats``): the soft rate (mean spike value,
the authors' ``spike_rate``), the hard-equivalent rate (share of values >= 0.5), the share
of near-binary values (in [0, 0.01] or [0.99, 1]), and SynOps per sample (sum of spikes x
the fan-out of the layer they feed: a linear layer's outputs, a 3x3 conv's ``9 x C_out``,
border effects ignored).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn

from .neurons import MODES, Mode, SpikingNeuron


class _SpikingNetwork(nn.Module):
    """What both networks share: the loop over T (``step`` per time step, the readout's
    logits averaged), the neurons' mode, their learned scalars, the spike statistics."""

    neurons: nn.ModuleList
    readout: nn.Linear

    def __init__(self) -> None:
        super().__init__()
        self.spike_stats: dict[str, float] = {}
        self.rate: torch.Tensor = torch.zeros(())

    def step(self, x_t: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """One time step ``B x D``: the readout's input and every layer's spikes."""
        raise NotImplementedError

    def fan_out(self) -> list[int]:
        """Synapses each layer's spike feeds (SynOps)."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        T, B = x.shape[0], x.shape[1]
        for n in self.neurons:
            n.reset(B, x)  # type: ignore[operator]
        logits, spikes = 0.0, []
        for t in range(T):
            h, s = self.step(x[t])
            spikes += s
            logits = logits + self.readout(h)
        self._record(spikes, self.fan_out(), B)
        return logits / T  # type: ignore[return-value]

    def set_mode(self, mode: Mode) -> None:
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}: choose {', '.join(MODES)}")
        for n in self.neurons:
            n.mode = mode  # type: ignore[assignment]

    def scales(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for i, n in enumerate(self.neurons):
            for k, v in n.scales().items():  # type: ignore[operator]
                out[f"{k}{i}" if len(self.neurons) > 1 else k] = v
        return out

    def _record(self, spikes: list[torch.Tensor], fan_out: Sequence[int], batch: int
                ) -> None:
        """``spikes``: every layer's ``B x n`` spikes, layer by layer within each step."""
        all_s = torch.cat([s.reshape(-1) for s in spikes])
        self.rate = all_s.mean()  # the sparsity penalty's term (differentiable)
        with torch.no_grad():
            synops = sum(float(s.sum()) * fan_out[i % len(self.neurons)]
                         for i, s in enumerate(spikes)) / batch
            self.spike_stats = {
                "spike_rate_soft": float(all_s.mean()),
                "spike_rate_hard": float((all_s >= 0.5).float().mean()),
                "binary_fraction": float(((all_s <= 0.01) | (all_s >= 0.99)).float().mean()),
                "synops": synops}


class SNN(_SpikingNetwork):
    """``inputs -> [fc -> neuron] x layers -> fc readout``; forward ``T x B x D -> B x C``."""

    def __init__(self, inputs: int, hidden: int, classes: int,
                 neuron: Callable[[int], SpikingNeuron], layers: int = 1) -> None:
        super().__init__()
        sizes = [inputs] + [hidden] * layers
        self.fcs = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:],
                                                                   strict=False))
        self.neurons = nn.ModuleList(neuron(hidden) for _ in range(layers))
        self.readout = nn.Linear(hidden, classes)

    def step(self, x_t: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        h, spikes = x_t, []
        for fc, n in zip(self.fcs, self.neurons, strict=True):
            h = n(fc(h))
            spikes.append(h)
        return h, spikes

    def fan_out(self) -> list[int]:
        return [fc.out_features for fc in self.fcs[1:]] + [self.readout.out_features]


class ConvSNN(_SpikingNetwork):
    """``[conv 3x3 -> avg pool 2 -> neuron] x len(channels) -> fc readout`` on ``image``
    (``C x H x W``); forward ``T x B x C*H*W -> B x classes``."""

    def __init__(self, image: tuple[int, int, int], classes: int,
                 neuron: Callable[[int], SpikingNeuron],
                 channels: Sequence[int] = (32, 64)) -> None:
        super().__init__()
        self.image = image
        c_in, h, w = image
        convs, maps = [], []
        for c_out in channels:
            if min(h, w) < 2:
                raise ValueError(f"image {image} is too small for {len(channels)} poolings")
            convs.append(nn.Conv2d(c_in, c_out, kernel_size=3, padding=1))
            c_in, h, w = c_out, h // 2, w // 2
            maps.append((c_in, h, w))
        self.convs = nn.ModuleList(convs)
        self.maps = maps
        self.neurons = nn.ModuleList(neuron(c * hh * ww) for c, hh, ww in maps)
        self.readout = nn.Linear(c_in * h * w, classes)

    def step(self, x_t: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        h, spikes = x_t.reshape(len(x_t), *self.image), []
        for conv, n, shape in zip(self.convs, self.neurons, self.maps, strict=True):
            s = n(nn.functional.avg_pool2d(conv(h), 2).flatten(1))
            spikes.append(s)
            h = s.reshape(len(s), *shape)
        return h.flatten(1), spikes

    def fan_out(self) -> list[int]:
        return [9 * c.out_channels for c in self.convs[1:]] + [self.readout.out_features]
