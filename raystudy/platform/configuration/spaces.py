"""Search spaces: YAML files that name config keys and how to sample them.

A space file looks like::

    # raystudy sweep optimizer_robustness --space default
    params:
      optimizer.name: {grid: [adamw, muon_adam]}
      optimizer.lr: {loggrid: [1.0e-4, 1.0, 9]}   # 9 log-spaced points, both ends included
      train.seed: {grid: [0, 1]}
      train.steps: 200                             # a plain value fixes the key

Distributions: ``grid`` (every value, crossed with the other grids), ``loggrid`` [lo, hi, n],
``choice`` (one value per sample), ``uniform`` / ``loguniform`` [lo, hi], ``randint``
[lo, hi). Every key must be a field of the study's config, every value must fit the
field's type and bounds, and every *combination* must pass the config's own
``validate()`` (rules that span keys, such as ``d_model`` divisible by ``n_heads``), all
checked before Ray starts: each grid point with the fixed keys, and for sampled keys
every choice and both ends of each range. Optuna samples but cannot enumerate, so with
``--search optuna`` grids become choices.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from raystudy.errors import ConfigError
from raystudy.platform.configuration.config import (
    check_rules,
    coerce,
    flat_fields,
    read_yaml,
    resolve_yaml,
    unknown_key_error,
    with_values,
)

DISTRIBUTIONS = ("grid", "loggrid", "choice", "uniform", "loguniform", "randint")


def log_grid(low: float, high: float, n: int) -> list[float]:
    """``n`` log-spaced points from ``low`` to ``high`` inclusive, to 4 significant digits."""
    if low <= 0 or high <= low or n < 2:
        raise ValueError("loggrid needs 0 < lo < hi and n >= 2")
    step = (math.log10(high) - math.log10(low)) / (n - 1)
    return [float(f"{10 ** (math.log10(low) + i * step):.4g}") for i in range(n)]


def load_space(study: Any, name_or_path: str) -> dict[str, Any]:
    """Read a space's ``params`` mapping from YAML (``study``: a ``Study`` or its name)."""
    data = read_yaml(resolve_yaml(study, "spaces", name_or_path))
    unknown = set(data) - {"params", "description"}
    if unknown:
        raise ConfigError(
            f"space {name_or_path}: unknown section(s) {', '.join(sorted(unknown))}; "
            "expected 'params' (and optionally 'description')"
        )
    params = data.get("params")
    if not isinstance(params, Mapping) or not params:
        raise ConfigError(f"space {name_or_path}: 'params' must be a non-empty mapping")
    return dict(params)


def space_values(key: str, spec: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """``(kind, values)`` of one space key's spec: a ``loggrid`` becomes its ``grid``, range
    bounds are checked; a malformed spec is a ConfigError naming the key."""
    if len(spec) != 1 or next(iter(spec)) not in DISTRIBUTIONS:
        raise ConfigError(
            f"space key {key}: expected one of {', '.join(DISTRIBUTIONS)}, got {dict(spec)}"
        )
    kind, args = next(iter(spec.items()))
    if not isinstance(args, list) or not args:
        raise ConfigError(f"space key {key}: {kind} needs a non-empty list")
    if kind == "loggrid":
        if len(args) != 3:
            raise ConfigError(f"space key {key}: loggrid needs [lo, hi, n]")
        try:
            return "grid", log_grid(float(args[0]), float(args[1]), int(args[2]))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"space key {key}: {exc}") from None
    if kind in ("uniform", "loguniform", "randint"):
        _check_bounds(key, kind, args)
    return kind, args


def _check_bounds(key: str, kind: str, args: list[Any]) -> None:
    """[lo, hi] with lo < hi; lo > 0 on a log scale; integers for randint (hi exclusive)."""
    if len(args) != 2:
        raise ConfigError(f"space key {key}: {kind} needs [lo, hi]")
    try:
        if any(isinstance(a, bool) for a in args):
            raise ValueError
        low, high = (float(a) for a in args)  # YAML reads 1e-4 (no dot) as a string
    except (TypeError, ValueError):
        raise ConfigError(f"space key {key}: {kind} bounds must be numbers, got {args}") from None
    if not (math.isfinite(low) and math.isfinite(high)) or low >= high:
        raise ConfigError(f"space key {key}: {kind} needs lo < hi, got [{low}, {high}]")
    if kind == "loguniform" and low <= 0:
        raise ConfigError(f"space key {key}: loguniform needs lo > 0, got {low}")
    if kind == "randint" and not (float(low).is_integer() and float(high).is_integer()):
        raise ConfigError(f"space key {key}: randint needs integer bounds [lo, hi), got {args}")


def parse_params(params: Mapping[str, Any], base_config: Any) -> list[tuple[str, str, list]]:
    """``(key, kind, values)`` per space key, values coerced to the field's type and
    checked against its bounds; ``kind`` is ``fixed`` for a plain value. The rules that
    span keys are :func:`check_combinations`'."""
    fields = flat_fields(type(base_config))
    parsed = []
    for key, spec in params.items():
        if key not in fields:
            raise unknown_key_error(key, fields)
        kind, args = ("fixed", [spec]) if not isinstance(spec, Mapping) else space_values(key, spec)
        parsed.append((key, kind, [coerce(key, v, fields[key]) for v in args]))
    return parsed


RANDINT_PROBE_ALL = 64   # a randint range this small is checked value by value


def _probe_values(kind: str, values: list[Any]) -> list[Any]:
    """What a key contributes to the combinations checked: every grid or choice value,
    every value of a ``randint`` range of at most ``RANDINT_PROBE_ALL`` integers (a rule
    such as divisibility can fail in the middle), else both ends of a range (``randint``'s
    upper end is exclusive)."""
    if kind == "randint":
        low, high = int(values[0]), int(values[1])
        if high - low <= RANDINT_PROBE_ALL:
            return list(range(low, high))
        return sorted({low, high - 1})
    return values


def check_combinations(parsed: list[tuple[str, str, list]], base_config: Any) -> int:
    """Every combination of the swept keys' values (with the fixed keys set) through the
    config's own ``validate()``; the first that fails is a ConfigError naming it
    (``model.d_model=36 x model.n_heads=8: ...``). Returns how many were checked."""
    fixed = {key: values[0] for key, kind, values in parsed if kind == "fixed"}
    base = with_values(base_config, fixed)
    swept = [(key, _probe_values(kind, values)) for key, kind, values in parsed
             if kind != "fixed"]
    keys = [key for key, _ in swept]
    checked = 0
    for combination in itertools.product(*(values for _, values in swept)):
        flat = dict(zip(keys, combination, strict=True))
        where = " x ".join(f"{k}={v}" for k, v in flat.items())
        check_rules(with_values(base, flat), f"{where}: " if where else "")
        checked += 1
    return checked


def build_param_space(
    params: Mapping[str, Any], base_config: Any, search: str = "grid"
) -> tuple[dict[str, Any], int]:
    """Turn a space's params into a Tune ``param_space`` of dotted keys.

    Returns the param space and the number of grid combinations (1 without grids).
    Raises ConfigError for an unknown key or a value the study's config rejects.
    """
    space: dict[str, Any] = {}
    grid_size = 1
    parsed = parse_params(params, base_config)
    check_combinations(parsed, base_config)
    if not parsed:
        return space, grid_size  # a run: no Tune import needed (``run --in-process``)
    from ray import tune

    for key, kind, values in parsed:
        if kind == "fixed":
            space[key] = values[0]
        elif kind == "grid" and search != "optuna":
            space[key] = tune.grid_search(values)
            grid_size *= len(values)
        elif kind in ("grid", "choice"):
            space[key] = tune.choice(values)
        elif kind == "uniform":
            space[key] = tune.uniform(*values)
        elif kind == "loguniform":
            space[key] = tune.loguniform(*values)
        else:
            space[key] = tune.randint(int(values[0]), int(values[1]))
    return space, grid_size


def optuna_distributions(params: Mapping[str, Any], base_config: Any) -> dict[str, Any]:
    """The Optuna distribution of each swept key (fixed values are not parameters)."""
    from optuna.distributions import (
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    out: dict[str, Any] = {}
    for key, kind, values in parse_params(params, base_config):
        if kind in ("grid", "choice"):
            out[key] = CategoricalDistribution(values)
        elif kind in ("uniform", "loguniform"):
            out[key] = FloatDistribution(float(values[0]), float(values[1]),
                                         log=kind == "loguniform")
        elif kind == "randint":
            out[key] = IntDistribution(int(values[0]), int(values[1]) - 1)  # hi exclusive
    return out
