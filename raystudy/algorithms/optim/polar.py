r"""Polar factor of a matrix by Newton–Schulz iteration (or exact SVD).

The polar factor of :math:`G = U S V^\top` (thin SVD) is

.. math::
    \operatorname{polar}(G) = U V^\top ,

the orthogonal matrix closest to :math:`G`; Muon-type optimizers step along it
(Crawshaw, Modi, Liu, Gower 2025, "An Exploration of Non-Euclidean Gradient
Descent: Muon and its Many Variants", arXiv 2510.09827, Sec. 2). Odd matrix
polynomials map every singular value :math:`s` to :math:`p(s)` and keep
:math:`U, V`, so the iteration

.. math::
    X_0 = \frac{G}{\max(\kappa\,\|G\|_F,\ \varepsilon)}, \qquad
    A_j = X_j X_j^\top, \qquad
    X_{j+1} = a_j X_j + (b_j A_j + c_j A_j^2) X_j

drives all singular values of :math:`X_0` (which lie in :math:`[0, 1]`) towards 1.
Symbols: :math:`(a_j, b_j, c_j)` coefficients of step :math:`j`; :math:`\kappa`
safety factor on the Frobenius norm; :math:`\varepsilon` guard against
division by zero (an all-zero :math:`G` gives all-zero output). When :math:`G`
has more rows than columns the iteration runs on :math:`G^\top` (cheaper Gram
matrix) and transposes back.

Methods:

* ``"jordan"``: the fixed quintic :math:`(a,b,c)=(3.4445,-4.7750,2.0315)` of
  Keller Jordan's Muon (kellerjordan.github.io/posts/muon), :math:`\kappa=1`;
  it only reaches :math:`s' \in [0.7, 1.2]` roughly, not exactly 1. Op for op the
  same sequence as ``torch.optim.Muon`` (so bf16 results agree bit for bit).
* ``"polar_express"``: per-step optimal coefficients of Amsel, Persson, Musco,
  Gower 2025 ("The Polar Express", arXiv 2505.16932), as listed in the authors'
  code used by Crawshaw et al. (modichirag/GPT-opt, ``gptopt/optim/polar_express.py``):
  first step :math:`(8.2872,-23.5959,17.3004)`, converging to
  :math:`(1.875,-1.25,0.375)`; every step but the last listed one is divided by
  the safety factor 1.01 (:math:`a/1.01, b/1.01^3, c/1.01^5`) and
  :math:`\kappa=1.01`, as in that code. Steps beyond the list repeat the limit.
* ``"svd"``: exact :math:`U\,\mathrm{diag}(\mathbb 1[s>\text{tol}])\,V^\top`
  (zero singular values map to zero, as they do under the polynomials); for tests.

Precision: ``dtype=None`` runs the iteration in bf16 on CUDA and on CPUs where bf16 is
measured to be the faster precision, and in ``promote(G.dtype, float32)`` elsewhere
(:func:`default_polar_dtype`). CPUs differ: where bf16 matmul is emulated it is about 14x
slower than fp32; with ``avx512_bf16`` it was 1.5x slower on one Intel Xeon and 1.7x
faster on an AMD EPYC; with AMX 2.1x faster. So on a CPU with native bf16 one short
timing of the iteration in both precisions decides, once per process and thread count
(:func:`cpu_bf16_speedup`); ``RAYSTUDY_CPU_POLAR_DTYPE`` (``bfloat16`` or ``float32``)
pins the choice, e.g. for a cluster of mixed CPUs. The result is returned in ``G.dtype``.

Shapes: ``G`` is ``(..., m, n)``; leading dimensions are a batch.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import dataclass

import torch
from torch import Tensor

from .truncation import inner

POLAR_METHODS = ("polar_express", "jordan", "svd")

JORDAN_COEFFICIENTS: tuple[float, float, float] = (3.4445, -4.7750, 2.0315)

_POLAR_EXPRESS_RAW: tuple[tuple[float, float, float], ...] = (
    (8.28721201814563, -23.595886519098837, 17.300387312530933),
    (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
    (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
    (3.3184196573706015, -2.488488024314874, 0.51004894012372),
    (2.300652019954817, -1.6689039845747493, 0.4188073119525673),
    (1.891301407787398, -1.2679958271945868, 0.37680408948524835),
    (1.8750014808534479, -1.2500016453999487, 0.3750001645474248),
    (1.875, -1.25, 0.375),
)
POLAR_EXPRESS_SAFETY = 1.01
POLAR_EXPRESS_COEFFICIENTS: tuple[tuple[float, float, float], ...] = tuple(
    (a / POLAR_EXPRESS_SAFETY, b / POLAR_EXPRESS_SAFETY**3, c / POLAR_EXPRESS_SAFETY**5)
    for a, b, c in _POLAR_EXPRESS_RAW[:-1]
) + (_POLAR_EXPRESS_RAW[-1],)


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo") as handle:
            return handle.read()
    except OSError:
        return ""


def cpu_has_native_bf16() -> bool:
    """True when the CPU multiplies bf16 natively (x86 ``avx512_bf16``/``amx_bf16`` flags).

    Without them (most CPUs before 2020) a bf16 matmul is emulated and about 14x slower
    than fp32.
    """
    flags = _cpu_flags()
    return "avx512_bf16" in flags or "amx_bf16" in flags


def cpu_has_amx_bf16() -> bool:
    """True when the CPU has AMX tiles for bf16 (``amx_bf16``)."""
    return "amx_bf16" in _cpu_flags()


BF16_MIN_SPEEDUP = 1.2   # bf16 must be clearly faster to replace fp32 (its 3 digits cost accuracy)
CPU_POLAR_DTYPE_ENV = "RAYSTUDY_CPU_POLAR_DTYPE"


@functools.lru_cache(maxsize=8)
def _cpu_bf16_speedup(threads: int) -> float:
    G = torch.randn(4, 128, 512, generator=torch.Generator().manual_seed(0))
    schedule = [JORDAN_COEFFICIENTS] * 2
    best = {torch.float32: float("inf"), torch.bfloat16: float("inf")}
    for _ in range(6):                       # interleaved, minimum: robust to a busy core
        for dtype in best:
            start = time.perf_counter()
            newton_schulz(G, schedule, dtype)
            best[dtype] = min(best[dtype], time.perf_counter() - start)
    return best[torch.float32] / best[torch.bfloat16]


def cpu_bf16_speedup() -> float:
    """fp32 time / bf16 time of a short batched Newton-Schulz chain on this CPU.

    Timed once per process and torch thread count (about 10 ms; the global RNG is not
    touched); 0.0 without native bf16, where bf16 matmul is emulated and never faster.
    """
    if not cpu_has_native_bf16():
        return 0.0
    return _cpu_bf16_speedup(torch.get_num_threads())


def default_polar_dtype(G: Tensor) -> torch.dtype:
    """The faster precision that keeps accuracy: bf16 on CUDA and on CPUs where bf16 is at
    least ``BF16_MIN_SPEEDUP`` times faster (or ``RAYSTUDY_CPU_POLAR_DTYPE`` says so);
    otherwise ``G.dtype``, at least float32 (``ns_dtype`` overrides either).

    A float64 input is kept in float64 (exactness tests ask for it).
    """
    if G.is_cuda:
        return torch.bfloat16
    exact = torch.promote_types(G.dtype, torch.float32)
    if G.dtype == torch.float64:
        return exact
    pinned = os.environ.get(CPU_POLAR_DTYPE_ENV, "")
    if pinned:
        if pinned not in ("bfloat16", "float32"):
            raise ValueError(f"{CPU_POLAR_DTYPE_ENV}={pinned!r}: use bfloat16 or float32")
        return torch.bfloat16 if pinned == "bfloat16" else exact
    return torch.bfloat16 if cpu_bf16_speedup() >= BF16_MIN_SPEEDUP else exact


def polar_express_schedule(steps: int) -> list[tuple[float, float, float]]:
    """The first ``steps`` Polar Express coefficients, repeating the limit afterwards."""
    schedule = list(POLAR_EXPRESS_COEFFICIENTS[:steps])
    return schedule + [POLAR_EXPRESS_COEFFICIENTS[-1]] * (steps - len(schedule))


class PolarWorkspace:
    """Buffers, and the plan of which matrix goes where, that an optimizer's Newton–Schulz
    chains reuse from step to step.

    Every step builds the same stacks and iterates. Allocated afresh and freed each time,
    these megabyte-sized buffers go back to the OS when glibc trims its heap and come back
    as page faults: 350-1,000 a step, a sixth of a 10 ms Muon step on the AMD EPYC
    (``bench/optim_step.py``, see ``bench/README.md``). A workspace keeps one buffer per
    (role, shape, dtype, device), and for each signature of inputs (shapes, dtypes,
    devices) the grouping of matrices into stacks and families with their buffers bound
    (working it out again costs 0.05 ms a call: 0.49 vs 0.54 ms at width 8 in
    ``bench/newton_schulz.py --width 8``, under 1 % of a width-128 step).
    Factors computed with it live
    in its buffers, valid until its next use: hold one per optimizer and consume the
    factors within the step. Only for CPU tensors (:func:`keeps_buffers`): on CUDA the
    caching allocator already reuses freed memory without faults, and kept buffers would
    hold about 12 bytes per matrix element (stacks, iterates, fp32 factors) for good.
    """

    def __init__(self) -> None:
        self._buffers: dict[tuple, Tensor] = {}
        self._plans: dict[tuple, _Plan] = {}

    def buffer(self, role: str, shape: tuple[int, ...], dtype: torch.dtype,
               device: torch.device) -> Tensor:
        """The uninitialised buffer for ``role`` of this ``shape``, ``dtype`` and ``device``."""
        key = (role, tuple(shape), dtype, device)
        found = self._buffers.get(key)
        if found is None:
            found = self._buffers[key] = torch.empty(shape, dtype=dtype, device=device)
        return found

    def __len__(self) -> int:
        return len(self._buffers)


def keeps_buffers(tensors: list[Tensor]) -> bool:
    """Whether an optimizer should keep a :class:`PolarWorkspace` for ``tensors``: on the
    CPU, where freed buffers come back as page faults, not on devices with a caching
    allocator."""
    return all(t.device.type == "cpu" for t in tensors)


@dataclass(frozen=True)
class _Chain:
    """The matrices ``members`` (one wide-oriented shape) stacked in ``X`` ``(k, m, n)``,
    ``Y`` its ping-pong partner, ``A`` and ``B`` its rows of the family's buffers."""
    members: tuple[int, ...]
    X: Tensor
    Y: Tensor
    A: Tensor
    B: Tensor


