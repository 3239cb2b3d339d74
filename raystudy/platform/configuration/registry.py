"""Where studies come from: entry points, study files, and studies added in-process.

A study is any object ``STUDY`` of type ``Study``. The platform finds them three ways:

* **entry points** in the group ``raystudy.studies`` (``name = "package.module:STUDY"``),
  which is how raystudy's own six are registered and how a third-party package adds its
  own; an entry may name an extra (``"pkg.mod:STUDY [gp]"``) whose requirements are
  checked before the study is imported, so a missing one is a one-line hint;
* **a file or a package folder**: ``raystudy run path/to/my_study.py`` imports the file,
  ``raystudy run path/to/my_study/`` (a folder with ``__init__.py``, as ``raystudy cp``
  writes) imports the package, and takes its ``STUDY``; the code travels to Ray workers by
  value (``ship_study_files``, called by the runner once Ray is up);
* ``add_entry`` in this process (tests, notebooks).

``raystudy list`` imports each entry's module but never reads ``STUDY`` from it, so a
study package keeps ``list`` fast by defining ``STUDY`` lazily (see
``raystudy/studies/*/__init__.py``); a plugin that fails to import is one line naming it
and does not hide the others.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from raystudy.contract.study import DataCommand, Study
from raystudy.errors import UserError

GROUP = "raystudy.studies"
BUILTIN_DIST = "raystudy"


@dataclass(frozen=True)
class StudyEntry:
    """A study found but not yet imported: its name, ``module:attr`` target and origin."""

    name: str
    target: str
    """``package.module:STUDY`` (``:STUDY`` may be left out)."""
    origin: str = "in-process"
    """Who provides it: ``raystudy 0.1.0``, another distribution, or ``in-process``."""
    extra: str | None = None
    """An extra of ``origin``'s distribution holding the study's own dependencies."""

    @property
    def module(self) -> str:
        return self.target.partition(":")[0].strip()

    @property
    def attr(self) -> str:
        return self.target.partition(":")[2].strip() or "STUDY"


_ADDED: dict[str, StudyEntry] = {}


def add_entry(entry: StudyEntry) -> None:
    """Register a study in this process only (tests, notebooks); it wins over entry points."""
    _ADDED[entry.name] = entry


def remove_entry(name: str) -> None:
    _ADDED.pop(name, None)


def _from_entry_point(point: importlib.metadata.EntryPoint) -> StudyEntry:
    dist = getattr(point, "dist", None)
    origin = f"{dist.name} {dist.version}" if dist is not None else "entry point"
    extra = point.extras[0] if point.extras else None
    return StudyEntry(point.name, f"{point.module}:{point.attr or 'STUDY'}", origin, extra)


def entries() -> tuple[StudyEntry, ...]:
    """Every study registered by entry point or in-process, the built-in ones first."""
    found: dict[str, StudyEntry] = {}
    points = sorted(importlib.metadata.entry_points(group=GROUP),
                    key=lambda p: getattr(getattr(p, "dist", None), "name", "") != BUILTIN_DIST)
    for point in points:
        found.setdefault(point.name, _from_entry_point(point))
    found.update(_ADDED)
    return tuple(found.values())


def describe(entry: StudyEntry) -> str:
    """The first line of the study module's docstring, imported without building STUDY."""
    module = importlib.import_module(entry.module)
    doc = (module.__doc__ or "").strip()
    return doc.splitlines()[0] if doc else ""


def data_commands() -> dict[str, tuple[str, DataCommand]]:
    """Every ``raystudy data`` command of the registered studies: ``{name: (study,
    command)}``. Read from the entry module's ``DATA_COMMANDS`` where it has one (no
    recipe imported), else from ``STUDY.data_commands``; a study that fails to load, or
    lacks its extra, contributes none (``raystudy list`` names it)."""
    found: dict[str, tuple[str, DataCommand]] = {}
    for entry in entries():
        try:
            commands = getattr(importlib.import_module(entry.module), "DATA_COMMANDS", None)
            if commands is None:
                commands = load_entry(entry).data_commands
        except Exception:  # a broken plugin must not hide the other studies' commands
            continue
        for command in commands:
            found.setdefault(command.name, (entry.name, command))
    return found


