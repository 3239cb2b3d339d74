"""Multi-state linear attention against independent references: the recurrent cache equals
the materialised form for every policy; tau = inf is linear attention and loglinear is
bit_length(t xor s) (direct O(T^2) double loops; fla-core's naive kernels when installed);
DLA's partition invariants and merges against brute force (hypothesis); bad input."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from raystudy.algorithms.linear_attention import (
    POLICIES,
    chunk_rank,
    dla_partition,
    fenwick_rank,
    fifo_partition,
    information,
    loglinear_levels,
    multistate_attention,
    multistate_recurrent,
    partition_rank,
    states_per_query,
)

F64 = torch.float64


def _inputs(B=2, H=2, T=23, dk=3, dv=4, seed=0, decay=True):
    gen = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, H, T, dk, generator=gen, dtype=F64) for _ in range(2))
    v = torch.randn(B, H, T, dv, generator=gen, dtype=F64)
    log_a = -0.3 * torch.rand(B, H, T, generator=gen, dtype=F64) if decay else None
    return q, k, v, log_a


def _lam(B, H, T, R, seed=1):
    return 0.5 + torch.rand(B, H, T, R, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _direct(q, k, v, log_a, weight):
    """o[b,h,t] = sum_{s<=t} weight(b,h,t,s) scale (q_t.k_s) prod_{r=s+1..t} a_r v_s, looped."""
    q, k, v = q.numpy(), k.numpy(), v.numpy()
    B, H, T, dk = q.shape
    a = np.ones((B, H, T)) if log_a is None else np.exp(log_a.numpy())
    o = np.zeros((B, H, T, v.shape[-1]))
    for b in range(B):
        for h in range(H):
            for t in range(T):
                decay = 1.0
                for s in range(t, -1, -1):                  # decay = prod_{r=s+1..t} a_r
                    o[b, h, t] += weight(b, h, t, s) * dk ** -0.5 * (q[b, h, t] @ k[b, h, s]) \
                        * decay * v[b, h, s]
                    decay *= a[b, h, s]
    return torch.from_numpy(o)


def _fla(relative: str):
    """Load one of fla-core's naive torch files by path (never through ``fla.ops``)."""
    try:
        files = importlib.metadata.files("fla-core") or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("fla-core is not installed (pip install fla-core==0.6.0 for this check)")
    for path in files:
        if str(path).replace("\\", "/").endswith(relative):
            if importlib.util.find_spec("einops") is None:
                pytest.skip("fla-core's naive kernels import einops, which is not installed")
            spec = importlib.util.spec_from_file_location(f"_fla_{relative}", path.locate())
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    pytest.skip(f"fla-core has no {relative}")


@pytest.mark.parametrize("decay", [False, True])
@pytest.mark.parametrize("policy", POLICIES)
def test_recurrent_cache_equals_the_materialised_form_for_every_policy(policy, decay):
    q, k, v, log_a = _inputs(decay=decay)
    B, H, T = k.shape[:3]
    K = 4
    lam = _lam(B, H, T, max(K, loglinear_levels(T)))
    o, p = multistate_recurrent(q, k, v, log_a, lam, policy, capacity=K, tau=0.4)
    rank = fenwick_rank(T) if policy == "loglinear" else partition_rank(p)
    torch.testing.assert_close(o, multistate_attention(q, k, v, log_a, lam, rank),
                               atol=1e-10, rtol=0)
    if policy in ("fifo", "dla"):
        assert p.merged.any() and int(p.nstates.max()) == K   # the budget binds


@pytest.mark.parametrize("score", ["state_drift", "token_vs_state"])
@pytest.mark.parametrize("decay", [False, True])
def test_fast_dla_partition_equals_the_recurrent_cache(score, decay):
    q, k, v, log_a = _inputs(T=31, decay=decay, seed=3)
    tau = {"state_drift": 0.4, "token_vs_state": 1.2}[score]
    lam = _lam(*k.shape[:3], 5)
    _, slow = multistate_recurrent(q, k, v, log_a, lam, "dla", capacity=5, tau=tau, score=score)
    fast = dla_partition(k, v, log_a, tau=tau, capacity=5, score=score)
    for field in ("starts", "nstates", "opened", "merged"):
        assert torch.equal(getattr(fast, field), getattr(slow, field)), field
    torch.testing.assert_close(fast.info, slow.info, atol=1e-12, rtol=0)
    assert fast.opened.any() and (~fast.opened).any() and fast.merged.any()


