"""Shared by the graph_transfer tests: one torch thread (the machine's cores are shared)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    """Train with one thread, as trials do; two threads on two busy cores thrash."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
