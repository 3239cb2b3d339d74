"""The large_kernel_conv study: config errors, one in-process block, a shrunk quick sweep
through the CLI and its report (no timing assertions: the machine is shared)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from raystudy.cli import main
from raystudy.platform.configuration.show import field_docs
from raystudy.studies.large_kernel_conv import recipe
from raystudy.studies.large_kernel_conv.analysis import Block, cells, lka_claims
from raystudy.studies.large_kernel_conv.config import (
    LargeKernelConfig,
    ProxyConfig,
    TimingConfig,
    shape_of,
)

STUDY_DIR = Path(__file__).parents[2] / "raystudy" / "studies" / "large_kernel_conv"
RAYSTUDY = [sys.executable, "-m", "raystudy"]
SMALL = ["--set", "timing.windows=4,14", "--set", "timing.kernels=3,5,9", "--set",
         "timing.reps=2"]


def test_shape_and_validation():
    c = LargeKernelConfig(shape="2x16x8")
    assert shape_of(c) == (2, 16, 8, 8)
    c.validate()
    with pytest.raises(ValueError, match="BxCxS"):
        LargeKernelConfig(shape="2x16").validate()
    c = LargeKernelConfig()
    c = dataclasses.replace(c, timing=dataclasses.replace(c.timing, kernels=(3, 7)))
    with pytest.raises(ValueError, match="needs 5"):
        c.validate()


def test_every_config_key_is_documented():
    docs = field_docs(LargeKernelConfig)
    assert "timing.check_tolerance" in docs
    assert not [k for k, v in docs.items() if not v.strip()], docs


def test_quick_profile_override_example_runs(tmp_path: Path):
    """The override example in quick.yaml's header is a command that works."""
    header = (STUDY_DIR / "profiles" / "quick.yaml").read_text().splitlines()
    line = next(x for x in header if "Override example:" in x)
    words = line.split("Override example:")[1].split()
    assert words[:3] == ["raystudy", "run", "large_kernel_conv"], words
    sets = [w for i, w in enumerate(words) if i and words[i - 1] == "--set"]
    assert sets, line
    assert main([*words[1:], "--storage", str(tmp_path), *SMALL]) == 0


def test_lka_timed_only_on_cuda_with_the_extension(monkeypatch):
    """W-C4 gets lka{k} blocks on CUDA where the iGEMM extension imports, none elsewhere."""
    t = TimingConfig(kernels=(3, 5, 13))
    assert recipe.lka_kernels(t) == ()  # CPU
    t = dataclasses.replace(t, device="cuda")
    monkeypatch.setattr(recipe, "lka_available", lambda: False)
    assert recipe.lka_kernels(t) == ()
    monkeypatch.setattr(recipe, "lka_available", lambda: True)
    assert recipe.lka_kernels(t) == (3, 5, 13)
    t = dataclasses.replace(t, device="cpu")
    assert recipe.lka_kernels(t) == ()


def test_train_loop_passes_the_lka_kernels(monkeypatch):
    seen = {}

    def fake(*args, **kwargs):
        seen.update(kwargs)
        raise StopIteration  # enough: the call is what is tested

    monkeypatch.setattr(recipe, "candidates", fake)
    monkeypatch.setattr(recipe, "lka_kernels", lambda t: (5, 27))
    with pytest.raises(StopIteration):
        recipe.train_loop(LargeKernelConfig(shape="1x4x8"), None)
    assert seen["lka_kernels"] == (5, 27)


def _block(size: int, block: int, lka5: float) -> Block:
    return Block("t", "cuda", "fwd", 2, 8, size, block,
                 {"dw5": 1.0, "lka5": lka5, "dw3": 0.5, "lka3": 0.5})