BATCH_MAX_NUMEL = 1 << 18
"""Matrices with more entries iterate alone, with ``newton_schulz``'s 2-D operations (``mm``,
``addmm``: torch.optim.Muon's). On the bench model's matrices (``bench/newton_schulz.py
--width W``, AMD EPYC, one thread) batching every same-shape group is 4-5 % slower at widths
384 and 512 (up to 2^20 entries a matrix), and a limit of 2^16 is 4 % slower at width 256
(2^18 entries, batched here); at width 128 everything is within it."""


@dataclass(frozen=True)
class _Family:
    """Chains sharing the short side ``m``, precision and device: their ``A_j = X_j X_j^T``
    land in one ``(sum k, m, m)`` buffer ``A`` and ``b A + c A^2`` is one batched product
    (0.185 vs 0.245 ms per Newton-Schulz step for the bench model's 8 matrices as three
    calls: ``bench/newton_schulz.py --parts``). A ``solo`` family is one matrix over
    ``BATCH_MAX_NUMEL`` entries, iterated with 2-D operations."""
    chains: tuple[_Chain, ...]
    A: Tensor
    B: Tensor
    solo: bool = False


@dataclass(frozen=True)
class _Plan:
    """Where each matrix of a ``polar_factors`` call goes: its family and chain, whether it
    is tall (iterated transposed), and the buffer its factor is copied into, contiguous in
    its matrix's layout and the caller's dtype (``None``: the chain's own row already is).

    The caller adds the factor to a parameter: a transposed bf16 view is walked with a
    stride and cast into a temporary by TensorIterator (0.38 ms for the bench model's 8
    matrices against 0.24 ms for this copy and a contiguous add: ``bench/newton_schulz.py
    --parts``, AMD EPYC, one thread)."""
    families: tuple[_Family, ...]
    tall: tuple[bool, ...]
    outs: tuple[Tensor | None, ...]


