"""A study raystudy has never seen: found by entry point or from a file, copied with
``raystudy cp``, run, swept, resumed and reported with no edit to raystudy.

The example package ``examples/quadratic_study`` (docs/writing-a-study.md) is installed
for real (``pip install --target``, no network) into a folder put on PYTHONPATH.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from cluster_helpers import BIN, REPO, base_env, local_cluster, raystudy

from raystudy.cli import main
from raystudy.errors import UserError
from raystudy.platform.configuration import registry
from raystudy.platform.runs.results import load_results

EXAMPLE = REPO / "examples" / "quadratic_study"


def _write_dist(site: Path, name: str, entry_points: str, requires: str = "") -> None:
    """A distribution's metadata as an installer writes it (METADATA, entry_points.txt)."""
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
                                   + requires)
    (info / "entry_points.txt").write_text(f"[raystudy.studies]\n{entry_points}\n")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example study installed by pip into a folder of its own."""
    root = tmp_path_factory.mktemp("own")
    source = shutil.copytree(EXAMPLE, root / "src")  # pip builds in the tree: not the repo's
    target = root / "site"
    done = subprocess.run([str(BIN / "python"), "-m", "pip", "install", "-q", "--no-deps",
                           "--no-build-isolation", "--no-index", "--target", str(target),
                           str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return target


SMALL_SPACE = ("# 2 optimizers x 2 learning rates: 4 trials\n"
               "params:\n  optimizer: {grid: [sgd, adam]}\n  lr: {grid: [1.0e-3, 1.0e-2]}\n")


def _small_space(folder: Path) -> str:
    path = folder / "small.yaml"
    path.write_text(SMALL_SPACE)
    return str(path)


def _env(site: Path) -> dict[str, str]:
    env = base_env(RAY_AUTH_MODE="disabled")
    env["PYTHONPATH"] = os.pathsep.join((str(site), env["PYTHONPATH"]))
    return env


# ---------------------------------------------------------------- found, listed, refused
def test_list_shows_origin_and_a_broken_plugin_does_not_hide_the_others(
        site: Path, tmp_path: Path) -> None:
    _write_dist(tmp_path, "brokenplugin", "broken = brokenplugin_missing.mod:STUDY")
    env = _env(site)
    env["PYTHONPATH"] = os.pathsep.join((str(tmp_path), env["PYTHONPATH"]))
    listed = raystudy("list", env=env, timeout=60)
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "[quadratic-study 0.1.0] SGD vs Adam" in lines["quadratic"]
    builtin = {ep.name for ep in entry_points(group="raystudy.studies")
               if ep.dist is not None and ep.dist.name == "raystudy"}
    assert "[raystudy 0.1.0]" in lines["optimizer_robustness"]
    assert set(lines) == builtin | {"quadratic", "broken"}
    assert "BROKEN: brokenplugin_missing.mod:STUDY does not import" in lines["broken"]
    ran = raystudy("run", "broken", env=env, timeout=60)
    assert ran.returncode == 2 and "Traceback" not in ran.stderr
    assert ran.stderr.startswith("raystudy: error: study broken (brokenplugin_missing.mod:"
                                 "STUDY, from brokenplugin 1.0) failed to load")


def test_list_imports_no_algorithm_and_no_torch() -> None:
    done = subprocess.run([str(BIN / "python"), "-X", "importtime", "-m", "raystudy", "list"],
                          capture_output=True, text=True, timeout=60, env=base_env())
    assert done.returncode == 0
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()}
    assert not any(m.startswith(("raystudy.algorithms", "torch", "ray.")) for m in imported)


def test_a_missing_extra_names_the_distribution_and_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_dist(tmp_path, "needy", "needy = needy_study:STUDY [fancy]",
                "Provides-Extra: fancy\nRequires-Dist: no-such-dist-xyz>=1; extra == \"fancy\"\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(UserError, match=r"study needy needs no-such-dist-xyz: "
                                        r"pip install 'needy\[fancy\]'"):
        registry.get_study("needy")
    with pytest.raises(UserError, match="unknown study 'nope'; available studies: .*needy"):
        registry.get_study("nope")


def test_study_files_that_are_not_studies_are_one_line(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty.py").write_text("X = 1\n")
    (tmp_path / "bad.py").write_text("import no_such_module_xyz\n")
    for name, message in (("empty.py", "defines no STUDY"), ("bad.py", "failed to import"),
                          ("missing.py", "study file not found")):
        assert main(["run", str(tmp_path / name), "--storage", str(tmp_path / "r")]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()


def test_map_tasks_with_workers_is_refused_not_dropped(tmp_path: Path, capsys) -> None:
    assert main(["run", "optimizer_robustness", "--workers", "2", "--map-tasks", "2",
                 "--storage", str(tmp_path)]) == 2
    assert "--map-tasks applies to trials without --workers" in capsys.readouterr().err


# ---------------------------------------------------------------- raystudy cp
def test_cp_copies_the_package_skeleton_under_a_new_name(tmp_path: Path, capsys) -> None:
    assert main(["cp", "optimizer_robustness", str(tmp_path / "mine"), "--name", "lr_variant"]) == 0
    package = tmp_path / "mine" / "lr_variant"
    assert f"raystudy run {package}" in capsys.readouterr().out
    assert {"__init__.py", "config.py", "recipe.py", "analysis.py", "profiles", "spaces"} <= {
        p.name for p in package.iterdir()}
    text = (package / "recipe.py").read_text()
    assert 'name="lr_variant"' in text and 'name="optimizer_robustness"' not in text
    assert f"raystudy sweep {package} --profile quick" in text  # launch commands retargeted
    assert "raystudy.studies.optimizer_robustness" not in text
    assert "from .config import" in text                        # its own modules, relatively
    demo = (package / "spaces" / "demo.yaml").read_text()
    assert demo.startswith(f"# raystudy sweep {package} --profile quick --space demo")
    assert (package / "profiles" / "paper.yaml").is_file()
    assert not list(package.rglob("__pycache__"))
    study = registry.load_study_file(package)
    assert study.name == "lr_variant" and study.home == package
    assert study.train_loop.__module__ == "raystudy_package_lr_variant.recipe"
    # a second copy over the first is refused, nothing half-written
    assert main(["cp", "optimizer_robustness", str(tmp_path / "mine"), "--name",
                 "lr_variant"]) == 2
    assert "exists; pick another DEST or --name (nothing copied)" in capsys.readouterr().err
    assert main(["cp", "nope", str(tmp_path / "x")]) == 2
    assert main(["cp", "optimizer_robustness", str(tmp_path / "x"), "--name", "1bad"]) == 2
    assert main(["cp", str(package), str(tmp_path / "x")]) == 2      # a folder: cp -r it
    assert not (tmp_path / "x").exists()


def test_every_registered_study_copies_to_a_package_that_loads_and_shows(tmp_path: Path,
                                                                         capsys) -> None:
    """Each study of the one skeleton, copied, imports nothing of its original package and
    loads by path; ``raystudy show`` reads the copy's keys and profiles."""
    for entry in registry.entries():
        if not entry.origin.startswith("raystudy "):
            continue                                 # raystudy's own studies only
        name = f"copy_of_{entry.name}"
        assert main(["cp", entry.name, str(tmp_path), "--name", name]) == 0, entry.name
        package = tmp_path / name
        for module in package.glob("*.py"):
            assert f"raystudy.studies.{entry.name}" not in module.read_text(), module
        study = registry.load_study_file(package)
        assert study.name == name and study.home == package
        assert study.config_cls.__module__.startswith(f"raystudy_package_{name}")
        capsys.readouterr()
        assert main(["show", str(package)]) == 0
        assert capsys.readouterr().out.startswith(f"{name}: ")