def test_lka_claim_reads_the_crossover():
    by_cell = cells([*(_block(7, b, 0.5 + 0.01 * b) for b in range(8)),
                     *(_block(56, b, 1.0) for b in range(8)),  # between: not tested
                     *(_block(224, b, 2.0 + 0.01 * b) for b in range(8))])
    out = lka_claims(by_cell)
    assert [c.statement for c in out] == ["LKA-5 faster than dw5 at cuda fwd 2x8x7x7",
                                          "LKA-5 slower than dw5 at cuda fwd 2x8x224x224"]
    assert all(c.verdict == "supported" for c in out), [c.verdict for c in out]
    flipped = cells([_block(7, b, 2.0 + 0.01 * b) for b in range(8)])
    assert lka_claims(flipped)[0].verdict == "contradicted"
    not_run = lka_claims(cells([Block("t", "cpu", "fwd", 2, 8, 7, 0, {"dw5": 1.0})]))
    assert "iGEMM" in not_run[0].note and not_run[0].n == 0
    assert not_run[0].verdict == "not run" and "CUDA" in not_run[0].scope
    missing = lka_claims(cells([Block("t", "cuda", "fwd", 2, 8, 7, 0, {"dw5": 1.0})]))
    assert missing[0].verdict == "inconclusive at this scale" and "iGEMM" in missing[0].note


def test_bad_config_exits_2(tmp_path: Path):
    out = subprocess.run([*RAYSTUDY, "run", "large_kernel_conv", "--in-process", "--storage",
                          str(tmp_path), "--set", "shape=2x16"], capture_output=True,
                         text=True)
    assert out.returncode == 2, out.stderr
    assert "BxCxS" in out.stderr


@pytest.mark.ray
def test_quick_sweep_and_report(tmp_path: Path, ray_session):
    space = tmp_path / "space.yaml"
    space.write_text("params:\n  shape: {grid: [1x8x8, 1x8x16]}\n  timing.phase: {grid: "
                     "[fwd, train]}\n  timing.block: {grid: [0, 1, 2]}\n")
    assert main(["sweep", "large_kernel_conv", "--profile", "quick", "--space", str(space),
                 "--storage", str(tmp_path / "runs"), "--name", "q", *SMALL]) == 0
    summary = json.loads((tmp_path / "runs" / "q" / "summary.json").read_text())
    assert summary["counts"]["finished"] == 12, summary["counts"]
    report = (tmp_path / "runs" / "q" / "report.md").read_text()
    assert "faster than dw5" in report and "time falls with the window" in report
    assert "iGEMM" in report  # the LKA claim is missing, with why


def test_relation_task_labels_the_direction_between_its_markers():
    from raystudy.studies.large_kernel_conv.proxy import DIRECTIONS, relation_task

    x, y = relation_task(200, size=28, seed=3, noise=1e-6)
    assert x.shape == (200, 1, 28, 28) and set(y.tolist()) == {0, 1, 2, 3}
    for image, label in zip(x[:, 0].numpy(), y.tolist(), strict=True):
        bright = np.argwhere(image > 0.5).mean(0)  # centre of marker A (+1)
        dark = np.argwhere(image < -0.5).mean(0)   # centre of marker B (-1)
        offset = dark - bright
        distance = np.abs(offset).max()
        assert 8 <= distance <= 12 and np.abs(offset).min() == 0
        assert tuple(np.sign(offset).astype(int)) == DIRECTIONS[label]


def test_proxy_trial_reports_accuracy_and_resumes_where_it_stopped():
    from raystudy import LocalContext

    def run(epochs, checkpoint=None):
        cfg = LargeKernelConfig(kind="proxy")
        cfg = dataclasses.replace(cfg, proxy=dataclasses.replace(
            cfg.proxy, epochs=epochs, train_size=128, channels=4))
        ctx = LocalContext(recipe.STUDY.metrics, checkpoint=checkpoint)
        recipe.train_loop(cfg, ctx)
        return ctx

    full = run(2)
    assert [r["eval/acc"] for r in full.reports] and 0 <= full.reports[-1]["eval/acc"] <= 1
    resumed = run(2, checkpoint=run(1).last_checkpoint)
    assert len(resumed.reports) == 1
    assert resumed.reports[-1]["eval/acc"] == full.reports[-1]["eval/acc"]
    with pytest.raises(ValueError, match="k odd"):
        LargeKernelConfig(proxy=ProxyConfig(mixer="dw12")).validate()