def _family(workspace: PolarWorkspace, tag: str, chains: list[tuple[tuple[int, ...], int]],
            m: int, dtype: torch.dtype, device: torch.device, solo: bool = False) -> _Family:
    """Buffers for chains ``(members, n)`` (``len(members)`` matrices ``m x n`` each)."""
    total = sum(len(members) for members, _ in chains)
    A = workspace.buffer(f"A{tag}", (total, m, m), dtype, device)
    B = workspace.buffer(f"B{tag}", (total, m, m), dtype, device)
    built, start = [], 0
    for index, (members, n) in enumerate(chains):
        k, end = len(members), start + len(members)
        X = workspace.buffer(f"X{tag}.{index}", (k, m, n), dtype, device)
        Y = workspace.buffer(f"Y{tag}.{index}", (k, m, n), dtype, device)
        built.append(_Chain(members, X, Y, A[start:end], B[start:end]))
        start = end
    return _Family(tuple(built), A, B, solo)


def _normalise_(X: Tensor, safety: float, eps: float) -> None:
    """``X_0 = G / max(kappa |G|_F, eps)`` per matrix of the stack ``X``, in place."""
    norm = torch.linalg.vector_norm(X, dim=(-2, -1), keepdim=True)
    if safety != 1.0:
        norm = norm * safety
    X.div_(norm.clamp(min=eps))


