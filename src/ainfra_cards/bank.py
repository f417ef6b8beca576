"""Load a whole bank: read every file, parse every question, check the bank as a whole.

Parsing a file is a pure function of its text, so each parsed question is kept in the build
cache under a hash of the file and of the parser's own code; an unchanged file is read back
instead of parsed again. Its images are checked again every time (they are other files).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path, PurePosixPath
from typing import Any

from .cache import NO_CACHE, Cache
from .errors import CardsError, Collector, Problem
from .lockfile import LockEntry, load_lock
from .media import find_images
from .model import Bank, MemoryPoint, Module, Page, Question
from .parse import H1_RE, module_of, parse_question
from .sources import MODULE_DIR_RE, SourceFile, list_bank
from .util import code_key, digest

# progress(items, total, label) yields items while showing progress (the CLI draws a bar).
Progress = Callable[[Iterable[Any], int, str], Iterable[Any]]
_RANGE_RE = re.compile(r"(\d+)\s*[–—~\-－]\s*(\d+)")


def load_bank(
    root: Path, progress: Progress | None = None, strict: bool = True, cache: Cache = NO_CACHE
) -> tuple[Bank, Collector]:
    """Parse the bank at root; raise CardsError listing every error (unless strict is False)."""
    problems = Collector()
    listing = list_bank(root, problems)
    sources: Iterable[SourceFile] = listing.questions
    if progress is not None:
        sources = progress(listing.questions, len(listing.questions), "Parsing questions")
    questions = [q for src in sources if (q := _question(src, problems, root, cache)) is not None]
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


PARSE_CODE = ("sources.py", "parse.py", "items.py", "markup.py", "model.py")


def _question(src: SourceFile, problems: Collector, root: Path, cache: Cache) -> Question | None:
    """Parse one question file, or read it back from the cache if this very text was parsed."""
    source_key = src.source_key
    key = digest(
        code_key(*PARSE_CODE),
        source_key,
        src.body_line,
        src.front,
        src.front_lines,
        src.number,
        src.module_dir,
    )
    hit = cache.get("parse", key)
    if isinstance(hit, dict):
        return _question_from_cache(hit, src, source_key, problems, root)
    local = Collector()
    question = parse_question(src, local, root)
    problems.problems.extend(local.problems)
    if question is not None and not local.errors:
        question.source_key = source_key
        data = {
            "question": _question_data(question),
            "warnings": [asdict(w) for w in local.warnings],
            "has_images": bool(question.media),
        }
        cache.put("parse", key, data)
    return question


def _question_from_cache(
    hit: dict[str, Any], src: SourceFile, source_key: str, problems: Collector, root: Path
) -> Question | None:
    """A question read back from the cache; its warnings again, and its images checked again."""
    question = _question_from_data(hit["question"])
    problems.problems.extend(Problem(**w) for w in hit["warnings"])
    if hit["has_images"]:
        before = len(problems.errors)
        question.media = find_images(src.text, src.abspath, root, str(src.path), src.body_line, problems)
        if len(problems.errors) > before:
            return None
    question.source_key = source_key
    return question


def _question_data(q: Question) -> dict[str, Any]:
    data = asdict(q)
    data["path"] = str(q.path)
    del data["media"], data["source_key"]
    return data


def _question_from_data(data: dict[str, Any]) -> Question:
    data = dict(data)
    data["path"] = PurePosixPath(data["path"])
    data["module"] = Module(**data["module"])
    data["points"] = [MemoryPoint(**p) for p in data["points"]]
    data["extra_sections"] = [tuple(pair) for pair in data["extra_sections"]]
    return Question(**data)


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
