"""Study configs: nested dataclasses, YAML profiles and ``--set a.b=value`` overrides.

Fields are typed once and checked here, with the key named: choices are ``Literal``,
lists are tuples, and simple bounds sit on the field (``steps: PositiveInt = 120``, or
``Annotated[float, Range(gt=0, lt=1)]``), so a study's ``validate()`` keeps only the
rules that span fields. ``parse_spec`` is the one small grammar for specs such as
``l2_er/1e-4/1e-2+layernorm``.

A study's config is a dataclass whose fields are scalars or nested dataclasses. Its
defaults are the ``quick`` profile; a profile YAML overrides some fields, and each
``--set key=value`` overrides one more. Every key is checked against the dataclass
and every value is coerced to the field's type, so a typo or a wrong type ends with
one clear line naming the valid keys instead of a traceback deep inside a trial.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any

import yaml

from raystudy.contract.fields import Range
from raystudy.errors import ConfigError


def flat_fields(config_cls: type, prefix: str = "") -> dict[str, Any]:
    """Map every dotted leaf key of a config dataclass to its resolved type."""
    hints = typing.get_type_hints(config_cls, include_extras=True)
    out: dict[str, Any] = {}
    for field in dataclasses.fields(config_cls):
        key = f"{prefix}{field.name}"
        hint = hints[field.name]
        if dataclasses.is_dataclass(hint):
            out.update(flat_fields(hint, key + "."))
        else:
            out[key] = hint
    return out


def to_flat_dict(config: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted-key view of a config instance, e.g. ``{"optimizer.lr": 0.01}``."""
    out: dict[str, Any] = {}
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        key = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(value):
            out.update(to_flat_dict(value, key + "."))
        else:
            out[key] = value
    return out


def flatten_mapping(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Flatten nested YAML mappings into dotted keys (``{"a": {"b": 1}} -> {"a.b": 1}``)."""
    out: dict[str, Any] = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten_mapping(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", str(hint).replace("typing.", ""))


def coerce(key: str, value: Any, hint: Any) -> Any:
    """Coerce ``value`` (from YAML or a ``--set`` string) to the field type ``hint``."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        base, *extras = typing.get_args(hint)
        value = coerce(key, value, base)
        for extra in extras:
            if isinstance(extra, Range):
                extra.check(key, value)
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null")):
            if type(None) in args:
                return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(key, value, arg)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{key}: cannot be None")
    if origin is typing.Literal:
        allowed = typing.get_args(hint)
        for option in allowed:
            if value == option or str(value) == str(option):
                return option
        raise ConfigError(f"{key}={value!r} is not one of {', '.join(map(str, allowed))}")
    if origin in (list, tuple):
        (item_hint, *_) = typing.get_args(hint) or (Any,)
        if isinstance(value, str):
            value = [v for v in value.strip("[]()").split(",") if v.strip()]
        if not isinstance(value, Iterable):
            raise ConfigError(f"{key}={value!r} is not a list")
        items = [coerce(key, v, item_hint) for v in value]
        return tuple(items) if origin is tuple else items
    if hint is Any:
        return value
    if hint is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{key}={value!r} is not a boolean (true/false)")
    if hint is int:
        if isinstance(value, bool):
            raise ConfigError(f"{key}={value!r} is not an integer")
        try:
            as_float = float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}={value!r} is not an integer") from None
        if not math.isfinite(as_float) or as_float != int(as_float):
            raise ConfigError(f"{key}={value!r} is not an integer")
        return int(as_float)
    if hint is float:
        if isinstance(value, bool):
            raise ConfigError(f"{key}={value!r} is not a number")
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{key}={value!r} is not a number") from None
    if hint is str:
        if isinstance(value, (Mapping, list)):
            raise ConfigError(f"{key}={value!r} is not a string")
        return str(value)
    raise ConfigError(f"{key}: unsupported config type {_type_name(hint)}")


def unknown_key_error(key: str, valid: Iterable[str]) -> ConfigError:
    return ConfigError(f"unknown config key '{key}'; valid keys: {', '.join(sorted(valid))}")


def apply_overrides(config: Any, overrides: Mapping[str, Any],
                    fields: Mapping[str, Any] | None = None) -> Any:
    """Return a copy of ``config`` with dotted-key ``overrides`` applied and coerced.

    ``fields``: ``flat_fields`` of the config class, resolved where its module can be
    imported (a study file's class travels to Ray workers by value, without its module).
    """
    fields = fields if fields is not None else flat_fields(type(config))
    for key in overrides:
        if key not in fields:
            raise unknown_key_error(key, fields)
    return _replace(config, {k: coerce(k, v, fields[k]) for k, v in overrides.items()})


def with_values(config: Any, flat: Mapping[str, Any]) -> Any:
    """A copy of ``config`` with dotted-key values set as given (already coerced)."""
    return _replace(config, flat)