# ---------------------------------------------------------------- extras
def missing_requirements(dist_name: str, extra: str) -> list[str]:
    """The distributions ``dist_name[extra]`` requires that are not installed here."""
    from packaging.requirements import Requirement

    try:
        requires = importlib.metadata.distribution(dist_name).requires or []
    except importlib.metadata.PackageNotFoundError:
        return []
    missing = []
    for line in requires:
        requirement = Requirement(line)
        if requirement.marker is None or not requirement.marker.evaluate({"extra": extra}):
            continue
        try:
            importlib.metadata.distribution(requirement.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(requirement.name)
    return missing


# ---------------------------------------------------------------- loading
INIT = "__init__.py"


def is_study_file(name: str) -> bool:
    """``name`` names a Python file (``my_study.py``, ``./studies/x.py``) or a package
    folder given as a path (``./mine/lr_variant``, with a ``/``), not a registered study."""
    return name.endswith(".py") or ("/" in name and (Path(name).expanduser() / INIT).is_file())



def load_study_file(path: str | Path) -> Study:
    """Import ``path`` -- a file, or a package folder -- as a module and return its
    ``STUDY``; its code is shipped to Ray workers by value, so nothing needs installing on
    the cluster. A package's modules import each other relatively (``from .config import``)."""
    path = Path(path).expanduser().resolve()
    if path.is_dir() and (path / INIT).is_file():
        module_name = f"raystudy_package_{path.name}"
        spec = importlib.util.spec_from_file_location(
            module_name, path / INIT, submodule_search_locations=[str(path)])
    elif path.is_file():
        module_name = f"raystudy_file_{path.stem}"
        spec = importlib.util.spec_from_file_location(module_name, path)
    else:
        raise UserError(f"study file not found: {path}")
    if spec is None or spec.loader is None:
        raise UserError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
        study = getattr(module, "STUDY", None)  # a package's may load on first access
    except UserError:
        raise
    except Exception as exc:
        for loaded in [m for m in sys.modules if m.partition(".")[0] == module_name]:
            sys.modules.pop(loaded, None)
        raise UserError(f"study file {path} failed to import: {type(exc).__name__}: "
                        f"{exc}") from None
    study = _check_study(study, str(path))
    _LOADED_FILES[module.__name__] = module
    return study


_BY_VALUE: set[str] = set()
_LOADED_FILES: dict[str, Any] = {}


def ship_study_files() -> None:
    """Before Ray pickles anything: every study file or package loaded in this process
    ships by value, a package with its submodules (an in-process run never calls this, and
    never imports Ray)."""
    for name, module in _LOADED_FILES.items():
        if name not in _BY_VALUE:
            _ship_by_value(module)


def _ship_by_value(module: Any) -> None:
    """Pickle the module's functions and classes by value: workers cannot import a file.

    ``functools.lru_cache`` wrappers defined in the file (a cached data loader, say) are
    rebuilt on the worker around the function shipped by value, with an empty cache.
    """
    import copyreg

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(module)
    _BY_VALUE.add(module.__name__)
    copyreg.dispatch_table[functools._lru_cache_wrapper] = _reduce_lru_cache


def _shipped_by_value(module_name: str) -> bool:
    """The module, or a package above it (a package's submodules), ships by value."""
    parts = module_name.split(".")
    return any(".".join(parts[:i]) in _BY_VALUE for i in range(1, len(parts) + 1))


def _reduce_lru_cache(wrapper: Any) -> Any:
    if _shipped_by_value(getattr(wrapper, "__module__", None) or ""):
        params = wrapper.cache_parameters()
        return _rebuild_lru_cache, (wrapper.__wrapped__, params["maxsize"], params["typed"])
    return wrapper.__qualname__  # any other module's: by reference, as pickle does


def _rebuild_lru_cache(fn: Any, maxsize: int | None, typed: bool) -> Any:
    return functools.lru_cache(maxsize=maxsize, typed=typed)(fn)


def _check_study(value: Any, where: str) -> Study:
    if not isinstance(value, Study):
        raise UserError(f"{where} defines no STUDY (a raystudy.Study); see "
                        "docs/writing-a-study.md")
    try:
        value.config_cls()
    except TypeError as exc:
        raise UserError(f"{where}: {value.config_cls.__name__}() cannot be built from its "
                        f"defaults ({exc}); every config field needs a default") from None
    return value


def load_entry(entry: StudyEntry) -> Study:
    """Import a registered study; a missing extra or a broken plugin is one line."""
    if entry.extra:
        dist = entry.origin.rsplit(" ", 1)[0]
        missing = missing_requirements(dist, entry.extra)
        if missing:
            raise UserError(f"study {entry.name} needs {', '.join(missing)}: "
                            f"pip install '{dist}[{entry.extra}]'")
    try:
        module = importlib.import_module(entry.module)
        value = getattr(module, entry.attr)
    except UserError:
        raise
    except Exception as exc:
        raise UserError(f"study {entry.name} ({entry.target}, from {entry.origin}) failed "
                        f"to load: {type(exc).__name__}: {exc}") from None
    return _check_study(value, f"{entry.target} (study {entry.name})")


def get_study(name: str) -> Study:
    """A study by registered name or by file path; an unknown name lists the valid ones."""
    if is_study_file(name):
        return load_study_file(name)
    for entry in entries():
        if entry.name == name:
            return load_entry(entry)
    valid = ", ".join(e.name for e in entries())
    raise UserError(f"unknown study '{name}'; available studies: {valid} (or a file: "
                    "raystudy run path/to/my_study.py)")
