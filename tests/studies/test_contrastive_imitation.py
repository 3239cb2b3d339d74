"""contrastive_imitation: config checks, data checks, resume, Ray Data shards, the CLI sweep."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import torch

from raystudy.cli import main
from raystudy.contract.context import LocalContext
from raystudy.errors import ConfigError, DataError
from raystudy.platform.configuration.config import load_config
from raystudy.studies.contrastive_imitation import recipe as ci
from raystudy.studies.contrastive_imitation.config import (
    METHODS,
    ContrastiveImitationConfig,
    dualcoil_settings,
)

STUDY = "contrastive_imitation"


def tiny(tmp_path, **extra) -> dict[str, str]:
    """A few-second trial: 6 expert and 20 random Pendulum episodes, small networks."""
    return {"data.cache_dir": str(tmp_path / "cache"), "data.mix": "random/1/3/5",
            "data.expert_episodes": "6", "data.random_episodes": "20",
            "data.reference_episodes": "5",
            "train.steps": "40", "train.disc_steps": "10", "train.hidden": "16",
            "train.eval_every": "20", "train.eval_episodes": "2", "train.batch_size": "32",
            **extra}


def config(overrides: dict[str, str]) -> ContrastiveImitationConfig:
    return load_config(ContrastiveImitationConfig, STUDY, "quick", overrides)


@pytest.mark.parametrize("key, value, message", [
    ("dualcoil.alpha", "1.0", r"outside \[0, 1\): at 1 the weight's exponent"),
    ("dualcoil.alpha", "1.5", "is not convex"),
    ("method", "gail", "method='gail' is not one of"),
    ("data.mix", "random/1/10", "data.mix: mix 'random/1/10'"),
    ("dualcoil.preset", "hopper", "dualcoil.preset='hopper' is not one of auto, none"),
    ("dualcoil.extraction", "v", "dualcoil.extraction='v' is not one of q, advantage"),
    ("data.task", "cartpole", "data.task='cartpole'"),
    ("data.reference", "1", "data.reference='1'"),
    ("train.eval_episodes", "0", "train.eval_episodes=0 must be >= 1"),
    ("train.gamma", "1", "train.gamma=1.0 must be < 1"),
    ("train.disc_steps", "-1", "train.disc_steps=-1 must be >= 0"),
    ("baselines.dwbc_eta", "0", "baselines.dwbc_eta=0.0 must be > 0"),
])
def test_bad_values_are_one_line_config_errors(key, value, message):
    with pytest.raises(ConfigError, match=message) as info:
        config({key: value})
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="method=sac trains MuJoCo experts"):
        config({"method": "sac"})


def test_dualcoil_preset_auto_takes_the_papers_constants():
    dual, norm = dualcoil_settings(config({"data.task": "hopper", "dualcoil.preset": "auto"}))
    assert (dual.alpha, dual.beta, dual.actor_q_scale, dual.weight_decay, norm) == \
        (0.4, 30.0, 1.0, 0.001, False)
    dual, norm = dualcoil_settings(config({"data.task": "halfcheetah",
                                              "data.mix": "medium/1/10/30",
                                              "dualcoil.preset": "auto"}))
    assert (dual.alpha, dual.beta, dual.actor_q_scale, norm) == (0.6, 15.0, 0.5, True)
    dual, norm = dualcoil_settings(config({"dualcoil.alpha": "0.3"}))  # quick: the fields
    assert dual.alpha == 0.3 and norm and dual.pretrain_steps == 1000


def test_missing_or_mismatched_d4rl_files_are_one_line_data_errors(tmp_path):
    cfg = config({"data.source": "d4rl", "data.task": "hopper", "data.root": str(tmp_path)})
    with pytest.raises(DataError, match="missing D4RL-format file.*hopper_expert-v2.hdf5.*"
                                        "hopper_random-v2.hdf5") as info:
        ci.check_data(cfg)
    assert "\n" not in str(info.value)
    for kind in ("expert", "random"):  # right keys, wrong observation size (Hopper: 11)
        with h5py.File(tmp_path / f"hopper_{kind}-v2.hdf5", "w") as handle:
            handle["observations"] = np.zeros((5, 7))
            handle["actions"] = np.zeros((5, 3))
            for key in ("rewards", "terminals", "timeouts"):
                handle[key] = np.zeros(5)
    with pytest.raises(DataError, match="observations x actions are 7 x 3; Hopper-v5 has 11 x 3"):
        ci.check_data(cfg)


def test_generating_a_mujoco_task_without_usable_experts_is_one_line(tmp_path):
    """No analytic expert for Hopper: generation needs the SAC checkpoints, and a file
    that is not one is named (both before Ray starts)."""
    cfg = config({"data.task": "hopper", "data.cache_dir": str(tmp_path / "cache")})
    with pytest.raises(DataError, match="Hopper-v5 has no analytic expert"):
        ci.check_data(cfg)
    (tmp_path / "expert.pt").write_bytes(b"not a checkpoint")
    cfg = config({"data.task": "hopper", "data.cache_dir": str(tmp_path / "cache"),
                  "data.expert_dir": str(tmp_path)})
    with pytest.raises(DataError, match="expert.pt: not a SAC checkpoint"):
        ci.check_data(cfg)


def test_sac_method_trains_an_expert_and_reads_no_data(tmp_path):
    cfg = config({"method": "sac", "data.task": "hopper", "train.steps": "60",
                  "train.eval_every": "30", "train.eval_episodes": "1",
                  "data.expert_dir": str(tmp_path / "experts"),
                  "data.cache_dir": str(tmp_path / "cache")})
    ci.check_data(cfg)
    assert not (tmp_path / "cache").exists()
    ctx = LocalContext(ci.STUDY.metrics)
    ci.train_loop(cfg, ctx)
    assert [r["train/step"] for r in ctx.reports] == [30, 60]
    assert np.isfinite(ctx.reports[-1]["eval/score"])  # against D4RL's Hopper references
    assert (tmp_path / "experts" / "expert.pt").is_file()


def test_resumed_run_ends_where_an_uninterrupted_one_does(tmp_path):
    torch.manual_seed(0)
    full = LocalContext(ci.STUDY.metrics)
    ci.train_loop(config(tiny(tmp_path)), full)
    first = LocalContext(ci.STUDY.metrics)
    ci.train_loop(config(tiny(tmp_path, **{"train.steps": "20", "train.checkpoint_every": "1"})),
                  first)
    resumed = LocalContext(ci.STUDY.metrics, checkpoint=first.last_checkpoint)
    ci.train_loop(config(tiny(tmp_path)), resumed)
    assert [r["train/step"] for r in full.reports] == [20, 40]
    assert [r["train/step"] for r in resumed.reports] == [40]
    assert resumed.reports[-1]["eval/return"] == full.reports[-1]["eval/return"]
    report = full.reports[-1]
    assert report["data/good_episodes"] == 1 and report["data/unlabeled_episodes"] == 25
    assert report["train/w_unlabeled_expert"] > report["train/w_unlabeled_other"]


@pytest.mark.ray
def test_ray_data_shards_hold_the_same_transitions(ray_session, tmp_path):
    cfg = config(tiny(tmp_path))
    datasets = ci.ray_datasets(cfg)

    class WholeDataset(LocalContext):  # one worker: its shard is the whole dataset
        def dataset(self, name):
            return datasets[name]

    assert set(datasets) == {"good", "bad", "unlabeled", "initial"}  # what DualCOIL reads
    shard = ci.shard_data(cfg, WholeDataset())
    memory = ci.offline_data(cfg)
    np.testing.assert_allclose(shard.sets["good"].initial_observations,
                               memory.sets["good"].initial_observations, rtol=1e-6)
    for name in ("good", "bad", "unlabeled"):
        for field in ("observations", "actions", "next_observations", "terminals"):
            np.testing.assert_allclose(getattr(shard.sets[name], field),
                                       getattr(memory.sets[name], field), rtol=1e-6)
    np.testing.assert_allclose(shard.shift, memory.shift, rtol=1e-6)
    assert shard.reference.expert == memory.reference.expert


@pytest.mark.ray
def test_quick_sweep_reports_scores_curves_and_the_claim(ray_session, tmp_path):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  method: {grid: [dualcoil, bc_all, bc_good, demodice, "
                     "safedice, dwbc]}\n  train.seed: {grid: [0, 1]}\n")
    sets = [x for kv in tiny(tmp_path).items() for x in ("--set", "=".join(kv))]
    assert main(["sweep", STUDY, "--profile", "quick", "--space", str(space), "--storage",
                 str(tmp_path / "runs"), "--name", "smoke", "--cpus-per-worker", "0",
                 "--map-tasks", "2", "--cpus-per-map-task", "0.5", *sets]) == 0
    run = tmp_path / "runs" / "smoke"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["counts"]["finished"] == 12
    scores = summary["analysis"]["scores"]["random/1/3/5"]
    assert set(scores) == set(METHODS)
    assert all(len(s["values"]) == 2 and np.isfinite(s["mean"]) for s in scores.values())
    verdict = summary["analysis"]["claim"]["random/1/3/5"]
    assert {"dualcoil", "bc_all", "best_baseline", "ahead_of_bc_all"} <= set(verdict)
    assert summary["analysis"]["mixes"]["random/1/3/5"]["unlabeled_episodes"] == 25
    report = (run / "report.md").read_text()
    for text in ("### Normalised score", "### Data mixes", "curves.png", "scores.png",
                 "mix random/1/3/5: DualCOIL"):
        assert text in report
    for figure in ("curves.png", "scores.png"):
        assert (run / "figures" / figure).stat().st_size > 10_000


@pytest.mark.parametrize("source", ["d4rl", "minari"])
def test_trains_on_d4rl_files_and_minari_datasets(tmp_path, monkeypatch, source):
    from raystudy.algorithms.imitation import (
        read_d4rl_hdf5,
        write_d4rl_hdf5,
        write_minari,
    )
    from raystudy.algorithms.imitation.sources import generated_file

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "store"))
    sets = {}
    for kind, n in (("expert", 6), ("random", 20)):
        path = generated_file(str(tmp_path / "gen"), "pendulum", kind, n, reference_episodes=5)
        episodes = read_d4rl_hdf5(path)
        if source == "d4rl":
            sets[f"data.{kind}"] = str(write_d4rl_hdf5(tmp_path / f"{kind}.hdf5", episodes,
                                                       next_observations=False))
        else:
            sets[f"data.{kind}"] = f"test/pendulum/{kind}-v0"
            write_minari(sets[f"data.{kind}"], episodes, "Pendulum-v1")
    cfg = config(tiny(tmp_path, **{"data.source": source, "data.reference": "-1200,-150",
                                   "method": "dwbc", **sets}))
    ci.check_data(cfg)
    ctx = LocalContext(ci.STUDY.metrics)
    ci.train_loop(cfg, ctx)
    last = ctx.reports[-1]
    assert last["data/ref_random"] == -1200 and np.isfinite(last["eval/score"])
    # the old D4RL layout drops each timed-out last step: 199 transitions per episode
    assert last["data/unlabeled_transitions"] == (25 * 199 if source == "d4rl" else 25 * 200)


@pytest.mark.ray
def test_two_train_workers_read_their_shards_and_average_gradients(ray_session, tmp_path):
    overrides = tiny(tmp_path, method="bc_good")  # one dataset (+ initial states) to shard
    sets = [x for kv in overrides.items() for x in ("--set", "=".join(kv))]
    assert main(["run", STUDY, "--profile", "quick", "--storage", str(tmp_path / "runs"),
                 "--name", "ddp", "--workers", "2", "--cpus-per-worker", "0.5", *sets]) == 0
    summary = json.loads((tmp_path / "runs" / "ddp" / "summary.json").read_text())
    assert summary["counts"]["finished"] == 1
    (trial,) = summary["trials"]
    assert np.isfinite(trial["metrics"]["eval/score"])


def _imitation_results(seeds: int, lead: float, level: float = 50.0, **config):
    """Finished trials on one mix: DualCOIL ``lead`` above DWBC and 30 above BC on all
    data, DWBC around ``level`` (normalised score); ``config`` adds keys to every trial."""
    from raystudy.contract.results import RunResults, TrialRecord

    offsets = {"dualcoil": lead, "dwbc": 0.0, "bc_all": -30.0, "bc_oracle": 90.0}
    trials = []
    for method, offset in offsets.items():
        for seed in range(seeds):
            score = level + 4.0 * ((seed * 3) % 5) + offset + 0.1 * seed
            history = [{"train/step": 10, "eval/score": score - 5},
                       {"train/step": 20, "eval/score": score, "data/good_episodes": 1}]
            trials.append(TrialRecord(f"{method}-{seed}", {}, "finished", history=history,
                                      config={"data.mix": "random/1/10/30", "method": method,
                                              "train.seed": seed, **config}))
    return RunResults(None, {}, trials)


def _tested(claims):
    return [c for c in claims if c.verdict != "not run"]


@pytest.mark.parametrize("seeds, lead, verdicts", [
    (7, 5.0, ["supported", "supported"]),
    (7, -5.0, ["supported", "contradicted"]),
    (3, 5.0, ["inconclusive at this scale"] * 2)])
def test_analyze_claims_dualcoil_against_each_baseline_with_holm(tmp_path, seeds, lead,
                                                                 verdicts):
    from raystudy.studies.contrastive_imitation.analysis import analyze

    claims = _tested(analyze(_imitation_results(seeds, lead), tmp_path).claims)
    assert [c.statement.rsplit("vs ", 1)[1] for c in claims] == ["bc_all)", "dwbc)"]
    assert [c.verdict for c in claims] == verdicts                   # no oracle row
    assert claims[1].effect_size == pytest.approx(lead) and claims[1].n == seeds
    assert all("Holm-adjusted p over 2 mix x baseline tests" in c.test for c in claims)
    assert all(p.holds for c in claims for p in c.preconditions)


def test_a_baseline_that_never_left_random_fails_the_precondition(tmp_path):
    """BC on all data around 0, the random policy's score (the quick profile measured -8
    at 6,000 steps): beating it is no evidence, so its row reads "precondition failed" and
    keeps its place in the Holm family; DWBC (around 30) still reads."""
    from raystudy.studies.contrastive_imitation.analysis import analyze

    bc_all, dwbc = _tested(analyze(_imitation_results(7, 5.0, level=22.0), tmp_path).claims)
    assert bc_all.verdict == "precondition failed" and bc_all.effect_size > 0
    (failed,) = bc_all.failed_preconditions
    assert failed.statement.startswith("bc_all learns: its mean normalised score is at "
                                       "least 10 above the random policy's")
    assert failed.evidence.startswith("bc_all -") and "over 7 seeds" in failed.evidence
    assert dwbc.verdict == "supported" and "over 2 mix x baseline tests" in dwbc.test


def test_generated_data_is_named_a_stand_in_and_the_papers_regimes_are_not_run(tmp_path):
    from raystudy.studies.contrastive_imitation.analysis import PAPER_SCALE, analyze

    claims = analyze(_imitation_results(3, 5.0, **{"data.source": "generate",
                                                   "data.task": "pendulum"}), tmp_path).claims
    tested = _tested(claims)
    for claim in tested:
        assert claim.scope.startswith("generated Pendulum-v1 data")
        assert "a stand-in for D4RL's MuJoCo datasets, not D4RL" in claim.scope
    not_run = claims[len(tested):]
    assert [c.statement.split("on D4RL ")[-1].split(" ")[0] for c in not_run[:4]] == [
        "hopper", "halfcheetah", "walker2d", "ant"]
    assert not_run[4].scope == PAPER_SCALE and {c.verdict for c in not_run} == {"not run"}
    on_hopper = analyze(_imitation_results(3, 5.0, **{
        "data.source": "d4rl", "data.task": "hopper", "train.steps": 1_000_000}), tmp_path)
    assert [c.scope.split(" ")[1] for c in on_hopper.claims if c.verdict == "not run"] == [
        "halfcheetah-v2", "walker2d-v2", "ant-v2"]
    assert on_hopper.claims[0].scope.startswith("D4RL-format files of hopper")


def test_safedice_alpha_is_the_unlabeled_sets_undesirable_share_unless_set(tmp_path):
    ctx = LocalContext(ci.STUDY.metrics)
    ci.train_loop(config(tiny(tmp_path, method="safedice", **{"train.steps": "20"})), ctx)
    # unlabeled: all 20 random episodes (4000 transitions) + 5 expert ones (1000)
    assert ctx.reports[-1]["train/alpha"] == pytest.approx(4000 / 5000)
    assert ctx.reports[-1]["data/bad_transitions"] == 3 * 1000  # three slices of 1000
    record = {"unlabeled": {"undesirable_transition_fraction": 0.9}}
    assert ci.make_learner(config({"method": "safedice"}), 3, 1, None,
                           record).config.alpha == 0.9
    assert ci.make_learner(config({"method": "safedice", "baselines.safedice_alpha": "0.3"}),
                           3, 1, None, record).config.alpha == 0.3
    with pytest.raises(ConfigError, match="SafeDICE needs expert data in the unlabeled set"):
        config({"method": "safedice", "data.mix": "random/1/10/0"})


def _sourced_results(source: str, task: str):
    from raystudy.contract.results import RunResults, TrialRecord

    history = [{"train/step": 20, "eval/score": 10.0, "train/alpha": 0.97}]
    return RunResults(None, {}, [
        TrialRecord(f"{m}-0", {}, "finished", history=history,
                    config={"data.mix": "random/1/10/30", "method": m, "train.seed": 0,
                            "data.source": source, "data.task": task, "train.lr": 3e-4,
                            "baselines.safedice_alpha": None, "baselines.dwbc_alpha": 10.0,
                            "baselines.dwbc_eta": 0.5})
        for m in ("dualcoil", "safedice", "dwbc")])


@pytest.mark.parametrize("source, task, present, absent", [
    ("generate", "walker2d", ["generated here in gymnasium's Walker2d-v5",
                              "Ant-v5 has 105 observation dimensions vs D4RL's 111",
                              "not D4RL scores"], ["D4RL-format"]),
    ("generate", "pendulum", ["generated here in gymnasium's Pendulum-v1"], ["Ant-v5"]),
    ("d4rl", "hopper", ["D4RL-format HDF5 files (D4RL's own are v2",
                        "evaluation runs in gymnasium's Hopper-v5"], ["generated", "Ant-v5"]),
    ("d4rl", "walker2d", ["D4RL's own are v2", "Walker2d-v5 differs from D4RL's Walker2d-v2"],
     ["generated"]),
    ("minari", "ant", ["Minari datasets", "Ant-v5 has 105"], ["generated"]),
    ("d4rl", "ant", ["evaluation runs in gymnasium's Ant-v4(use_contact_forces=True)",
                     "111 observation dimensions"], ["generated"]),
])
def test_report_says_which_data_and_environment_version(tmp_path, source, task, present,
                                                        absent):
    from raystudy.studies.contrastive_imitation.analysis import analyze

    analysis = analyze(_sourced_results(source, task), tmp_path)
    (note,) = analysis.summary["data_notes"]
    assert note in analysis.notes
    for text in present:
        assert text in note
    for text in absent:
        assert text not in note
    settings = {row[0]: row for row in next(t for t in analysis.tables
                                            if t.title == "Method settings").rows}
    assert settings["safedice"][1] == "safedice_alpha 0.97"  # computed from the data
    assert "share of undesirable transitions" in settings["safedice"][2]
    assert settings["dwbc"][1] == "dwbc_alpha 10.0; dwbc_eta 0.5"
    assert "run_dwbc.sh" in settings["dwbc"][2]
