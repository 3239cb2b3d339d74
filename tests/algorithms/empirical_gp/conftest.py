"""One torch thread: the E-step's many small batched factorisations run slower with two
threads on a shared 2-core machine (thread hand-offs cost more than they save)."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