def _replace(config: Any, flat: Mapping[str, Any], prefix: str = "") -> Any:
    changes = {}
    for field in dataclasses.fields(config):
        key = f"{prefix}{field.name}"
        value = getattr(config, field.name)
        if dataclasses.is_dataclass(value):
            if any(k.startswith(key + ".") for k in flat):
                changes[field.name] = _replace(value, flat, key + ".")
        elif key in flat:
            changes[field.name] = flat[key]
    return dataclasses.replace(config, **changes)


def parse_set_args(pairs: Iterable[str]) -> dict[str, str]:
    """Parse ``["a.b=1", "c=x"]`` into ``{"a.b": "1", "c": "x"}``."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got '{pair}'")
        out[key.strip()] = value.strip()
    return out


def check_bounds(config: Any, fields: Mapping[str, Any] | None = None) -> None:
    """Every field's declared ``Range`` and ``Literal`` choices, defaults included."""
    fields = fields if fields is not None else flat_fields(type(config))
    for key, value in to_flat_dict(config).items():
        coerce(key, value, fields[key])


def validate(config: Any, fields: Mapping[str, Any] | None = None) -> Any:
    """The fields' declared bounds, then the config's own ``validate()`` (rules that span
    fields), a ValueError becoming a ConfigError. ``fields`` as for ``apply_overrides``."""
    check_bounds(config, fields)
    check_rules(config)
    return config


def check_rules(config: Any, where: str = "") -> None:
    """The config's own ``validate()`` alone (the rules that span fields); a ValueError
    becomes a ConfigError, prefixed by ``where`` (``"a=1 x b=2: "``)."""
    check = getattr(config, "validate", None)
    if check is not None:
        try:
            check()
        except ValueError as exc:
            raise ConfigError(f"{where}{exc}") from None


def read_yaml(path: Path | str) -> dict[str, Any]:
    """Load a YAML mapping; a missing or malformed file is a ConfigError naming it."""
    path = Path(path)
    try:
        with open(path) as handle:
            data = yaml.safe_load(handle)
    except FileNotFoundError:
        raise ConfigError(f"file not found: {path}") from None
    except yaml.YAMLError as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f" (line {line + 1})" if line is not None else ""
        raise ConfigError(f"{path}: not valid YAML{where}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return dict(data)


def study_dir(study: Any) -> Path | None:
    """Folder of a study's YAML files (``profiles/`` and ``spaces/``): its ``home``.

    ``study`` is a ``Study`` or a registered name."""
    if isinstance(study, str):
        from raystudy.platform.configuration.registry import get_study

        study = get_study(study)
    return study.home


def _label(study: Any) -> str:
    return study if isinstance(study, str) else study.name


def available(study: Any, kind: str) -> list[str]:
    """Names of the study's shipped profiles or spaces (``kind`` is profiles|spaces)."""
    home = study_dir(study)
    folder = home / kind if home is not None else None
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder and folder.is_dir() else []


def resolve_yaml(study: Any, kind: str, name_or_path: str) -> Path | None:
    """A study's profile/space by name, or a user's YAML file by path.

    A study without a ``quick`` profile runs on its config's defaults (None)."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml"):
        if not candidate.is_file():
            raise ConfigError(f"file not found: {candidate}")
        return candidate
    home = study_dir(study)
    shipped = home / kind / f"{name_or_path}.yaml" if home is not None else None
    if shipped is None or not shipped.is_file():
        if kind == "profiles" and name_or_path == "quick":
            return None
        names = ", ".join(available(study, kind)) or "none"
        raise ConfigError(f"unknown {kind[:-1]} '{name_or_path}' for study "
                          f"{_label(study)}; available: {names}")
    return shipped


def _read_profile(study: Any, profile: str) -> dict[str, Any]:
    path = resolve_yaml(study, "profiles", profile)
    return read_yaml(path) if path is not None else {}


def load_config(
    config_cls: type, study: Any, profile: str = "quick", overrides: Mapping[str, Any] = ()
) -> Any:
    """Defaults, then the profile YAML's ``config:`` section, then ``--set`` overrides.

    ``study`` is a ``Study`` or a registered name."""
    profile_data = _read_profile(study, profile)
    unknown = set(profile_data) - {"config", "sweep"}
    if unknown:
        raise ConfigError(
            f"profile {profile}: unknown section(s) {', '.join(sorted(unknown))}; "
            "expected 'config' and 'sweep'"
        )
    config = apply_overrides(config_cls(), flatten_mapping(profile_data.get("config") or {}))
    config = apply_overrides(config, dict(overrides))
    return validate(config)


def config_from_record(config_cls: type, flat: Mapping[str, Any]) -> Any:
    """A config rebuilt from the flat record a run saved when it started (``raystudy.json``):
    the defaults with every recorded key set, so a profile edited after the run changes
    neither its resume nor its report. Keys the class no longer has are dropped."""
    fields = flat_fields(config_cls)
    return validate(apply_overrides(config_cls(), {k: v for k, v in flat.items()
                                                   if k in fields}, fields))


def profile_sweep_defaults(study: Any, profile: str) -> dict[str, Any]:
    """The ``sweep:`` section of a profile (default space, samples, concurrency)."""
    data = _read_profile(study, profile)
    return dict(data.get("sweep") or {})
