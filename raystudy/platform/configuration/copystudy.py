"""``raystudy cp STUDY DEST``: copy a study's package into a folder to start a variant.

``DEST/NAME/`` gets the whole package in the one study skeleton -- ``__init__.py``,
``config.py``, ``recipe.py``, ``analysis.py``, ``data.py`` where the study has one, any
other module, ``profiles/`` and ``spaces/`` -- with its imports of itself made relative,
its ``Study`` renamed NAME and every ``raystudy run|sweep STUDY`` command pointed at the
copy. The copy imports only raystudy's public contract and algorithms, as the original
does, so it runs at once; its code travels to Ray workers by value::

    raystudy cp optimizer_robustness ./mystudy --name lr_robustness
    raystudy run ./mystudy/lr_robustness
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from raystudy.errors import UserError
from raystudy.platform.configuration.registry import entries, is_study_file, load_entry

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".md", ".txt", ".json"}


def _study_package(study_name: str) -> tuple[Path, str, Path, str]:
    """A registered study's package folder, its dotted name, its recipe file and the
    study's name."""
    if is_study_file(study_name):
        raise UserError(f"raystudy cp copies a registered study (see `raystudy list`); "
                        f"{study_name} is a file or folder already: copy it with cp -r")
    for entry in entries():
        if entry.name == study_name:
            study = load_entry(entry)
            recipe = sys.modules.get(study.train_loop.__module__)
            package = sys.modules.get(study.train_loop.__module__.rpartition(".")[0])
            file = getattr(recipe, "__file__", None)
            if not file or package is None or not hasattr(package, "__path__"):
                raise UserError(f"study {study_name}: its recipe is not a module of a study "
                                "package (see docs/writing-a-study.md); nothing to copy")
            return Path(file).parent, package.__name__, Path(file), study.name
    valid = ", ".join(e.name for e in entries())
    raise UserError(f"unknown study '{study_name}'; available studies: {valid}")


def _retarget(text: str, old: str, command: str) -> str:
    """Point ``raystudy run|sweep OLD`` commands at ``command`` (the copy's folder)."""
    return re.sub(rf"(raystudy (?:run|sweep) ){re.escape(old)}\b", rf"\g<1>{command}", text)


def _relative_imports(text: str, package: str, new_name: str) -> str:
    """``from PACKAGE.mod import x`` -> ``from .mod import x`` (and ``from PACKAGE import
    mod`` -> ``from . import mod``); other mentions of PACKAGE name the copy."""
    dotted = re.escape(package)
    text = re.sub(rf"^(\s*)from {dotted}\.(\w+) import", r"\1from .\2 import", text,
                  flags=re.MULTILINE)
    text = re.sub(rf"^(\s*)from {dotted} import", r"\1from . import", text, flags=re.MULTILINE)
    return re.sub(rf"\b{dotted}\b", new_name, text)


def study_argument(folder: Path) -> str:
    """How a command names the copy: a path with a ``/``, so that it is not read as a
    registered study's name."""
    text = str(folder)
    return text if "/" in text else f"./{text}"


def copy_study(study_name: str, dest: str | Path, new_name: str | None = None) -> Path:
    """Copy a registered study's package to ``dest/NAME``; returns the copy's folder."""
    folder, package, recipe, old = _study_package(study_name)
    new_name = new_name or f"my_{old}"
    if not NAME.match(new_name):
        raise UserError(f"--name {new_name!r}: use letters, digits and _ (a Python name)")
    target = Path(dest) / new_name
    if target.exists():
        raise UserError(f"{target} exists; pick another DEST or --name (nothing copied)")
    command = study_argument(target)
    files: dict[Path, str | bytes] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts or path.suffix == ".pyc":
            continue
        if path.suffix not in TEXT_SUFFIXES:
            files[target / path.relative_to(folder)] = path.read_bytes()
            continue
        text = path.read_text()
        if path.suffix == ".py":
            text = _relative_imports(text, package, new_name)
        if path == recipe:
            text, count = re.subn(rf'(\bname\s*=\s*)"{re.escape(old)}"', rf'\g<1>"{new_name}"',
                                  text)
            if count != 1:
                raise UserError(f"study {old}: cannot find its name=\"{old}\" in {recipe} "
                                "to rename")
        files[target / path.relative_to(folder)] = _retarget(text, old, command)
    try:
        for path, content in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
    except OSError as exc:
        shutil.rmtree(target, ignore_errors=True)  # never half a copy
        raise UserError(f"raystudy cp: cannot write {target}: {exc.strerror or exc}") from None
    return target
