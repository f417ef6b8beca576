"""The lock file: the GUID of every memory point, the text it was last built from, its times.

A learner's review history hangs on the note GUID. The lock records, per GUID, the question and
the cue and answer it was last built from (ids.py matches the bank against these), a digest of
the note's content and when that content last changed (so a re-import updates exactly the notes
that changed), and whether the item is still in the bank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from . import __version__
from .errors import CardsError, Problem, yaml_problem

LOCK_FORMAT = 1
GENERATOR = f"ainfra-cards {__version__}"
Status = Literal["active", "retired"]


@dataclass(frozen=True)
class Revision:
    """A note's earlier text, and the version whose build replaced it (see history.py)."""

    version: str
    cue: str
    answer: str


@dataclass
class LockEntry:
    """The lock's record of one note (the last five fields: see history.py)."""

    guid: str
    question: str  # the question's key: front-matter id, else its zero-padded number
    number: int
    index: int
    cue: str
    answer: str
    content: str = ""  # digest of everything the note holds; a change moves mod
    mod: int = 0  # when the note's content last changed (Unix seconds)
    status: Status = "active"  # "retired": gone from the bank, kept to restore its GUID
    id: str | None = None  # an explicit item id, once one is given
    added_in: str | None = None  # the version the note first appeared in
    changed_in: str | None = None  # the version its cue or answer last changed in wording
    history: list[Revision] = field(default_factory=list)  # earlier texts, oldest first
    retired_in: str | None = None  # the version it was retired in
    replaced_by: str | None = None  # the GUID of the card that took its place, if known


@dataclass
class Lock:
    """The whole lock file."""

    notetype_digest: str = ""
    notetype_mod: int = 0
    entries: list[LockEntry] = field(default_factory=list)
    # The YAML text of each note as the file it was read from has it, by GUID: an unchanged note
    # is written back as it was instead of being dumped again (dumping is most of writing a lock).
    blocks: dict[str, tuple[LockEntry, str]] = field(default_factory=dict, repr=False, compare=False)

    def by_guid(self) -> dict[str, LockEntry]:
        return {e.guid: e for e in self.entries}


def load_lock(path: Path) -> Lock | None:
    """Read a lock file; None if it does not exist. Raise CardsError if it is unusable."""
    raw = lock_file_bytes(path)
    return None if raw is None else read_lock(raw, str(path))


def lock_file_bytes(path: Path) -> bytes | None:
    """A lock file's bytes; None if it does not exist. Raise CardsError if it cannot be read."""
    if not path.exists():
        return None
    try:
        return path.read_bytes()
    except OSError as e:
        raise CardsError(Problem(str(path), 1, f"cannot read lock file: {e}")) from e


def read_lock(raw: bytes, where: str) -> Lock:
    """A lock file's bytes as a Lock (where names the file in errors)."""
    lock = _lock_from_data(_read_yaml(raw, where), where)
    lock.blocks = _note_blocks(raw.decode("utf-8", errors="replace"), lock.entries)
    return lock


NOTE_START = "\n- guid: "


def _note_blocks(text: str, entries: list[LockEntry]) -> dict[str, tuple[LockEntry, str]]:
    """Each note's text in the file, when the file is laid out as dump_lock writes it."""
    chunks = text.split(NOTE_START)[1:]
    if len(chunks) != len(entries):
        return {}
    blocks = {}
    for entry, chunk in zip(entries, chunks, strict=True):
        block = NOTE_START[1:] + chunk + ("" if chunk.endswith("\n") else "\n")
        if not block.startswith(f"- guid: {entry.guid}\n"):
            return {}  # not our layout (hand-edited, another emitter): dump everything
        blocks[entry.guid] = (entry, block)
    return blocks


