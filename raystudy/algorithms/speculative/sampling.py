r"""Exact speculative sampling (Leviathan, Kalman & Matias 2023, arXiv 2211.17192, Alg. 1;
Chen et al. 2023, arXiv 2302.01318, Alg. 2) and the acceptance-length measures of NVIDIA's
specdec_bench (``metrics/acceptance_rate.py``, as read in the research note).

A draft model with next-token law :math:`q` proposes :math:`\gamma` tokens
:math:`x_1..x_\gamma` one at a time; the target, with law :math:`p`, scores all of them in one
forward pass. Draft :math:`j` is accepted with probability :math:`\min(1, p_j(x_j)/q_j(x_j))`
while every draft before it was; at the first rejection the emitted token is drawn from the
residual :math:`\operatorname{norm}(\max(0, p_j - q_j))`, and when all :math:`\gamma` pass a
bonus token is drawn from :math:`p_{\gamma+1}`. The emitted stream then has exactly the
target's law (Leviathan et al., Thm. 1). With one-hot :math:`p, q` (temperature 0) the same
rule accepts a draft iff it is the target's argmax, so greedy SD is the target's greedy
decoding.

Closed forms (Leviathan et al., Sec. 3.2, Eq. 1): the per-token acceptance rate is
:math:`\alpha = \sum_x \min(p(x), q(x)) = 1 - \mathrm{TV}(p, q)`; with i.i.d. acceptances the
tokens emitted per target call ("acceptance length", AL) have mean
:math:`(1 - \alpha^{\gamma+1})/(1 - \alpha)`. A draft restricted to a kept vocabulary
:math:`K` has :math:`\alpha \le p(K)`.

A *model* is any callable ``idx (B, T) long -> logits (B, T, V)`` (the project's ``GPT``, a
Hugging Face ``CausalLM`` wrapper, :class:`~.drafts.ByteNGramDraft`). Where it has a
``seq_len`` attribute its context is cropped to the last ``seq_len`` tokens, by one rule on
every path (draft proposals, target verification, the autoregressive baseline): the law of
the token after history :math:`h` is ``model(h[-seq_len:])[-1]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

Model = Callable[[Tensor], Tensor]


def acceptance_rate(p: Tensor, q: Tensor) -> Tensor:
    r""":math:`\alpha = \sum_x \min(p(x), q(x))` over the last axis (Leviathan et al., Def. 3.1).

    ``p``, ``q``: ``(..., V)`` probabilities of the same shape; returns ``(...)``.
    """
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {tuple(p.shape)} and "
                         f"{tuple(q.shape)}")
    return torch.minimum(p, q).sum(-1)


def expected_accept_length(alpha: float | Tensor, gamma: int) -> float | Tensor:
    r"""Mean tokens per target call with i.i.d. acceptance :math:`\alpha`:
    :math:`(1 - \alpha^{\gamma+1})/(1 - \alpha)`, :math:`\gamma + 1` at :math:`\alpha = 1`
    (Leviathan et al., Eq. 1). ``alpha`` a float or a tensor of any shape."""
    _check_gamma(gamma)
    a = torch.as_tensor(alpha, dtype=torch.float64)
    if bool(((a < 0) | (a > 1) | a.isnan()).any()):
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    one = a == 1
    safe = torch.where(one, torch.zeros_like(a), a)
    length = torch.where(one, torch.full_like(a, gamma + 1.0),
                         (1 - safe ** (gamma + 1)) / (1 - safe))
    if isinstance(alpha, Tensor):
        return length.to(alpha.dtype if alpha.is_floating_point() else torch.float64)
    return float(length)


def prune_vocab(probs: Tensor, keep: Tensor | Sequence[int]) -> Tensor:
    r"""``probs`` with every token outside ``keep`` zeroed and each row renormalised: the law of a
    draft that may only propose kept tokens (SD stays exact; :math:`\alpha \le p(K)`).

    ``probs``: ``(..., V)``; ``keep``: ``(m,)`` token ids, ``1 <= m <= V``. A row with no mass on
    ``keep`` becomes uniform over ``keep``.
    """
    mask = keep_mask(keep, probs.shape[-1], probs.device)
    kept = probs * mask
    mass = kept.sum(-1, keepdim=True)
    uniform = mask.to(probs.dtype) / mask.sum()
    return torch.where(mass > 0, kept / mass.clamp_min(torch.finfo(probs.dtype).tiny), uniform)


def keep_mask(keep: Tensor | Sequence[int], vocab_size: int,
              device: torch.device | str | None = None) -> Tensor:
    """``keep`` (token ids) as a ``(V,)`` bool mask; one-line ``ValueError`` when it is empty or
    out of range."""
    ids = torch.as_tensor(keep, dtype=torch.long, device=device).reshape(-1)
    if ids.numel() == 0:
        raise ValueError("keep is empty: keep at least one token id")
    if int(ids.min()) < 0 or int(ids.max()) >= vocab_size:
        raise ValueError(f"keep holds ids outside [0, {vocab_size}): min {int(ids.min())}, "
                         f"max {int(ids.max())}")
    mask = torch.zeros(vocab_size, dtype=torch.bool, device=ids.device)
    mask[ids] = True
    return mask


def sample(probs: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """One draw per row of ``probs (..., V)`` by inverting the CDF with a uniform from
    ``generator``; returns ``(...)`` long. Zero-probability tokens are never drawn, so a one-hot
    row gives its argmax."""
    cdf = probs.double().cumsum(-1)
    u = _uniform(probs.shape[:-1], generator, probs.device)
    idx = torch.searchsorted(cdf, (u * cdf[..., -1]).unsqueeze(-1), right=True).squeeze(-1)
    return idx.clamp_max(probs.shape[-1] - 1)


def _uniform(shape: torch.Size | tuple[int, ...], generator: torch.Generator | None,
             device: torch.device) -> Tensor:
    """U[0, 1) in float64 drawn on the generator's device, then moved to ``device``."""
    where = generator.device if generator is not None else device
    return torch.rand(shape, generator=generator, device=where, dtype=torch.float64).to(device)


