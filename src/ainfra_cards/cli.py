"""The ainfra-cards command: thin click wrappers around the core."""

from __future__ import annotations

import contextlib
import os
import sys
import time
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

import click

from . import __version__
from .bank import load_bank
from .build import BuildPlan, Paths, build_lock, plan_build, stale_outputs, write_build, write_text
from .config import load_branding, merge
from .errors import CardsError, Collector, Problem
from .htmlpage import render_study_html
from .ids import Judgement, LockEntry, load_lock
from .notetype import TAG_ROOT

T = TypeVar("T")

QUESTIONS_OPTION = click.option(
    "--questions",
    "questions",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("questions"),
    show_default=True,
    help="The bank folder (module folders NN-名称/ with NNN-slug.md files).",
)


def _now() -> int:
    """Build time for notes whose content changed: SOURCE_DATE_EPOCH if set, else the clock."""
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if value:
        try:
            return int(value)
        except ValueError as e:
            raise CardsError(f"SOURCE_DATE_EPOCH={value!r} is not a whole number of seconds") from e
    return int(time.time())


def _progress(items: Iterable[T], total: int, label: str) -> Iterable[T]:
    """A progress bar on a terminal; silent in pipes and CI."""
    if not sys.stderr.isatty() or total < 20:
        yield from items
        return
    with click.progressbar(items, length=total, label=label, file=sys.stderr) as bar:
        yield from bar


def _fail(e: CardsError) -> None:
    for p in e.problems:
        click.echo(str(p), err=True)
    errors = sum(p.severity == "error" for p in e.problems)
    click.echo(f"ainfra-cards: {errors} error(s); nothing was written.", err=True)
    sys.exit(1)


