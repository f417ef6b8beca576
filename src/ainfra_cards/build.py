"""The build: bank -> GUIDs -> rendered cards -> deck and lock. Gather everything, then write.

Nothing is written until the whole bank has parsed and every GUID is assigned; each output is
written to a temporary file beside it and renamed into place, the lock last, so a build that
fails or is killed leaves the previous deck and lock as they were.
"""

from __future__ import annotations

import contextlib
import glob
import html
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from . import __version__
from . import notetype as nt
from .bank import Progress, load_bank, select_modules
from .errors import CardsError, Problem
from .ids import (
    Assignment,
    Judgement,
    Lock,
    LockEntry,
    assign,
    digest,
    dump_lock,
    load_lock,
    next_lock,
    parse_lock_text,
)
from .media import anki_name
from .model import Bank, Card, MemoryPoint, Question
from .package import apkg_summary, write_apkg
from .render import to_html

DECK_FILE = "ainfra-cards.apkg"
LOCK_FILE = "ainfra-cards.lock.yaml"
STUDY_FILE = "study.html"


@dataclass
class ModuleChanges:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    retired: int = 0


@dataclass
class BuildPlan:
    """Everything a build would write, computed without writing anything."""

    bank: Bank
    cards: list[Card]  # the cards of the selected modules, in bank order
    lock: Lock
    lock_text: str
    changes: dict[str, ModuleChanges]
    retired: list[LockEntry]
    warnings: list[Problem] = field(default_factory=list)
    media: dict[str, Path] = field(default_factory=dict)  # Anki media name -> file, for the cards
    judgements: list[Judgement] = field(default_factory=list)  # kept GUIDs whose text changed a lot


@dataclass(frozen=True)
class Paths:
    """Where a build reads and writes."""

    questions: Path
    output: Path
    lock: Path
    study: Path | None = None  # study.html, written by a whole-bank build

    @classmethod
    def default(
        cls,
        questions: Path,
        output: Path | None = None,
        lock: Path | None = None,
        modules: tuple[str, ...] = (),
    ) -> Paths:
        """The deck and its lock go to decks/ beside the bank folder, so each bank has its own."""
        decks = questions.resolve().parent / "decks"
        if output is None:
            suffix = "".join(f"-{m.split('-')[0]}" for m in modules)
            output = decks / (DECK_FILE if not modules else f"ainfra-cards{suffix}.apkg")
        study = None if modules else decks / STUDY_FILE
        return cls(questions, output, lock if lock is not None else decks / LOCK_FILE, study)


def question_fields(q: Question) -> dict[str, str]:
    """The fields every note of a question shares (rendered once per question)."""
    return {
        "Number": str(q.number),
        "Title": to_html(q.title, inline=True),
        "Module": q.module.label,
        "Source": html.escape(str(q.path)),
        "Context": to_html(q.talking_points, images=_images(q)) if q.talking_points else "",
        "Prompt": to_html(q.prompt, images=_images(q)),
        "Extra": "",
    }


class _Rendered(NamedTuple):
    """One memory point on its way to a note."""

    question: Question
    point: MemoryPoint
    guid: str
    fields: dict[str, str]
    tags: list[str]
    content: str  # digest of fields, tags and deck: a change moves the note's mod time


