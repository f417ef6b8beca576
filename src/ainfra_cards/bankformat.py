"""The bank's own format (docs/贡献指南.md), checked file by file: `ainfra-cards check --format`.

The exporter reads looser banks too (see parse.py and items.py); this is the stricter shape this
bank keeps so every question teaches the same way: five sections in order, an explanation of at
least 800 characters, 3-8 talking points, 2-6 primary sources, 3-6 memory points written as
`N. **提示**：答案`, relative links that resolve, and a guided tour that links every question.
"""

from __future__ import annotations

import re
from pathlib import Path

from .errors import Collector

SECTIONS = ("题目", "完整讲解", "面试要点", "参考资料", "记忆要点")
NAV = "[返回模块](./README.md) | [返回总览](../README.md)"
GUIDE = "305题漫游指南.md"
MIN_EXPLANATION = 800
TALKING_POINTS = (3, 8)
SOURCES = (2, 6)
MEMORY_POINTS = (3, 6)
MAX_CUE, MAX_ANSWER = 40, 110
_POINT_RE = re.compile(r"^(\d+)\. \*\*([^*]+)\*\*：(.+)$")
# a source item: a bullet with an https link (or several), then " — " and what it backs
_SOURCE_RE = re.compile(r"^[-*] .*?\[[^\]]+\]\((https://(?:[^()\s]|\([^()\s]*\))+)\).*?\s—\s+\S")
_BULLET_RE = re.compile(r"^[-*] \S")
_LINK_RE = re.compile(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)")
_FENCE_RE = re.compile(r"```.*?```", re.S)
_QUESTION_RE = re.compile(r"^\d{3}-[^\s/\\:*?\"<>|#%]+\.md$")


def check_format(root: Path, problems: Collector) -> None:
    """Every departure of the bank at root from its format, as path:line problems."""
    questions = sorted(p for p in root.glob("*/*.md") if _QUESTION_RE.match(p.name))
    for path in questions:
        check_question_format(path, root, problems)
    for page in [root / "README.md", root / GUIDE, *sorted(root.glob("*/README.md"))]:
        if page.is_file():
            _check_links(page, root, page.read_text("utf-8", errors="replace"), problems)
        else:
            problems.error(
                _rel(page, root),
                1,
                "missing page; the front page, the tour and every module page belong in the bank",
            )
    tour = root / GUIDE
    if tour.is_file():
        text = tour.read_text("utf-8", errors="replace")
        linked = {(tour.parent / t).resolve() for t in _LINK_RE.findall(text)}
        for path in questions:
            if path.resolve() not in linked:
                problems.error(
                    _rel(tour, root),
                    1,
                    f"the guided tour does not link {_rel(path, root)}; add a stop for it",
                )


def check_question_format(path: Path, root: Path, problems: Collector) -> None:
    rel = _rel(path, root)
    lines = path.read_text("utf-8", errors="replace").split("\n")
    heads = [(i, line[3:].strip()) for i, line in enumerate(lines, 1) if line.startswith("## ")]
    names = [name for _, name in heads]
    for name in SECTIONS:
        if names.count(name) != 1:
            problems.error(
                rel, 1, f"section '## {name}' must appear exactly once (found {names.count(name)})"
            )
    if all(names.count(n) == 1 for n in SECTIONS):
        if [names.index(n) for n in SECTIONS] != sorted(names.index(n) for n in SECTIONS):
            problems.error(rel, 1, f"sections out of order; they go {', '.join(SECTIONS)}")
        if names[-1] != "记忆要点":
            problems.error(rel, heads[-1][0], "no section may follow 记忆要点; move it above 参考资料")

    def section(name: str) -> tuple[int, list[str]]:
        for k, (line, head) in enumerate(heads):
            if head == name:
                end = heads[k + 1][0] - 1 if k + 1 < len(heads) else len(lines)
                return line, lines[line:end]
        return 0, []

    _check_explanation(rel, *section("完整讲解"), problems)
    _check_count(rel, *section("面试要点"), _BULLET_RE, TALKING_POINTS, "面试要点 bullets", problems)
    _check_sources(rel, *section("参考资料"), problems)
    _check_points(rel, *section("记忆要点"), problems)
    if NAV not in (line.strip() for line in lines[-4:]):
        problems.error(rel, len(lines), f"the file must end with the line {NAV}")
    _check_links(path, root, "\n".join(lines), problems)