def _iterate(family: _Family, coefficients: list[tuple[float, float, float]]) -> list[Tensor]:
    """The quintic steps on every chain of ``family`` (normalised ``X``); the buffer that
    holds each chain's result. Per matrix the operations of ``newton_schulz``."""
    Xs = [chain.X for chain in family.chains]
    Ys = [chain.Y for chain in family.chains]
    if family.solo:                                  # one large matrix: torch's 2-D ops
        chain = family.chains[0]
        A, B = chain.A[0], chain.B[0]
        for a, b, c in coefficients:
            X, Y = Xs[0][0], Ys[0][0]
            torch.mm(X, X.mT, out=A)                                # A_j = X_j X_j^T
            torch.addmm(A, A, A, beta=b, alpha=c, out=B)            # b A + c A^2
            torch.addmm(X, B, X, beta=a, out=Y)                     # X_{j+1} = a X + B X
            Xs[0], Ys[0] = Ys[0], Xs[0]
        return Xs
    for a, b, c in coefficients:
        for X, chain in zip(Xs, family.chains, strict=True):
            torch.bmm(X, X.mT, out=chain.A)                         # A_j = X_j X_j^T
        torch.baddbmm(family.A, family.A, family.A, beta=b, alpha=c, out=family.B)  # b A + c A^2
        for i, chain in enumerate(family.chains):
            torch.baddbmm(Xs[i], chain.B, Xs[i], beta=a, out=Ys[i])  # X_{j+1} = a X + B X
            Xs[i], Ys[i] = Ys[i], Xs[i]
    return Xs


def newton_schulz(
    G: Tensor,
    coefficients: list[tuple[float, float, float]],
    dtype: torch.dtype,
    safety: float = 1.0,
    eps: float = 1e-7,
) -> Tensor:
    """Run the quintic iteration with per-step ``coefficients`` on ``G`` ``(..., m, n)``.

    Returns a new tensor of dtype ``dtype``; ``G`` is never modified (a cast to
    the same dtype would otherwise alias ``G``). :func:`polar_factors` runs the same
    operations per matrix in kept buffers.
    """
    transposed = G.size(-2) > G.size(-1)
    X = G.to(dtype)
    if transposed:
        X = X.mT
    if X.ndim == 2:
        norm = X.norm()
    else:
        norm = torch.linalg.vector_norm(X, dim=(-2, -1), keepdim=True)
    if safety != 1.0:
        norm = norm * safety
    X = X / norm.clamp(min=eps)
    if X.ndim == 2:
        for a, b, c in coefficients:
            A = X @ X.mT
            B = torch.addmm(A, A, A, beta=b, alpha=c)
            X = torch.addmm(X, B, X, beta=a)
    else:                                    # one batched chain: the same ops as addmm
        shape = X.shape
        X = X.reshape(-1, *shape[-2:])
        for a, b, c in coefficients:
            A = torch.bmm(X, X.mT)                                  # A_j = X_j X_j^T
            B = torch.baddbmm(A, A, A, beta=b, alpha=c)             # b A + c A^2
            X = torch.baddbmm(X, B, X, beta=a)                      # X_{j+1} = a X + B X
        X = X.reshape(shape)
    return X.mT if transposed else X


def _wide(G: Tensor) -> Tensor:
    """``G`` oriented wide (``m <= n``): a transposed view when it is tall."""
    return G.mT if G.size(-2) > G.size(-1) else G


