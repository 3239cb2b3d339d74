"""One BLAS thread: the tests' products are small, and threads on a shared 2-core machine
cost more than they save."""

from __future__ import annotations

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def one_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield
