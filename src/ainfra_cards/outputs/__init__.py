"""What a build writes: each output is a plug-in on one pipeline.

An output knows its path, a cheap fingerprint of everything in the plan that shapes its bytes,
how to render those bytes from the plan, and whether the file on disk is current (for
``build --check``). write_outputs() and stale_outputs() iterate over the same list, so a new
output format (a CSV, an app) is one more class here and one more entry in build.outputs_for().

write_outputs() writes in order, each file atomically and only if its bytes changed; the caller
puts the lock last (it vouches for the others), so a failed write leaves the lock as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from ..util import leftover_temp_files, write_bytes

if TYPE_CHECKING:
    from ..plan import Plan

WriteOutcome = Literal["written", "unchanged"]


class Output(Protocol):
    """One file a build produces."""

    path: Path

    def fingerprint(self, plan: Plan) -> str:
        """A digest of everything in the plan that shapes the bytes; cheap (no rendering)."""
        ...

    def render(self, plan: Plan) -> bytes:
        """The file's bytes."""
        ...

    def is_current(self, plan: Plan) -> bool:
        """Whether the file on disk holds what render() would give (as data, where bytes may vary)."""
        ...


@dataclass(frozen=True)
class Written:
    path: Path
    outcome: WriteOutcome


def write_outputs(
    outputs: list[Output], plan: Plan, as_recorded: Callable[[Output], bool] = lambda out: False
) -> list[Written]:
    """Write each output in order; one as_recorded() vouches for is left alone, not even rendered."""
    done = []
    for out in outputs:
        for leftover in leftover_temp_files(out.path):  # from a killed build; we hold the build lock
            leftover.unlink(missing_ok=True)
        if as_recorded(out):
            done.append(Written(out.path, "unchanged"))
            continue
        data = out.render(plan)
        if same_bytes(out.path, data):
            done.append(Written(out.path, "unchanged"))
        else:
            write_bytes(out.path, data)
            done.append(Written(out.path, "written"))
    return done


def same_bytes(path: Path, data: bytes) -> bool:
    try:
        return path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def stale_outputs(outputs: list[Output], plan: Plan) -> list[Path]:
    """The outputs whose file on disk is missing or differs from what this build would write."""
    return [out.path for out in outputs if not out.is_current(plan)]
