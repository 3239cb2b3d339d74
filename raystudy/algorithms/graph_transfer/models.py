r"""Encoders (GCN, GraphSAGE, GPS), the NC and LP heads, and the random-walk encoding.

Every encoder maps node features :math:`X \in \mathbb R^{N \times F}` and the message
graph to embeddings :math:`Z \in \mathbb R^{N \times H}`; the heads read :math:`Z`:

* NC head (linear): :math:`\hat y_v = \mathrm{softmax}(W z_v + b)`;
* LP head (MLP on the concatenated pair): :math:`s(u, v) = w_2^\top \mathrm{ReLU}(W_1
  [z_u \,\|\, z_v] + b_1) + b_2`, a logit (:math:`\sigma(s)` is the edge probability).

Encoders, with ``layers`` :math:`L` (default 2), ``hidden`` :math:`H` (64), ``dropout``
(0.5):

* ``gcn``: Kipf & Welling 2017, :math:`Z^{l+1} = \hat D^{-1/2}\hat A\hat D^{-1/2}Z^l
  W^l`, ReLU and dropout between layers. ``GCNConv(cached=False)``: a cached layer
  would reuse the first graph it saw for every later call;
* ``sage``: Hamilton et al. 2017, :math:`z_v^{l+1} = W_1 z_v^l + W_2\,
  \mathrm{mean}_{u \in \mathcal N(v)} z_u^l`;
* ``gps``: Rampasek et al. 2022, :math:`Z^0 = X W_x + P W_p` with :math:`P` the
  random-walk positional encoding of the message graph (:func:`random_walk_pe`), then
  ``GPSConv`` layers, each a local GIN message passing plus global attention over
  all nodes, summed, with an MLP and batch norm. Attention is ``multihead`` (dense,
  :math:`O(N^2)` per head) or ``performer`` (linear in :math:`N`) for graphs where
  dense attention does not fit; ``auto`` picks performer above
  :data:`DENSE_ATTENTION_MAX_NODES`.

In evaluation, :func:`no_mha_fastpath` turns off PyTorch's fused MHA inference path,
which is about 10x slower here for one graph-sized sequence (RESEARCH.md, section 5).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv, GINConv, GPSConv, SAGEConv
from torch_geometric.transforms import AddRandomWalkPE

BACKBONES = ("gcn", "sage", "gps")
DENSE_ATTENTION_MAX_NODES = 5000


@dataclass(frozen=True)
class EncoderConfig:
    """Sizes and options shared by the three encoders."""

    hidden: int = 64
    layers: int = 2
    dropout: float = 0.5
    heads: int = 2
    """GPS: attention heads (hidden must be divisible by it)."""
    pe_steps: int = 8
    """GPS: random-walk steps of the positional encoding (0: none)."""
    attention: str = "auto"
    """GPS: multihead | performer | auto (performer above DENSE_ATTENTION_MAX_NODES)."""
    attn_dropout: float = 0.0
    """GPS: dropout on attention weights (> 0 takes torch's slower math path, ~3x on CPU)."""


def random_walk_pe(edge_index: Tensor, num_nodes: int, steps: int) -> Tensor:
    """``(N, steps)``: :math:`P_{vk} = ((D^{-1}A)^k)_{vv}`, k = 1..steps, via PyG's transform."""
    data = AddRandomWalkPE(steps, attr_name="pe")(Data(edge_index=edge_index,
                                                       num_nodes=num_nodes))
    return data.pe.float()


@contextlib.contextmanager
def no_mha_fastpath() -> Iterator[None]:
    """Disable torch's fused multi-head-attention inference path inside the block."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)


class MPNNEncoder(nn.Module):
    """GCN or GraphSAGE: ``layers`` convolutions to width ``hidden``, ReLU + dropout between."""

    def __init__(self, in_channels: int, config: EncoderConfig, conv: str = "gcn") -> None:
        super().__init__()
        make = {"gcn": lambda i, o: GCNConv(i, o, cached=False),
                "sage": lambda i, o: SAGEConv(i, o)}[conv]
        widths = [in_channels] + [config.hidden] * config.layers
        self.convs = nn.ModuleList(make(i, o) for i, o in zip(widths[:-1], widths[1:],
                                                              strict=True))
        self.dropout = config.dropout

    def forward(self, x: Tensor, edge_index: Tensor, pe: Tensor | None = None) -> Tensor:
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i < len(self.convs) - 1:
                x = nn.functional.dropout(x.relu(), self.dropout, self.training)
        return x


class GPSEncoder(nn.Module):
    """GPS graph transformer: input + PE projection, then ``layers`` GPSConv blocks."""

    def __init__(self, in_channels: int, config: EncoderConfig, num_nodes: int) -> None:
        super().__init__()
        h = config.hidden
        attention = config.attention
        if attention == "auto":
            attention = "performer" if num_nodes > DENSE_ATTENTION_MAX_NODES else "multihead"
        self.attention = attention
        self.lin_x = nn.Linear(in_channels, h)
        self.lin_pe = nn.Linear(config.pe_steps, h) if config.pe_steps else None
        self.layers = nn.ModuleList(
            GPSConv(h, GINConv(nn.Sequential(nn.Linear(h, h), nn.ReLU(), nn.Linear(h, h))),
                    heads=config.heads, dropout=config.dropout, attn_type=attention,
                    attn_kwargs={"dropout": config.attn_dropout})
            for _ in range(config.layers))

    def forward(self, x: Tensor, edge_index: Tensor, pe: Tensor | None = None) -> Tensor:
        z = self.lin_x(x)
        if self.lin_pe is not None:
            if pe is None:
                raise ValueError("the GPS encoder was built with pe_steps > 0 but got no pe")
            z = z + self.lin_pe(pe)
        for layer in self.layers:
            z = layer(z, edge_index)
        return z


def build_encoder(backbone: str, in_channels: int, config: EncoderConfig,
                  num_nodes: int) -> nn.Module:
    """An encoder by name (:data:`BACKBONES`)."""
    if backbone in ("gcn", "sage"):
        return MPNNEncoder(in_channels, config, backbone)
    if backbone == "gps":
        if config.hidden % config.heads:
            raise ValueError(f"GPS: hidden={config.hidden} is not divisible by "
                             f"heads={config.heads}")
        return GPSEncoder(in_channels, config, num_nodes)
    raise ValueError(f"unknown backbone {backbone!r}; use one of {', '.join(BACKBONES)}")


class LinkHead(nn.Module):
    """MLP on :math:`[z_u \\| z_v]` to one logit per pair."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.lin1 = nn.Linear(2 * hidden, hidden)
        self.lin2 = nn.Linear(hidden, 1)

    def forward(self, z: Tensor, pairs: Tensor) -> Tensor:
        """Logits (P,) for ``pairs`` (2, P)."""
        h = torch.cat([z[pairs[0]], z[pairs[1]]], dim=-1)
        return self.lin2(self.lin1(h).relu()).squeeze(-1)


class GraphModel(nn.Module):
    """A shared encoder with an NC head, an LP head, or both."""

    def __init__(self, encoder: nn.Module, hidden: int, num_classes: int = 0,
                 link: bool = False) -> None:
        super().__init__()
        self.encoder = encoder
        self.nc_head = nn.Linear(hidden, num_classes) if num_classes else None
        self.lp_head = LinkHead(hidden) if link else None

    def forward(self, x: Tensor, edge_index: Tensor, pe: Tensor | None = None) -> Tensor:
        """Node embeddings Z (N, hidden)."""
        return self.encoder(x, edge_index, pe)


def build_model(backbone: str, in_channels: int, num_nodes: int, config: EncoderConfig,
                num_classes: int = 0, link: bool = False) -> GraphModel:
    """Encoder plus the heads asked for (``num_classes > 0``: NC head; ``link``: LP head)."""
    encoder = build_encoder(backbone, in_channels, config, num_nodes)
    return GraphModel(encoder, config.hidden, num_classes, link)