def render_card(q: Question, p: MemoryPoint, shared: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The note's fields and tags for one memory point."""
    fields = {
        "Front": to_html(p.cue, inline=True, images=_images(q)),
        "Back": to_html(p.answer, inline=True, images=_images(q)),
        **shared,
    }
    tags = [f"{nt.TAG_ROOT}::{q.module.slug}", f"{nt.TAG_ROOT}::Q{q.number:03d}", *q.tags]
    return fields, sorted(set(tags), key=tags.index)


def _images(q: Question) -> Callable[[str], str | None]:
    return lambda ref: anki_name(q.media[ref]) if ref in q.media else None


def plan_build(
    paths: Paths, modules: tuple[str, ...] = (), now: int = 0, progress: Progress | None = None
) -> BuildPlan:
    """Parse the bank, match it against the lock and render every card; write nothing."""
    bank, problems = load_bank(paths.questions, progress)
    selected = select_modules(bank, modules)
    lock = load_lock(paths.lock)
    assignment = assign(bank.questions, lock)
    rendered: list[_Rendered] = []
    questions: Iterable[Question] = bank.questions
    if progress is not None:
        questions = progress(bank.questions, len(bank.questions), "Rendering cards  ")
    for q in questions:
        shared = question_fields(q)
        for p in q.points:
            fields, tags = render_card(q, p, shared)
            content = digest(fields, tags, nt.deck_id(q.module.number))
            rendered.append(_Rendered(q, p, assignment.guids[(q.key, p.index)], fields, tags, content))
    new_lock = next_lock(
        lock, assignment, [(r.question, r.point, r.content) for r in rendered], nt.notetype_digest(), now
    )
    mods = {e.guid: e.mod for e in new_lock.entries}
    cards = [
        Card(r.guid, mods[r.guid], r.fields, r.tags, r.question.module, r.question.number)
        for r in rendered
        if not selected or r.question.module in selected
    ]
    changes = _changes(bank, rendered, lock, assignment)
    media = {
        anki_name(path): path
        for q in bank.questions
        if not selected or q.module in selected
        for path in q.media.values()
    }
    used = "".join(v for c in cards for v in c.fields.values())
    media = {name: path for name, path in media.items() if name in used}
    return BuildPlan(
        bank,
        cards,
        new_lock,
        dump_lock(new_lock, f"ainfra-cards {__version__}"),
        changes,
        assignment.retired,
        problems.warnings,
        media,
        assignment.judgements,
    )


def _changes(
    bank: Bank, rendered: list[_Rendered], lock: Lock | None, assignment: Assignment
) -> dict[str, ModuleChanges]:
    old = lock.by_guid() if lock else {}
    changes = {m.label: ModuleChanges() for m in bank.modules}
    for r in rendered:
        c = changes.setdefault(r.question.module.label, ModuleChanges())
        before = old.get(r.guid)
        if before is None or r.guid in assignment.new:
            c.added += 1
        elif before.content != r.content or before.status != "active":
            c.updated += 1
        else:
            c.unchanged += 1
    numbers = {q.number: q.module.label for q in bank.questions}
    for e in assignment.retired:
        label = numbers.get(e.number) or "(removed questions)"
        changes.setdefault(label, ModuleChanges()).retired += 1
    return changes


# ---------------------------------------------------------------------------------------------
# Writing


@contextlib.contextmanager
def writing(path: Path) -> Iterator[None]:
    """Turn an operating-system error while writing path into a one-line CardsError."""
    try:
        yield
    except OSError as e:
        where = Path(e.filename) if e.filename else path
        raise CardsError(
            Problem(
                str(where),
                1,
                f"cannot write {path.name}: {e.strerror or e}; make sure {path.parent} is a folder "
                "you can write to (the previous outputs were left as they were)",
            )
        ) from e


def _tmp_files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))


def atomic_write(path: Path, write: Callable[[Path], object]) -> None:
    """Call write(tmp) for a temporary file beside path, then rename it over path."""
    with writing(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(name)
        try:
            write(tmp)
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


@contextlib.contextmanager
def build_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock for the read-lock/write-lock cycle; fail clearly if it is taken."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; builds there must not overlap
        yield
        return
    marker = lock_path.with_name(f".{lock_path.name}.building")
    with writing(lock_path):
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        f = open(marker, "a+")  # noqa: SIM115 - held open for the whole build
    with f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise CardsError(
                Problem(
                    str(lock_path),
                    1,
                    "another ainfra-cards build is writing this lock; wait for it to finish and run again",
                )
            ) from e
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def write_build(plan: BuildPlan, paths: Paths, extra: dict[Path, str] | None = None) -> None:
    """Write the deck, any extra text outputs, then the lock (last: it vouches for the deck).

    Temporary files that a killed build left beside these outputs are removed first: the caller
    holds the build lock, so no other build can be writing them.
    """
    for target in (paths.output, *(extra or {}), paths.lock):
        for leftover in _tmp_files(target):
            leftover.unlink(missing_ok=True)
    atomic_write(paths.output, lambda tmp: write_apkg(plan.cards, plan.lock.notetype_mod, tmp, plan.media))
    for path, text in (extra or {}).items():
        write_text(path, text)
    write_text(paths.lock, plan.lock_text)


def stale_outputs(plan: BuildPlan, paths: Paths, extra: dict[Path, str] | None = None) -> list[str]:
    """Which committed outputs differ from what this build would write (for build --check)."""
    stale = []
    # Compared as data, not text: another YAML emitter may wrap or quote differently.
    if not paths.lock.is_file() or _lock_data(paths.lock.read_text(encoding="utf-8")) != _lock_data(
        plan.lock_text
    ):
        stale.append(str(paths.lock))
    if not paths.output.is_file():
        stale.append(str(paths.output))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = Path(tmp) / "fresh.apkg"
            write_apkg(plan.cards, plan.lock.notetype_mod, fresh, plan.media)
            try:
                if apkg_summary(fresh) != apkg_summary(paths.output):
                    stale.append(str(paths.output))
            except Exception:  # noqa: BLE001 - an unreadable committed deck is as stale as it gets
                stale.append(str(paths.output))
    for path, text in (extra or {}).items():
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(str(path))
    return stale


def _lock_data(text: str) -> object:
    try:
        data = parse_lock_text(text)
    except Exception:  # noqa: BLE001 - an unreadable lock is stale
        return None
    if isinstance(data, dict):
        data.pop("generator", None)  # which version wrote it does not make it stale
    return data
