"""The SNN study: the loop without Ray (reports, the validation-chosen epoch, resume), a
config error, the make-events command and the shd reader, and a shrunk quick sweep through
the CLI with every claim in the summary."""

from __future__ import annotations

import json

import pytest

from raystudy import LocalContext
from raystudy.cli import main
from raystudy.errors import ConfigError
from raystudy.platform.configuration.config import apply_overrides, validate
from raystudy.studies.spiking_nets.recipe import STUDY, SpikingConfig, train_loop

TINY = {"train.epochs": 2, "train.eval_every": 1, "data.events_train": 60,
        "data.events_test": 40}


def config(**overrides) -> SpikingConfig:
    return validate(apply_overrides(SpikingConfig(), {**TINY, **overrides}))


def run(cfg: SpikingConfig, checkpoint=None) -> LocalContext:
    ctx = LocalContext(STUDY.metrics, checkpoint=checkpoint)
    train_loop(cfg, ctx)
    return ctx


def test_loop_reports_soft_hard_and_the_authors_best_test_apart():
    ctx = run(config(**{"neuron.name": "ultradlif", "data.timesteps": 2}))
    last = ctx.reports[-1]
    assert [r["train/epoch"] for r in ctx.reports] == [1, 2]
    assert 0 <= last["eval/acc"] <= last["eval/acc_best_test"] <= 1
    assert 0 <= last["eval/acc_hard"] <= 1 and last["train/eps"] > 0
    assert 0 < last["eval/spike_rate_soft"] < 1


def test_surrogate_network_is_binary_and_resume_continues():
    full = run(config(**{"neuron.name": "sg_lif", "data.name": "temporal_order",
                         "train.epochs": 3}))
    assert full.reports[-1]["eval/binary_fraction"] == 1.0
    first = run(config(**{"neuron.name": "sg_lif", "data.name": "temporal_order",
                          "train.epochs": 2}))
    resumed = run(config(**{"neuron.name": "sg_lif", "data.name": "temporal_order",
                            "train.epochs": 3}), checkpoint=first.last_checkpoint)
    assert [r["train/epoch"] for r in resumed.reports] == [3]
    assert resumed.reports[-1]["eval/acc_now"] == pytest.approx(full.reports[-1]["eval/acc_now"])


def test_bad_config_is_one_line():
    with pytest.raises(ConfigError, match="ultradplif is library-form"):
        config(**{"neuron.name": "ultradplif", "neuron.dlif_form": "readme"})


