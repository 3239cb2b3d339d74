"""The matrix / vector parameter split: default rule, weight tying, overrides."""

import pytest
import torch
from torch import nn

from raystudy.algorithms.optim import matrix_param_groups, split_parameters


class TinyLM(nn.Module):
    def __init__(self, tie: bool = False):
        super().__init__()
        self.embed = nn.Embedding(11, 8)
        self.conv = nn.Conv1d(8, 8, 3, padding=1)
        self.hidden = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)
        self.head = nn.Linear(8, 11, bias=False)
        if tie:
            self.head.weight = self.embed.weight

    def forward(self, tokens):
        h = self.embed(tokens)
        h = self.conv(h.transpose(1, 2)).transpose(1, 2)
        return self.head(self.norm(torch.tanh(self.hidden(h))))


def ids(params):
    return {id(p) for p in params}


def test_default_rule():
    model = TinyLM()
    matrix, vector = split_parameters(model)
    assert ids(matrix) == ids([model.conv.weight, model.hidden.weight])
    expected_vector = [
        model.embed.weight,
        model.conv.bias,
        model.hidden.bias,
        model.norm.weight,
        model.norm.bias,
        model.head.weight,
    ]
    assert ids(vector) == ids(expected_vector)


def test_weight_tying_counts_shared_parameter_once_in_vector_part():
    model = TinyLM(tie=True)
    matrix, vector = split_parameters(model)
    assert ids(matrix) == ids([model.conv.weight, model.hidden.weight])
    assert sum(p is model.embed.weight for p in vector) == 1
    assert len(matrix) + len(vector) == len(list(model.parameters()))


def test_override_and_groups():
    model = TinyLM()
    groups = matrix_param_groups(model, lambda name, p, m: name == "hidden.weight")
    assert groups[0]["matrix"] and ids(groups[0]["params"]) == ids([model.hidden.weight])
    assert not groups[1]["matrix"]
    with pytest.raises(ValueError, match="ndim >= 2"):
        split_parameters(model, lambda name, p, m: True)


def test_frozen_parameters_are_left_out():
    model = TinyLM()
    model.hidden.weight.requires_grad_(False)
    matrix, _ = split_parameters(model)
    assert ids(matrix) == ids([model.conv.weight])