def _warn(problems: list[Problem]) -> None:
    for p in problems:
        click.echo(str(p), err=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ainfra-cards")
def main() -> None:
    """Build Anki decks (and study.html) from the AI-infra interview question bank.

    Every 记忆要点 item of every question becomes one note. Note GUIDs are kept in a lock file so
    that a rebuilt deck, re-imported into Anki, updates notes in place and keeps all reviews.
    """


BRANDING_OPTIONS = [
    click.option("--title", help="study.html title.  [default: the bank's front page title]"),
    click.option("--subtitle", help="study.html subtitle.  [default: question and card counts]"),
    click.option("--browser-title", help="study.html <title>.  [default: the title]"),
]


def output_option(help_text: str):  # type: ignore[no-untyped-def]
    return click.option("--output", "-o", type=click.Path(path_type=Path, dir_okay=False), help=help_text)


def branding_options(f):  # type: ignore[no-untyped-def]
    for option in reversed(BRANDING_OPTIONS):
        f = option(f)
    return f


def _study_html(plan_bank, questions: Path, title, subtitle, browser_title) -> str:  # type: ignore[no-untyped-def]
    problems = Collector()
    branding = merge(load_branding(questions, problems), title, subtitle, browser_title)
    _warn(problems.problems)
    return render_study_html(plan_bank, branding)


@main.command()
@QUESTIONS_OPTION
@output_option("The .apkg to write.  [default: decks/ainfra-cards.apkg beside the bank]")
@click.option(
    "--lock",
    "lock",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The lock file.  [default: decks/ainfra-cards.lock.yaml beside the bank]",
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
@branding_options
def build(
    questions: Path,
    output: Path | None,
    lock: Path | None,
    modules: tuple[str, ...],
    dry_run: bool,
    check: bool,
    title: str | None,
    subtitle: str | None,
    browser_title: str | None,
) -> None:
    """Build the Anki deck, the lock and study.html; print what changed per module."""
    paths = Paths.default(questions, output, lock, modules)
    writes = not (check or dry_run)  # read-only runs take no lock and create nothing
    try:
        with build_lock(paths.lock) if writes else contextlib.nullcontext():
            plan = plan_build(paths, modules, _now(), _progress)
            _warn(plan.warnings)
            extra = {}
            if paths.study is not None:
                extra[paths.study] = _study_html(plan.bank, questions, title, subtitle, browser_title)
            if check:
                _check(plan, paths, extra)
                return
            _report(plan, paths, written=not dry_run)
            if not dry_run:
                write_build(plan, paths, extra)
    except CardsError as e:
        _fail(e)


@main.command()
@QUESTIONS_OPTION
@output_option("The page to write.  [default: decks/study.html beside the bank]")
@branding_options
def html(
    questions: Path, output: Path | None, title: str | None, subtitle: str | None, browser_title: str | None
) -> None:
    """Build study.html: the whole bank as one offline page for reading and self-testing."""
    target = output or Paths.default(questions).study
    assert target is not None
    try:
        bank, problems = load_bank(questions, _progress)
        _warn(problems.warnings)
        write_text(target, _study_html(bank, questions, title, subtitle, browser_title))
    except CardsError as e:
        _fail(e)
    click.echo(f"wrote: {target} ({len(bank.questions)} questions)")


def _check(plan: BuildPlan, paths: Paths, extra: dict[Path, str]) -> None:
    stale = stale_outputs(plan, paths, extra)
    if stale:
        for s in stale:
            click.echo(f"{s}: stale; run `ainfra-cards build` and commit the result", err=True)
        sys.exit(1)
    names = ", ".join(str(p) for p in [paths.output, paths.lock, *extra])
    click.echo(f"up to date: {names} ({len(plan.cards)} cards)")


def _width(text: str) -> int:
    """Terminal columns: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _ljust(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _echo_retired(e: LockEntry) -> None:
    click.echo(
        f'retired: question {e.number} item {e.index} "{e.cue}" ({e.guid}): no longer in the bank; '
        f"Anki keeps it until you delete it (browse tag:{TAG_ROOT}::Q{e.number:03d})"
    )


def _echo_judgements(judgements: list[Judgement]) -> None:
    """Each kept GUID whose text changed a lot, old above new, so a maintainer can check it."""
    if not judgements:
        return
    click.echo(
        f"kept {len(judgements)} note(s) whose text changed a lot; each keeps its reviews. If one is "
        "really a new fact, give its item a new id ({#new-name}); to keep a note that was judged new, "
        "give the item its old GUID as id ({#aic:...})."
    )
    for j in judgements:
        how = "explicit id" if j.by_id else f"cue {j.cue_similarity:.2f}, answer {j.answer_similarity:.2f}"
        click.echo(f"  question {j.number} item {j.index} ({j.guid}; {how})")
        click.echo(f"    - {j.old[0]}：{j.old[1]}")
        click.echo(f"    + {j.new[0]}：{j.new[1]}")


def _report(plan: BuildPlan, paths: Paths, written: bool) -> None:
    width = max([_width(label) for label in plan.changes] + [6])
    click.echo(f"{_ljust('module', width)}  added  updated  unchanged  retired")
    totals = [0, 0, 0, 0]
    for label, c in sorted(plan.changes.items()):
        row = [c.added, c.updated, c.unchanged, c.retired]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        if any(row):
            click.echo(
                f"{_ljust(label, width)}  {c.added:>5}  {c.updated:>7}  {c.unchanged:>9}  {c.retired:>7}"
            )
    click.echo(f"{_ljust('total', width)}  {totals[0]:>5}  {totals[1]:>7}  {totals[2]:>9}  {totals[3]:>7}")
    for e in plan.retired:
        _echo_retired(e)
    _echo_judgements(plan.judgements)
    verb = "wrote" if written else "would write (dry run)"
    study = f", {paths.study}" if paths.study else ""
    click.echo(f"{verb}: {paths.output} ({len(plan.cards)} cards), {paths.lock}{study}")


@main.command()
@QUESTIONS_OPTION
@click.option(
    "--lock",
    "lock",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also check this lock file.  [default: decks/ainfra-cards.lock.yaml beside the bank, if present]",
)
def check(questions: Path, lock: Path | None) -> None:
    """Check the bank (and its lock): print every problem as path:line: message; exit 1 on errors."""
    try:
        _, problems = load_bank(questions, _progress, strict=False)
    except CardsError as e:
        _fail(e)
        return
    try:
        load_lock(lock or Paths.default(questions).lock)
    except CardsError as e:
        problems.problems.extend(e.problems)
    for p in sorted(problems.problems):
        click.echo(str(p))
    errors, warnings = len(problems.errors), len(problems.warnings)
    click.echo(f"{errors} error(s), {warnings} warning(s)")
    sys.exit(1 if errors else 0)


@main.command()
@QUESTIONS_OPTION
@click.option(
    "--retired",
    is_flag=True,
    help="Also list every memory point the lock records as retired (gone from the bank), "
    "so you can delete its note in Anki.",
)
def stats(questions: Path, retired: bool) -> None:
    """Print questions and cards per module."""
    try:
        bank, problems = load_bank(questions, _progress)
        lock = load_lock(Paths.default(questions).lock) if retired else None
    except CardsError as e:
        _fail(e)
        return
    _warn(problems.warnings)
    width = max([_width(m.label) for m in bank.modules] + [6])
    click.echo(f"{_ljust('module', width)}  questions  cards")
    for m in bank.modules:
        qs = bank.module_questions(m)
        click.echo(f"{_ljust(m.label, width)}  {len(qs):>9}  {sum(len(q.points) for q in qs):>5}")
    total = sum(len(q.points) for q in bank.questions)
    click.echo(f"{_ljust('total', width)}  {len(bank.questions):>9}  {total:>5}")
    if retired:
        gone = [entry for entry in (lock.entries if lock else []) if entry.status == "retired"]
        click.echo(f"{len(gone)} retired memory point(s) in the lock")
        for entry in gone:
            _echo_retired(entry)


if __name__ == "__main__":
    main()
