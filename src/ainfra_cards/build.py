"""The build, top to bottom: bank -> GUIDs -> rendered cards -> outputs. Plan, then write.

plan() parses the bank, matches it against the lock, digests every note and computes the next
lock; it writes nothing. run_build() then hands the Plan to each output in turn: write it, or
(``--check``) say whether the file on disk is current. A build that fails or is killed leaves
the previous outputs as they were: each is written to a temporary file and renamed into place,
the lock last.

This is the one place that decides what to reuse from earlier builds: every stage it calls is
a pure function, and the Memo (memo.py) keeps their results under a hash of their inputs and of
the whole package's code.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import sys
import time
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Literal

from . import notetype as nt
from .bank import Parse, Progress, load_bank, parse_source
from .config import Branding, load_branding
from .errors import CardsError, Collector, Problem
from .history import RetiredNotes, carry, next_lock, shipped_retired, version_of, versions, wording
from .ids import Assignment, Judgement, assign, similarity
from .lockfile import Lock, LockEntry, Revision, lock_file_bytes, read_lock
from .media import anki_name
from .memo import NO_MEMO, Memo
from .model import Bank, Card, MemoryPoint, Module, Question
from .outputs import Output, Written, stale_outputs, write_outputs
from .outputs.changes import ChangesOutput, changes_text
from .outputs.csv import CsvOutput
from .outputs.deck import DeckOutput, apkg_summary
from .outputs.lock import LockOutput
from .outputs.study import StudyOutput, render_page
from .paths import STUDY_FILE, Paths, build_lock
from .plan import (
    NO_NOTICE,
    ModuleChanges,
    NoteRef,
    Notice,
    Plan,
    card_digest,
    note_digests,
    retired_card,
    revision_notice,
)
from .render import RenderedQuestion, render_fragment, render_question
from .sources import SourceFile, list_bank
from .util import leftover_temp_files

Mode = Literal["write", "dry-run", "check"]
__all__ = ["BuildRequest", "BuildResult", "Mode", "Paths", "plan", "run_build", "run_html"]


def build_time() -> int:
    """When this build happens, for notes whose content changed: SOURCE_DATE_EPOCH, else now."""
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if not value:
        return int(time.time())
    try:
        return int(value)
    except ValueError as e:
        raise CardsError(f"SOURCE_DATE_EPOCH={value!r} is not a whole number of seconds") from e


def select_modules(bank: Bank, wanted: Iterable[str]) -> list[Module]:
    """Resolve --module values ('05' or '05-数据并行') to modules; raise on unknown ones."""
    chosen: list[Module] = []
    for value in wanted:
        m = next(
            (mod for mod in bank.modules if value in (mod.folder, f"{mod.number:02d}", str(mod.number))),
            None,
        )
        if m is None:
            known = ", ".join(mod.folder for mod in bank.modules)
            raise CardsError(f"--module {value}: no such module in this bank (known: {known})")
        if m not in chosen:
            chosen.append(m)
    return chosen


# ---------------------------------------------------------------------------------------------
# The plan, each stage through the memo


def plan(paths: Paths, now: int, memo: Memo = NO_MEMO, progress: Progress | None = None) -> Plan:
    """Parse, match against the lock, digest each note's content, and compute the next lock."""
    bank, problems = load_bank(paths.questions, progress, parse=_memo_parse(memo))
    questions = bank.questions
    with Rendering(questions, memo, progress) as rendering:  # under way while the lock is read
        old = _load_lock(paths.lock_to_read(), memo)
        assignment = memo.get_or(
            "assign", (_lock_key(old), _questions_key(questions)), lambda: assign(questions, old)
        )
        guids = assignment.guids
        points = [(q, p, guids[(q.key, p.index)]) for q in questions for p in q.points]
        notices = _revision_notices(points, old, version_of(now), memo)
        rendered = rendering.result()
    content: dict[str, str] = {}
    for q, digests in zip(questions, _digests(questions, notices, guids, memo, rendered), strict=True):
        content.update((guids[(q.key, p.index)], d) for p, d in zip(q.points, digests, strict=True))
    notes = [(q, p, content[g]) for q, p, g in points]
    retired = RetiredNotes(replaced_by=_successors(assignment, points))
    draft = next_lock(old, guids, notes, nt.notetype_digest(), now, retired)
    retired_cards = _retired_cards(draft, bank, memo)
    retired.content = {c.guid: card_digest(c) for c in retired_cards}
    lock = next_lock(old, guids, notes, nt.notetype_digest(), now, retired)
    mods = {e.guid: e.mod for e in lock.entries}
    refs = [NoteRef(q, p, g, mods[g]) for q, p, g in points]
    media = {anki_name(path): path for q in questions for path in q.media.values()}
    result = Plan(
        bank, refs, content, lock, assignment, _changes(bank, refs, content, old, assignment), media
    )
    result.warnings, result.rendered, result.notices = problems.warnings, rendered, notices
    result.retired_cards = [replace(c, mod=mods[c.guid]) for c in retired_cards]
    result.version = next(iter(versions(lock)), None)
    return result


def _revision_notices(
    points: list[tuple[Question, MemoryPoint, str]], old: Lock | None, version: str, memo: Memo
) -> dict[str, Notice]:
    """The 修订 note of every card whose text changed in wording (now or before), by GUID."""
    before = old.by_guid() if old else {}
    notices = {}
    for _, p, guid in points:
        rev = carry(before.get(guid), p.cue, p.answer, version).revision
        if rev is not None:
            notices[guid] = memo.get_or("revision", (rev, p.cue, p.answer), partial(_revision, rev, p))
    return notices


def _revision(rev: Revision, p: MemoryPoint) -> Notice:
    cue = render_fragment(rev.cue, inline=True) if wording(rev.cue) != wording(p.cue) else None
    answer = None
    if wording(rev.answer) != wording(p.answer) or cue is None:
        answer = render_fragment(rev.answer, inline=True)
    return revision_notice(rev, cue, answer)


def _successors(assignment: Assignment, points: list[tuple[Question, MemoryPoint, str]]) -> dict[str, str]:
    """For each note retired now, the new card of its question most like it, if there is one."""
    out = {}
    for e in assignment.retired:
        new = [(q, p, g) for q, p, g in points if g in assignment.new and q.key == e.question]
        if new:
            best = max(new, key=lambda n: similarity(n[1].cue, e.cue) + similarity(n[1].answer, e.answer))
            out[e.guid] = best[2]
    return out


def _retired_cards(lock: Lock, bank: Bank, memo: Memo) -> list[Card]:
    """The retired notes that still ship (history.shipped_retired), as cards (mod set later)."""
    by_guid = lock.by_guid()
    cards = []
    for e in shipped_retired(lock):
        after = by_guid.get(e.replaced_by or "")
        successor = after.cue if after is not None and after.status == "active" else None
        parts = (e.cue, e.answer, successor)
        cue, answer, succ = memo.get_or("retired", parts, partial(_inline_all, *parts))
        cards.append(retired_card(e, cue or "", answer or "", succ, bank, e.mod))
    return cards


def _inline_all(*texts: str | None) -> list[str | None]:
    return [None if t is None else render_fragment(t, inline=True).anki for t in texts]


def _memo_parse(memo: Memo) -> Parse:
    """parse_source through the memo. A question with images is parsed again every time: its
    images are other files, checked as they are now."""

    def parse(src: SourceFile, root: Path) -> tuple[Question | None, list[Problem]]:
        parts = (
            src.source_key,
            src.body_line,
            src.front,
            src.front_lines,
            src.number,
            src.module_dir,
            str(root),
        )
        question, problems = memo.get_or("parse", parts, lambda: parse_source(src, root))
        if question is not None and question.media:
            return parse_source(src, root)
        return question, problems

    return parse


def _load_lock(path: Path, memo: Memo) -> Lock | None:
    raw = lock_file_bytes(path)
    if raw is None:
        return None
    return memo.get_or("lock", (hashlib.sha256(raw).digest(),), lambda: read_lock(raw, str(path)))


def _remember_lock(path: Path, lock: Lock, memo: Memo) -> None:
    """The lock a build wrote, kept under its bytes, so the next build (after an edit) need not
    parse 600 KB of YAML again: read_lock of those bytes gives back an equal Lock (tested)."""
    raw = lock_file_bytes(path)
    if raw is not None:
        memo.put(memo.key("lock", hashlib.sha256(raw).digest()), lock)


def _lock_key(lock: Lock | None) -> object:
    return (
        None
        if lock is None
        else [(e.guid, e.question, e.index, e.cue, e.answer, e.status, e.id) for e in lock.entries]
    )


def _questions_key(questions: list[Question]) -> object:
    return [(q.key, q.number, str(q.path), q.source_key) for q in questions]


def _question_key(q: Question) -> tuple[object, ...]:
    """What a question's rendering and note digests are made from, besides the code."""
    images = sorted((ref, anki_name(path)) for ref, path in q.media.items())
    return (q.source_key, str(q.path), q.module, q.number, q.tags, images)


