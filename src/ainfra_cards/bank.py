"""Load a whole bank: read every file, parse every question, check the bank as a whole.

Parsing one file is a pure function of the file (parse_source); load_bank takes the parser as
a parameter, so that build.py can hand it one that reuses earlier results.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .errors import CardsError, Collector, Problem
from .lockfile import LockEntry, load_lock
from .model import Bank, Page, Question
from .parse import H1_RE, module_of, parse_question
from .sources import MODULE_DIR_RE, SourceFile, list_bank

# progress(items, total, label) yields items while showing progress (the CLI draws a bar).
Progress = Callable[[Iterable[Any], int, str], Iterable[Any]]
# parse(source, bank root) -> the question (None if unusable) and the file's problems
Parse = Callable[[SourceFile, Path], "tuple[Question | None, list[Problem]]"]
_RANGE_RE = re.compile(r"(\d+)\s*[–—~\-－]\s*(\d+)")


def parse_source(src: SourceFile, root: Path) -> tuple[Question | None, list[Problem]]:
    """One question file parsed, with its problems."""
    local = Collector()
    question = parse_question(src, local, root)
    if question is not None:
        question.source_key = src.source_key
    return question, local.problems


def load_bank(
    root: Path, progress: Progress | None = None, strict: bool = True, parse: Parse = parse_source
) -> tuple[Bank, Collector]:
    """Parse the bank at root; raise CardsError listing every error (unless strict is False)."""
    problems = Collector()
    listing = list_bank(root, problems)
    sources: Iterable[SourceFile] = listing.questions
    if progress is not None:
        sources = progress(listing.questions, len(listing.questions), "Parsing questions")
    questions = []
    for src in sources:
        question, found = parse(src, root)
        problems.problems.extend(found)
        if question is not None:
            questions.append(question)
    questions.sort(key=lambda q: (q.number, str(q.path)))
    pages = [_page(src) for src in listing.pages]
    front = next((p for p in pages if str(p.path) == "README.md"), None)
    ranges = module_ranges(front.body) if front else {}
    _check_numbers(listing.questions, ranges, problems)
    _check_ids(listing.questions, problems)
    modules = sorted({q.module for q in questions}, key=lambda m: (m.number, m.name))
    for d in listing.module_dirs:  # a module folder with no questions yet still has a page
        m = module_of(d, {})
        if m not in modules and (root / d / "README.md").is_file():
            modules.append(m)
    modules.sort(key=lambda m: (m.number, m.name))
    title = front.title if front else root.name
    bank = Bank(title, questions, sorted(pages, key=_page_order), modules)
    if strict and problems.errors:
        raise CardsError(problems.problems)
    return bank, problems


def _page(src: SourceFile) -> Page:
    first = next((ln for ln in src.text.split("\n") if ln.strip()), "")
    m = H1_RE.match(first) if first.startswith("# ") else None
    return Page(src.path, m.group(1) if m else src.path.stem, src.text, src.source_key)


def _page_order(page: Page) -> tuple[int, str]:
    """Front page first, then other root pages (the guided tour), then module pages."""
    if str(page.path) == "README.md":
        return (0, "")
    return (1 if len(page.path.parts) == 1 else 2, str(page.path))


def module_ranges(front_page: str) -> dict[int, tuple[int, int]]:
    """Question-number ranges per module from the front page's table (its 题号 column)."""
    ranges: dict[int, tuple[int, int]] = {}
    column = None
    for line in front_page.split("\n"):
        if not line.strip().startswith("|"):
            column = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if column is None:
            column = next((i for i, c in enumerate(cells) if "题号" in c), None)
            continue
        if column >= len(cells) or not (m := _RANGE_RE.search(cells[column])):
            continue
        number = _module_number(cells[:column] + cells[column + 1 :])
        if number is not None:
            ranges[number] = (int(m.group(1)), int(m.group(2)))
    return ranges


def _module_number(cells: list[str]) -> int | None:
    for cell in cells:
        link = re.search(r"\]\(\.?/?(\d{1,3})-", cell)
        if link:
            return int(link.group(1))
    for cell in cells:
        m = MODULE_DIR_RE.match(re.sub(r"^\[|\]\(.*$", "", cell)) or re.match(r"^(\d{1,3})\b", cell)
        if m:
            return int(m.group(1))
    return None


def _check_numbers(
    sources: list[SourceFile], ranges: dict[int, tuple[int, int]], problems: Collector
) -> None:
    """Report duplicate numbers and numbers outside their module's range."""
    seen: dict[int, SourceFile] = {}
    for src in sorted(sources, key=lambda s: str(s.path)):
        number = src.number
        assert number is not None and src.module_dir is not None
        if number in seen:
            problems.error(
                str(src.path),
                1,
                f"question {number} is also {seen[number].path}; give one of them another number",
            )
        else:
            seen[number] = src
        module = module_of(src.module_dir, {})
        span = ranges.get(module.number)
        if span and not span[0] <= number <= span[1]:
            home = next((n for n, (lo, hi) in ranges.items() if lo <= number <= hi), None)
            where = f"; it belongs in module {home:02d}" if home is not None else ""
            problems.error(
                str(src.path),
                1,
                f"question {number} is outside module {module.number:02d}'s range "
                f"{span[0]}–{span[1]} (front page table){where}; move or renumber it",
            )


def _check_ids(sources: list[SourceFile], problems: Collector) -> None:
    """Report front-matter ids used by two questions: they would share one set of GUIDs."""
    seen: dict[str, SourceFile] = {}
    for src in sorted(sources, key=lambda s: str(s.path)):
        value = str(src.front.get("id") or "").strip()
        if not value:
            continue
        if value in seen:
            problems.error(
                str(src.path),
                src.front_lines.get("id", 2),
                f"front matter id {value!r} is also the id of {seen[value].path}; "
                "give each question its own id",
            )
        else:
            seen[value] = src


def check_bank(questions: Path, lock_path: Path) -> Collector:
    """Every problem of the bank and of its lock file (if there is one), errors and warnings."""
    _, problems = load_bank(questions, strict=False)
    try:
        load_lock(lock_path)
    except CardsError as e:
        problems.problems.extend(e.problems)
    return problems


def stats(questions: Path, lock_path: Path | None) -> tuple[Bank, list[Problem], list[LockEntry]]:
    """The bank, its warnings, and (given a lock) the memory points the lock records as retired."""
    bank, problems = load_bank(questions)
    lock = load_lock(lock_path) if lock_path is not None else None
    retired = [e for e in (lock.entries if lock else []) if e.status == "retired"]
    return bank, problems.warnings, retired