def _check_explanation(rel: str, start: int, body: list[str], problems: Collector) -> None:
    size = len(re.sub(r"\s", "", _FENCE_RE.sub("", "\n".join(body))))
    if start and size < MIN_EXPLANATION:
        problems.error(
            rel, start, f"完整讲解 has {size} characters outside code; write at least {MIN_EXPLANATION}"
        )


def _check_count(
    rel: str,
    start: int,
    body: list[str],
    pattern: re.Pattern[str],
    span: tuple[int, int],
    what: str,
    problems: Collector,
) -> int:
    count = sum(1 for line in body if pattern.match(line))
    if start and not span[0] <= count <= span[1]:
        problems.error(rel, start, f"{count} {what}; write {span[0]}–{span[1]}")
    return count


def _check_sources(rel: str, start: int, body: list[str], problems: Collector) -> None:
    urls = [m.group(1) for m in (_SOURCE_RE.match(line) for line in body) if m]
    items = [line for line in body if _BULLET_RE.match(line)]
    if start and not SOURCES[0] <= len(urls) <= SOURCES[1]:
        problems.error(rel, start, f"参考资料 has {len(urls)} sources; list {SOURCES[0]}–{SOURCES[1]}")
    if start and len(items) != len(urls):
        problems.error(rel, start, "each 参考资料 item reads '- [标题](https://…) — 它支撑了哪些说法'")
    if len(set(urls)) != len(urls):
        problems.error(rel, start, "参考资料 lists one address twice")


def _check_points(rel: str, start: int, body: list[str], problems: Collector) -> None:
    count, cues = 0, set()
    for offset, line in enumerate(body, 1):
        text = line.strip()
        if not text or text in ("---", NAV):
            continue
        where = start + offset
        m = _POINT_RE.match(line)
        if line[:1].isspace() or m is None:
            problems.error(
                rel, where, "a 记忆要点 item reads 'N. **提示**：答案' on one line, with no nested list"
            )
            continue
        count += 1
        cue, answer = m.group(2).strip(), m.group(3).strip()
        if int(m.group(1)) != count:
            problems.error(
                rel, where, f"item numbered {m.group(1)}; number the items 1, 2, 3 … ({count} here)"
            )
        if len(cue) > MAX_CUE:
            problems.error(rel, where, f"the cue has {len(cue)} characters; keep it to {MAX_CUE}")
        if len(answer) > MAX_ANSWER:
            problems.error(
                rel, where, f"the answer has {len(answer)} characters; keep it to {MAX_ANSWER} (one fact)"
            )
        if cue in cues:
            problems.error(
                rel, where, f"the cue '{cue}' is used twice in this file; each cue singles out its answer"
            )
        cues.add(cue)
    if start and not MEMORY_POINTS[0] <= count <= MEMORY_POINTS[1]:
        problems.error(rel, start, f"{count} 记忆要点 items; write {MEMORY_POINTS[0]}–{MEMORY_POINTS[1]}")


def _check_links(path: Path, root: Path, text: str, problems: Collector) -> None:
    for i, line in enumerate(text.split("\n"), 1):
        for target in _LINK_RE.findall(line):
            if "://" not in target and not (path.parent / target).resolve().is_file():
                problems.error(
                    _rel(path, root),
                    i,
                    f"broken link to {target}; link a file of the bank, relative to this one",
                )


def _rel(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
