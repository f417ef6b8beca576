"""The build, top to bottom: bank -> GUIDs -> rendered cards -> outputs. Gather, then write.

plan() parses the bank, matches it against the lock, renders every piece of Markdown once
(through the cache) and computes the next lock; it writes nothing. run_build() then hands the
plan to each output in turn: write it, or (``--check``) say whether the file on disk is current.
A build that fails or is killed leaves the previous outputs as they were: each is written to a
temporary file and renamed into place, the lock last.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Literal

from . import notetype as nt
from .bank import Progress, load_bank
from .cache import NO_CACHE, Cache
from .config import Branding, load_branding
from .errors import CardsError, Collector, Problem
from .ids import Assignment, Judgement, assign, recall_forms
from .lockfile import GENERATOR, Lock, LockEntry, dump_lock, load_lock, next_lock
from .media import anki_name
from .model import Bank, Card, MemoryPoint, Module, Question
from .outputs import Output, Written, stale_outputs, write_outputs
from .outputs.deck import DeckOutput
from .outputs.lock import LockOutput
from .outputs.study import StudyOutput
from .render import RenderedQuestion, card_fields, question_fields, render_key, render_question
from .util import digest, without_cycle_collector, writing

DECK_FILE = "ainfra-cards.apkg"
LOCK_FILE = "ainfra-cards.lock.yaml"
STUDY_FILE = "study.html"
Mode = Literal["write", "dry-run", "check"]


@dataclass(frozen=True)
class Paths:
    """Where a build reads and writes."""

    questions: Path
    deck: Path
    lock: Path
    study: Path | None = None  # study.html; None for a deck of selected modules
    seed: Path | None = None  # the bank's own lock, read (never written) while `lock` does not exist

    @classmethod
    def default(
        cls,
        questions: Path,
        output: Path | None = None,
        lock: Path | None = None,
        modules: tuple[str, ...] = (),
        study: Path | None = None,
    ) -> Paths:
        """Every output goes beside the deck: decks/ beside the bank folder (so each bank has its
        own), unless output names another file. A lock written elsewhere starts from the bank's
        own lock (so GUIDs carry over) and leaves that one untouched."""
        decks = questions.resolve().parent / "decks"
        if output is None:
            suffix = "".join(f"-{m.split('-')[0]}" for m in modules)
            output = decks / (DECK_FILE if not modules else f"ainfra-cards{suffix}.apkg")
        if study is None and not modules:
            study = output.parent / STUDY_FILE
        if lock is None:
            lock = output.parent / LOCK_FILE
        home = decks / LOCK_FILE
        seed = home if lock.resolve() != home.resolve() else None
        return cls(questions, output, lock, study, seed)

    def lock_to_read(self) -> Path:
        return self.lock if self.lock.exists() or self.seed is None else self.seed


@dataclass
class ModuleChanges:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    retired: int = 0


@dataclass
class Rendered:
    """The parsed bank, each question rendered on first use (through the cache)."""

    bank: Bank
    cache: Cache
    warnings: list[Problem] = field(default_factory=list)
    _memo: dict[str, RenderedQuestion] = field(default_factory=dict, repr=False)
    _keys: dict[str, str] = field(default_factory=dict, repr=False)  # see _digests_key
    guids: dict[tuple[str, int], str] = field(default_factory=dict)  # (question key, item) -> note GUID

    def guid(self, q: Question, p: MemoryPoint) -> str | None:
        return self.guids.get((q.key, p.index))

    def rendered(self, q: Question) -> RenderedQuestion:
        key = str(q.path)
        if key not in self._memo:
            self._memo[key] = render_question(q, self.cache)
        return self._memo[key]

    def media_names(self, q: Question) -> list[str]:
        return [anki_name(path) for path in q.media.values()]


@dataclass(frozen=True)
class NoteRef:
    """A memory point and the note it is: its GUID and the time its content last changed."""

    question: Question
    point: MemoryPoint
    guid: str
    mod: int


@dataclass
class Built(Rendered):
    """Everything a build would write, computed without writing anything.

    The notes' rendered fields are made only when something asks for cards (writing a deck): a
    build whose outputs are all current needs only each note's content digest, which the cache
    keeps per question file.
    """

    notes: list[NoteRef] = field(default_factory=list)  # every memory point of the bank, in order
    content: dict[str, str] = field(default_factory=dict)  # guid -> digest of the note's content
    lock: Lock = field(default_factory=Lock)
    changes: dict[str, ModuleChanges] = field(default_factory=dict)
    assignment: Assignment = field(default_factory=lambda: Assignment({}, set(), []))
    media: dict[str, Path] = field(default_factory=dict)  # Anki media name -> file
    _cards: list[Card] | None = field(default=None, repr=False)

    @property
    def cards(self) -> list[Card]:
        """Every note with its rendered fields, in bank order."""
        if self._cards is None:
            by_question: dict[int, dict[int, NoteRef]] = {}
            for n in self.notes:
                by_question.setdefault(id(n.question), {})[n.point.index] = n
            self._cards = []
            for q in self.bank.questions:
                self._cards += _question_cards(q, _note_fields(self, q), by_question.get(id(q), {}))
        return self._cards

    @property
    def lock_text(self) -> str:
        return dump_lock(self.lock, GENERATOR)

    @property
    def retired(self) -> list[LockEntry]:
        return self.assignment.retired

    @property
    def judgements(self) -> list[Judgement]:
        return self.assignment.judgements


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


def render_bank(questions: Path, cache: Cache = NO_CACHE, progress: Progress | None = None) -> Rendered:
    """Parse the bank and give each memory point its GUID from the bank's lock (read only);
    questions are rendered when first asked for."""
    bank, problems = load_bank(questions, progress, cache=cache)
    lock = load_lock(Paths.default(questions).lock_to_read(), cache)
    recall_forms(cache, lock)
    guids = assign(bank.questions, lock).guids
    return Rendered(bank, cache, problems.warnings, guids=guids)


def plan(paths: Paths, now: int, cache: Cache = NO_CACHE, progress: Progress | None = None) -> Built:
    """Parse, match against the lock, digest each note's content, and compute the next lock."""
    bank, problems = load_bank(paths.questions, progress, cache=cache)
    page = Rendered(bank, cache, problems.warnings)
    questions = page.bank.questions
    old = load_lock(paths.lock_to_read(), cache)
    recall_forms(cache, old)  # what matching would compute, cached when that lock was written
    assignment = assign(questions, old)
    content: dict[str, str] = {}
    cached = {str(q.path): d for q in questions if (d := _cached_digests(page, q)) is not None}
    _render_in_parallel(page, [q for q in questions if str(q.path) not in cached], progress)
    for q in questions:
        hit = cached.get(str(q.path))
        digests = hit if hit is not None else _content_digests(page, q)
        content.update(
            (assignment.guids[(q.key, p.index)], d) for p, d in zip(q.points, digests, strict=True)
        )
    points = [(q, p, assignment.guids[(q.key, p.index)]) for q in questions for p in q.points]
    lock = next_lock(
        old, assignment.guids, [(q, p, content[g]) for q, p, g in points], nt.notetype_digest(), now
    )
    mods = {e.guid: e.mod for e in lock.entries}
    notes = [NoteRef(q, p, g, mods[g]) for q, p, g in points]
    media = {anki_name(path): path for q in questions for path in q.media.values()}
    changes = _changes(page.bank, notes, content, old, assignment)
    return Built(
        bank=page.bank,
        cache=cache,
        warnings=page.warnings,
        _memo=page._memo,
        _keys=page._keys,
        guids=assignment.guids,
        notes=notes,
        content=content,
        lock=lock,
        changes=changes,
        assignment=assignment,
        media=media,
    )