@pytest.mark.ray
def test_a_copied_study_runs_at_once_from_its_folder(ray_session, tmp_path: Path) -> None:
    """On Ray: the copy's modules travel to the workers by value (nothing installed)."""
    assert main(["cp", "optimizer_robustness", str(tmp_path / "mine")]) == 0
    package = tmp_path / "mine" / "my_optimizer_robustness"
    assert main(["run", str(package), "--storage", str(tmp_path / "runs"), "--name", "r",
                 "--set", "model.d_model=16", "--set", "model.n_layers=1", "--set",
                 "model.seq_len=16", "--set", "train.steps=4", "--set", "train.eval_every=2",
                 "--set", "train.eval_batches=1", "--set", "data.max_bytes=40000",
                 "--optuna-storage", "off"]) == 0
    request = json.loads((tmp_path / "runs" / "r" / "raystudy.json").read_text())
    assert request["study"] == str(package)
    summary = json.loads((tmp_path / "runs" / "r" / "summary.json").read_text())
    assert summary["counts"]["finished"] == 1


# ---------------------------------------------------------------- embedded Ray, end to end
def _wait_for(predicate, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


def _histories(run_dir: Path) -> dict[str, list[dict]]:
    return {result.parent.name: [json.loads(line) for line in result.read_text().splitlines()
                                 if line.strip()]
            for result in run_dir.glob("*/result.json")}


def test_installed_study_sweeps_resumes_after_ctrl_c_and_reports(site: Path,
                                                                 tmp_path: Path) -> None:
    env = _env(site)
    args = ["sweep", "quadratic", "--address", "local", "--storage", str(tmp_path), "--name",
            "q", "--space", _small_space(tmp_path), "--max-concurrent", "1",
            "--set", "steps=8000", "--set", "eval_every=800"]
    run_dir = tmp_path / "q"
    driver = subprocess.Popen([str(BIN / "raystudy"), *args], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        _wait_for(lambda: any(len(h) >= 2 for h in _histories(run_dir).values()), 240)
        driver.send_signal(signal.SIGINT)
        out, _ = driver.communicate(timeout=120)
    finally:
        driver.kill()
    assert driver.returncode == 130, out[-3000:]
    assert "resume with `raystudy sweep quadratic --resume --name q" in out
    resumed = raystudy(*args, "--resume", env=env, timeout=400)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    # as the report reads them: a step Tune redid after restoring the checkpoint before it
    # (Ctrl-C between a report and its checkpoint's commit) appears once, the later one
    histories = {t.trial_id: t.history for t in load_results(run_dir).trials}
    summary = json.loads((run_dir / "summary.json").read_text())
    counts = summary["counts"]
    assert len(histories) == 4 and counts["finished"] == 4, counts
    for history in histories.values():  # every trial to the end, no step reported twice
        steps = [int(r["train/step"]) for r in history]
        assert steps == list(range(800, 8001, 800)), steps
    assert set(summary["analysis"]["best_loss"]) == {"sgd", "adam"}
    assert (run_dir / "figures" / "loss_vs_lr.png").stat().st_size > 1000
    assert "Final loss" in (run_dir / "report.md").read_text()


# ---------------------------------------------------------------- a multi-node cluster
@pytest.mark.cluster
def test_installed_and_file_studies_sweep_on_a_multi_node_cluster(
        site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The package is installed on every node (PYTHONPATH, as an image would have it); the
    file study is on the driver's machine only and travels by value."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join((str(site), os.environ.get("PYTHONPATH",
                                                                                 ""))))
    own_file = tmp_path / "mine" / "quadratic_copy.py"
    shutil.copytree(EXAMPLE / "quadratic_study", own_file.parent)
    (own_file.parent / "study.py").rename(own_file)
    with local_cluster(0, "--workers", "2") as cluster:
        env = {**cluster.env, "PYTHONPATH": os.environ["PYTHONPATH"]}
        for study, name in (("quadratic", "installed"), (str(own_file), "file")):
            done = raystudy("sweep", study, "--address", cluster.gcs_address, "--storage",
                            str(tmp_path / "runs"), "--name", name, "--space",
                            _small_space(tmp_path), env=env, timeout=300)
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            summary = json.loads((tmp_path / "runs" / name / "summary.json").read_text())
            assert summary["counts"]["finished"] == 4
            nodes = {json.loads(line)["node_id"]
                     for result in (tmp_path / "runs" / name).glob("*/result.json")
                     for line in result.read_text().splitlines()}
            assert len(nodes) == 2, nodes  # a 0-CPU head: every trial on the two workers


