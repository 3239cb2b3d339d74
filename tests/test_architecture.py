"""The layers of docs/architecture.md, held: import-linter's contracts (as `make lint`
runs them), a deliberate violation caught in a copy of the tree, and no import circle at
run time anywhere under raystudy/ (imports under TYPE_CHECKING aside)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"),
                           "--no-cache"], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=300)


def _copy_tree(dest: Path) -> Path:
    shutil.copytree(ROOT / "raystudy", dest / "raystudy",
                    ignore=shutil.ignore_patterns("__pycache__", "profiles", "spaces"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def test_the_import_contracts_hold() -> None:
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout or "broken" not in done.stdout.split("Contracts:")[-1]


@pytest.mark.parametrize(("module", "line", "contract"), [
    ("raystudy/studies/spiking_nets/analysis.py",
     "from raystudy.platform.runs import rundir", "studies import only"),
    ("raystudy/algorithms/stats.py", "import ray", "algorithms: plain PyTorch"),
    ("raystudy/contract/data.py", "import raystudy.platform.execution.runner", "contract: no Ray"),
    ("raystudy/platform/report/render.py",
     "from raystudy.platform.execution import runner", "do not import execution"),
])
def test_a_layer_violation_fails_lint(tmp_path: Path, module: str, line: str,
                                      contract: str) -> None:
    tree = _copy_tree(tmp_path)
    path = tree / module
    path.write_text(path.read_text() + f"\n{line}  # a deliberate violation\n")
    done = _lint_imports(tree)
    assert done.returncode != 0
    broken = done.stdout.split("Broken contracts")[-1]
    assert contract in " ".join(broken.split()), done.stdout[-3000:]


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan, iteratively)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_import_circle_at_run_time() -> None:
    graph = grimp.build_graph("raystudy", exclude_type_checking_imports=True, cache_dir=None)
    assert _cycles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = grimp.ImportGraph()
    for name in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(name)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.a")
    graph.add_import(importer="p.c", imported="p.a")
    assert _cycles(graph) == [["p.a", "p.b"]]


def test_a_study_package_builds_its_study_only_when_asked() -> None:
    studies = sorted(p.parent.name for p in (ROOT / "raystudy/studies").glob("*/recipe.py"))
    code = ("import importlib, sys\n"
            f"packages = [importlib.import_module(f'raystudy.studies.{{n}}')\n"
            f"            for n in {studies!r}]\n"
            "assert 'torch' not in sys.modules  # raystudy list/data stay light\n"
            f"for name, package in zip({studies!r}, packages):\n"
            "    assert f'raystudy.studies.{name}.recipe' not in sys.modules, name\n"
            "    assert package.STUDY.name == name, name\n"
            "    assert f'raystudy.studies.{name}.recipe' in sys.modules, name\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


STUDY_PACKAGES = sorted(p.parent.name for p in (ROOT / "raystudy/studies").glob("*/__init__.py")
                        if p.parent.name != "studies")


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("raystudy", exclude_type_checking_imports=True, cache_dir=None)


@pytest.mark.parametrize("name", STUDY_PACKAGES)
def test_every_study_package_has_the_one_skeleton(name: str, graph: grimp.ImportGraph) -> None:
    """config.py (the frozen config), recipe.py (the loop and STUDY), analysis.py (the
    analyze hook), data.py where the study makes data, profiles/ and spaces/; config
    imports neither recipe nor analysis, and analysis does not import recipe."""
    import dataclasses
    import importlib

    home = ROOT / "raystudy" / "studies" / name
    for part in ("__init__.py", "config.py", "recipe.py", "analysis.py", "profiles", "spaces"):
        assert (home / part).exists(), f"{name} has no {part}"
    assert not (home / "make_data.py").exists(), f"{name}: its generators belong in data.py"
    study = importlib.import_module(f"raystudy.studies.{name}.recipe").STUDY
    package = f"raystudy.studies.{name}"
    assert study.config_cls.__module__ == f"{package}.config"
    assert dataclasses.is_dataclass(study.config_cls)
    assert study.config_cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert study.train_loop.__module__.startswith(f"{package}.")
    assert study.analyze is not None and study.analyze.__module__ == f"{package}.analysis"
    for command in study.data_commands:  # a study's `raystudy data` commands: in data.py
        assert command.run.__module__ == f"{package}.data", command.name
    for lower, upper in (("config", "recipe"), ("config", "analysis"), ("analysis", "recipe")):
        assert not graph.chain_exists(importer=f"{package}.{lower}",
                                      imported=f"{package}.{upper}"), \
            f"{package}.{lower} imports {upper}"
