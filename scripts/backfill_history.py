#!/usr/bin/env python3
"""Fill in a lock's history (added_in, changed_in, history, retired_in) from its git history.

usage: python scripts/backfill_history.py [LOCK]   (default: decks/ainfra-cards.lock.yaml)

Locks written before history.py existed record no versions. This replays every committed
version of the lock, oldest first, dating each by its commit (UTC): a note's first commit is
the version it was added in, each commit that changed its cue or answer in wording (as
history.reworded() judges it) adds its earlier text to its history, and the first commit in
which it is retired is the version it was retired in. Fields a lock already has are kept.
Run it once, then `ainfra-cards build`.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from ainfra_cards.history import reworded, version_of
from ainfra_cards.lockfile import GENERATOR, LockEntry, Revision, dump_lock, load_lock, read_lock


def committed_locks(path: Path) -> list[tuple[str, bytes]]:
    """(version, bytes) of every commit that changed the lock file, oldest first."""
    top = Path(subprocess.check_output(["git", "rev-parse", "--show-toplevel"], text=True).strip())
    rel = path.resolve().relative_to(top).as_posix()
    log = subprocess.check_output(
        ["git", "log", "--reverse", "--format=%H %ct", "--", rel], text=True, cwd=top
    )
    out = []
    for line in log.split("\n"):
        if line.strip():
            sha, ts = line.split()
            out.append(
                (version_of(int(ts)), subprocess.check_output(["git", "show", f"{sha}:{rel}"], cwd=top))
            )
    return out


def replay(commits: list[tuple[str, bytes]]) -> dict[str, LockEntry]:
    """Each GUID's history as the commits tell it, on the entry of the last commit that has it."""
    seen: dict[str, LockEntry] = {}
    for version, raw in commits:
        for e in read_lock(raw, "lock").entries:
            before = seen.get(e.guid)
            if before is None:
                seen[e.guid] = replace(e, added_in=version, changed_in=version, history=[])
                continue
            history, changed = list(before.history), before.changed_in
            if reworded(before, e.cue, e.answer):
                history.append(Revision(version, before.cue, before.answer))
                changed = version
            retired_in = before.retired_in
            if e.status == "retired" and retired_in is None:
                retired_in = version
            seen[e.guid] = replace(
                e, added_in=before.added_in, changed_in=changed, history=history, retired_in=retired_in
            )
    return seen


def main() -> None:
    path = Path(sys.argv[1] if len(sys.argv) > 1 else "decks/ainfra-cards.lock.yaml")
    lock = load_lock(path)
    if lock is None:
        sys.exit(f"{path}: no such lock")
    known = replay(committed_locks(path))
    filled = 0
    for i, e in enumerate(lock.entries):
        k = known.get(e.guid)
        if k is None or e.added_in is not None:
            continue
        lock.entries[i] = replace(
            e, added_in=k.added_in, changed_in=k.changed_in, history=k.history, retired_in=k.retired_in
        )
        filled += 1
    path.write_text(dump_lock(lock, GENERATOR), encoding="utf-8")
    revised = sum(1 for e in lock.entries if e.history)
    print(f"{path}: history filled in for {filled} note(s); {revised} with earlier texts")


if __name__ == "__main__":
    main()