def verify(draft_tokens: Tensor, draft_probs: Tensor, target_probs: Tensor, *,
           generator: torch.Generator | None = None) -> tuple[Tensor, Tensor]:
    r"""The speculative-sampling accept/reject step, batched over rows (Leviathan et al.,
    Alg. 1; Chen et al., Alg. 2).

    Args:
        draft_tokens: ``(B, g)`` long, the drafts :math:`x_1..x_g`.
        draft_probs: ``(B, g, V)``, :math:`q_j` that draft :math:`j` was drawn from.
        target_probs: ``(B, g + 1, V)``, :math:`p_j` after each prefix; row ``g`` is the bonus
            law after all drafts.
        generator: the sampling generator (uniforms for the coins and the resampled token).

    Returns:
        ``n_accepted (B,)`` long in ``[0, g]`` and ``tokens (B, g + 1)`` long:
        ``tokens[b, :n + 1]`` are the emitted tokens (the accepted drafts, then the correction
        or bonus token), ``-1`` after them.
    """
    if draft_tokens.dim() != 2:
        raise ValueError(f"draft_tokens must be (B, g), got shape {tuple(draft_tokens.shape)}")
    batch, g = draft_tokens.shape
    if draft_probs.dim() != 3 or tuple(draft_probs.shape[:2]) != (batch, g):
        raise ValueError(f"draft_probs must be (B, g, V) = ({batch}, {g}, V), got shape "
                         f"{tuple(draft_probs.shape)}")
    vocab = draft_probs.shape[2]
    if tuple(target_probs.shape) != (batch, g + 1, vocab):
        raise ValueError(f"target_probs must be (B, g + 1, V) = ({batch}, {g + 1}, {vocab}), "
                         f"got shape {tuple(target_probs.shape)}")
    if g and (int(draft_tokens.min()) < 0 or int(draft_tokens.max()) >= vocab):
        raise ValueError(f"draft_tokens must lie in [0, {vocab})")
    p, q = target_probs.double(), draft_probs.double()
    x = draft_tokens.long().unsqueeze(-1)
    p_x = p[:, :g].gather(-1, x).squeeze(-1)  # (B, g)
    q_x = q.gather(-1, x).squeeze(-1)
    # accept draft j with prob min(1, p_j(x_j) / q_j(x_j)): r < p/q, written without dividing
    r = _uniform((batch, g), generator, p.device)
    accepted = r * q_x < p_x
    n = accepted.long().cumprod(-1).sum(-1)  # (B,): drafts accepted before the first rejection
    # norm(max(0, p_n - q_n)); q padded with a zero row so that n = g gives the bonus law p_g
    q_pad = torch.cat([q, q.new_zeros(batch, 1, vocab)], dim=1)
    rows = torch.arange(batch, device=p.device)
    residual = (p[rows, n] - q_pad[rows, n]).clamp_min(0)
    residual = torch.where(residual.sum(-1, keepdim=True) > 0, residual, p[rows, n])
    last = sample(residual, generator)
    positions = torch.arange(g + 1, device=p.device)
    tokens = torch.cat([draft_tokens.long(), draft_tokens.new_full((batch, 1), -1).long()], 1)
    tokens = torch.where(positions < n.unsqueeze(1), tokens, torch.full_like(tokens, -1))
    tokens[rows, n] = last
    return n, tokens