def _tags(q: Question) -> list[str]:
    tags = [f"{nt.TAG_ROOT}::{q.module.slug}", f"{nt.TAG_ROOT}::Q{q.number:03d}", *q.tags]
    return sorted(set(tags), key=tags.index)


NoteFields = tuple[dict[str, str], list[tuple[str, str]]]  # shared fields; each point's Front, Back


def _question_cards(q: Question, fields: NoteFields, by_point: dict[int, NoteRef]) -> list[Card]:
    """The notes of one question (by item number) with their rendered fields."""
    shared, points = fields
    tags = _tags(q)
    return [
        Card(
            by_point[p.index].guid,
            by_point[p.index].mod,
            {"Front": front, "Back": back, **shared},
            tags,
            q.module,
            q.number,
        )
        for p, (front, back) in zip(q.points, points, strict=True)
    ]


def _note_fields(page: Rendered, q: Question) -> NoteFields:
    """One question's note fields, from the cache when this file was rendered before.

    Kept apart from the content digests (which a build that changed nothing is content with):
    only a build that writes a deck reads them, and then no unchanged question is rendered.
    """
    key = _digests_key(page, q)
    hit = page.cache.get("fields", key)
    if (
        isinstance(hit, list)
        and len(hit) == 2
        and isinstance(hit[0], dict)
        and all(isinstance(v, str) for v in hit[0].values())
        and isinstance(hit[1], list)
        and len(hit[1]) == len(q.points)
        and all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)
            for pair in hit[1]
        )
    ):
        return hit[0], [(front, back) for front, back in hit[1]]
    r = page.rendered(q)
    fields = question_fields(q, r), [(cue.anki, answer.anki) for cue, answer in r.points]
    page.cache.put("fields", key, fields)
    return fields