def tuned(test_by_seed: dict[int, float], lrs=(1e-3, 3e-3), best=3e-3, worse=0.1):
    """One mixer's proxy runs: every lr validated, ``best`` the best on validation (its test
    accuracies ``test_by_seed``), the others ``worse`` below it."""
    return {lr: {s: ((acc, acc) if lr == best else (acc - worse, acc - worse))
                 for s, acc in test_by_seed.items()} for lr in lrs}


def test_proxy_claims_read_equivalence_and_non_inferiority():
    from raystudy.studies.large_kernel_conv.analysis import proxy_claims

    same = {"wbmm7": tuned({s: 0.80 + 0.001 * s for s in range(8)}),
            "dw13": tuned({s: 0.80 + 0.001 * s + 0.002 * (-1) ** s for s in range(8)},
                          best=1e-3),
            "dw5": tuned({s: 0.60 for s in range(8)})}
    equivalent, *non_inferior = proxy_claims(same)
    assert "within 1 pp of dw13" in equivalent.statement
    assert [c.verdict for c in (equivalent, *non_inferior)] == ["supported"] * 3
    assert "dw13 0.001" in equivalent.note  # each mixer read at its own best lr
    better = {**same, "dw13": tuned({s: 0.70 for s in range(8)}),
              "dw5": tuned({s: 0.90 for s in range(8)})}
    # clearly better than dw13: not equivalent, yet non-inferior; clearly worse than dw5
    assert [c.verdict for c in proxy_claims(better)] == ["contradicted", "supported",
                                                         "contradicted"]
    (missing,) = proxy_claims({})
    assert missing.n == 0 and "space proxy" in missing.note and missing.scope


def test_proxy_claims_fail_their_preconditions_when_untuned_or_at_chance():
    """One shared lr (the old proxy space) is no tuned comparison, and a mixer at chance
    is no arm to compare: both read "precondition failed", the interval still shown."""
    from raystudy.studies.large_kernel_conv.analysis import proxy_claims

    wbmm = {s: 0.88 + 0.001 * s for s in range(8)}
    one_lr = {"wbmm7": tuned(wbmm, lrs=(3e-3,)), "dw13": tuned({s: 0.77 for s in range(8)},
                                                              lrs=(3e-3,))}
    equivalent, non_inferior = proxy_claims(one_lr)
    assert equivalent.verdict == non_inferior.verdict == "precondition failed"
    assert non_inferior.effect_size == pytest.approx(0.1135)
    (failed,) = non_inferior.failed_preconditions
    assert "same number of learning rates" in failed.statement
    assert "wbmm7: 1 lr(s) (0.003)" in failed.evidence
    uneven = {"wbmm7": tuned(wbmm, lrs=(1e-3, 3e-3, 1e-2)), "dw13": tuned(
        {s: 0.77 for s in range(8)})}
    assert {c.verdict for c in proxy_claims(uneven)} == {"precondition failed"}
    at_chance = {"wbmm7": tuned(wbmm), "dw13": tuned({s: 0.26 for s in range(8)})}
    rows = proxy_claims(at_chance)
    assert {c.verdict for c in rows} == {"precondition failed"}
    assert [p.statement for p in rows[1].failed_preconditions] == [
        "dw13 learns the relation task: mean test accuracy above chance 0.25 + 0.05"]


# ----------------------------------------------------------------------------- analyze
def timing_trial(shape: str, phase: str, block: int):
    """A finished timing block as the report reads it: WBMM-14 slower than dw5 (more so
    not cached), faster than dw27; the times scale with the batch."""
    from raystudy.contract.results import TrialRecord

    b = int(shape.split("x")[0])
    jitter = 1 + 0.01 * block
    ms = {f"dw{k}": 0.01 * k * k * b * jitter for k in (3, 5, 7, 13, 27)}
    ms |= {f"wbmm{w}": 0.03 * w * w * b * jitter for w in (4, 7, 14)}
    if phase == "fwd":
        ms |= {f"wbmmc{w}": 0.02 * w * w * b * jitter for w in (4, 7, 14)}
    config = {"kind": "timing", "shape": shape, "timing.device": "cpu", "timing.phase": phase,
              "timing.block": block, "timing.threads": 1, "timing.dtype": "float32",
              "timing.clock": "cpu"}
    report = {**{f"time_ms/{k}": v for k, v in ms.items()}, "block/rep": 3.0,
              "check/passed": 1.0}
    return TrialRecord(f"{shape}-{phase}-{block}", config, "finished", history=[report],
                       config=config)