def next_token_logits(model: Model, history: Tensor, n: int = 1) -> Tensor:
    """The model's logits ``(n, V)`` for the token after each of the last ``n`` prefixes of
    ``history (T,)`` (prefix lengths ``T - n + 1 .. T``), in one forward call.

    Each prefix ``h`` is read through the crop rule ``model(h[-seq_len:])[-1]``: without
    ``seq_len``, or when ``T <= seq_len``, one window serves all prefixes (causal attention);
    otherwise the distinct windows are stacked as a batch.
    """
    length = history.shape[0]
    if not 1 <= n <= length:
        raise ValueError(f"n={n} must lie in [1, len(history)={length}]")
    seq_len = getattr(model, "seq_len", 0) or length
    if length <= seq_len:  # one window, no crop
        return model(history.unsqueeze(0))[0, length - n:]
    width = min(seq_len, length)
    ends = torch.arange(length - n + 1, length + 1)  # prefix lengths
    starts = (ends - seq_len).clamp_min(0)
    unique, which = torch.unique(starts, return_inverse=True)
    windows = torch.stack([history[s: s + width] for s in unique.tolist()])
    logits = model(windows)  # (W, width, V)
    return logits[which.to(logits.device), (ends - 1 - starts).to(logits.device)]


def probabilities(logits: Tensor, temperature: float) -> Tensor:
    """softmax(logits / T) over the last axis; ``T = 0`` gives the one-hot argmax (greedy)."""
    if temperature == 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    # softmax written out: torch.softmax wakes every intra-op thread even for one row of V,
    # which costs milliseconds per call on a busy 2-core machine
    z = logits.float() / temperature
    e = (z - z.amax(-1, keepdim=True)).exp()
    return e / e.sum(-1, keepdim=True)


@dataclass
class SpecResult:
    """One speculative decode. ``tokens (L + n,)`` = prompt + exactly ``n`` new tokens;
    ``step_lengths[i]`` = tokens emitted by target call ``i`` (the last truncated to fit ``n``;
    they sum to ``n``); ``accepted[i]`` = drafts accepted by call ``i`` before truncation
    (``0..gamma``); ``draft_calls`` = draft forward calls."""

    tokens: Tensor
    step_lengths: list[int] = field(default_factory=list)
    accepted: list[int] = field(default_factory=list)
    gamma: int = 1
    draft_calls: int = 0

    @property
    def target_calls(self) -> int:
        """Target forward calls (one per step)."""
        return len(self.step_lengths)


def speculative_generate(target: Model, draft: Model, prompt: Tensor, max_new_tokens: int, *,
                         gamma: int = 4, temperature: float = 1.0,
                         generator: torch.Generator | None = None) -> SpecResult:
    r"""Decode ``max_new_tokens`` after ``prompt (L,)`` long by speculative sampling: per step the
    draft proposes ``gamma`` tokens autoregressively, the target scores them in one forward call,
    :func:`verify` keeps a prefix and adds one token. ``temperature = 0`` is greedy."""
    _check_gamma(gamma)
    _check_decode(prompt, max_new_tokens, temperature)
    out = SpecResult(tokens=prompt.long(), gamma=gamma)
    with torch.no_grad():
        while sum(out.step_lengths) < max_new_tokens:
            history = out.tokens
            drafts, q = [], []
            for _ in range(gamma):
                q_j = probabilities(next_token_logits(draft, history)[0], temperature)
                x_j = sample(q_j, generator)
                drafts.append(x_j)
                q.append(q_j)
                history = torch.cat([history, x_j.reshape(1).to(history.device)])
            out.draft_calls += gamma
            # one target call: p after each of the gamma + 1 prefixes ending at the drafts
            p = probabilities(next_token_logits(target, history, gamma + 1), temperature)
            n, emitted = verify(torch.stack(drafts).unsqueeze(0).to(p.device),
                                torch.stack(q).unsqueeze(0).to(p.device), p.unsqueeze(0),
                                generator=generator)
            accepted = int(n[0])
            keep = min(accepted + 1, max_new_tokens - sum(out.step_lengths))
            out.tokens = torch.cat([out.tokens, emitted[0, :keep].to(out.tokens.device)])
            out.step_lengths.append(keep)
            out.accepted.append(accepted)
    return out


def autoregressive_generate(model: Model, prompt: Tensor, n: int, *, temperature: float = 1.0,
                            generator: torch.Generator | None = None) -> Tensor:
    """The baseline: ``n`` tokens after ``prompt (L,)`` one model call each, by the same crop
    rule and sampler as :func:`speculative_generate`; returns ``(L + n,)`` long."""
    _check_decode(prompt, n, temperature)
    tokens = prompt.long()
    with torch.no_grad():
        for _ in range(n):
            p = probabilities(next_token_logits(model, tokens)[0], temperature)
            tokens = torch.cat([tokens, sample(p, generator).reshape(1).to(tokens.device)])
    return tokens


def acceptance_stats(step_lengths: Sequence[int] | Tensor, gamma: int) -> dict[str, Any]:
    r"""specdec_bench's acceptance measures from tokens emitted per target call (each in
    ``1..gamma + 1``).

    Returns ``al`` (mean step length, = accepted + 1), ``histogram`` (counts of lengths
    ``1..gamma + 1``), ``conditional`` (for draft position :math:`k = 1..\gamma`:
    :math:`P(\text{len} \ge k + 1 \mid \text{len} \ge k)`, NaN where no step reached it),
    ``joint`` (their running product, :math:`P(\text{len} \ge k + 1)`) and ``steps``.
    A :class:`SpecResult`'s last step is truncated to fit the budget; ``accepted + 1`` per
    step gives the untruncated lengths.
    """
    _check_gamma(gamma)
    lengths = torch.as_tensor(step_lengths, dtype=torch.long).reshape(-1)
    if lengths.numel() == 0:
        raise ValueError("step_lengths is empty")
    if int(lengths.min()) < 1 or int(lengths.max()) > gamma + 1:
        raise ValueError(f"step_lengths must lie in [1, gamma + 1 = {gamma + 1}], got "
                         f"min {int(lengths.min())}, max {int(lengths.max())}")
    histogram = torch.bincount(lengths - 1, minlength=gamma + 1)
    at_least = histogram.flip(0).cumsum(0).flip(0).double()  # at_least[k - 1] = #{len >= k}
    conditional = at_least[1:] / at_least[:-1]  # NaN where at_least[k - 1] = 0
    joint = at_least[1:] / at_least[0]
    return {"al": float(lengths.double().mean()), "histogram": histogram.tolist(),
            "conditional": conditional.tolist(), "joint": joint.tolist(),
            "steps": int(lengths.numel())}


def _check_gamma(gamma: int) -> None:
    if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
        raise ValueError(f"gamma={gamma!r} must be an integer >= 1")


def _check_decode(prompt: Tensor, n: int, temperature: float) -> None:
    if prompt.dim() != 1 or prompt.numel() == 0:
        raise ValueError(f"prompt must be a non-empty 1-D token tensor, got shape "
                         f"{tuple(prompt.shape)}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"max_new_tokens={n!r} must be an integer >= 0")
    if not temperature >= 0:
        raise ValueError(f"temperature={temperature} must be >= 0")
