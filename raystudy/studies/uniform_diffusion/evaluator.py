"""Gen PPL on real text without GPT-2 Large: a project-trained autoregressive evaluator.

The paper scores samples by their perplexity under GPT-2 Large, which raystudy never
downloads at run time (a stated deviation). ``raystudy data train-ar-evaluator TOKENS``
trains a small causal ``GPT`` on the token folder's ``train.npy`` rows and writes it with
its validation perplexity on ``val.npy``; a trial given ``eval.ar_evaluator=FILE`` scores
every sample set under it (``eval/gen_ppl_ar@S``) and the real validation rows
(``data/val_ppl_ar``: what a perfect sampler would score). The first token of a row has
no context (the rows carry no BOS), so positions 2..L are scored: Gen PPL = exp of the
mean NLL over those positions and all samples.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from raystudy import DataError, MissingDataError

EVALUATOR_FORMAT = 1
HINT = " (train one with: raystudy data train-ar-evaluator TOKENS --seq-len L)"


def train_ar_evaluator(train_rows: Any, val_rows: Any, seq_len: int, target: Path,
                       steps: int = 2000, d_model: int = 128, n_layers: int = 4,
                       n_heads: int = 4, batch_size: int = 64, lr: float = 1e-3, seed: int = 0,
                       log_every: int = 0, tokens: str = "", vocab_size: int = 0
                       ) -> dict[str, Any]:
    """Train the evaluator on ``train_rows`` (n, >= seq_len) token ids, cut to ``seq_len``
    (on the GPU where there is one), and write it to ``target``; returns its metadata
    (shape, steps, validation NLL and PPL on ``val_rows``). ``vocab_size``: the study's
    ``data.vocab_size`` (every id a sampler may draw), at least the largest id + 1 (0:
    that)."""
    import numpy as np
    import torch

    from raystudy.algorithms.models import GPT

    largest = int(max(np.max(train_rows[:, :seq_len]), np.max(val_rows[:, :seq_len])))
    if vocab_size and vocab_size <= largest:
        raise DataError(f"--vocab-size {vocab_size}: the token files hold id {largest}; use "
                        f"{largest + 1} or more (the study's data.vocab_size)")
    vocab_size = vocab_size or largest + 1
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(seed)
    model = GPT(vocab_size, seq_len, d_model, n_layers, n_heads).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)  # linear warm-up over 5 %, then a cosine decay
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda k: min(1.0, (k + 1) / warmup)
                                                 * 0.5 * (1 + math.cos(math.pi * k / steps)))
    generator = torch.Generator().manual_seed(seed)
    started = time.time()
    for step in range(1, steps + 1):
        picked = torch.randint(len(train_rows), (batch_size,), generator=generator).numpy()
        x = torch.from_numpy(np.asarray(train_rows[np.sort(picked), :seq_len], dtype=np.int64))
        loss = next_token_nll(model, x.to(device)).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        if log_every and (step % log_every == 0 or step == steps):
            print(f"raystudy: train-ar-evaluator: step {step}/{steps}, train NLL "
                  f"{float(loss):.3f} nats/token, {time.time() - started:.0f} s", flush=True)
    val = torch.from_numpy(np.asarray(val_rows[:4096, :seq_len], dtype=np.int64))
    model = model.cpu()
    val_nll = float(score(model, val).mean())
    meta = {"format": EVALUATOR_FORMAT, "vocab_size": vocab_size, "seq_len": seq_len,
            "d_model": d_model, "n_layers": n_layers, "n_heads": n_heads, "steps": steps,
            "val_nll": val_nll, "val_ppl": math.exp(val_nll), "tokens": str(tokens)}
    staging = target.with_name(f".{target.name}.tmp")
    torch.save({"meta": meta, "state": model.state_dict()}, staging)
    staging.replace(target)  # never a half-written evaluator
    return meta


def next_token_nll(model: Any, x: Any) -> Any:
    """NLL (nats) of x[:, 1:] given its prefix under the causal ``model``: (n, L - 1)."""
    import torch

    logits = model(x[:, :-1])
    return torch.nn.functional.cross_entropy(logits.transpose(1, 2), x[:, 1:], reduction="none")


def score(model: Any, samples: Any, batch: int = 256) -> Any:
    """Each sample's mean next-token NLL (nats/token) under the evaluator: (n,) float64."""
    import torch

    with torch.no_grad():
        return torch.cat([next_token_nll(model, samples[i:i + batch].long()).double().mean(1)
                          for i in range(0, len(samples), batch)])


def load_ar_evaluator(path: str, vocab_size: int, seq_len: int) -> tuple[Any, dict[str, Any]]:
    """The evaluator at ``path`` and its metadata; one line when it is missing, not an
    evaluator, or too small for the data (its V < the data's V or its L < the data's L)."""
    import torch

    from raystudy.algorithms.models import GPT

    file = Path(path).expanduser()
    if not file.is_file():
        raise MissingDataError(f"eval.ar_evaluator: {file} not found{HINT}")
    try:
        saved = torch.load(file, map_location="cpu", weights_only=True)
        meta = dict(saved["meta"])
        model = GPT(meta["vocab_size"], meta["seq_len"], meta["d_model"], meta["n_layers"],
                    meta["n_heads"])
        model.load_state_dict(saved["state"])
    except Exception as exc:  # a truncated file, another torch object, a wrong state
        raise DataError(f"eval.ar_evaluator: {file} is not an AR evaluator "
                        f"({type(exc).__name__}){HINT}") from None
    if meta["vocab_size"] < vocab_size or meta["seq_len"] < seq_len:
        raise DataError(f"eval.ar_evaluator: {file} was trained for V = {meta['vocab_size']}, "
                        f"L = {meta['seq_len']}; the data has V = {vocab_size}, L = {seq_len} "
                        f"(train it with --vocab-size {vocab_size} --seq-len {seq_len})")
    return model.eval(), meta
