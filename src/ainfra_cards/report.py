"""What the commands print: the per-module tables and the lines about notes, as plain text."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from .build import BuildResult
from .history import RETIRED_SHIPS_FOR
from .ids import Judgement
from .lockfile import LockEntry
from .model import Bank
from .notetype import TAG_ROOT
from .outputs import Written
from .plan import ModuleChanges


def width(text: str) -> int:
    """Terminal columns: CJK characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def ljust(text: str, columns: int) -> str:
    return text + " " * max(0, columns - width(text))


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A text table: the first column left-aligned (CJK-aware), the others right-aligned."""
    first = max([width(str(r[0])) for r in rows] + [width(header[0])])
    widths = [max([len(str(r[i])) for r in rows] + [len(header[i])]) for i in range(1, len(header))]

    def line(cells: Sequence[object]) -> str:
        rest = "  ".join(f"{str(c):>{w}}" for c, w in zip(cells[1:], widths, strict=True))
        return f"{ljust(str(cells[0]), first)}  {rest}"

    return [line(header), *(line(r) for r in rows)]


def changes_table(changes: dict[str, ModuleChanges]) -> list[str]:
    """Per module: notes added, updated, unchanged and retired; modules with none are left out."""
    rows, totals = [], [0, 0, 0, 0]
    for label, c in sorted(changes.items()):
        counts = [c.added, c.updated, c.unchanged, c.retired]
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        if any(counts):
            rows.append([label, *counts])
    return table(["module", "added", "updated", "unchanged", "retired"], [*rows, ["total", *totals]])


def retired_line(e: LockEntry) -> str:
    return (
        f'retired: question {e.number} item {e.index} "{e.cue}" ({e.guid}): no longer in the bank; '
        f"the deck keeps shipping it for {RETIRED_SHIPS_FOR} versions, marked 退役 "
        f"(browse tag:{TAG_ROOT}::retired tag:{TAG_ROOT}::Q{e.number:03d})"
    )


def judgement_lines(judgements: list[Judgement]) -> list[str]:
    """Each kept GUID whose text changed a lot, old above new, so a maintainer can check it."""
    if not judgements:
        return []
    lines = [
        f"kept {len(judgements)} note(s) whose text changed a lot; each keeps its reviews. If one is "
        "really a new fact, give its item a new id ({#new-name}); to keep a note that was judged new, "
        "give the item its old GUID as id ({#aic:...})."
    ]
    for j in judgements:
        how = "explicit id" if j.by_id else f"cue {j.cue_similarity:.2f}, answer {j.answer_similarity:.2f}"
        lines += [
            f"  question {j.number} item {j.index} at {j.where} ({j.guid}; {how})",
            f"    - {j.old[0]}：{j.old[1]}",
            f"    + {j.new[0]}：{j.new[1]}",
        ]
    return lines


def no_lock_lines(result: BuildResult) -> list[str]:
    """Said first when there was no lock to read: "added" then means "derived", not "new"."""
    if result.no_lock is None:
        return []
    lock, known = result.no_lock
    lines = [
        f"no lock file at {lock}: every GUID was derived from its question number and cue, so a note "
        "whose cue has not changed since its lock was made keeps its GUID and its reviews; the table "
        "counts every card as added. Restore the lock from git if it was lost (git checkout -- <lock>)."
    ]
    if known is not None:
        total = result.summary.notes
        lines.append(
            f"of the {total} cards, {known} are already in {result.paths.deck} under the same GUID "
            f"(derived); new to it: {total - known}"
        )
    return lines


def build_report(result: BuildResult) -> list[str]:
    """The lines `build` and `build --dry-run` print."""
    summary = result.summary
    lines = no_lock_lines(result)
    shown = {m.label for m in result.selected}  # a --module deck: only its modules' rows
    lines += changes_table({k: v for k, v in summary.changes.items() if not shown or k in shown})
    lines += [retired_line(e) for e in summary.retired]
    lines += judgement_lines(summary.judgements)
    if result.request.mode == "dry-run":
        names = ", ".join(str(o.path) for o in result.outputs)
        return [*lines, f"would write (dry run): {names} ({result.deck_cards} cards)"]
    return [*lines, written_line(result.written, result.deck_cards)]


def written_line(written: list[Written], cards: int) -> str:
    done = [str(w.path) for w in written if w.outcome == "written"]
    same = [str(w.path) for w in written if w.outcome == "unchanged"]
    parts = [f"wrote: {', '.join(done)}"] if done else []
    parts += [f"unchanged: {', '.join(same)}"] if same else []
    return f"{'; '.join(parts)} ({cards} cards)"


def check_report(result: BuildResult) -> list[str]:
    """The lines `build --check` prints: each stale output, or that all are current."""
    if result.stale:
        return [f"{path}: stale; run `ainfra-cards build` and commit the result" for path in result.stale]
    names = ", ".join(str(o.path) for o in result.outputs)
    return [f"up to date: {names} ({result.deck_cards} cards)"]


def stats_table(bank: Bank) -> list[str]:
    rows = []
    for m in bank.modules:
        qs = bank.module_questions(m)
        rows.append([m.label, len(qs), sum(len(q.points) for q in qs)])
    total = ["total", len(bank.questions), sum(len(q.points) for q in bank.questions)]
    return table(["module", "questions", "cards"], [*rows, total])
