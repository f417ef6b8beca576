"""The ainfra-cards command: each subcommand parses its flags, calls one core function, prints."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import click

from . import __version__
from .bank import check_bank, stats
from .bankformat import check_format
from .build import BuildRequest, Mode, run_build, run_changes, run_html
from .config import Branding
from .errors import CardsError, Problem
from .paths import Paths
from .report import build_report, check_report, retired_line, stats_table

T = TypeVar("T")
PROGRESS_MIN_ITEMS = 20  # fewer files than this finish before a bar would be worth drawing

QUESTIONS_OPTION = click.option(
    "--questions",
    "questions",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("questions"),
    show_default=True,
    help="The bank folder (module folders NN-名称/ with NNN-slug.md files).",
)
NO_CACHE_OPTION = click.option(
    "--no-cache",
    is_flag=True,
    help="Neither read nor write the build cache ($XDG_CACHE_HOME/ainfra-cards, else ~/.cache/ainfra-cards).",
)


def _progress(items: Iterable[T], total: int, label: str) -> Iterable[T]:
    """A progress bar on a terminal; silent in pipes and CI."""
    if not sys.stderr.isatty() or total < PROGRESS_MIN_ITEMS:
        yield from items
        return
    with click.progressbar(items, length=total, label=label, file=sys.stderr) as bar:
        yield from bar


def _echo(lines: Iterable[str], err: bool = False) -> None:
    for line in lines:
        click.echo(line, err=err)


def _fail(e: CardsError) -> None:
    _echo((str(p) for p in e.problems), err=True)
    errors = sum(p.severity == "error" for p in e.problems)
    click.echo(f"ainfra-cards: {errors} error(s); nothing was written.", err=True)
    sys.exit(1)


def _warn(problems: list[Problem]) -> None:
    _echo((str(p) for p in problems), err=True)


def _branding_options(f: Any) -> Any:
    options = [
        click.option("--title", help="study.html title.  [default: the bank's front page title]"),
        click.option("--subtitle", help="study.html subtitle.  [default: question and card counts]"),
        click.option("--browser-title", help="study.html <title>.  [default: the title]"),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _output_option(help_text: str) -> Any:
    return click.option("--output", "-o", type=click.Path(path_type=Path, dir_okay=False), help=help_text)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ainfra-cards")
def main() -> None:
    """Build Anki decks (and study.html) from the AI-infra interview question bank.

    Every 记忆要点 item of every question becomes one note. Note GUIDs are kept in a lock file so
    that a rebuilt deck, re-imported into Anki, updates notes in place and keeps all reviews.
    """


@main.command()
@QUESTIONS_OPTION
@_output_option(
    "The .apkg to write; study.html goes beside it.  [default: decks/ainfra-cards.apkg beside the bank]"
)
@click.option(
    "--lock",
    "lock",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The lock file.  [default: ainfra-cards.lock.yaml beside the deck; one written elsewhere "
    "than decks/ starts from the bank's own lock]",
)
@click.option(
    "--module",
    "-m",
    "modules",
    multiple=True,
    metavar="M",
    help="Only this module in the deck ('05' or '05-数据并行'); repeatable. "
    "The lock still covers the whole bank, and study.html is not written.",
)
@click.option("--dry-run", is_flag=True, help="Print what would change; write nothing.")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if the deck, lock or study.html is stale.")
@NO_CACHE_OPTION
@_branding_options
def build(
    questions: Path,
    output: Path | None,
    lock: Path | None,
    modules: tuple[str, ...],
    dry_run: bool,
    check: bool,
    no_cache: bool,
    title: str | None,
    subtitle: str | None,
    browser_title: str | None,
) -> None:
    """Build the Anki deck, the lock and study.html; print what changed per module."""
    mode: Mode = "check" if check else "dry-run" if dry_run else "write"
    request = BuildRequest(
        questions, output, lock, modules, mode, Branding(title, subtitle, browser_title), not no_cache
    )
    try:
        result = run_build(request, _progress)
    except CardsError as e:
        _fail(e)
        return
    _warn(result.warnings)
    if mode == "check":
        _echo(check_report(result), err=bool(result.stale))
        sys.exit(1 if result.stale else 0)
    _echo(build_report(result))


@main.command()
@QUESTIONS_OPTION
@_output_option("The page to write.  [default: decks/study.html beside the bank]")
@NO_CACHE_OPTION
@_branding_options
def html(
    questions: Path,
    output: Path | None,
    no_cache: bool,
    title: str | None,
    subtitle: str | None,
    browser_title: str | None,
) -> None:
    """Build study.html: the whole bank as one offline page for reading and self-testing."""
    try:
        target, count, warnings = run_html(
            questions, output, Branding(title, subtitle, browser_title), not no_cache
        )
    except CardsError as e:
        _fail(e)
        return
    _warn(warnings)
    click.echo(f"wrote: {target} ({count} questions)")


@main.command()
@QUESTIONS_OPTION
@click.option(
    "--lock",
    "lock",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also check this lock file.  [default: decks/ainfra-cards.lock.yaml beside the bank, if present]",
)
@click.option(
    "--format",
    "bank_format",
    is_flag=True,
    help="Also hold every file to this bank's own format (docs/贡献指南.md): sections, lengths, "
    "sources, 'N. **提示**：答案' memory points, links, the guided tour.",
)
def check(questions: Path, lock: Path | None, bank_format: bool) -> None:
    """Check the bank (and its lock): print every problem as path:line: message; exit 1 on errors."""
    try:
        problems = check_bank(questions, lock or Paths.default(questions).lock)
    except CardsError as e:
        _fail(e)
        return
    if bank_format and questions.is_dir():
        check_format(questions, problems)
    _echo(str(p) for p in sorted(problems.problems))
    click.echo(f"{len(problems.errors)} error(s), {len(problems.warnings)} warning(s)")
    sys.exit(1 if problems.errors else 0)


@main.command("stats")
@QUESTIONS_OPTION
@click.option(
    "--retired",
    is_flag=True,
    help="Also list every memory point the lock records as retired (gone from the bank), "
    "so you can delete its note in Anki.",
)
def stats_command(questions: Path, retired: bool) -> None:
    """Print questions and cards per module."""
    try:
        bank, warnings, gone = stats(questions, Paths.default(questions).lock if retired else None)
    except CardsError as e:
        _fail(e)
        return
    _warn(warnings)
    _echo(stats_table(bank))
    if retired:
        click.echo(f"{len(gone)} retired memory point(s) in the lock")
        _echo(retired_line(e) for e in gone)


@main.command()
@QUESTIONS_OPTION
@click.option("--since", metavar="VERSION", help="Only versions after this one (e.g. 2026.12.01).")
def changes(questions: Path, since: str | None) -> None:
    """Print the cards each version added, revised (old → new, with path:line) and retired,
    newest first: the text of decks/CHANGES.md."""
    if since is not None and not re.fullmatch(r"\d{4}\.\d{2}\.\d{2}", since):
        click.echo(f"--since {since}: a version is a date, YYYY.MM.DD (e.g. 2026.12.01)", err=True)
        sys.exit(2)
    try:
        text = run_changes(questions, since)
    except CardsError as e:
        _fail(e)
        return
    click.echo(text, nl=False)


if __name__ == "__main__":
    main()
