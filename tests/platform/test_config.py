"""Config overrides, coercion, profiles, and every shipped YAML."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

import pytest

from raystudy import Fraction, PositiveFloat, PositiveInt, Range
from raystudy.errors import ConfigError
from raystudy.platform.configuration import config as cfg
from raystudy.platform.configuration.registry import entries, get_study
from raystudy.platform.configuration.spaces import build_param_space, load_space


@dataclass
class Inner:
    lr: float = 0.1
    name: str = "adamw"
    flag: bool = False
    sizes: tuple[int, ...] = (1, 2)


@dataclass
class Outer:
    steps: int = 10
    inner: Inner = field(default_factory=Inner)
    maybe: float | None = None

    def validate(self) -> None:
        if self.inner.lr <= 0:
            raise ValueError("inner.lr must be positive")


def test_flat_fields_lists_dotted_leaves():
    assert set(cfg.flat_fields(Outer)) == {"steps", "inner.lr", "inner.name", "inner.flag",
                                           "inner.sizes", "maybe"}


def test_overrides_coerce_strings_to_field_types():
    out = cfg.apply_overrides(Outer(), {"steps": "20", "inner.lr": "1e-3", "inner.flag": "true",
                                        "inner.sizes": "3,4", "maybe": "none"})
    assert out.steps == 20 and out.inner.lr == pytest.approx(1e-3)
    assert out.inner.flag is True and out.inner.sizes == (3, 4) and out.maybe is None
    assert Outer().steps == 10  # the original is untouched


@pytest.mark.parametrize(
    "key,value,message",
    [
        ("inner.lrr", "1", "unknown config key 'inner.lrr'; valid keys: inner.flag, inner.lr"),
        ("steps", "2.5", "steps='2.5' is not an integer"),
        ("inner.lr", "fast", "inner.lr='fast' is not a number"),
        ("inner.flag", "maybe", "not a boolean"),
    ],
)
def test_bad_overrides_are_one_line_config_errors(key, value, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as info:
        cfg.apply_overrides(Outer(), {key: value})
    assert "\n" not in str(info.value)


def test_validate_turns_value_error_into_config_error():
    with pytest.raises(ConfigError, match="inner.lr must be positive"):
        cfg.validate(cfg.apply_overrides(Outer(), {"inner.lr": "-1"}))


def test_parse_set_args():
    assert cfg.parse_set_args(["a.b=1", "c= x "]) == {"a.b": "1", "c": "x"}
    with pytest.raises(ConfigError, match="key=value"):
        cfg.parse_set_args(["novalue"])


def test_flatten_mapping_and_to_flat_dict_round_trip():
    flat = cfg.to_flat_dict(Outer())
    assert flat["inner.lr"] == 0.1
    assert cfg.flatten_mapping({"inner": {"lr": 2.0}, "steps": 3}) == {"inner.lr": 2.0, "steps": 3}


def test_read_yaml_reports_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\nb: 3\n")
    with pytest.raises(ConfigError, match="bad.yaml: not valid YAML"):
        cfg.read_yaml(bad)
    with pytest.raises(ConfigError, match="file not found"):
        cfg.read_yaml(tmp_path / "missing.yaml")


@pytest.mark.parametrize("entry", entries(), ids=lambda e: e.name)
def test_every_shipped_profile_and_space_loads(entry):
    study = get_study(entry.name)
    profiles = cfg.available(study.name, "profiles")
    assert {"quick", "paper"} <= set(profiles)
    for profile in profiles:
        config = cfg.load_config(study.config_cls, study.name, profile)
        for space in cfg.available(study.name, "spaces"):
            params = load_space(study.name, space)
            for search in ("grid", "optuna"):
                space_dict, grid_size = build_param_space(params, config, search)
                assert set(space_dict) == set(params) and grid_size >= 1


def test_unknown_profile_lists_available():
    study = get_study("optimizer_robustness")
    with pytest.raises(ConfigError, match="unknown profile 'nope'.*available: paper, quick"):
        cfg.load_config(study.config_cls, study.name, "nope")


# ---------------------------------------------------------------- typed fields, one grammar
@dataclass
class TypedInner:
    rate: Fraction = 0.5
    kind: Literal["a", "b"] = "a"


@dataclass
class Typed:
    steps: PositiveInt = 3
    lr: PositiveFloat = 0.1
    widths: tuple[PositiveInt, ...] = (1, 2)
    scale: Annotated[float, Range(ge=1, le=10)] = 2.0
    inner: TypedInner = field(default_factory=TypedInner)


def test_bounds_and_choices_are_checked_by_the_config_layer_with_the_key_named():
    ok = cfg.validate(cfg.apply_overrides(Typed(), {"steps": "7", "widths": "3,4",
                                                    "inner.kind": "b"}))
    assert (ok.steps, ok.widths, ok.inner.kind) == (7, (3, 4), "b")
    for key, value, message in (
            ("steps", "0", "steps=0 must be >= 1"), ("lr", "-1", "lr=-1.0 must be > 0"),
            ("lr", "nan", "lr=nan must be a finite number"),
            ("widths", "1,0", "widths=0 must be >= 1"),
            ("scale", "11", "scale=11.0 must be <= 10"),
            ("inner.rate", "1", "inner.rate=1.0 must be < 1"),
            ("inner.kind", "c", "inner.kind='c' is not one of a, b")):
        with pytest.raises(ConfigError) as caught:
            cfg.apply_overrides(Typed(), {key: value})
        assert str(caught.value) == message
    with pytest.raises(ConfigError, match="steps=0 must be >= 1"):  # defaults are checked too
        cfg.validate(Typed(steps=0))


def test_parse_spec_is_one_grammar_for_name_arg_specs():
    from raystudy import SpecTerm, parse_spec

    terms = parse_spec("l2_er/1e-4/1e-2+layernorm+redo/0.1/x")
    assert terms == (SpecTerm("l2_er", (1e-4, 1e-2)), SpecTerm("layernorm"),
                     SpecTerm("redo", (0.1, "x")))
    assert "+".join(map(str, terms)) == "l2_er/0.0001/0.01+layernorm+redo/0.1/x"
    for bad in ("", "a/", "a++b", "/1"):
        with pytest.raises(ConfigError, match="empty term or argument"):
            parse_spec(bad, key="intervention.spec")