def _digests_key(page: Rendered, q: Question) -> str:
    """The cache name of one question's note digests and fields (asked for twice per build)."""
    key = page._keys.get(str(q.path))
    if key is None:
        parts = (q.source_key, str(q.path), q.module, q.number, q.tags, sorted(page.media_names(q)))
        key = page._keys[str(q.path)] = digest(render_key(), *parts)
    return key


def _cached_digests(page: Rendered, q: Question) -> list[str] | None:
    hit = page.cache.get("cards", _digests_key(page, q))
    return hit if isinstance(hit, list) and len(hit) == len(q.points) else None


PARALLEL_MIN_QUESTIONS = 24  # per worker: below this, starting a process costs more than it saves
MAX_WORKERS = 4
_WORKER_PAGE: Rendered | None = None  # the page a forked worker inherits (set only around a pool)


def _render_in_parallel(page: Rendered, todo: list[Question], progress: Progress | None) -> None:
    """Render the questions the cache does not have, split over the machine's cores.

    Rendering is pure CPU (Markdown, Pygments, nh3, MathML) and each question is independent,
    so on a cold build two processes nearly halve it. Forked workers share the parsed bank;
    each sends back its RenderedQuestions (plain strings) and writes its own cache entries.
    """
    global _WORKER_PAGE
    workers = min(len(todo) // PARALLEL_MIN_QUESTIONS, os.cpu_count() or 1, MAX_WORKERS)
    if workers < 2 or "fork" not in _multiprocessing().get_all_start_methods():
        items: Iterable[Question] = todo
        if progress is not None and todo:
            items = progress(todo, len(todo), "Rendering        ")
        for q in items:
            page.rendered(q)
        return
    chunks = [todo[i::workers] for i in range(workers)]
    _WORKER_PAGE = page
    try:
        with _multiprocessing().get_context("fork").Pool(workers) as pool:
            results = pool.map(_render_chunk, [[str(q.path) for q in chunk] for chunk in chunks])
    finally:
        _WORKER_PAGE = None
    for chunk, rendered in zip(chunks, results, strict=True):
        page._memo.update(zip((str(q.path) for q in chunk), rendered, strict=True))


def _multiprocessing() -> ModuleType:
    import multiprocessing  # only when rendering is split: importing it costs 15 ms

    return multiprocessing


def _render_chunk(paths: list[str]) -> list[RenderedQuestion]:
    assert _WORKER_PAGE is not None
    _WORKER_PAGE.cache.detach()  # this process's entries go to files; the parent keeps the bundle
    by_path = {str(q.path): q for q in _WORKER_PAGE.bank.questions}
    return [render_question(by_path[p], _WORKER_PAGE.cache) for p in paths]


def _content_digests(page: Rendered, q: Question) -> list[str]:
    """Each note's content digest for one question: what its fields, tags and deck hash to.

    Kept in the cache under everything the fields are made from, so a build that changed
    nothing renders nothing.
    """
    key = _digests_key(page, q)
    r = page.rendered(q)
    shared, tags, deck = question_fields(q, r), _tags(q), nt.deck_id(q.module.number)
    digests = [digest(card_fields(shared, cue, answer), tags, deck) for cue, answer in r.points]
    page.cache.put("cards", key, digests)
    return digests


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


def outputs_for(paths: Paths, selected: list[Module], branding: Branding) -> list[Output]:
    """What a build writes, in order: the deck, study.html, and last the lock (it vouches for them)."""
    outputs: list[Output] = [DeckOutput(paths.deck, selected)]
    if paths.study is not None:
        outputs.append(StudyOutput(paths.study, branding))
    outputs.append(LockOutput(paths.lock))
    return outputs


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


@dataclass
class BuildResult:
    request: BuildRequest
    paths: Paths
    built: Built
    outputs: list[Output]
    written: list[Written] = field(default_factory=list)
    stale: list[Path] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    selected: list[Module] = field(default_factory=list)  # the deck's modules; empty for all

    @property
    def deck_cards(self) -> int:
        return sum(1 for n in self.built.notes if not self.selected or n.question.module in self.selected)


@without_cycle_collector
def run_build(request: BuildRequest, progress: Progress | None = None) -> BuildResult:
    """Plan the build, then write its outputs, or (mode 'check') compare them with the files."""
    paths = Paths.default(request.questions, request.output, request.lock, request.modules)
    cache = Cache.default() if request.use_cache else NO_CACHE
    # what the last build of this deck used, in one read (else what the bank's whole deck used)
    cache.open_bundle(str(paths.deck.resolve()), str(Paths.default(request.questions).deck.resolve()))
    problems = Collector()
    branding = load_branding(request.questions, problems, request.branding)
    writes = request.mode == "write"  # read-only runs take no lock and create nothing
    with build_lock(paths.lock) if writes else contextlib.nullcontext():
        now = request.now if request.now is not None else build_time()
        built = plan(paths, now, cache, progress)
        selected = select_modules(built.bank, request.modules)
        outputs = outputs_for(paths, selected, branding)
        warnings = problems.warnings + built.warnings
        result = BuildResult(request, paths, built, outputs, warnings=warnings, selected=selected)
        if request.mode == "check":
            result.stale = stale_outputs(outputs, built)
        elif writes:
            result.written = write_outputs(outputs, built, cache)
            cache.close_bundle()
            cache.sweep()
        cache.close_bundle(rebundle=False)  # a read-only run keeps its entries, not a bundle
    return result


@without_cycle_collector
def run_html(
    questions: Path, output: Path | None, branding: Branding, use_cache: bool = True
) -> tuple[Path, int, list[Problem]]:
    """Write study.html alone (no deck, no lock); return where it went, its question count, warnings."""
    problems = Collector()
    target = output or questions.resolve().parent / "decks" / STUDY_FILE
    full = load_branding(questions, problems, branding)
    cache = Cache.default() if use_cache else NO_CACHE
    cache.open_bundle(str(target.resolve()), str(Paths.default(questions).deck.resolve()))
    page = render_bank(questions, cache)
    write_outputs([StudyOutput(target, full)], page, page.cache)  # type: ignore[arg-type]
    cache.close_bundle()
    return target, len(page.bank.questions), problems.warnings + page.warnings


@contextlib.contextmanager
def build_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock for the read-lock/write-lock cycle; fail clearly if it is taken.

    The marker file beside the lock is removed when the build ends. A build that opened the
    marker just before it was removed would hold a lock nobody else sees, so after locking it
    checks that the file it locked is still the one at the path, and tries again if not.
    """
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; builds there must not overlap
        yield
        return
    marker = lock_path.with_name(f".{lock_path.name}.building")
    with writing(lock_path):
        lock_path.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(MARKER_TRIES):
        with writing(lock_path):
            f = open(marker, "a+")  # noqa: SIM115 - held open for the whole build
        with f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as e:
                raise CardsError(Problem(str(lock_path), 1, BUSY)) from e
            if not _same_file(f, marker):
                continue  # removed by the build that just finished: lock the new one instead
            try:
                yield
            finally:
                marker.unlink(missing_ok=True)  # before unlocking: nobody may lock a removed file
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            return
    raise CardsError(Problem(str(lock_path), 1, "could not take the build lock; run the build again"))


MARKER_TRIES = 5
BUSY = "another ainfra-cards build is writing this lock; wait for it to finish and run again"


def _same_file(f: object, path: Path) -> bool:
    try:
        return os.fstat(f.fileno()).st_ino == os.stat(path).st_ino  # type: ignore[attr-defined]
    except OSError:
        return False
