"""One BLAS thread: the tests' Gram products are small, and threads on a shared 2-core
machine cost far more than they save (measured: a 200 x 100 x 100 product 20x slower)."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def one_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield
