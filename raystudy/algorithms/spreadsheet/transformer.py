r"""The ``transformer`` predictor: the project's small GPT on action tokens.

NAPE's "fine-tuned SLMs" tier fine-tunes pretrained language models (a 360M one "rivals
GPT-5") on its action text; raystudy's reading trains :class:`~raystudy.algorithms.models.GPT`
from scratch on the token sequences of generated training sheets (tokens as in
:mod:`.predictors`), by next-token cross-entropy:

.. math::
    \mathcal{L} = -\frac{1}{|Y|} \sum_{(x_{<t},\, t) \in Y} \log p_\theta(t \mid
    x_{t-L..t-1}),

over every position of every sequence ``[BOS] + tokens`` with a context of the last
:math:`L` tokens (``context``, left-padded with PAD, which is never a target). It predicts
the top token of :math:`p_\theta(\cdot \mid \text{last } L \text{ tokens of the
history})` among the tokens seen in training, abstains when its probability is below
``threshold``, and realises it as :func:`~.predictors.realise` does. Tokens not seen in
training read as UNK. Deterministic per ``seed`` on CPU (the global torch RNG is forked,
not touched).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from ...errors import ConfigError
from ..models import GPT
from .actions import Action
from .predictors import Token, action_tokens, last_tokens, rollout
from .state import SheetState

PAD, BOS_ID, UNK = 0, 1, 2


class TransformerPredictor:
    """GPT next-token model over action tokens.

    Args:
        train: training trajectories (sheets disjoint from the test ones).
        context: tokens of history the model sees, :math:`L` (default 32).
        d_model, n_layers, n_heads: the GPT's width, depth and heads (64, 2, 4).
        steps: AdamW steps (default 300), batch_size: windows per step (32),
        lr: learning rate (3e-3), seed: initialisation and batch order (0).
        threshold: abstain below this top-token probability (default 0).
    """

    def __init__(self, train: Sequence[Sequence[Action]], context: int = 32, d_model: int = 64,
                 n_layers: int = 2, n_heads: int = 4, steps: int = 300, batch_size: int = 32,
                 lr: float = 3e-3, seed: int = 0, threshold: float = 0.0) -> None:
        if context < 1 or steps < 0 or batch_size < 1:
            raise ConfigError(f"transformer: context={context}, steps={steps}, "
                              f"batch_size={batch_size} must be positive (steps >= 0)")
        self.context, self.threshold = context, float(threshold)
        sequences = [action_tokens(list(t)) for t in train]
        self.vocab: dict[Token, int] = {}
        for tokens in sequences:
            for token in tokens:
                self.vocab.setdefault(token, len(self.vocab) + 3)
        if not self.vocab:
            raise ConfigError("transformer: no training actions")
        self.tokens = {i: t for t, i in self.vocab.items()}
        inputs, targets = self._windows(sequences)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.model = GPT(len(self.vocab) + 3, context, d_model, n_layers, n_heads)
            self.losses = self._fit(inputs, targets, steps, batch_size, lr, seed)
        self.model.eval()

    def _ids(self, tokens: Sequence[Token]) -> list[int]:
        return [self.vocab.get(t, UNK) for t in tokens]

    def _windows(self, sequences: list[list[Token]]) -> tuple[torch.Tensor, torch.Tensor]:
        """One window per position: the ``context`` ids before it (PAD-left) and the ids
        each window position should predict."""
        L, xs, ys = self.context, [], []
        for tokens in sequences:
            ids = [PAD] * L + [BOS_ID] + self._ids(tokens)
            for end in range(L + 1, len(ids)):
                x, y = ids[end - L:end], ids[end - L + 1:end + 1]
                xs.append(x)
                ys.append([PAD if a == PAD else b for a, b in zip(x, y, strict=True)])
        return torch.tensor(xs), torch.tensor(ys)

    def _fit(self, inputs: torch.Tensor, targets: torch.Tensor, steps: int, batch_size: int,
             lr: float, seed: int) -> list[float]:
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=0.01)
        losses = []
        self.model.train()
        for _ in range(steps):
            batch = torch.randint(len(inputs), (batch_size,), generator=gen)
            logits = self.model(inputs[batch])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                   targets[batch].reshape(-1), ignore_index=PAD)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    @torch.inference_mode()
    def next_token(self, history: Sequence[Action]) -> tuple[Token | None, float]:
        """The most probable next token and its probability."""
        recent = last_tokens(history, min(self.context, len(history)))
        ids = ([PAD] * self.context + [BOS_ID] + self._ids(recent))[-self.context:]
        logits = self.model(torch.tensor([ids]))[0, -1]
        logits[:3] = float("-inf")
        probs = torch.softmax(logits, dim=-1)
        p, best = probs.max(dim=-1)
        return self.tokens[int(best)], float(p)

    def __call__(self, history: Sequence[Action], state: SheetState, k: int) -> list[Action]:
        return rollout(self.next_token, self.threshold, history, state, k)