def test_make_events_then_shd_reader(tmp_path, capsys):
    assert main(["data", "make-events", str(tmp_path / "ev"), "--train", "40", "--test",
                 "20", "--units", "16", "--classes", "4"]) == 0
    ctx = run(config(**{"data.name": "shd", "data.path": str(tmp_path / "ev"),
                        "train.epochs": 1}))
    assert 0 <= ctx.reports[-1]["eval/acc"] <= 1
    assert main(["run", "spiking_nets", "--in-process", "--set", "data.name=shd",
                 "--set", f"data.path={tmp_path / 'none'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "make-events" in err[0]


def test_shrunk_quick_sweep_through_the_cli(tmp_path, ray_session):
    space = tmp_path / "tiny.yaml"
    space.write_text("params:\n  neuron.name: {grid: [ultralif, sg_lif, sigmalif]}\n"
                     "  train.seed: {grid: [0, 1, 2]}\n")
    assert main(["sweep", "spiking_nets", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path), "--set", "train.epochs=2"]) == 0
    run_dir = next(p for p in tmp_path.iterdir() if p.is_dir())
    summary = json.loads((run_dir / "summary.json").read_text())
    texts = json.dumps(summary)
    assert "U-C1 soft" in texts and "U-C4" in texts and "U-C3" in texts


def fake_results(tmp_path, cells):
    """RunResults of fake trials: ``cells`` maps (neuron, T, data, overrides) -> acc per
    seed (a function of the seed)."""
    from raystudy.contract.results import RunResults, TrialRecord

    base = {"data.name": "digits", "data.timesteps": 1, "train.layers": 1,
            "train.sparsity_lambda": 0.0, "neuron.learn_eps": True, "neuron.threshold": 0.0,
            "neuron.dlif_form": "library"}
    trials = []
    for (neuron, T, data, extra), acc in cells.items():
        for seed in range(8):
            a = acc(seed)
            last = {"eval/acc": a, "eval/acc_hard": a - 0.1, "eval/acc_tropical": a,
                    "eval/acc_best_test": a, "eval/spike_rate_soft": 0.3,
                    "eval/binary_fraction": 0.0, "train/epoch": 1.0}
            config = {**base, **dict(extra), "neuron.name": neuron, "data.timesteps": T,
                      "data.name": data, "train.seed": seed}
            trials.append(TrialRecord(f"{neuron}-{T}-{seed}-{extra}", {}, "finished",
                                      history=[last], config=config))
    return RunResults(tmp_path, {}, trials)


def test_ablation_variants_are_kept_apart_and_tabulated(tmp_path):
    from raystudy.studies.spiking_nets.analysis import analyze

    cells = {("ultradlif", 1, "digits", ()): lambda s: 0.6 + 0.01 * s,
             ("ultradlif", 1, "digits", (("neuron.threshold", 1.0),)): lambda s: 0.3,
             ("ultradlif", 1, "digits", (("neuron.dlif_form", "readme"),)): lambda s: 0.4,
             ("ultradlif", 1, "digits", (("neuron.learn_eps", False),)): lambda s: 0.5,
             ("ultralif", 1, "digits", (("neuron.dlif_form", "readme"),)): lambda s: 0.2,
             ("sg_lif", 1, "digits", ()): lambda s: 0.5}
    a = analyze(fake_results(tmp_path, cells), tmp_path)
    table = next(t for t in a.tables if t.title.startswith("Ablation"))
    rows = {tuple(r[5:8]): r for r in table.rows if r[4] == "ultradlif"}
    assert set(rows) == {("learned", "0", "library"), ("learned", "1", "library"),
                         ("learned", "0", "readme"), ("fixed", "0", "library")}
    assert rows[("learned", "1", "library")][9] == pytest.approx(0.3)
    assert rows[("learned", "0", "library")][9] == pytest.approx(0.635)
    assert rows[("learned", "0", "library")][10].startswith("[0.6")
    assert not any(r[4] == "ultralif" for r in table.rows)  # one variant: no ablation row
    # the claims read the library defaults, not whichever variant came last
    c = next(c for c in a.claims if c.statement.startswith("U-C1 soft: ultradlif"))
    assert c.effect_size == pytest.approx(0.135)


def test_depth_space_runs_where_t1_accuracy_is_not_capped():
    """The depth claim is at T = 1 (the project page's); temporal_order caps T = 1 at 50 %,
    so the space must run on a dataset where one step can be read (digits)."""
    from raystudy.platform.configuration.spaces import load_space

    params = load_space(STUDY, "depth")
    assert params["data.name"] == "digits" and params.get("data.timesteps", 1) == 1
    assert {1, 2} <= set(params["train.layers"]["grid"])
    assert len(params["train.seed"]["grid"]) >= 6  # an exact sign-flip test can reach 0.05


def test_missing_scikit_learn_is_one_line_exit_2(monkeypatch, capsys):
    import importlib.util

    from raystudy.algorithms.snn.data import DataMissingError, load_static

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sklearn" else real(name, *a))
    with pytest.raises(ConfigError, match=r"scikit-learn.*raystudy\[spiking\]"):
        config(**{"data.name": "digits"})
    config(**{"data.name": "temporal_order"})  # the event task needs no scikit-learn
    with pytest.raises(DataMissingError, match="scikit-learn"):
        load_static("digits")
    assert main(["run", "spiking_nets", "--in-process", "--set", "train.epochs=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "raystudy[spiking]" in err[0]


def test_uc3_needs_a_positive_gain_at_t1_not_only_a_smaller_deficit(tmp_path):
    from raystudy.studies.spiking_nets.analysis import analyze

    def uc3(ultra_t1, ultra_t5):
        cells = {("sg_lif", 1, "digits", ()): lambda s: 0.5 + 0.01 * s,
                 ("sg_lif", 5, "digits", ()): lambda s: 0.7 + 0.01 * s,
                 ("ultralif", 1, "digits", ()): lambda s: 0.5 + 0.01 * s + ultra_t1(s),
                 ("ultralif", 5, "digits", ()): lambda s: 0.7 + 0.01 * s + ultra_t5(s)}
        a = analyze(fake_results(tmp_path, cells), tmp_path)
        return next(c for c in a.claims if c.statement.startswith("U-C3: the gain of ultralif"))

    # the quick run's pattern: behind at both T, further behind at T = 5
    c = uc3(lambda s: -0.10 - 0.002 * s, lambda s: -0.30 - 0.003 * s)
    assert c.effect_size > 0 and c.verdict == "contradicted"
    assert "gain at T=1: -0.1" in c.note
    c = uc3(lambda s: 0.10 + 0.002 * s, lambda s: 0.002 * (s % 3))
    assert c.verdict == "supported"
    c = uc3(lambda s: 0.10 + 0.002 * s, lambda s: 0.10 + 0.002 * s + 0.001 * (-1) ** s)
    assert c.verdict == "inconclusive at this scale"


def test_claim_space_runs_every_neuron_of_the_pre_registered_pairs():
    from raystudy.platform.configuration.spaces import load_space
    from raystudy.studies.spiking_nets.analysis import AUTHORS, PAIRS

    named = {n for pair in (*PAIRS, *AUTHORS) for n in pair}
    assert {"ultradplif", "soft_plif", "dspike"} <= named
    assert ("ultradplif", "sg_plif") in PAIRS
    for space in ("claim", "default"):
        assert named <= set(load_space(STUDY, space)["neuron.name"]["grid"]), space
    claim = load_space(STUDY, "claim")
    # unanimous seeds must be able to pass Holm over the largest family: the exact
    # sign-flip test's smallest p is 2 / 2^seeds, Holm multiplies it by the family's size
    seeds, datasets = len(claim["train.seed"]["grid"]), len(claim["data.name"]["grid"])
    largest = max(len(PAIRS), len(AUTHORS)) * datasets
    assert 2 / 2**seeds * largest < 0.05, (seeds, largest)


def test_make_nmnist_then_the_nmnist_reader(tmp_path, capsys):
    assert main(["data", "make-nmnist", str(tmp_path / "nm"), "--train", "30", "--test",
                 "20"]) == 0
    assert "data.name=nmnist" in capsys.readouterr().out
    assert len(list((tmp_path / "nm" / "Train").glob("*/*.bin"))) == 30
    ctx = run(config(**{"data.name": "nmnist", "data.path": str(tmp_path / "nm"),
                        "data.timesteps": 2, "train.epochs": 1}))
    assert 0 <= ctx.reports[-1]["eval/acc"] <= 1
    assert main(["run", "spiking_nets", "--in-process", "--set", "data.name=nmnist",
                 "--set", f"data.path={tmp_path / 'none'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Train/0..9" in err[0]


def test_conv_network_trains_on_images_and_refuses_unit_data():
    ctx = run(config(**{"train.network": "conv", "neuron.name": "soft_lif",
                        "data.timesteps": 2, "train.epochs": 1}))
    last = ctx.reports[-1]
    assert 0 <= last["eval/acc"] <= 1 and last["eval/synops"] > 0
    with pytest.raises(ConfigError, match="train.network=conv needs image data"):
        config(**{"train.network": "conv", "data.name": "temporal_order"})
    with pytest.raises(ConfigError, match="conv has its two blocks"):
        config(**{"train.network": "conv", "train.layers": 2})


def test_conv_trials_are_their_own_rows_and_claims(tmp_path):
    from raystudy.studies.spiking_nets.analysis import analyze

    cells = {("ultralif", 1, "digits", ()): lambda s: 0.6 + 0.01 * s,
             ("sg_lif", 1, "digits", ()): lambda s: 0.5,
             ("ultralif", 1, "digits", (("train.network", "conv"),)): lambda s: 0.1,
             ("sg_lif", 1, "digits", (("train.network", "conv"),)): lambda s: 0.7}
    a = analyze(fake_results(tmp_path, cells), tmp_path)
    fc = next(c for c in a.claims if c.statement == "U-C1 soft: ultralif beats sg_lif at "
              "T=1 on digits")
    conv = next(c for c in a.claims if c.statement == "U-C1 soft: ultralif beats sg_lif "
                "at T=1 on digits conv")
    assert fc.effect_size == pytest.approx(0.135) and conv.effect_size == pytest.approx(-0.6)


def test_conv_space_runs_the_pre_registered_pairs_on_images():
    from raystudy.platform.configuration.spaces import load_space
    from raystudy.studies.spiking_nets.analysis import PAIRS
    from raystudy.studies.spiking_nets.recipe import IMAGES

    params = load_space(STUDY, "conv")
    assert params["train.network"] in ("conv", {"grid": ["conv"]})
    assert {n for pair in PAIRS for n in pair} <= set(params["neuron.name"]["grid"])
    assert set(params["data.name"]["grid"]) <= set(IMAGES)
    assert len(params["train.seed"]["grid"]) >= 8


def test_dvs_gesture_runs_from_tonics_layout_and_a_missing_folder_is_one_line(tmp_path,
                                                                               capsys):
    import numpy as np

    rng = np.random.default_rng(0)
    for folder in ("ibmGestureTrain", "ibmGestureTest"):
        for i in range(12):
            ev = np.column_stack([rng.integers(0, 128, (50, 2)), rng.integers(0, 2, 50),
                                  np.sort(rng.uniform(0, 500, 50))])
            (tmp_path / folder / f"user{i:02d}").mkdir(parents=True)
            np.save(tmp_path / folder / f"user{i:02d}" / f"{i % 11}.npy", ev)
    ctx = run(config(**{"data.name": "dvs_gesture", "data.path": str(tmp_path),
                        "data.timesteps": 2, "train.epochs": 1}))
    assert 0 <= ctx.reports[-1]["eval/acc"] <= 1
    assert main(["run", "spiking_nets", "--in-process", "--set", "data.name=dvs_gesture",
                 "--set", f"data.path={tmp_path / 'none'}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "ibmGestureTrain" in err[0]
