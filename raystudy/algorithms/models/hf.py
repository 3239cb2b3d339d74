"""Local Hugging Face checkpoints as plain torch modules: the one loader the studies whose
paper profiles read real models share (speculative_decoding's target and draft,
llm_judge's backbone).

Nothing is downloaded: every call passes ``local_files_only=True``, and a checkpoint is a
folder holding ``config.json`` and its weights (``save_pretrained``'s layout). A missing
folder, or one without ``config.json``, raises ``MissingDataError`` naming the path before
``transformers`` is imported; a missing ``transformers`` raises ``ConfigError`` naming the
extra that installs it. Both are one line (exit code 2 from the CLI).

* :func:`load_causal_lm`: a causal LM as ``idx (B, T) long -> logits (B, T, V) float``,
  the calling convention of :class:`~raystudy.algorithms.models.GPT`, with ``seq_len`` and
  ``vocab_size`` read from its config.
* :func:`load_encoder`: a backbone as ``idx (B, T) long -> hidden (B, T, H) float`` (its
  last hidden states), for a task head on top.
* :func:`load_tokenizer`: the checkpoint's own tokenizer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from torch import nn

from ...errors import ConfigError, MissingDataError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def checkpoint_folder(path: str | Path, what: str = "checkpoint") -> Path:
    """``path`` as a folder with ``config.json``, or one line naming what is missing."""
    folder = Path(path).expanduser()
    if not str(path):
        raise MissingDataError(f"{what}: no folder given (a local Hugging Face checkpoint: "
                               "config.json and its weights)")
    if not folder.is_dir():
        state = "is a file, not a folder" if folder.exists() else "no such folder"
        raise MissingDataError(f"{what} {folder}: {state} (a local Hugging Face checkpoint: "
                               "config.json and its weights; nothing is downloaded)")
    if not (folder / "config.json").is_file():
        raise MissingDataError(f"{what} {folder}: no config.json (not a Hugging Face "
                               "checkpoint folder; save one with model.save_pretrained(DIR))")
    return folder


def transformers_module(extra: str) -> Any:
    """``transformers``, or a one-line ``ConfigError`` naming ``extra`` to install it."""
    try:
        import transformers
    except ModuleNotFoundError:
        raise ConfigError(f"a Hugging Face checkpoint needs transformers: pip install "
                          f"'raystudy[{extra}]'") from None
    return transformers


def _dtype(dtype: str) -> torch.dtype:
    if dtype not in DTYPES:
        raise ConfigError(f"dtype={dtype!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[dtype]


def _positions(config: Any) -> int:
    """The longest context the config allows (GPT-2: n_positions; most others:
    max_position_embeddings); 0 when it names none."""
    for key in ("max_position_embeddings", "n_positions", "n_ctx", "seq_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return 0


class CausalLM(nn.Module):
    """A Hugging Face causal LM behind GPT's calling convention: ``forward(idx (B, T))``
    returns float32 logits ``(B, T, V)``; ``seq_len`` is the longest context its config
    allows (callers crop to it), ``vocab_size`` the logits' width."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model.eval()
        self.seq_len = _positions(model.config)
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=idx, use_cache=False).logits.float()


class Encoder(nn.Module):
    """A Hugging Face backbone: ``forward(idx (B, T))`` returns its last hidden states
    ``(B, T, H)`` as float32; ``hidden_size`` is H."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.seq_len = _positions(model.config)
        self.hidden_size = int(model.config.hidden_size)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=idx).last_hidden_state.float()


def load_causal_lm(path: str | Path, *, dtype: str = "float32",
                   extra: str = "speculative") -> CausalLM:
    """The causal LM in the local checkpoint folder ``path`` (``AutoModelForCausalLM``,
    local files only), in eval mode, weights in ``dtype``."""
    folder = checkpoint_folder(path, "model checkpoint")
    transformers = transformers_module(extra)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, local_files_only=True, dtype=_dtype(dtype))
    return CausalLM(model)


def load_encoder(path: str | Path, *, dtype: str = "float32", extra: str = "judge") -> Encoder:
    """The backbone in the local checkpoint folder ``path`` (``AutoModel``, local files
    only), weights in ``dtype``; train it or freeze it as the caller decides."""
    folder = checkpoint_folder(path, "backbone checkpoint")
    transformers = transformers_module(extra)
    return Encoder(transformers.AutoModel.from_pretrained(folder, local_files_only=True,
                                                          dtype=_dtype(dtype)))


def load_tokenizer(path: str | Path, *, extra: str = "speculative") -> Any:
    """The tokenizer saved with the checkpoint at ``path`` (local files only)."""
    folder = checkpoint_folder(path, "tokenizer")
    return transformers_module(extra).AutoTokenizer.from_pretrained(folder,
                                                                    local_files_only=True)