def _digests(
    questions: list[Question],
    notices: dict[str, Notice],
    guids: dict[tuple[str, int], str],
    memo: Memo,
    rendered: dict[str, RenderedQuestion],
) -> list[list[str]]:
    """Each question's note digests."""

    def said(q: Question) -> list[Notice]:
        return [notices.get(guids[(q.key, p.index)], NO_NOTICE) for p in q.points]

    def digests(q: Question) -> list[str]:
        return note_digests(q, rendered[str(q.path)], said(q))

    return [memo.get_or("digests", (*_question_key(q), said(q)), partial(digests, q)) for q in questions]


PARALLEL_MIN_QUESTIONS = 40  # per worker: below this, starting a process costs more than it saves
MAX_WORKERS = 4


class Rendering:
    """Every given question rendered: from the memo, else by render_question, started at once.

    Rendering is pure CPU (Markdown, Pygments, nh3, MathML) and each question is independent, so
    with enough of them it runs over several processes, and runs while the caller goes on (plan()
    reads the lock meanwhile). Workers are started with 'spawn' (the same on Linux, macOS and
    Windows) and return plain data, so the result is the same however many there are. Use it in
    a with block: leaving it stops the workers, whatever happened.
    """

    def __init__(self, questions: list[Question], memo: Memo, progress: Progress | None = None):
        self._memo, self._progress = memo, progress
        self._keys = {str(q.path): memo.key("render", *_question_key(q)) for q in questions}
        self._done = {path: hit for path, key in self._keys.items() if (hit := memo.get(key)) is not None}
        self._todo = [q for q in questions if str(q.path) not in self._done]
        workers = min(len(self._todo) // PARALLEL_MIN_QUESTIONS, os.cpu_count() or 1, MAX_WORKERS)
        self._pool = _spawn_pool(workers) if workers >= 2 and _spawnable() else None
        self._pending: Iterable[RenderedQuestion] = (
            map(render_question, self._todo)
            if self._pool is None
            else self._pool.map(render_question, self._todo, chunksize=8)
        )

    def result(self) -> dict[str, RenderedQuestion]:
        """Wait for the work; every question's rendering, by path (the memo keeps the new ones)."""
        results, todo, self._todo = self._pending, self._todo, []
        if self._progress is not None and todo:
            results = self._progress(results, len(todo), "Rendering        ")
        for q, r in zip(todo, results, strict=True):
            self._done[str(q.path)] = r
            self._memo.put(self._keys[str(q.path)], r)
        return self._done

    def __enter__(self) -> Rendering:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)


def _spawn_pool(workers: int):  # type: ignore[no-untyped-def]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


def _spawnable() -> bool:
    """Whether 'spawn' can start workers: it re-imports the main script, so a program read from
    standard input or a string (python -, python -c) renders in its own process instead."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path is None or os.path.exists(path)


def _changes(
    bank: Bank, notes: list[NoteRef], content: dict[str, str], lock: Lock | None, assignment: Assignment
) -> dict[str, ModuleChanges]:
    old = lock.by_guid() if lock else {}
    changes = {m.label: ModuleChanges() for m in bank.modules}
    for n in notes:
        row = changes.setdefault(n.question.module.label, ModuleChanges())
        before = old.get(n.guid)
        if before is None or n.guid in assignment.new:
            row.added += 1
        elif before.content != content[n.guid] or before.status != "active":
            row.updated += 1
        else:
            row.unchanged += 1
    labels = {q.number: q.module.label for q in bank.questions}
    for e in assignment.retired:
        changes.setdefault(labels.get(e.number) or "(removed questions)", ModuleChanges()).retired += 1
    return changes


def render_pages(plan: Plan, memo: Memo) -> None:
    """What outputs need besides the questions (plan() rendered those): the bank's pages."""
    for page in plan.bank.pages:
        if page.path not in plan.page_bodies:  # every output not left alone asks again
            plan.page_bodies[page.path] = memo.get_or("page", (page.source_key,), partial(render_page, page))


# ---------------------------------------------------------------------------------------------
# Writing


def outputs_for(
    paths: Paths, selected: list[Module], branding: Branding, memo: Memo = NO_MEMO
) -> list[Output]:
    """What a build writes, in order: the deck, study.html, and last the lock (it vouches for them)."""
    outputs: list[Output] = [DeckOutput(paths.deck, selected)]
    if paths.study is not None:
        outputs.append(StudyOutput(paths.study, branding, memo.get_or))
    if paths.csv is not None:
        outputs.append(CsvOutput(paths.csv))
    if paths.changes is not None:
        outputs.append(ChangesOutput(paths.changes))
    outputs.append(LockOutput(paths.lock))
    return outputs


