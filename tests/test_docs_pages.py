"""The study pages under docs/: every built-in study has one, the README links it, and a
page's generated results section (``raystudy report RUN --page``) is whole and names the
command, hardware and versions that produced it."""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from raystudy.platform.report.report import BEGIN, END

REPO = Path(__file__).resolve().parents[1]
BUILTIN = sorted(ep.name for ep in entry_points(group="raystudy.studies")
                 if ep.dist is not None and ep.dist.name == "raystudy")


@pytest.mark.parametrize("study", BUILTIN)
def test_every_study_has_a_page_linked_from_the_readme(study: str) -> None:
    assert (REPO / "docs" / f"{study}.md").is_file()
    assert f"](docs/{study}.md)" in (REPO / "README.md").read_text()


def _generated_pages() -> list[Path]:
    return sorted(p for p in (REPO / "docs").glob("*.md") if BEGIN in p.read_text())


@pytest.mark.parametrize("page", _generated_pages(), ids=lambda p: p.stem)
def test_a_generated_section_is_whole_and_names_its_command(page: Path) -> None:
    text = page.read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1
    section = text.split(BEGIN, 1)[1].split(END, 1)[0]
    command = re.search(r"^- \*\*command\*\*: `(raystudy (run|sweep) (\S+)[^`]*)`$",
                        section, re.M)
    assert command, "no command line"
    assert command.group(3) == page.stem, "the section comes from another study's run"
    for field in ("run", "hardware", "versions"):
        assert re.search(rf"^- \*\*{field}\*\*: \S", section, re.M), field
    assert "### Claims" in section
    for figure in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", section):
        assert (page.parent / figure).is_file(), figure


def test_the_readme_stays_a_front_door() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    assert "make demo" in readme and "make test" in readme
    assert not re.search(r"/work/|/tmp/|20\d\d-\d\d-\d\d", readme), "a machine path or a date"
    for link in re.findall(r"\]\(((?:docs|clusters|bench|examples)/[^)#]+)", readme):
        assert (REPO / link).exists(), link


@pytest.mark.parametrize("page", sorted((REPO / "docs").glob("*.md")), ids=lambda p: p.stem)
def test_a_page_links_only_to_files_that_exist(page: Path) -> None:
    for link in re.findall(r"\]\(([^)#:\s]+)(?:#[^)]*)?\)", page.read_text()):
        assert (page.parent / link).exists(), link


def _verbs_and_flags() -> list[tuple[str, str]]:
    """``(command, --flag)`` for every subcommand of ``raystudy`` and each long flag."""
    import argparse

    from raystudy.cli import build_parser
    from raystudy.platform.configuration.registry import data_commands

    found = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.append((f"{path} {name}".strip(), ""))
                    walk(sub, f"{path} {name}".strip())
            else:
                found.extend((path, flag) for flag in action.option_strings
                             if flag.startswith("--") and flag != "--help")

    walk(build_parser(data_commands()), "")
    return found


def _usage_entries() -> list[tuple[list[str], str]]:
    """The usage block of docs/usage.md as ``(words after 'raystudy', whole entry text)``,
    continuation lines joined to their command's line."""
    text = (REPO / "docs" / "usage.md").read_text()
    entries: list[tuple[list[str], str]] = []
    for line in text[text.index("## The command line"):text.index("* **Config.**")].splitlines():
        if line.startswith("raystudy "):
            entries.append((line.split("#")[0].replace("|", " ").split()[1:], line))
        elif line.startswith(" ") and entries:
            entries[-1] = (entries[-1][0], entries[-1][1] + " " + line)
    return entries


def test_usage_page_names_every_verb_and_flag() -> None:
    entries = _usage_entries()

    def names(command: str, words: list[str]) -> bool:
        parts = command.split()
        return parts[:1] == words[:1] and all(p in words for p in parts[1:])

    missing = []
    for command, flag in _verbs_and_flags():
        mine = [text for words, text in entries if names(command, words)] if command else \
            [text for _, text in entries]
        if command.split()[:1] == ["sweep"]:            # "(+ every `run` option)"
            mine += [text for words, text in entries if words[:1] == ["run"]]
        studys_own = command.startswith("data ")          # `raystudy data NAME --help`
        if not mine or (flag and not studys_own and not any(flag in text for text in mine)):
            missing.append((command, flag))
    assert missing == []
