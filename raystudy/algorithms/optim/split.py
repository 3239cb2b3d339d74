"""Which parameters get the spectral (Muon) geometry and which the Adam geometry.

Crawshaw et al. 2025 (arXiv 2510.09827, Sec. 2) treat a network as a product of
"matrix" parameters — hidden-layer weights with ``ndim >= 2``, conv kernels
flattened to ``(out, -1)`` — each with a spectral norm, and "vector" parameters
— embeddings, the output head, biases and norm gains — with an Adam-style norm.

Default rule (:func:`default_is_matrix`): a parameter is a matrix when

* ``param.ndim >= 2``, and
* it is not the weight of an ``nn.Embedding`` / ``nn.EmbeddingBag``, and
* it is not a parameter of the last ``nn.Linear`` in ``model.named_modules()``
  order (taken as the output head), and
* it is not the same tensor as one of those (weight tying: a head tied to the
  embedding is one parameter, seen once, and stays in the Adam part).

Override it with ``is_matrix(name, param, module) -> bool`` (``module`` is the
module owning the parameter, ``name`` its full dotted name), or build the
param groups yourself: groups carrying ``"matrix": True/False``.

Example:
    >>> groups = matrix_param_groups(model)              # default rule
    >>> groups = matrix_param_groups(model, lambda n, p, m: p.ndim == 2 and "head" not in n)
    >>> opt = MuonMax(groups, lr=1e-3)
"""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

IsMatrix = Callable[[str, nn.Parameter, nn.Module], bool]

_EMBEDDINGS = (nn.Embedding, nn.EmbeddingBag)


def _owned_parameters(model: nn.Module) -> list[tuple[str, nn.Parameter, nn.Module]]:
    """Each distinct parameter once, with its full name and owning module."""
    seen: set[int] = set()
    owned = []
    for module_name, module in model.named_modules():
        for name, param in module.named_parameters(recurse=False):
            if id(param) in seen:
                continue
            seen.add(id(param))
            owned.append((f"{module_name}.{name}" if module_name else name, param, module))
    return owned


def vector_only_ids(model: nn.Module) -> set[int]:
    """ids of parameters the default rule keeps out of the matrix part (embeddings, head)."""
    excluded = {
        id(p) for m in model.modules() if isinstance(m, _EMBEDDINGS) for p in m.parameters()
    }
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if linears:
        excluded |= {id(p) for p in linears[-1].parameters()}
    return excluded


def default_is_matrix(model: nn.Module) -> IsMatrix:
    """The default rule for ``model``, as an ``is_matrix(name, param, module)`` callable."""
    excluded = vector_only_ids(model)

    def is_matrix(name: str, param: nn.Parameter, module: nn.Module) -> bool:
        return param.ndim >= 2 and id(param) not in excluded

    return is_matrix


def split_parameters(
    model: nn.Module, is_matrix: IsMatrix | None = None
) -> tuple[list[nn.Parameter], list[nn.Parameter]]:
    """Trainable parameters of ``model`` as ``(matrix, vector)`` lists, each parameter once."""
    rule = is_matrix or default_is_matrix(model)
    matrix, vector = [], []
    for name, param, module in _owned_parameters(model):
        if not param.requires_grad:
            continue
        (matrix if rule(name, param, module) else vector).append(param)
    for p in matrix:
        if p.ndim < 2:
            raise ValueError(
                f"is_matrix selected a parameter of shape {tuple(p.shape)}; matrix parameters "
                "need ndim >= 2"
            )
    return matrix, vector


def matrix_param_groups(model: nn.Module, is_matrix: IsMatrix | None = None) -> list[dict]:
    """Param groups ``[{"params": matrix, "matrix": True}, {"params": vector, "matrix": False}]``.

    Empty groups are left out.
    """
    matrix, vector = split_parameters(model, is_matrix)
    groups = [{"params": matrix, "matrix": True}, {"params": vector, "matrix": False}]
    return [g for g in groups if g["params"]]