def write_through_memo(outputs: list[Output], plan: Plan, memo: Memo) -> list[Written]:
    """Write the outputs, leaving alone (not even rendering) each one whose file is as the
    memo recorded it for this very fingerprint."""
    records = {id(out): memo.key("output", str(out.path.resolve()), out.fingerprint(plan)) for out in outputs}

    def as_recorded(out: Output) -> bool:
        state = _file_state(out.path)
        if state is not None and memo.get(records[id(out)]) == state:
            return True
        render_pages(plan, memo)
        return False

    written = write_outputs(outputs, plan, as_recorded)
    for out in outputs:
        memo.put(records[id(out)], _file_state(out.path))
    return written


def _file_state(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


@dataclass(frozen=True)
class BuildRequest:
    """What the user asked of one build."""

    questions: Path
    output: Path | None = None
    lock: Path | None = None
    modules: tuple[str, ...] = ()
    mode: Mode = "write"
    branding: Branding = Branding()  # from the command line; the config files fill in the rest
    use_cache: bool = True
    now: int | None = None  # the build time; None: SOURCE_DATE_EPOCH or the clock


@dataclass(frozen=True)
class Summary:
    """What a build reports: per module what changed, what retired, what changed a lot."""

    changes: dict[str, ModuleChanges]
    retired: list[LockEntry]
    judgements: list[Judgement]
    notes: int  # every note of the bank
    deck_cards: int  # the deck's (a --module deck has fewer)

    @classmethod
    def of(cls, built: Plan, selected: list[Module]) -> Summary:
        cards = sum(1 for n in built.notes if not selected or n.question.module in selected)
        return cls(built.changes, built.retired, built.judgements, len(built.notes), cards)


@dataclass
class BuildResult:
    request: BuildRequest
    paths: Paths
    summary: Summary
    outputs: list[Output]
    built: Plan | None = None  # None when the build found its inputs as a build that wrote these files
    written: list[Written] = field(default_factory=list)
    stale: list[Path] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    selected: list[Module] = field(default_factory=list)  # the deck's modules; empty for all
    # with no lock to read: how many derived GUIDs the deck already on disk has (None: no such deck)
    no_lock: tuple[Path, int | None] | None = None

    @property
    def deck_cards(self) -> int:
        return self.summary.deck_cards


def run_build(request: BuildRequest, progress: Progress | None = None) -> BuildResult:
    """Plan the build, then write its outputs, or (mode 'check') compare them with the files.

    A build (or check) whose inputs, code and outputs on disk are exactly those a build left
    behind is that build again: the memo's record of it answers, and nothing is parsed.
    """
    paths = Paths.default(request.questions, request.output, request.lock, request.modules)
    problems = Collector()
    branding = load_branding(request.questions, problems, request.branding)
    writes = request.mode == "write"  # read-only runs take no lock and create nothing
    memo = Memo.default() if request.use_cache else NO_MEMO
    try:
        with build_lock(paths.lock) if writes else contextlib.nullcontext():
            inputs = _inputs(paths, request, branding) if request.mode != "dry-run" else None
            again = _as_recorded(memo, inputs, paths) if inputs is not None else None
            if again is not None:
                summary, warnings, selected = again
                outputs = outputs_for(paths, selected, branding)
                result = BuildResult(request, paths, summary, outputs, warnings=problems.warnings + warnings)
                result.selected = selected
                if writes:
                    for out in outputs:  # from a killed build; we hold the build lock
                        for leftover in leftover_temp_files(out.path):
                            leftover.unlink(missing_ok=True)
                    result.written = [Written(out.path, "unchanged") for out in outputs]
                return result
            result = _build(request, paths, branding, memo, progress)
            result.warnings = problems.warnings + result.warnings
            if inputs is not None and result.built is not None and not result.stale:
                _record(memo, inputs, result)
    finally:
        memo.close()
    return result


def _build(
    request: BuildRequest, paths: Paths, branding: Branding, memo: Memo, progress: Progress | None
) -> BuildResult:
    now = request.now if request.now is not None else build_time()
    had_lock = paths.lock_to_read().exists()
    built = plan(paths, now, memo, progress)
    selected = select_modules(built.bank, request.modules)
    outputs = outputs_for(paths, selected, branding, memo)
    result = BuildResult(request, paths, Summary.of(built, selected), outputs, built, warnings=built.warnings)
    result.selected = selected
    if not had_lock:
        result.no_lock = (paths.lock, _known_guids(paths.deck, built))
    if request.mode == "check":
        render_pages(built, memo)
        result.stale = stale_outputs(outputs, built)
    elif request.mode == "write":
        result.written = write_through_memo(outputs, built, memo)
        if Written(paths.lock, "written") in result.written:  # (else the memo has it already)
            _remember_lock(paths.lock, built.lock, memo)
    return result


# ---------------------------------------------------------------------------------------------
# A build that changed nothing: the inputs as a whole, and what the last build left


@dataclass(frozen=True)
class Inputs:
    """Everything a build reads, as hashes: the bank's files, the lock, the branding, the request."""

    bank: tuple[tuple[str, str], ...]  # (path, source key) of every Markdown file
    others: tuple[tuple[str, int, int], ...]  # (path, size, mtime) of every other file (images)
    request: tuple[object, ...]

    def key(self, memo: Memo, lock: bytes | None) -> str:
        return memo.key("build", self.bank, self.others, self.request, lock)


def _inputs(paths: Paths, request: BuildRequest, branding: Branding) -> Inputs | None:
    """The build's inputs, or None when the bank has problems (the full build reports them)."""
    found = Collector()
    listing = list_bank(paths.questions, found)
    if found.problems:
        return None
    files = [*listing.questions, *listing.pages]
    bank = tuple(sorted((str(f.path), f.source_key) for f in files))
    others = []
    for folder, _, names in os.walk(paths.questions):
        for name in names:
            if not name.endswith(".md"):
                st = os.stat(os.path.join(folder, name))
                others.append((os.path.join(folder, name), st.st_size, st.st_mtime_ns))
    req = (str(paths.deck.resolve()), str(paths.lock.resolve()), request.modules, branding)
    return Inputs(bank, tuple(sorted(others)), req)


def _lock_bytes(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _as_recorded(
    memo: Memo, inputs: Inputs, paths: Paths
) -> tuple[Summary, list[Problem], list[Module]] | None:
    """What the last build with these very inputs reported, if every output is as it left it."""
    hit = memo.get(inputs.key(memo, _lock_bytes(paths.lock_to_read())))
    if hit is None:
        return None
    summary, warnings, selected, states = hit
    if any(_file_state(Path(path)) != state for path, state in states):
        return None
    return summary, warnings, selected


def _record(memo: Memo, inputs: Inputs, result: BuildResult) -> None:
    """Remember this build under its inputs as the next build will find them (the lock it wrote)."""
    assert result.built is not None
    read = {(str(q.path), q.source_key) for q in result.built.bank.questions}
    read |= {(str(p.path), p.source_key) for p in result.built.bank.pages}
    if read != set(inputs.bank):
        return  # the bank changed while it was being built: the next build must look again
    summary = replace(result.summary, changes=_unchanged(result.summary.changes), retired=[], judgements=[])
    states = [(str(out.path), _file_state(out.path)) for out in result.outputs]
    record = (summary, result.built.warnings, result.selected, states)
    memo.put(inputs.key(memo, _lock_bytes(result.paths.lock)), record)


def _unchanged(changes: dict[str, ModuleChanges]) -> dict[str, ModuleChanges]:
    """The next build's report: every note of the bank unchanged."""
    return {label: ModuleChanges(unchanged=c.added + c.updated + c.unchanged) for label, c in changes.items()}


def _known_guids(deck: Path, built: Plan) -> int | None:
    """How many of the plan's notes the deck file already holds (by GUID); None without a deck."""
    try:
        notes = apkg_summary(deck.read_bytes())["notes"]
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, sqlite3.DatabaseError):
        return None
    have = {guid for guid, *_ in notes}
    return sum(1 for n in built.notes if n.guid in have)


def run_html(
    questions: Path, output: Path | None, branding: Branding, use_cache: bool = True
) -> tuple[Path, int, list[Problem]]:
    """Write study.html alone (no deck, no lock); return where it went, its question count, warnings."""
    problems = Collector()
    target = output or questions.resolve().parent / "decks" / STUDY_FILE
    full = load_branding(questions, problems, branding)
    memo = Memo.default() if use_cache else NO_MEMO
    try:
        page = plan(Paths.default(questions), build_time(), memo)
        write_through_memo([StudyOutput(target, full, memo.get_or)], page, memo)
    finally:
        memo.close()
    return target, len(page.bank.questions), problems.warnings + page.warnings


def run_changes(questions: Path, since: str | None, use_cache: bool = True) -> str:
    """The changelog (decks/CHANGES.md) of the bank as the next build would record it."""
    memo = Memo.default() if use_cache else NO_MEMO
    try:
        return changes_text(plan(Paths.default(questions), build_time(), memo), since)
    finally:
        memo.close()
