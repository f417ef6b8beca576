"""What a build writes: each output is a plug-in on one pipeline.

An output knows its path, a cheap fingerprint of everything that shapes its bytes, how to render
those bytes from the built bank, and whether the file on disk is current (for ``build --check``).
write_outputs() and stale_outputs() iterate over the same list, so a new output format (a CSV,
an app) is one more class here and one more entry in build.outputs_for().

Writing skips an output whose fingerprint and file are what the last build recorded (no render
at all), and never rewrites a file whose bytes would not change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ..cache import Cache
from ..util import leftover_temp_files, write_bytes

if TYPE_CHECKING:
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

    def is_current(self, built: Built) -> bool:
        """Whether the file on disk holds what render() would give (as data, where bytes may vary)."""
        ...


@dataclass(frozen=True)
class Written:
    path: Path
    outcome: WriteOutcome


def write_outputs(outputs: list[Output], built: Built, cache: Cache) -> list[Written]:
    """Write each output in order (the caller puts the lock last: it vouches for the others)."""
    done = []
    for out in outputs:
        for leftover in leftover_temp_files(out.path):  # from a killed build; we hold the build lock
            leftover.unlink(missing_ok=True)
        done.append(Written(out.path, _write_one(out, built, cache)))
    return done


def _write_one(out: Output, built: Built, cache: Cache) -> WriteOutcome:
    record_key = hashlib.sha256(str(out.path.resolve()).encode()).hexdigest()
    fingerprint = out.fingerprint(built)
    record = cache.get("output", record_key)
    if record == {"fingerprint": fingerprint, "file": _file_state(out.path)}:
        return "unchanged"
    data = out.render(built)
    outcome: WriteOutcome = "unchanged"
    if not _same_bytes(out.path, data):
        write_bytes(out.path, data)
        outcome = "written"
    cache.put("output", record_key, {"fingerprint": fingerprint, "file": _file_state(out.path)})
    return outcome


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
