"""polar_factor against the exact SVD polar factor, float32 and float64, tall and wide."""

import pytest
import torch

from raystudy.algorithms.optim.polar import (
    BF16_MIN_SPEEDUP,
    CPU_POLAR_DTYPE_ENV,
    POLAR_EXPRESS_COEFFICIENTS,
    cpu_bf16_speedup,
    cpu_has_native_bf16,
    default_polar_dtype,
    polar_factor,
)

SHAPES = [(12, 7), (7, 12), (9, 9)]
DTYPES = [torch.float32, torch.float64]


def exact_polar(G: torch.Tensor) -> torch.Tensor:
    U, _, Vh = torch.linalg.svd(G.double(), full_matrices=False)
    return (U @ Vh).to(G.dtype)


def well_conditioned(m: int, n: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    U, _ = torch.linalg.qr(torch.randn(m, min(m, n), generator=g, dtype=torch.float64))
    V, _ = torch.linalg.qr(torch.randn(n, min(m, n), generator=g, dtype=torch.float64))
    s = torch.linspace(0.2, 3.0, min(m, n), dtype=torch.float64)
    return ((U * s) @ V.T).to(dtype)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_svd_method_is_exact(shape, dtype):
    G = torch.randn(*shape, dtype=dtype)
    P = polar_factor(G, "svd")
    assert P.shape == G.shape and P.dtype == dtype
    torch.testing.assert_close(P, exact_polar(G))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_polar_express_converges_to_svd(shape, dtype):
    G = torch.randn(*shape, dtype=dtype, generator=torch.Generator().manual_seed(1))
    P = polar_factor(G, "polar_express", steps=10, dtype=dtype)
    tol = 1e-5 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(P, exact_polar(G), atol=tol, rtol=0)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_six_polar_express_steps_on_well_conditioned_input(shape, dtype):
    G = well_conditioned(*shape, dtype)
    P = polar_factor(G, "polar_express", steps=6, dtype=dtype)
    torch.testing.assert_close(P, exact_polar(G), atol=2e-2, rtol=0)


BANDS = [("jordan", (0.6, 1.25)), ("polar_express", (0.8, 1.2))]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(("method", "band"), BANDS)
def test_five_steps_keep_singular_vectors_and_bound_singular_values(shape, method, band):
    G = well_conditioned(*shape, torch.float64)
    P = polar_factor(G, method, steps=5, dtype=torch.float64)
    U, _, Vh = torch.linalg.svd(G, full_matrices=False)
    core = U.T @ P @ Vh.T
    S_prime = torch.diagonal(core)
    assert (core - torch.diag(S_prime)).abs().max() < 1e-10
    assert band[0] < S_prime.min() and S_prime.max() < band[1]


def test_polar_express_schedule_documented_values():
    a, b, c = POLAR_EXPRESS_COEFFICIENTS[0]
    assert (a * 1.01, b * 1.01**3, c * 1.01**5) == pytest.approx((8.2872, -23.5959, 17.3004), 1e-4)
    assert POLAR_EXPRESS_COEFFICIENTS[-1] == (1.875, -1.25, 0.375)


@pytest.mark.parametrize("method", ["polar_express", "jordan", "svd"])
def test_zero_input_gives_zeros(method):
    P = polar_factor(torch.zeros(5, 3), method)
    assert torch.equal(P, torch.zeros(5, 3))


def test_batched_matches_per_matrix():
    G = torch.randn(3, 6, 4, dtype=torch.float64)
    P = polar_factor(G, "polar_express", steps=6, dtype=torch.float64)
    for i in range(3):
        Pi = polar_factor(G[i], "polar_express", steps=6, dtype=torch.float64)
        torch.testing.assert_close(P[i], Pi)


def test_input_not_modified_and_default_dtype():
    G = torch.randn(4, 6, dtype=torch.bfloat16)
    before = G.clone()
    out = polar_factor(G, "jordan", dtype=torch.bfloat16)
    assert torch.equal(G, before) and out.dtype == torch.bfloat16
    faster = cpu_bf16_speedup() >= BF16_MIN_SPEEDUP  # bf16 only where it is measured faster
    assert default_polar_dtype(torch.zeros(2, 2)) == (torch.bfloat16 if faster else torch.float32)
    assert default_polar_dtype(torch.zeros(2, 2, dtype=torch.float64)) == torch.float64


def test_cpu_polar_dtype_pinned_by_environment(monkeypatch):
    monkeypatch.setenv(CPU_POLAR_DTYPE_ENV, "bfloat16")
    assert default_polar_dtype(torch.zeros(2, 2)) == torch.bfloat16
    assert default_polar_dtype(torch.zeros(2, 2, dtype=torch.float64)) == torch.float64
    monkeypatch.setenv(CPU_POLAR_DTYPE_ENV, "float32")
    assert default_polar_dtype(torch.zeros(2, 2)) == torch.float32
    monkeypatch.setenv(CPU_POLAR_DTYPE_ENV, "fp8")
    with pytest.raises(ValueError, match="bfloat16 or float32"):
        default_polar_dtype(torch.zeros(2, 2))


def test_bf16_timing_leaves_the_global_rng_alone():
    from raystudy.algorithms.optim.polar import _cpu_bf16_speedup
    _cpu_bf16_speedup.cache_clear()
    torch.manual_seed(3)
    expected = torch.rand(3)
    torch.manual_seed(3)
    speedup = cpu_bf16_speedup()
    assert torch.equal(torch.rand(3), expected)
    if cpu_has_native_bf16():
        assert speedup > 0.0
    else:
        assert speedup == 0.0


def test_rejects_vectors_and_unknown_method():
    with pytest.raises(ValueError, match="shape"):
        polar_factor(torch.zeros(3))
    with pytest.raises(ValueError, match="valid"):
        polar_factor(torch.zeros(3, 3), "qr")


@pytest.mark.parametrize("method", ["jordan", "polar_express"])
def test_polar_factors_batch_same_shapes_and_equal_per_matrix(method):
    from raystudy.algorithms.optim.polar import polar_factors

    gen = torch.Generator().manual_seed(3)
    shapes = [(12, 20), (20, 12), (12, 20), (8, 8), (30, 6), (8, 8)]
    Gs = [torch.randn(*s, generator=gen) for s in shapes]
    for dtype in (torch.bfloat16, torch.float32):
        batched = polar_factors(Gs, method, 5, dtype)
        for G, P in zip(Gs, batched, strict=True):
            single = polar_factor(G, method, 5, dtype)
            assert P.shape == G.shape and P.dtype == G.dtype
            if dtype == torch.bfloat16:
                assert torch.equal(P, single)  # the same ops, batched: bit for bit
            else:
                torch.testing.assert_close(P, single, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("method", ["svd", "polar_express"])
def test_polar_factors_and_inners_give_each_nuclear_norm_estimate(method):
    """<G, P> from the batched product equals a float64 dot of the returned factor (tall,
    wide, square, a single-member group); with the exact factor it is the nuclear norm."""
    from raystudy.algorithms.optim.polar import polar_factors, polar_factors_and_inners

    gen = torch.Generator().manual_seed(5)
    shapes = [(12, 20), (20, 12), (12, 20), (8, 8), (30, 6), (8, 8)]
    Gs = [torch.randn(*s, generator=gen) for s in shapes]
    Ps, dots = polar_factors_and_inners(Gs, method, 5, torch.float32)
    for G, P, Q, d in zip(Gs, Ps, polar_factors(Gs, method, 5, torch.float32), dots,
                          strict=True):
        assert torch.equal(P, Q) and d.shape == () and d.dtype == torch.float32
        reference = float((G.double() * P.double()).sum())
        assert float(d) == pytest.approx(reference, rel=1e-5)
        if method == "svd":
            nuclear = float(torch.linalg.matrix_norm(G.double(), "nuc"))
            assert float(d) == pytest.approx(nuclear, rel=1e-5)
    assert polar_factors_and_inners(Gs[:1], method, 5, torch.float32)[1][0].shape == ()


def test_polar_factors_large_matrices_and_results_in_the_chains_dtype():
    """Matrices over BATCH_MAX_NUMEL entries iterate alone with torch's 2-D operations;
    cast_back=False hands the factor back in the iteration's dtype, contiguous in its
    matrix's layout."""
    from raystudy.algorithms.optim.polar import BATCH_MAX_NUMEL, PolarWorkspace, polar_factors

    gen = torch.Generator().manual_seed(7)
    big = int(BATCH_MAX_NUMEL ** 0.5) + 8
    Gs = [torch.randn(big, big, generator=gen), torch.randn(big, big, generator=gen),
          torch.randn(30, 12, generator=gen), torch.randn(12, 30, generator=gen)]
    for cast_back in (True, False):
        workspace = PolarWorkspace()
        out = polar_factors(Gs, "jordan", 5, torch.bfloat16, cast_back=cast_back,
                            workspace=workspace)
        (plan,) = workspace._plans.values()
        assert [family.solo for family in plan.families] == [True, True, False]
        out += polar_factors(Gs[2:3], "jordan", 5, torch.bfloat16, cast_back=cast_back)
        for G, P in zip([*Gs, Gs[2]], out, strict=True):
            reference = polar_factor(G, "jordan", 5, torch.bfloat16)
            assert P.shape == G.shape and P.is_contiguous()
            assert P.dtype == (torch.float32 if cast_back else torch.bfloat16)
            assert torch.equal(P.float(), reference)


def test_a_family_of_stacks_sharing_the_short_side_equals_each_matrix_alone():
    """Stacks of different n but the same short side m iterate together (their m x m
    products one batch), singles among them: per matrix the values polar_factor gives."""
    from raystudy.algorithms.optim.polar import polar_factors

    gen = torch.Generator().manual_seed(11)
    shapes = [(12, 20), (20, 12), (12, 36), (36, 12), (12, 12), (12, 12), (12, 50), (7, 9)]
    Gs = [torch.randn(*s, generator=gen) for s in shapes]
    for dtype in (torch.bfloat16, torch.float32):
        for P, G in zip(polar_factors(Gs, "jordan", 5, dtype), Gs, strict=True):
            single = polar_factor(G, "jordan", 5, dtype)
            if dtype == torch.bfloat16:
                assert torch.equal(P, single)
            else:
                torch.testing.assert_close(P, single, atol=1e-5, rtol=1e-5)


def test_a_workspace_is_reused_and_changes_no_value():
    """A second call with same-shape matrices allocates no buffer; with or without the
    workspace the factors are the same bits."""
    from raystudy.algorithms.optim.polar import PolarWorkspace, polar_factors

    gen = torch.Generator().manual_seed(12)
    shapes = [(16, 24), (24, 16), (16, 40), (16, 16)]
    workspace = PolarWorkspace()
    buffers = None
    for step in range(4):          # step 2: one matrix short (another plan), then back
        Gs = [torch.randn(*s, generator=gen) for s in shapes][: 3 if step == 2 else None]
        fresh = polar_factors(Gs, "polar_express", 5, torch.bfloat16, cast_back=False)
        reused = polar_factors(Gs, "polar_express", 5, torch.bfloat16, cast_back=False,
                               workspace=workspace)
        if step < 2:
            assert buffers in (None, len(workspace))
            buffers = len(workspace)
        for a, b in zip(fresh, reused, strict=True):
            assert a.dtype == b.dtype == torch.bfloat16 and torch.equal(a, b)
    assert len(workspace._plans) == 2