# ---------------------------------------------------------------- the guide is the code
def test_the_guide_shows_the_example_study_as_it_is_and_its_snippet_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    guide = (REPO / "docs" / "writing-a-study.md").read_text()
    code = (EXAMPLE / "quadratic_study" / "study.py").read_text()
    assert f"```python\n{code}```" in guide
    for name in ("profiles/quick.yaml", "spaces/default.yaml"):
        assert (EXAMPLE / "quadratic_study" / name).read_text() in guide
    assert (EXAMPLE / "pyproject.toml").read_text() in guide
    snippet = guide.split("## Test it without Ray\n\n```python\n")[1].split("```")[0]
    monkeypatch.syspath_prepend(str(EXAMPLE))
    exec(compile(snippet, "writing-a-study.md", "exec"), {})


def test_a_study_file_travels_by_value_cached_loaders_included(tmp_path: Path) -> None:
    """What a Ray worker does with a file it cannot import: unpickle the study by value."""
    import pickle

    import ray.cloudpickle

    shutil.copy(EXAMPLE / "quadratic_study" / "study.py", tmp_path / "cached.py")
    with open(tmp_path / "cached.py", "a") as handle:
        handle.write("\n\nimport functools\n\n\n@functools.lru_cache(maxsize=3)\n"
                     "def problem(n: int) -> list[int]:\n    return list(range(n))\n\n\n"
                     "def uses_cache(config, ctx):\n    return problem(4)\n\n\n"
                     "STUDY = Study(name='cached', description='', config_cls=QuadraticConfig,"
                     " train_loop=uses_cache, metrics=STUDY.metrics)\n")
    study = registry.load_study_file(tmp_path / "cached.py")
    registry.ship_study_files()  # what the runner does once Ray is up
    blob = ray.cloudpickle.dumps(study)
    module = sys.modules.pop("raystudy_file_cached")
    try:
        shipped = pickle.loads(blob)
    finally:
        sys.modules["raystudy_file_cached"] = module
    assert shipped.train_loop(None, None) == [0, 1, 2, 3]
    assert shipped.train_loop.__globals__["problem"].cache_parameters()["maxsize"] == 3
