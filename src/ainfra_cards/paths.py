"""Where a build reads and writes (Paths), and the lock that keeps two builds from writing at once."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import CardsError, Problem
from .util import writing

DECK_FILE = "ainfra-cards.apkg"
LOCK_FILE = "ainfra-cards.lock.yaml"
STUDY_FILE = "study.html"
CHANGES_FILE = "CHANGES.md"
CSV_FILE = "ainfra-cards.csv"


@dataclass(frozen=True)
class Paths:
    """Where a build reads and writes."""

    questions: Path
    deck: Path
    lock: Path
    study: Path | None = None  # study.html; None for a deck of selected modules
    seed: Path | None = None  # the bank's own lock, read (never written) while `lock` does not exist

    @property
    def csv(self) -> Path | None:
        """The deck as CSV (Anki's text import, spreadsheets), written with the whole bank's outputs."""
        return None if self.study is None else self.deck.parent / CSV_FILE

    @property
    def changes(self) -> Path | None:
        """CHANGES.md, written with study.html (the whole bank's outputs) beside the deck."""
        return None if self.study is None else self.deck.parent / CHANGES_FILE

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
