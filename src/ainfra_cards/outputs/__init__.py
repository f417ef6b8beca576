"""What a build writes: each output is a plug-in on one pipeline.

An output knows its path, a cheap fingerprint of everything that shapes its bytes, how to render
those bytes from the built bank, and whether the file on disk is current (for ``build --check``).
write_outputs() and stale_outputs() iterate over the same list, so a new output format (a CSV,
an app) is one more class here and one more entry in build.outputs_for().

Writing skips an output whose fingerprint and file are what the last build recorded (no render
at all), and never rewrites a file whose bytes would not change.

Files are written by background threads while the next output renders: writing and syncing
wait on the disk, and an output may leave byte work that needs no bank (the deck's deflating)
to those threads too (see Output.start_render). Both release the GIL, so on two cores they cost
little. The last output (the lock, which vouches for the others) is written only once every
other file is in place, and not at all if one of them failed.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ..cache import Cache
from ..util import leftover_temp_files, write_bytes

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor

    from ..build import Built

WriteOutcome = Literal["written", "unchanged"]


class Output(Protocol):
    """One file a build produces."""

    path: Path

    def fingerprint(self, built: Built) -> str:
        """A digest of everything that shapes the bytes; cheap (no rendering)."""
        ...

    def render(self, built: Built) -> bytes:
        """The file's bytes."""
        ...

    def start_render(self, built: Built) -> Callable[[], bytes]:
        """render() in two steps: what needs the built bank, done now; and a function giving
        the bytes from that alone, which the writer thread calls (see write_outputs)."""
        ...

    def is_current(self, built: Built) -> bool:
        """Whether the file on disk holds what render() would give (as data, where bytes may vary)."""
        ...


@dataclass(frozen=True)
class Written:
    path: Path
    outcome: WriteOutcome


def write_outputs(outputs: list[Output], built: Built, cache: Cache) -> list[Written]:
    """Write each output (the caller puts the lock last: it vouches for the others).

    Each output renders here, in order; its bytes are finished, compared and written by a
    writer thread while the next output renders (see the module's docstring)."""
    jobs: list[tuple[Output, str, str, Future[WriteOutcome] | None]] = []
    with _Writer() as writer:
        for out in outputs:
            for leftover in leftover_temp_files(out.path):  # from a killed build; we hold the build lock
                leftover.unlink(missing_ok=True)
            record_key = hashlib.sha256(str(out.path.resolve()).encode()).hexdigest()
            fingerprint = out.fingerprint(built)
            record = cache.get("output", record_key)
            if record == {"fingerprint": fingerprint, "file": _file_state(out.path)}:
                jobs.append((out, record_key, fingerprint, None))  # as recorded: not even rendered
                continue
            job = writer.write(out.path, out.start_render(built), last=out is outputs[-1])
            jobs.append((out, record_key, fingerprint, job))
        done = []
        for out, record_key, fingerprint, pending in jobs:
            if pending is None:
                done.append(Written(out.path, "unchanged"))
                continue
            done.append(Written(out.path, pending.result()))
            cache.put("output", record_key, {"fingerprint": fingerprint, "file": _file_state(out.path)})
    return done


class _Writer:
    """Threads that write files as they are given, but the last: it waits until every other
    file is written, and fails if one of them failed. Started by the first write (a build that
    writes nothing starts no thread, nor imports what it takes).

    While they run, the GIL is handed over every WRITER_SWITCH seconds instead of Python's 5 ms:
    a writer thread takes the GIL back after each system call, and would otherwise wait most of
    an interval each time, while the main thread renders (about 30 ms over one build)."""

    WORKERS = 2  # the deck's deflating and study.html's sync can overlap
    WRITER_SWITCH = 0.0005

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._jobs: list[Future[WriteOutcome]] = []
        self._switch = sys.getswitchinterval()

    def write(self, path: Path, finish: Callable[[], bytes], last: bool = False) -> Future[WriteOutcome]:
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.WORKERS, thread_name_prefix="ainfra-cards-writer")
            sys.setswitchinterval(min(self._switch, self.WRITER_SWITCH))
        job = self._pool.submit(_store, path, finish, list(self._jobs) if last else [])
        self._jobs.append(job)
        return job

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if self._pool is not None:  # on an error, a write already begun finishes (it is atomic)
            try:
                self._pool.shutdown(wait=True, cancel_futures=kind is not None)
            finally:
                sys.setswitchinterval(self._switch)


def _store(path: Path, finish: Callable[[], bytes], after: list[Future[WriteOutcome]]) -> WriteOutcome:
    """A writer thread's part: once the writes it comes after have succeeded, the bytes; then
    the file, unless it holds them already."""
    for job in after:
        job.result()  # raises what it raised: the lock is not written after a failed write
    data = finish()
    if _same_bytes(path, data):
        return "unchanged"
    write_bytes(path, data)
    return "written"


def rendered(data: bytes) -> Callable[[], bytes]:
    """start_render() for an output with no work left for the writer thread."""
    return lambda: data


def _file_state(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _same_bytes(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def stale_outputs(outputs: list[Output], built: Built) -> list[Path]:
    """The outputs whose file on disk is missing or differs from what this build would write."""
    return [out.path for out in outputs if not out.is_current(built)]
