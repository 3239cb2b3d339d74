"""``raystudy cp STUDY DEST``: copy a study into a folder to start a variant of it.

DEST gets ``NAME.py`` (the study's recipe, its ``Study`` renamed NAME and its launch
commands pointed at the copy), and the study's ``profiles/`` and ``spaces/`` with their
first-line commands rewritten the same way. The copy imports the original's helper
modules from the installed package, so it runs at once::

    raystudy cp optimizer_robustness ./mystudy --name lr_robustness
    raystudy run ./mystudy/lr_robustness.py
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from raystudy.errors import UserError
from raystudy.platform.configuration.registry import entries, is_study_file, load_entry

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")


def _recipe_file(study_name: str) -> tuple[Path, Path | None, str]:
    """The recipe file of a registered study, its YAML folder and its name."""
    if is_study_file(study_name):
        raise UserError(f"raystudy cp copies a registered study (see `raystudy list`); "
                        f"{study_name} is a file already: copy it with cp")
    for entry in entries():
        if entry.name == study_name:
            study = load_entry(entry)
            module = sys.modules.get(study.train_loop.__module__)
            file = getattr(module, "__file__", None)
            if not file:
                raise UserError(f"study {study_name}: its recipe has no source file to copy")
            return Path(file), study.home, study.name
    valid = ", ".join(e.name for e in entries())
    raise UserError(f"unknown study '{study_name}'; available studies: {valid}")


def _retarget(text: str, old: str, command: str) -> str:
    """Point ``raystudy run|sweep OLD`` commands at ``command`` (the copy's file)."""
    return re.sub(rf"(raystudy (?:run|sweep) ){re.escape(old)}\b", rf"\g<1>{command}", text)


def copy_study(study_name: str, dest: str | Path, new_name: str | None = None) -> Path:
    """Copy a registered study into ``dest``; returns the copied recipe's path."""
    recipe, home, old = _recipe_file(study_name)
    new_name = new_name or f"my_{old}"
    if not NAME.match(new_name):
        raise UserError(f"--name {new_name!r}: use letters, digits and _ (a Python name)")
    dest = Path(dest)
    target = dest / f"{new_name}.py"
    command = str(target)
    text = recipe.read_text()
    renamed, count = re.subn(rf'(\bname\s*=\s*)"{re.escape(old)}"', rf'\g<1>"{new_name}"', text)
    if count != 1:
        raise UserError(f"study {old}: cannot find its name=\"{old}\" in {recipe} to rename")
    files = {target: _retarget(renamed, old, command)}
    for kind in ("profiles", "spaces"):
        folder = home / kind if home is not None else None
        for path in sorted(folder.glob("*.yaml")) if folder and folder.is_dir() else []:
            files[dest / kind / path.name] = _retarget(path.read_text(), old, command)
    taken = [str(path) for path in files if path.exists()]
    if taken:
        raise UserError(f"{taken[0]} exists; pick another DEST or --name (nothing copied)")
    written: list[Path] = []
    try:
        for path, content in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            written.append(path)
    except OSError as exc:
        for path in written:  # never half a copy
            path.unlink(missing_ok=True)
        raise UserError(f"raystudy cp: cannot write {dest}: {exc.strerror or exc}") from None
    return target