def timing_run(shapes, request=None):
    from raystudy.contract.results import RunResults

    trials = [timing_trial(shape, phase, block) for shape in shapes
              for phase in ("fwd", "train") for block in range(8)]
    return RunResults(Path("run"), {"kind": "sweep", "max_concurrent": 1}
                      if request is None else request, trials)


def test_timing_claims_name_their_regime_and_read_inference_cached(tmp_path: Path):
    """Each regime (batch 2, batch 32) is its own family and scope; fwd reads WBMM-C, train
    WBMM-NC; the same-support reading is a family with its MAC caveat; the not-run rows
    name the GPU and edge devices (no CUDA block) but not CPU batch 32 (timed)."""
    from raystudy.studies.large_kernel_conv.analysis import analyze

    rows = analyze(timing_run(["2x320x14", "32x320x14"]), tmp_path).claims
    speed = [c for c in rows if c.statement.startswith("WBMM-14 faster than dw5 at")]
    assert len(speed) == 4 and {c.verdict for c in speed} == {"contradicted"}
    fwd = next(c for c in speed if "fwd 2x320" in c.statement)
    train = next(c for c in speed if "train 2x320" in c.statement)
    assert fwd.effect == "log10 t(wbmmc14) - log10 t(dw5)" and "WBMM-NC's ratio" in fwd.note
    assert train.effect == "log10 t(wbmm14) - log10 t(dw5)"
    assert "2 matrix rows per channel" in fwd.note
    assert "CPU, 1 torch thread, batch 2," in fwd.scope
    batch32 = next(c for c in speed if "fwd 32x320" in c.statement)
    assert "batch 32" in batch32.scope and "32 matrix rows per channel" in batch32.note
    assert "Holm-adjusted p over 2 shapes x passes on cpu, batch 32" in batch32.test
    same = [c for c in rows if "same-support dw27 at" in c.statement]
    assert len(same) == 4 and {c.verdict for c in same} == {"supported"}
    assert "196 MACs" in same[0].note and "729" in same[0].note
    relative = [c for c in rows if c.statement.startswith("WBMM gains on the same-support")]
    assert len(relative) == 4
    assert all(c.scope.strip() for c in rows)
    assert all("seeded Gaussian inputs" in c.scope for c in rows if c.n > 0)
    (proxy,) = [c for c in rows if c.statement.startswith("accuracy proxy")]
    assert "a stand-in for ImageNet-1K, not ImageNet" in proxy.scope
    not_run = [c.statement for c in rows if c.verdict == "not run"]
    assert any("on a GPU" in s for s in not_run) and any("edge devices" in s for s in not_run)
    assert not any("batch >= 32" in s for s in not_run)
    assert any("ImageNet" in s for s in not_run) and any(s.startswith("LKA") for s in not_run)


def test_batch_2_run_lists_cpu_batch_32_as_not_run(tmp_path: Path):
    from raystudy.studies.large_kernel_conv.analysis import analyze

    rows = analyze(timing_run(["2x320x14"]), tmp_path).claims
    (row,) = [c for c in rows if "batch >= 32" in c.statement]
    assert row.verdict == "not run" and "batch 2 only" in row.note and "--space claim" in row.note


def test_concurrent_timing_blocks_fail_the_precondition(tmp_path: Path):
    """Timings of trials that ran at once are not comparable: every timing claim reads
    "precondition failed", with the request's concurrency as evidence."""
    from raystudy.studies.large_kernel_conv.analysis import analyze

    request = {"kind": "sweep", "max_concurrent": 2}
    rows = analyze(timing_run(["2x320x14"], request), tmp_path).claims
    timed = [c for c in rows if c.n > 0]
    assert timed and {c.verdict for c in timed} == {"precondition failed"}
    assert "max_concurrent 2" in timed[0].failed_preconditions[0].evidence
    assert "without it the interval reads 'contradicted'" in timed[0].note