def test_fast_partition_survives_a_strong_decay():
    """log a down to -120 per step: the stored scale is renormalised, the blocks unchanged."""
    q, k, v, log_a = _inputs(T=20, seed=5)
    log_a = 400 * log_a
    lam = _lam(*k.shape[:3], 3)
    o, slow = multistate_recurrent(q, k, v, log_a, lam, "dla", capacity=3, tau=0.3)
    fast = dla_partition(k, v, log_a, tau=0.3, capacity=3)
    assert torch.equal(fast.starts, slow.starts) and torch.equal(fast.opened, slow.opened)
    assert torch.isfinite(o).all()


@pytest.mark.parametrize("decay", [False, True])
def test_tau_inf_is_single_state_linear_attention(decay):
    q, k, v, log_a = _inputs(B=1, T=17, decay=decay, seed=7)
    lam = _lam(1, 2, 17, 3)
    o, p = multistate_recurrent(q, k, v, log_a, lam, "dla", capacity=3, tau=math.inf)
    assert (p.nstates == 1).all() and not p.merged.any()
    reference = _direct(q, k, v, log_a, lambda b, h, t, s: float(lam[b, h, t, 0]))
    torch.testing.assert_close(o, reference, atol=1e-10, rtol=0)
    o_linear, _ = multistate_recurrent(q, k, v, log_a, lam, "linear")
    torch.testing.assert_close(o, o_linear, atol=1e-12, rtol=0)


