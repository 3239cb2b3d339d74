"""Muon against torch.optim.Muon, conv flattening, and the buffers it must not touch."""

import math

import pytest
import torch

from raystudy.algorithms.optim.muon import Muon, adjusted_lr
from raystudy.algorithms.optim.polar import polar_factor

SHAPES = [(16, 24), (24, 16), (10, 10)]


def run_pair(ns_dtype, steps=6, **kwargs):
    gen = torch.Generator().manual_seed(0)
    inits = [torch.randn(*s, generator=gen) for s in SHAPES]
    ours = [torch.nn.Parameter(w.clone()) for w in inits]
    ref = [torch.nn.Parameter(w.clone()) for w in inits]
    opt = Muon(ours, lr=0.02, ns_dtype=ns_dtype, **kwargs)
    opt_ref = torch.optim.Muon(ref, lr=0.02, **kwargs)
    for _ in range(steps):
        for a, b in zip(ours, ref, strict=True):
            g = torch.randn(a.shape, generator=gen)
            a.grad, b.grad = g.clone(), g.clone()
        opt.step()
        opt_ref.step()
    return inits, ours, ref


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"nesterov": False}, {"adjust_lr_fn": "match_rms_adamw"}, {"weight_decay": 0.0}],
)
def test_bf16_equals_torch_muon(kwargs):
    _, ours, ref = run_pair(torch.bfloat16, **kwargs)
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_fp32_stays_close_to_torch_muon():
    inits, ours, ref = run_pair(torch.float32)
    for w0, a, b in zip(inits, ours, ref, strict=True):
        assert torch.linalg.norm(a - b) / torch.linalg.norm(b - w0) < 0.05


def test_conv_kernel_flattened_and_scaled_by_flattened_shape():
    kernel = torch.nn.Parameter(torch.randn(8, 3, 3, 3))
    w0 = kernel.detach().clone()
    g = torch.randn(8, 3, 3, 3)
    kernel.grad = g.clone()
    opt = Muon([kernel], lr=0.1, weight_decay=0.0, adjust_lr_fn="match_rms_adamw",
               ns_dtype=torch.float32)
    opt.step()
    scale = 0.2 * math.sqrt(27)
    polar = polar_factor(g.reshape(8, 27), "jordan", dtype=torch.float32)
    expected = w0 - 0.1 * scale * polar.reshape_as(g)
    torch.testing.assert_close(kernel.detach(), expected, atol=1e-5, rtol=1e-5)
    assert adjusted_lr(1.0, None, 8, 27) == 1.0
    assert adjusted_lr(1.0, "original", 27, 8) == pytest.approx(math.sqrt(27 / 8))


def test_grad_and_momentum_buffer_not_aliased_in_bf16():
    p = torch.nn.Parameter(torch.randn(6, 4, dtype=torch.bfloat16))
    g = torch.randn(6, 4, dtype=torch.bfloat16)
    p.grad = g.clone()
    opt = Muon([p], lr=0.01, nesterov=False, ns_dtype=torch.bfloat16)
    opt.step()
    assert torch.equal(p.grad, g)
    expected_buffer = torch.zeros_like(g).lerp_(g, 1 - 0.95)
    assert torch.equal(opt.state[p]["momentum_buffer"], expected_buffer)


def test_weight_decay_and_zero_grad():
    p = torch.nn.Parameter(torch.ones(3, 5))
    p.grad = torch.zeros(3, 5)
    Muon([p], lr=0.1, weight_decay=0.5).step()
    torch.testing.assert_close(p.detach(), torch.full((3, 5), 0.95))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_invalid_lr(bad):
    with pytest.raises(ValueError, match="lr must be a positive finite number"):
        Muon([torch.nn.Parameter(torch.zeros(2, 2))], lr=bad)


def test_rejects_vectors_and_bad_adjust_fn():
    with pytest.raises(ValueError, match="ndim >= 2"):
        Muon([torch.nn.Parameter(torch.zeros(3))])
    with pytest.raises(ValueError, match="adjust_lr_fn"):
        Muon([torch.nn.Parameter(torch.zeros(2, 2))], adjust_lr_fn="other")


def test_batched_chains_over_repeated_shapes_equal_torch_muon():
    """Transformer-like shapes: several matrices per shape, tall ones batched transposed."""
    shapes = [(48, 16), (16, 16), (64, 16), (16, 64), (48, 16), (16, 16), (64, 16), (16, 64)]
    gen = torch.Generator().manual_seed(1)
    inits = [torch.randn(*s, generator=gen) for s in shapes]
    ours = [torch.nn.Parameter(w.clone()) for w in inits]
    ref = [torch.nn.Parameter(w.clone()) for w in inits]
    opt = Muon(ours, lr=0.02, ns_dtype=torch.bfloat16)
    opt_ref = torch.optim.Muon(ref, lr=0.02)
    for _ in range(4):
        for a, b in zip(ours, ref, strict=True):
            g = torch.randn(a.shape, generator=gen)
            a.grad, b.grad = g.clone(), g.clone()
        opt.step()
        opt_ref.step()
    for a, b in zip(ours, ref, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_steps_reuse_the_workspace_and_survive_copy_and_pickle():
    """After the first step no buffer is added; a deep copy or an unpickled optimizer gets
    an empty workspace of its own (buffers are not state) and steps to the same values."""
    import copy
    import pickle

    gen = torch.Generator().manual_seed(2)
    params = [torch.nn.Parameter(torch.randn(*s, generator=gen)) for s in [*SHAPES, (16, 24)]]
    opt = Muon(params, lr=0.02, ns_dtype=torch.bfloat16)
    sizes = []
    for _ in range(3):
        for p in params:
            p.grad = torch.randn(p.shape, generator=gen)
        opt.step()
        sizes.append(len(opt._polar_workspace))
    assert sizes[0] > 0 and sizes == [sizes[0]] * 3
    for make in (copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))):
        clone = make(opt)
        assert len(clone._polar_workspace) == 0
        twins = clone.param_groups[0]["params"]
        for p, q in zip(params, twins, strict=True):
            p.grad = torch.randn(p.shape, generator=gen)
            q.grad = p.grad.clone()
        opt.step()
        clone.step()
        for p, q in zip(params, twins, strict=True):
            assert torch.equal(p, q)


def test_buffers_are_kept_for_cpu_parameters_only():
    """Off the CPU (here the meta device: shapes only) a caching allocator reuses memory,
    so Muon keeps no buffers there; on the CPU it does (the page faults)."""
    from raystudy.algorithms.optim import MuonAdam

    for device, kept in (("cpu", True), ("meta", False)):
        params = [torch.nn.Parameter(torch.randn(*s, device=device)) for s in SHAPES]
        vector = torch.nn.Parameter(torch.randn(5, device=device))
        opts = [Muon(params, ns_dtype=torch.bfloat16),
                MuonAdam([{"params": params, "matrix": True},
                          {"params": [vector], "matrix": False}], ns_dtype=torch.bfloat16)]
        for p in [*params, vector]:
            p.grad = torch.randn(p.shape, device=device)
        for opt in opts:
            opt.step()
        assert (len(opts[0]._polar_workspace) > 0) is kept
        assert (len(opts[1]._polar_workspaces) > 0) is kept