def _read_yaml(raw: bytes, where: str) -> Any:
    import yaml

    try:
        return parse_lock_text(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CardsError(Problem(where, 1, f"cannot read lock file: {e}")) from e
    except yaml.YAMLError as e:
        problem = yaml_problem(where, e, "lock file")
        raise CardsError(
            Problem(
                where,
                problem.line,
                f"{problem.message}; restore it from git (`git checkout -- <lock>`) or resolve "
                "the merge conflict; it was not changed",
            )
        ) from e


def parse_lock_text(text: str) -> Any:
    """The lock's YAML as data (libyaml's C loader when PyYAML has it: 20x faster on big locks)."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - safe


def _lock_from_data(data: Any, where: str) -> Lock:
    def bad(msg: str) -> CardsError:
        return CardsError(Problem(where, 1, f"{msg}; restore the lock from git; it was not changed"))

    if not isinstance(data, dict) or "format" not in data:
        raise bad("not an ainfra-cards lock file (no 'format' key)")
    if not isinstance(data["format"], int) or data["format"] > LOCK_FORMAT:
        raise CardsError(
            Problem(
                where,
                1,
                f"lock format {data['format']!r} is newer than this ainfra-cards understands "
                f"({LOCK_FORMAT}); upgrade ainfra-cards (pip install -U .); the lock was not changed",
            )
        )
    notetype = data.get("notetype") or {}
    lock = Lock(str(notetype.get("digest", "")), int(notetype.get("mod", 0) or 0))
    seen: set[str] = set()
    for i, raw in enumerate(data.get("notes") or [], 1):
        try:
            entry = LockEntry(**{**raw, "history": [Revision(**r) for r in raw.get("history") or []]})
            entry.guid, entry.question = str(entry.guid), str(entry.question)
            entry.number, entry.index, entry.mod = int(entry.number), int(entry.index), int(entry.mod)
            entry.cue, entry.answer = str(entry.cue), str(entry.answer)
        except (TypeError, ValueError) as e:
            raise bad(f"note {i} of the lock is malformed ({e})") from e
        if not all(isinstance(v, str) for r in entry.history for v in (r.version, r.cue, r.answer)):
            raise bad(f"note {i} of the lock has a malformed history")
        if entry.status not in ("active", "retired") or not entry.guid:
            raise bad(f"note {i} of the lock has a bad guid or status {entry.status!r}")
        if entry.guid in seen:
            raise bad(f"GUID {entry.guid} appears twice in the lock (a bad merge?)")
        seen.add(entry.guid)
        lock.entries.append(entry)
    return lock


LOCK_HEADER = (
    "# ainfra-cards lock file: the Anki identity (GUID) of every memory point, and when each\n"
    "# note last changed. Commit it with the bank. Do not edit by hand; on a merge conflict,\n"
    "# keep both sides' notes (see README, 'what happens when').\n"
)


def lock_data(lock: Lock) -> dict[str, Any]:
    """The lock as the data its YAML text (dump_lock) parses to."""
    return {
        "format": LOCK_FORMAT,
        "notetype": {"digest": lock.notetype_digest, "mod": lock.notetype_mod},
        "notes": [_note_data(e) for e in _sorted_entries(lock)],
    }


def _sorted_entries(lock: Lock) -> list[LockEntry]:
    return sorted(lock.entries, key=lambda e: (e.status != "active", e.question, e.index, e.guid))


def dump_lock(lock: Lock, generator: str) -> str:
    """The lock as YAML text: deterministic, one block per note, readable in a diff.

    Equal to dumping the whole document at once; a note unchanged since the lock was read is
    copied from the file's own text.
    """
    entries = _sorted_entries(lock)
    head = {
        "format": LOCK_FORMAT,
        "generator": generator,
        "notetype": {"digest": lock.notetype_digest, "mod": lock.notetype_mod},
    }
    if not entries:
        return LOCK_HEADER + _yaml({**head, "notes": []})
    notes = []
    for e in entries:
        old = lock.blocks.get(e.guid)
        notes.append(old[1] if old is not None and old[0] == e else _yaml([_note_data(e)]))
    return LOCK_HEADER + _yaml(head) + "notes:\n" + "".join(notes)


def _note_data(e: LockEntry) -> dict[str, Any]:
    """One note's fields in the lock's order, as dataclasses.asdict gives them but 20x faster;
    id only once one is set. (A test checks that every field of LockEntry is here.)"""
    d: dict[str, Any] = {
        "guid": e.guid,
        "question": e.question,
        "number": e.number,
        "index": e.index,
        "cue": e.cue,
        "answer": e.answer,
        "content": e.content,
        "mod": e.mod,
        "status": e.status,
    }
    if e.id is not None:
        d["id"] = e.id
    for name in ("added_in", "changed_in"):
        if getattr(e, name) is not None:
            d[name] = getattr(e, name)
    if e.history:
        d["history"] = [{"version": r.version, "cue": r.cue, "answer": r.answer} for r in e.history]
    for name in ("retired_in", "replaced_by"):
        if getattr(e, name) is not None:
            d[name] = getattr(e, name)
    return d


def _yaml(data: Any) -> str:
    import yaml

    return yaml.dump(
        data,
        Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
        allow_unicode=True,
        sort_keys=False,
        width=4096,
        default_flow_style=False,
    )