def test_tau_inf_matches_fla_naive_recurrent_simple_gla():
    fla = _fla("fla/ops/simple_gla/naive.py")
    q, k, v, log_a = _inputs(B=1, T=17, seed=7)
    lam = torch.ones(1, 2, 17, 1, dtype=F64)
    o, _ = multistate_recurrent(q, k, v, log_a, lam, "dla", capacity=1, tau=math.inf)
    o_fla, _ = fla.naive_recurrent_simple_gla(*(x.transpose(1, 2) for x in (q, k, v, log_a)))
    # fla's naive kernel computes in float32
    torch.testing.assert_close(o, o_fla.transpose(1, 2).double(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("decay", [False, True])
def test_loglinear_is_bit_length_of_t_xor_s(decay):
    q, k, v, log_a = _inputs(B=1, T=21, decay=decay, seed=11)
    lam = _lam(1, 2, 21, loglinear_levels(21))
    o, p = multistate_recurrent(q, k, v, log_a, lam, "loglinear")
    reference = _direct(q, k, v, log_a,
                        lambda b, h, t, s: float(lam[b, h, t, (t ^ s).bit_length()]))
    torch.testing.assert_close(o, reference, atol=1e-10, rtol=0)
    t = torch.arange(21)
    assert torch.equal(p.nstates[0, 0], torch.tensor([bin(i).count("1") + 1 for i in t]))
    assert int(p.nstates.max()) <= loglinear_levels(21)


def test_loglinear_matches_fla_naive_log_linear_attn():
    fla = _fla("fla/ops/log_linear_attn/naive.py")
    q, k, v, log_a = _inputs(B=1, T=21, seed=11)
    lam = _lam(1, 2, 21, loglinear_levels(21))
    o, _ = multistate_recurrent(q, k, v, log_a, lam, "loglinear")
    o_fla = fla.naive_log_linear_attn(*(x.transpose(1, 2) for x in (q, k, v, log_a, lam)),
                                      scale=None)         # fla's default scale is 1, ours dk^-1/2
    torch.testing.assert_close(o, o_fla.transpose(1, 2).double(), atol=1e-8, rtol=1e-8)


def test_tau_zero_with_room_for_every_token_weights_each_token_by_its_age():
    q, k, v, log_a = _inputs(B=1, T=9, seed=13)
    lam = _lam(1, 2, 9, 9)
    o, p = multistate_recurrent(q, k, v, log_a, lam, "dla", capacity=9, tau=0.0)
    assert p.opened.all() and torch.equal(p.nstates[0, 0], torch.arange(1, 10))
    reference = _direct(q, k, v, log_a, lambda b, h, t, s: float(lam[b, h, t, t - s]))
    torch.testing.assert_close(o, reference, atol=1e-10, rtol=0)


def test_fixed_ranks_by_hand():
    assert fenwick_rank(5).tolist() == [[0, -1, -1, -1, -1],
                                        [1, 0, -1, -1, -1],
                                        [2, 2, 0, -1, -1],
                                        [2, 2, 1, 0, -1],
                                        [3, 3, 3, 3, 0]]
    assert chunk_rank(5, 2).tolist() == [[0, -1, -1, -1, -1],          # c = ceil(5/2) = 3
                                         [0, 0, -1, -1, -1],
                                         [0, 0, 0, -1, -1],
                                         [1, 1, 1, 0, -1],
                                         [1, 1, 1, 0, 0]]
    assert partition_rank(fifo_partition(5, 3))[0, 0].tolist() == [[0, -1, -1, -1, -1],
                                                                   [1, 0, -1, -1, -1],
                                                                   [2, 1, 0, -1, -1],
                                                                   [2, 2, 1, 0, -1],
                                                                   [2, 2, 2, 1, 0]]
    assert [loglinear_levels(T) for T in (1, 2, 3, 64, 65, 256, 16384)] == [1, 2, 3, 7, 8, 9, 15]
    assert states_per_query(fenwick_rank(8)).tolist() == [bin(t).count("1") + 1 for t in range(8)]


@pytest.mark.parametrize("policy", ["fixed_chunk", "fifo", "linear"])
def test_recurrent_fixed_policies_go_through_the_closed_form_blocks(policy):
    q, k, v, _ = _inputs(B=1, H=1, T=13)
    lam = _lam(1, 1, 13, 4)
    _, p = multistate_recurrent(q, k, v, None, lam, policy, capacity=4)
    expected = {"fixed_chunk": chunk_rank(13, 4),
                "fifo": partition_rank(fifo_partition(13, 4))[0, 0],
                "linear": torch.where(fenwick_rank(13) >= 0, 0, -1)}[policy]
    assert torch.equal(partition_rank(p)[0, 0], expected)


def test_information_scores_by_hand():
    """After n copies of unit u, an orthogonal unit w: state_drift = sqrt(2 - 2n/sqrt(n^2+1))
    (0.765 at n = 1, the research note's table), token_vs_state = sqrt(2) for every n."""
    u = torch.zeros(4, 4, dtype=F64)
    u[0, 0] = 1.0
    w = torch.zeros(4, 4, dtype=F64)
    w[1, 2] = 1.0
    for n in (1, 2, 5, 10):
        drift = float(information(n * u, w, "state_drift"))
        assert drift == pytest.approx(math.sqrt(2 - 2 * n / math.sqrt(n * n + 1)), abs=1e-9)
        assert float(information(n * u, w, "token_vs_state")) == pytest.approx(math.sqrt(2))
    assert float(information(3 * u, u, "token_vs_state")) == pytest.approx(0.0, abs=1e-9)
    assert float(information(u, w, "state_drift")) == pytest.approx(0.765, abs=1e-3)


def test_equal_density_ties_merge_the_older_pair():
    """Identical tokens score 0 against their state: with tau = 0 every token opens and every
    pair ties at density 0, so DLA merges the oldest pair each time: FIFO."""
    k = torch.ones(1, 1, 10, 2, dtype=F64)
    p = dla_partition(k, k, tau=0.0, capacity=3, score="token_vs_state")
    assert torch.equal(p.starts, fifo_partition(10, 3).starts)
    assert p.info.abs().max() < 1e-9


def test_the_materialised_form_is_differentiable_and_ignores_ranks_above_the_diagonal():
    q, k, v, log_a = _inputs(B=1, T=8)
    lam = _lam(1, 2, 8, 4).requires_grad_()
    q.requires_grad_()
    log_a.requires_grad_()
    rank = chunk_rank(8, 4)
    o = multistate_attention(q, k, v, log_a, lam, rank)
    o.square().sum().backward()
    assert all(torch.isfinite(x.grad).all() and x.grad.abs().sum() > 0 for x in (q, log_a, lam))
    leaky = rank.clone()
    leaky[0, 5] = 1
    torch.testing.assert_close(multistate_attention(q, k, v, log_a, lam, leaky), o)


def _open_state(k, v, a, lo, t):
    """sum_{s=lo..t-1} prod_{r=s+1..t} a_r k_s v_s^T, looped (numpy)."""
    S = np.zeros((k.shape[1], v.shape[1]))
    for s in range(lo, t):
        S += np.prod(a[s + 1:t + 1]) * np.outer(k[s], v[s])
    return S


def _score(S, s, score):
    def normalised(X):
        return X / (np.linalg.norm(X) + 1e-12)

    if score == "state_drift":
        return np.linalg.norm(normalised(S + s) - normalised(S))
    return np.linalg.norm(normalised(s) - normalised(S))


@settings(max_examples=25, deadline=None)
@given(T=st.integers(1, 12), dk=st.integers(1, 3), dv=st.integers(1, 3),
       capacity=st.integers(1, 4), tau=st.floats(0.0, 1.5), decay=st.booleans(),
       score=st.sampled_from(["state_drift", "token_vs_state"]), seed=st.integers(0, 10_000))
def test_dla_partition_invariants_and_brute_force_merges(T, dk, dv, capacity, tau, decay,
                                                          score, seed):
    gen = torch.Generator().manual_seed(seed)
    k = torch.randn(1, 1, T, dk, generator=gen, dtype=F64)
    v = torch.randn(1, 1, T, dv, generator=gen, dtype=F64)
    log_a = -torch.rand(1, 1, T, generator=gen, dtype=F64) if decay else None
    p = dla_partition(k, v, log_a, tau=tau, capacity=capacity, score=score)
    kn, vn = k[0, 0].numpy(), v[0, 0].numpy()
    a = np.ones(T) if log_a is None else np.exp(log_a[0, 0].numpy())
    info = p.info[0, 0].numpy()
    previous: list[int] = []
    for t in range(T):
        m = int(p.nstates[0, 0, t])
        starts = p.starts[0, 0, t].tolist()
        assert 1 <= m <= capacity
        assert starts[0] == 0 and all(x < y for x, y in zip(starts[:m], starts[1:m], strict=False))
        assert starts[m - 1] <= t and all(x == T for x in starts[m:])   # contiguous, cover [0, t]
        blocks = starts[:m]
        if t == 0:
            assert p.opened[0, 0, 0] and info[0] == 0
        else:
            expected = _score(_open_state(kn, vn, a, previous[-1], t), np.outer(kn[t], vn[t]),
                              score)
            assert info[t] == pytest.approx(expected, abs=1e-9)
            assert bool(p.opened[0, 0, t]) == (info[t] >= tau)
        candidates = previous + [t] if p.opened[0, 0, t] else previous
        if len(candidates) > capacity:                      # one adjacent merge, the argmin
            assert p.merged[0, 0, t]
            bounds = [*candidates, t + 1]
            n = [bounds[i + 1] - bounds[i] for i in range(len(candidates))]
            ibar = [info[bounds[i]:bounds[i + 1]].sum() for i in range(len(candidates))]
            density = [(ibar[i] + ibar[i + 1]) / (n[i] + n[i + 1]) for i in range(len(n) - 1)]
            best = int(np.argmin(density))                 # the first minimum: the older pair
            assert blocks == candidates[:best + 1] + candidates[best + 2:]
        else:
            assert not p.merged[0, 0, t] and blocks == candidates
        previous = blocks


def test_partition_rank_against_a_loop():
    _, k, v, log_a = _inputs(B=2, H=1, T=15, seed=17)
    p = dla_partition(k, v, log_a, tau=0.3, capacity=3)
    rank = partition_rank(p)
    for b in range(2):
        for t in range(15):
            starts = [s for s in p.starts[b, 0, t].tolist() if s < 15]
            for s in range(15):
                expected = -1 if s > t else sum(1 for x in starts if x > s)
                assert int(rank[b, 0, t, s]) == expected


def test_bad_input_raises_one_line_naming_the_argument():
    q, k, v, log_a = _inputs(B=1, T=6)
    lam = _lam(1, 2, 6, 4)
    cases = [
        (lambda: dla_partition(k, v, tau=-0.1, capacity=2), "tau"),
        (lambda: dla_partition(k, v, tau=float("nan"), capacity=2), "tau"),
        (lambda: dla_partition(k, v, tau=0.1, capacity=0), "capacity"),
        (lambda: dla_partition(k, v, tau=0.1, capacity=2, score="entropy"), "score"),
        (lambda: dla_partition(k, v[:, :, :5], tau=0.1, capacity=2), "v"),
        (lambda: dla_partition(k, v, log_a[..., :3], tau=0.1, capacity=2), "log_a"),
        (lambda: multistate_recurrent(q, k, v, None, lam, "lru"), "policy"),
        (lambda: multistate_recurrent(q, k, v, None, lam, "fifo"), "capacity"),
        (lambda: multistate_recurrent(q, k, v, None, lam, "dla", capacity=2), "tau"),
        (lambda: multistate_recurrent(q, k, v, None, lam, "fifo", capacity=9), "lam"),
        (lambda: multistate_recurrent(q[..., :2], k, v, None, lam, "linear"), "q"),
        (lambda: multistate_attention(q, k, v, None, lam[:, :1], chunk_rank(6, 2)), "lam"),
        (lambda: multistate_attention(q, k, v, None, lam, chunk_rank(5, 2)), "rank"),
        (lambda: multistate_attention(q, k, v, None, lam[..., :1], chunk_rank(6, 2)), "rank"),
        (lambda: chunk_rank(6, 0), "capacity"),
        (lambda: loglinear_levels(0), "T"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError) as error:
            call()
        message = str(error.value)
        assert "\n" not in message and message.startswith(name), message