def polar_factors(
    Gs: list[Tensor],
    method: str = "polar_express",
    steps: int = 5,
    dtype: torch.dtype | None = None,
    *,
    coefficients: tuple[float, float, float] | None = None,
    eps: float = 1e-7,
    cast_back: bool = True,
    workspace: PolarWorkspace | None = None,
) -> list[Tensor]:
    """``polar_factor`` of every matrix in ``Gs``, same-shape matrices as one batched chain.

    Matrices are oriented wide (``m <= n``; a tall one is transposed, as
    ``newton_schulz`` does) and grouped by oriented shape, dtype and device, so a
    transformer's handful of distinct shapes costs a handful of batched chains instead
    of one chain per matrix; matrices over ``BATCH_MAX_NUMEL`` entries iterate alone.
    Each result equals ``polar_factor(G, ...)`` (bf16: bit for bit on the CPUs tested, see
    ``tests/algorithms/optim/test_polar.py``); ``cast_back=False`` leaves it in the
    iteration's dtype. Factors are contiguous in their matrix's layout. With a ``workspace`` (see
    :class:`PolarWorkspace`) stacks, iterates and factors live in its buffers: a factor is
    valid until the workspace's next use.
    """
    return _polar_factors(Gs, method, steps, dtype, coefficients, eps, inners=False,
                          cast_back=cast_back, workspace=workspace)[0]


def polar_factors_and_inners(Gs: list[Tensor], method: str = "polar_express", steps: int = 5,
                             dtype: torch.dtype | None = None, *,
                             workspace: PolarWorkspace | None = None,
                             ) -> tuple[list[Tensor], list[Tensor]]:
    """``polar_factors(Gs)`` and each ``<G_i, polar(G_i)>`` (the nuclear-norm estimate, a
    0-d tensor in at least float32): one dot per matrix with its factor, which comes back
    contiguous in the matrix's own layout (a bf16 factor cast to ``G_i``'s precision in a
    workspace buffer first). ``workspace`` as in :func:`polar_factors`."""
    return _polar_factors(Gs, method, steps, dtype, None, 1e-7, inners=True,
                          workspace=workspace)


def _polar_factors(
    Gs: list[Tensor], method: str, steps: int, dtype: torch.dtype | None,
    coefficients: tuple[float, float, float] | None, eps: float, inners: bool,
    cast_back: bool = True, workspace: PolarWorkspace | None = None,
) -> tuple[list[Tensor], list[Tensor]]:
    """The factors and, with ``inners``, each ``<G_i, P_i>`` (else an empty list).

    Matrices of one oriented shape (and dtype, device, precision) are stacked into one
    chain; chains whose short side, precision and device agree form a family that iterates
    together (:class:`_Family`); the plan is built once per input signature."""
    if method == "svd":
        out = [polar_factor(G, method, dtype=dtype) for G in Gs]
        return out, [inner(G, P) for G, P in zip(Gs, out, strict=True)] if inners else []
    schedule, safety = _schedule(method, steps, coefficients)
    if workspace is None:
        workspace = PolarWorkspace()                                # this call's buffers
    chosen: dict[tuple, torch.dtype] = {}
    for G in Gs:
        if G.ndim != 2:
            raise ValueError(f"polar_factors needs (m, n) matrices, got shape {tuple(G.shape)}")
        if (G.dtype, G.device) not in chosen:
            chosen[G.dtype, G.device] = dtype if dtype is not None else default_polar_dtype(G)
    key = (tuple((G.shape, G.dtype, G.device) for G in Gs), tuple(chosen.items()), cast_back)
    plan = workspace._plans.get(key)
    if plan is None:
        plan = workspace._plans[key] = _plan(workspace, Gs, chosen, cast_back)
    factors = list(Gs)                                              # each replaced below
    for family in plan.families:
        for chain in family.chains:
            for j, i in enumerate(chain.members):
                chain.X[j].copy_(_wide(Gs[i]))                      # cast, orient and stack
            _normalise_(chain.X, safety, eps)
        for chain, X in zip(family.chains, _iterate(family, schedule), strict=True):
            for j, i in enumerate(chain.members):
                P, out = (X[j].mT if plan.tall[i] else X[j]), plan.outs[i]
                factors[i] = P if out is None else out.copy_(P)
    if not inners:
        return factors, []
    return factors, [_inner_in(workspace, G, P, i)                 # <G_i, P_i>, same layout
                     for i, (G, P) in enumerate(zip(Gs, factors, strict=True))]


