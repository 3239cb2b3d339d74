"""``raystudy show STUDY``: what a study accepts, read from the study itself.

Every config key (dotted) with its type (a ``Literal``'s choices, a field's bounds), its
default, the ``quick`` and ``paper`` profiles' values where they differ from it, and the
one-line docstring written under the field; then the study's profiles and spaces with
their descriptions and trial counts. The field docstrings are read from the config
classes' source with ``ast`` (Python keeps no attribute docstrings at run time), so a
class without source (built in a notebook cell) simply shows no docs.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import json
import math
import textwrap
import types
import typing
from typing import Annotated, Any

from raystudy.contract.fields import Range
from raystudy.contract.study import Study
from raystudy.errors import UserError
from raystudy.platform.configuration.config import (
    available,
    flat_fields,
    flatten_mapping,
    read_yaml,
    resolve_yaml,
    to_flat_dict,
)
from raystudy.platform.configuration.spaces import space_values

PROFILES_SHOWN = ("quick", "paper")


@functools.cache
def _class_docs(cls: type) -> dict[str, str]:
    """``{field: docstring}`` of one class: a string literal right under an annotated field."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef)), [])
    docs = {}
    for node, after in zip(body, body[1:], strict=False):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def field_docs(config_cls: type, prefix: str = "") -> dict[str, str]:
    """Every dotted leaf key of a config dataclass mapped to its field docstring ("" if none)."""
    hints = typing.get_type_hints(config_cls, include_extras=True)
    docs = {}
    for cls in reversed(config_cls.__mro__):  # a subclass's docstring wins
        if dataclasses.is_dataclass(cls):
            docs.update(_class_docs(cls))
    out: dict[str, str] = {}
    for field in dataclasses.fields(config_cls):
        key = f"{prefix}{field.name}"
        if dataclasses.is_dataclass(hints[field.name]):
            out.update(field_docs(hints[field.name], key + "."))
        else:
            out[key] = docs.get(field.name, "")
    return out


def type_text(hint: Any) -> str:
    """A field's type as a user reads it: ``int >= 1``, ``adamw | muon``, ``float or None``."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        base, *extras = typing.get_args(hint)
        bounds = [_range_text(e) for e in extras if isinstance(e, Range)]
        return " ".join([type_text(base), *filter(None, bounds)])
    if origin is typing.Literal:
        return " | ".join(str(a) for a in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        text = " or ".join(type_text(a) for a in args)
        return f"{text} or None" if len(args) < len(typing.get_args(hint)) else text
    if origin in (list, tuple):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        return f"list of {type_text(args[0])}" if args else "list"
    return getattr(hint, "__name__", str(hint).replace("typing.", ""))


def _range_text(bound: Range) -> str:
    low = next(((op, v) for op, v in ((">", bound.gt), (">=", bound.ge)) if v is not None), None)
    high = next(((op, v) for op, v in (("<", bound.lt), ("<=", bound.le)) if v is not None),
                None)
    if low and high:
        return (f"in {'(' if low[0] == '>' else '['}{low[1]:g}, {high[1]:g}"
                f"{')' if high[0] == '<' else ']'}")
    return " ".join(f"{op} {v:g}" for op, v in filter(None, (low, high)))


def _profile_config(study: Study, name: str) -> dict[str, Any] | None:
    try:
        path = resolve_yaml(study, "profiles", name)
    except UserError:
        return None
    return flatten_mapping(read_yaml(path).get("config") or {}) if path else {}


def _yaml_description(path: Any, data: dict[str, Any]) -> str:
    """A YAML's ``description:``, else its leading comments minus the launch command (and
    its continuation lines) and the override example."""
    if data.get("description"):
        return str(data["description"])
    prose, continued = [], False
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        text = line.lstrip("#").strip()
        command = text.startswith(("raystudy ", "--")) or continued
        continued = command and text.endswith("\\")
        if not command and not text.lower().startswith("override"):
            prose.append(text)
    return " ".join(prose)


def space_size(params: dict[str, Any]) -> tuple[int, int]:
    """``(grid points, sampled keys)`` of a space's params; a malformed key is a
    ConfigError naming it (:func:`.spaces.space_values`)."""
    grid, sampled = 1, 0
    for key, spec in params.items():
        if not isinstance(spec, dict):
            continue
        kind, values = space_values(key, spec)
        if kind == "grid":
            grid *= len(values)
        else:
            sampled += 1
    return grid, sampled


def space_trials(params: dict[str, Any]) -> str:
    """How many trials a space makes per sample: its grid's size, or 'random' keys."""
    grid, sampled = space_size(params)
    text = f"{grid} grid point{'s' * (grid != 1)}"
    return text + (f" x --samples ({sampled} sampled key{'s' * (sampled != 1)})"
                   if sampled else "")


