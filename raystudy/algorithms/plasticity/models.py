"""Networks whose hidden features are visible: an MLP and a small ConvNet.

Every model here has ``forward_features(x) -> (output, [h_1, ..., h_L])`` with the
post-activation features of its hidden layers (samples x units), which the rank metrics
and the effective-rank interventions read, and ``unit_pairs()``: for each hidden layer,
the linear layer producing its units, the one reading them and the LayerNorm between (if
any), which ReDo needs to re-initialise a unit. ``layernorm=True`` puts a LayerNorm
before each hidden activation (the LayerNorm baseline; Lyle et al. 2023).

* :class:`MLP`: ``in -> [Linear -> (LayerNorm) -> ReLU] x L -> Linear``; e.g. the issue's
  64-256-256-10 on digits, the paper's 784-1000-1000-1000-10 on permuted MNIST.
* :class:`ConvNet`: Dohare et al.'s Continual-ImageNet network (conv 5x5x32, 3x3x64,
  3x3x128, each with 2x2 max-pooling, then fc 128, fc 128, head); its features are the
  two fc layers, the layers the authors regularise on CIFAR/ImageNet.

Weights use PyTorch's default initialisation (:math:`U(\\pm 1/\\sqrt{\\text{fan-in}})`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor, nn


@dataclass
class UnitPair:
    """One hidden layer's units: produced by ``incoming``, read by ``outgoing``."""

    incoming: nn.Linear
    outgoing: nn.Linear
    norm: nn.LayerNorm | None = None


class MLP(nn.Module):
    """Fully connected ReLU network with visible hidden features."""

    def __init__(self, in_dim: int, hidden: Sequence[int], out_dim: int,
                 layernorm: bool = False) -> None:
        super().__init__()
        if not hidden or min(hidden) < 1:
            raise ValueError(f"hidden={tuple(hidden)} needs at least one layer of >= 1 units")
        sizes = [in_dim, *hidden]
        self.layers = nn.ModuleList(nn.Linear(a, b)
                                    for a, b in zip(sizes[:-1], sizes[1:], strict=True))
        self.norms = nn.ModuleList(nn.LayerNorm(b) if layernorm else nn.Identity()
                                   for b in hidden)
        self.head = nn.Linear(sizes[-1], out_dim)

    def forward_features(self, x: Tensor) -> tuple[Tensor, list[Tensor]]:
        features = []
        for layer, norm in zip(self.layers, self.norms, strict=True):
            x = torch.relu(norm(layer(x)))
            features.append(x)
        return self.head(x), features

    def forward(self, x: Tensor) -> Tensor:
        return self.forward_features(x)[0]

    def unit_pairs(self) -> list[UnitPair]:
        readers = [*self.layers[1:], self.head]
        return [UnitPair(layer, reader, norm if isinstance(norm, nn.LayerNorm) else None)
                for layer, reader, norm in zip(self.layers, readers, self.norms, strict=True)]


class ConvNet(nn.Module):
    """Dohare et al.'s small ConvNet for 32x32 images; features: the two fc layers."""

    def __init__(self, in_channels: int, out_dim: int, layernorm: bool = False,
                 image_size: int = 32) -> None:
        super().__init__()
        self.convs = nn.Sequential(
            nn.Conv2d(in_channels, 32, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3), nn.ReLU(), nn.MaxPool2d(2))
        with torch.no_grad():
            flat = self.convs(torch.zeros(1, in_channels, image_size, image_size)).numel()
        self.mlp = MLP(flat, (128, 128), out_dim, layernorm=layernorm)

    def forward_features(self, x: Tensor) -> tuple[Tensor, list[Tensor]]:
        return self.mlp.forward_features(self.convs(x).flatten(1))

    def forward(self, x: Tensor) -> Tensor:
        return self.forward_features(x)[0]

    def unit_pairs(self) -> list[UnitPair]:
        return self.mlp.unit_pairs()