def _plan(workspace: PolarWorkspace, Gs: list[Tensor], chosen: dict[tuple, torch.dtype],
          cast_back: bool) -> _Plan:
    """Group ``Gs`` into chains (one per oriented shape, dtype, device, precision) and
    families (one per short side, precision, device), with their buffers in ``workspace``."""
    chains: dict[tuple, list[int]] = {}
    for i, G in enumerate(Gs):
        work = chosen[G.dtype, G.device]
        alone = i if G.numel() > BATCH_MAX_NUMEL else None          # its own chain, family
        chains.setdefault((tuple(_wide(G).shape), G.dtype, G.device, work, alone),
                          []).append(i)
    families: dict[tuple, list[tuple[tuple[int, ...], int]]] = {}
    for (shape, _, device, work, alone), members in chains.items():
        families.setdefault((shape[0], work, device, alone), []).append(
            (tuple(members), shape[1]))
    built = tuple(_family(workspace, str(slot), members, m, work, device, alone is not None)
                  for slot, ((m, work, device, alone), members) in enumerate(families.items()))
    tall = tuple(G.size(0) > G.size(1) for G in Gs)
    outs = []
    for i, G in enumerate(Gs):
        work = chosen[G.dtype, G.device]
        target = G.dtype if cast_back else work
        outs.append(workspace.buffer(f"out{i}", tuple(G.shape), target, G.device)
                    if tall[i] or target != work else None)
    return _Plan(built, tall, tuple(outs))


def svd_polar(G: Tensor) -> Tensor:
    """Exact polar factor ``U 1[s>tol] V^T`` in float32 (float64 if ``G`` is float64)."""
    work = G.to(torch.promote_types(G.dtype, torch.float32))
    U, S, Vh = torch.linalg.svd(work, full_matrices=False)
    tol = S.amax(dim=-1, keepdim=True) * max(G.shape[-2:]) * torch.finfo(work.dtype).eps
    keep = (S > tol).to(work.dtype)
    return (U * keep.unsqueeze(-2)) @ Vh


def polar_factor(
    G: Tensor,
    method: str = "polar_express",
    steps: int = 5,
    dtype: torch.dtype | None = None,
    *,
    coefficients: tuple[float, float, float] | None = None,
    eps: float = 1e-7,
) -> Tensor:
    """Approximate ``polar(G) = U V^T`` of ``G`` ``(..., m, n)``; same shape and dtype as ``G``.

    Args:
        G: matrix or batch of matrices.
        method: ``"polar_express"`` (default), ``"jordan"`` or ``"svd"``.
        steps: Newton–Schulz steps (default 5); ignored by ``"svd"``.
        dtype: iteration precision; ``None`` means :func:`default_polar_dtype`.
        coefficients: fixed ``(a, b, c)`` for ``"jordan"`` (default the Jordan quintic).
        eps: lower bound of the normalising Frobenius norm (default 1e-7).
    """
    if G.ndim < 2:
        raise ValueError(f"polar_factor needs a (..., m, n) tensor, got shape {tuple(G.shape)}")
    if method == "svd":
        return svd_polar(G).to(G.dtype)
    schedule, safety = _schedule(method, steps, coefficients)
    work = dtype if dtype is not None else default_polar_dtype(G)
    return newton_schulz(G, schedule, work, safety=safety, eps=eps).to(G.dtype)


def _inner_in(workspace: PolarWorkspace, G: Tensor, P: Tensor, index: int) -> Tensor:
    """``<G, P>`` in at least float32 for a contiguous factor ``P`` in ``G``'s layout; a
    bf16 factor of a float32 ``G`` is cast into a workspace buffer (one contiguous pass)."""
    if P.dtype == G.dtype or G.dtype not in (torch.float32, torch.float64):
        return inner(G, P)
    P_acc = workspace.buffer(f"acc{index}", tuple(P.shape), G.dtype, P.device).copy_(P)
    return torch.dot(G.reshape(-1), P_acc.view(-1))


def _schedule(method: str, steps: int, coefficients: tuple[float, float, float] | None
              ) -> tuple[list[tuple[float, float, float]], float]:
    """``method``'s per-step ``(a, b, c)`` and its safety factor on the norm."""
    if method == "jordan":
        return [coefficients or JORDAN_COEFFICIENTS] * steps, 1.0
    if method == "polar_express":
        if coefficients is not None:
            raise ValueError("coefficients apply to method='jordan' only")
        return polar_express_schedule(steps), POLAR_EXPRESS_SAFETY
    raise ValueError(f"unknown polar method {method!r}; valid: {', '.join(POLAR_METHODS)}")