def describe_study(study: Study) -> dict[str, Any]:
    """Everything ``show`` prints, as plain data (``--json``)."""
    config = study.config_cls()
    defaults = to_flat_dict(config)
    hints = flat_fields(study.config_cls)
    docs = field_docs(study.config_cls)
    profiles = {name: _profile_config(study, name) for name in PROFILES_SHOWN}
    keys = []
    for key, default in defaults.items():
        row: dict[str, Any] = {"key": key, "type": type_text(hints[key]),
                               "default": _plain(default), "doc": docs.get(key, "")}
        for name, values in profiles.items():
            if values is not None and key in values and _plain(values[key]) != _plain(default):
                row[name] = _plain(values[key])
        keys.append(row)
    home = study.home
    shipped = {}
    for kind in ("profiles", "spaces"):
        shipped[kind] = []
        for name in available(study, kind):
            path = home / kind / f"{name}.yaml"  # type: ignore[operator]
            data = read_yaml(path)
            entry = {"name": name, "description": _yaml_description(path, data)}
            if kind == "spaces" and isinstance(data.get("params"), dict):
                try:
                    entry["grid_points"], entry["sampled_keys"] = space_size(data["params"])
                except UserError as exc:
                    raise UserError(f"space {name} ({path}): {exc}") from None
                entry["trials"] = space_trials(data["params"])
            shipped[kind].append(entry)
    module = inspect.getmodule(study.train_loop)
    return {
        "name": study.name,
        "description": study.description,
        "doc": inspect.cleandoc(module.__doc__ or "") if module else "",
        "metrics": [{"name": m.name, "mode": m.mode, "description": m.description}
                    for m in study.metrics],
        "keys": keys,
        "profiles": shipped["profiles"],
        "spaces": shipped["spaces"],
        "data_commands": [{"name": c.name, "help": c.help} for c in study.data_commands],
    }


def _plain(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return repr(value) if value == "" or " " in value else value
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return str(value)


def keys_text(info: dict[str, Any], width: int = 100) -> str:
    """The config keys as an indented list: ``key  type = default  (quick: x, paper: y)``."""
    lines = []
    for row in info["keys"]:
        differs = ", ".join(f"{p}: {_shown(row[p])}" for p in PROFILES_SHOWN if p in row)
        head = f"  {row['key']}  {row['type']} = {_shown(row['default'])}"
        lines.append(head + (f"   ({differs})" if differs else ""))
        if row["doc"]:
            lines += textwrap.wrap(row["doc"], width, initial_indent=" " * 6,
                                   subsequent_indent=" " * 6)
    return "\n".join(lines)


def show_text(info: dict[str, Any], width: int = 100) -> str:
    """The terminal page of ``raystudy show``."""
    out = [f"{info['name']}: {info['description']}", ""]
    body = info["doc"].partition("\n")[2].strip()  # the first line is the description's
    out += [body, ""] if body else []
    out.append("Metrics (the first is the one searchers and schedulers use):")
    out += [f"  {m['name']} ({m['mode']}): {m['description']}" for m in info["metrics"]]
    out += ["", "Config keys (--set KEY=VALUE; type = default, and the profiles' values "
            "where they differ):", keys_text(info, width), ""]
    for kind, flag in (("profiles", "--profile"), ("spaces", "--space")):
        out.append(f"{kind.capitalize()} ({flag} NAME):")
        for entry in info[kind] or [{"name": "none", "description": ""}]:
            trials = f" [{entry['trials']}]" if "trials" in entry else ""
            out += textwrap.wrap(f"{entry['name']}{trials}: {entry['description']}", width,
                                 initial_indent="  ", subsequent_indent="      ")
        out.append("")
    if info["data_commands"]:
        out.append("Data commands (raystudy data NAME --help):")
        out += [f"  {c['name']}: {c['help']}" for c in info["data_commands"]]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def show(study: Study, as_json: bool = False) -> str:
    info = describe_study(study)
    return json.dumps(info, indent=2) + "\n" if as_json else show_text(info)
