"""``raystudy show`` and ``--version``: what a study accepts, read from the study itself."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Annotated, Literal

import pytest

from raystudy import Fraction, PositiveInt, Range
from raystudy.cli import main
from raystudy.platform.configuration.show import field_docs, space_trials, type_text


@dataclass
class Inner:
    width: PositiveInt = 8
    """Hidden units."""
    kinds: tuple[str, ...] = ("a", "b")


@dataclass
class Outer:
    inner: Inner = field(default_factory=Inner)
    mode: Literal["fast", "slow"] = "fast"
    """How to run: fast or slow,
    on two lines."""
    keep: Fraction = 0.5
    ratio: Annotated[float, Range(ge=1, lt=10)] = 2.0
    limit: int | None = None


def test_field_docs_and_types_of_a_nested_config():
    assert field_docs(Outer) == {"inner.width": "Hidden units.", "inner.kinds": "",
                                 "mode": "How to run: fast or slow, on two lines.",
                                 "keep": "", "ratio": "", "limit": ""}
    hints = Outer.__annotations__
    assert type_text(PositiveInt) == "int >= 1"
    assert type_text(Fraction) == "float in (0, 1)"
    assert type_text(Annotated[float, Range(ge=1, lt=10)]) == "float in [1, 10)"
    assert type_text(Literal["fast", "slow"]) == "fast | slow"
    assert type_text(int | None) == "int or None"
    assert type_text(tuple[str, ...]) == "list of str"
    assert hints  # the class is read as written


def test_space_trials_counts_grid_points_and_sampled_keys():
    assert space_trials({"a": {"grid": [1, 2]}, "b": {"loggrid": [1, 10, 5]}, "c": 3}) == (
        "10 grid points")
    assert space_trials({"a": {"loguniform": [1e-4, 1]}}) == (
        "1 grid point x --samples (1 sampled key)")


def test_show_prints_every_key_with_type_default_profile_values_and_doc(capsys):
    assert main(["show", "optimizer_robustness"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("optimizer_robustness: ")
    assert "  model.d_model  int >= 1 = 64   (paper: 768)\n      Residual width of the GPT." in out
    assert "  optimizer.name  adamw | sgd |" in out
    assert "Spaces (--space NAME):" in out and "demo [28 grid points]" in out
    assert "Data commands (raystudy data NAME --help):\n  make-tokens:" in out


def test_show_json_is_for_tools(capsys):
    assert main(["show", "optimizer_robustness", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    by_key = {row["key"]: row for row in info["keys"]}
    assert by_key["train.steps"] == {"key": "train.steps", "type": "int >= 1", "default": 120,
                                     "doc": "Optimizer steps per trial.", "paper": 10000}
    assert "quick" not in by_key["train.steps"]              # quick = the defaults here
    assert {p["name"] for p in info["profiles"]} == {"quick", "paper"}
    assert info["metrics"][0]["name"] == "eval/loss"


def test_run_help_lists_the_studys_keys_and_an_unknown_study_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "optimizer_robustness", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "--in-process" in out and "config keys of optimizer_robustness" in out
    assert "train.steps  int >= 1 = 120" in out
    assert main(["show", "nope"]) == 2
    assert capsys.readouterr().err.startswith("raystudy: error: unknown study 'nope'")
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "nope", "--help"])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert "--in-process" in captured.out
    assert captured.err.startswith("raystudy: error: unknown study 'nope'")


def test_version_and_verbose_version(capsys, monkeypatch):
    import raystudy

    monkeypatch.setattr("sys.argv", ["raystudy", "-v"])   # main reads its argv, not sys.argv
    with pytest.raises(SystemExit):
        main(["--version"])
    assert capsys.readouterr().out == f"raystudy {raystudy.__version__}\n"
    with pytest.raises(SystemExit):
        main(["--version", "-v"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"raystudy {raystudy.__version__}"
    assert lines[1].startswith("ray 2.60") and lines[2].startswith("torch ")
    assert lines[3].startswith("python 3.")
    with pytest.raises(SystemExit):
        main(["-v", "--version"])
    assert capsys.readouterr().out.splitlines()[1:2] == lines[1:2]


def test_space_size_is_integers_and_a_malformed_space_is_one_line(tmp_path, capsys):
    from raystudy.platform.configuration.show import space_size

    assert space_size({"a": {"grid": [1, 2]}, "b": {"loggrid": [1, 10, 5]},
                       "c": {"uniform": [0, 1]}, "d": 3}) == (10, 1)
    home = tmp_path / "study"
    (home / "spaces").mkdir(parents=True)
    (home / "spaces" / "bad.yaml").write_text("params:\n  lr: {loggrid: [1.0e-3, 1, x]}\n")
    study_file = home / "study.py"
    study_file.write_text(
        "from dataclasses import dataclass\n"
        "from raystudy import Metric, Study\n\n"
        "@dataclass\nclass Config:\n    lr: float = 0.1\n\n"
        "def loop(ctx, config):\n    ctx.report({'loss': 1.0})\n\n"
        "STUDY = Study(name='tiny', description='d', config_cls=Config, train_loop=loop,\n"
        "              metrics=(Metric('loss', 'min'),))\n")
    assert main(["show", str(study_file)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("raystudy: error: space bad (") and "space key lr" in err
    assert err.count("\n") == 1
    (home / "spaces" / "bad.yaml").write_text("params:\n  lr: {grid: [0.1, 0.2, 0.3]}\n")
    assert main(["show", str(study_file), "--json"]) == 0
    space = json.loads(capsys.readouterr().out)["spaces"][0]
    assert (space["grid_points"], space["sampled_keys"]) == (3, 0)


def test_a_config_without_defaults_is_one_line(tmp_path, capsys):
    study_file = tmp_path / "nodefault.py"
    study_file.write_text(
        "from dataclasses import dataclass\n"
        "from raystudy import Metric, Study\n\n"
        "@dataclass\nclass Config:\n    lr: float\n\n"
        "def loop(ctx, config):\n    ctx.report({'loss': 1.0})\n\n"
        "STUDY = Study(name='nodefault', description='d', config_cls=Config, "
        "train_loop=loop, metrics=(Metric('loss', 'min'),))\n")
    for command in (["show", str(study_file)], ["run", str(study_file), "--in-process"]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "Config() cannot be built from its defaults" in err and err.count("\n") == 1


def test_every_registered_study_documents_every_key():
    from raystudy.platform.configuration.registry import entries, load_entry
    from raystudy.platform.configuration.show import describe_study

    undocumented = {entry.name: [row["key"] for row in describe_study(load_entry(entry))["keys"]
                                 if not row["doc"]]
                    for entry in entries()}
    assert {name: keys for name, keys in undocumented.items() if keys} == {}
