"""Parse question files into Questions and their 记忆要点 items into MemoryPoints."""

from __future__ import annotations

import re
from pathlib import Path

from .errors import Collector
from .items import parse_points
from .markup import FENCE_LINE_RE, NAV_RE
from .media import find_images
from .model import Module, Question
from .sources import MODULE_DIR_RE, SourceFile

SECTION_KEYS = {
    "题目": "prompt",
    "完整讲解": "explanation",
    "面试要点": "talking_points",
    "记忆要点": "points",
}
H1_RE = re.compile(r"^#\s+(.+?)\s*#*\s*$")
NUMBERED_H1_RE = re.compile(r"^第\s*(\d+)\s*题\s*[：:]\s*(.+)$")
H2_RE = re.compile(r"^##\s+(.+?)\s*#*\s*$")


def module_of(folder: str, front: dict) -> Module:
    """The module a file belongs to: its folder, unless front matter names another."""
    name = str(front.get("module") or folder)
    m = MODULE_DIR_RE.match(name)
    if m:
        return Module(int(m.group(1)), m.group(2).strip(), name)
    return Module(0, name, name)


def parse_question(src: SourceFile, problems: Collector, bank_root: Path | None = None) -> Question | None:
    """Parse one question file; report problems with their line; None if unusable."""
    rel = str(src.path)
    if not src.text.strip():
        problems.error(rel, 1, "file is empty; write the question or delete the file")
        return None
    lines = src.text.split("\n")
    before = len(problems.errors)
    number = src.number if src.number is not None else 0
    title = _title(lines, src, number, problems)
    sections = _sections(lines, src.body_line)
    _check_front_module(src, problems)
    question = Question(
        number=number,
        title=title or src.path.stem,
        path=src.path,
        module=module_of(src.module_dir or "", src.front),
        tags=_front_tags(src, problems),
        explicit_id=_front_id(src, problems),
    )
    seen: set[str] = set()
    for name, (heading_line, body_lines) in sections.items():
        attr = _section_attr(name)
        if attr is not None and attr in seen:
            problems.error(
                rel, heading_line, f"section '## {name.strip()}' appears twice; merge the two into one"
            )
            continue
        if attr is not None:
            seen.add(attr)
        if attr is None:
            question.extra_sections.append((name, "\n".join(body_lines).strip()))
        elif attr == "points":
            question.points_line = heading_line
            question.points = parse_points(body_lines, heading_line + 1, question.title, rel, problems)
        else:
            setattr(question, attr, _strip_rules("\n".join(body_lines)))
    if not any(_section_attr(n) == "points" for n in sections):
        problems.error(rel, 1, "no '## 记忆要点' section; add one with the memory points as a numbered list")
    elif not question.points and len(problems.errors) == before:
        problems.error(
            rel, question.points_line, "记忆要点 is empty; add at least one item 'N. **提示**：答案'"
        )
    if not question.prompt:
        question.prompt = question.title
    if bank_root is not None:
        question.media = find_images(src.text, src.abspath, bank_root, rel, src.body_line, problems)
    return question if len(problems.errors) == before else None


def _title(lines: list[str], src: SourceFile, number: int, problems: Collector) -> str | None:
    rel = str(src.path)
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        m = H1_RE.match(line) if line.startswith("# ") else None
        if not m:
            break
        numbered = NUMBERED_H1_RE.match(m.group(1))
        if not numbered:
            return m.group(1)
        if int(numbered.group(1)) != number:
            problems.error(
                rel,
                src.body_line + i,
                f"H1 says question {int(numbered.group(1))} but the file name says {number}; make them agree",
            )
        return numbered.group(2).strip()
    problems.error(rel, src.body_line, "first line must be the title '# 第 N 题：<标题>'")
    return None


def _sections(lines: list[str], first_line: int) -> dict[str, tuple[int, list[str]]]:
    """Map each '## ' heading (outside code) to (its file line, its body lines)."""
    sections: dict[str, tuple[int, list[str]]] = {}
    current: list[str] | None = None
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE_LINE_RE.match(line):
            in_fence = not in_fence
        m = None if in_fence else H2_RE.match(line)
        if m:
            current = []
            name = m.group(1)
            while name in sections:  # a repeated heading keeps both, the later one renamed
                name += " "
            sections[name] = (first_line + i, current)
        elif current is not None:
            current.append(line)
    return sections


def _section_attr(name: str) -> str | None:
    """The known section a heading names: the whole heading, so '相关题目' is not '题目'."""
    return SECTION_KEYS.get(name.strip())


def _strip_rules(text: str) -> str:
    """Drop the '---' rules that separate sections and the trailing navigation line."""
    kept = [ln for ln in text.strip().split("\n") if ln.strip() != "---" and not NAV_RE.match(ln)]
    return "\n".join(kept).strip()


def _check_front_module(src: SourceFile, problems: Collector) -> None:
    raw = src.front.get("module")
    if raw is not None and not MODULE_DIR_RE.match(str(raw)):
        problems.error(
            str(src.path),
            src.front_lines.get("module", 2),
            f"front matter 'module' {str(raw)!r} must name a module folder such as '05-数据并行' "
            "(number, dash, name); fix it or delete the line to use the file's folder",
        )


def _front_tags(src: SourceFile, problems: Collector) -> list[str]:
    raw = src.front.get("tags")
    if raw is None:
        return []
    if isinstance(raw, str):
        raw = raw.replace(",", " ").split()
    if not isinstance(raw, list) or not all(isinstance(t, (str, int, float)) for t in raw):
        problems.error(
            str(src.path),
            src.front_lines.get("tags", 2),
            "front matter 'tags' must be a list of words, e.g. tags: [nccl, hang]",
        )
        return []
    return [re.sub(r"\s+", "_", str(t).strip()) for t in raw if str(t).strip()]


def _front_id(src: SourceFile, problems: Collector) -> str | None:
    raw = src.front.get("id")
    if raw is None:
        return None
    value, line = str(raw).strip(), src.front_lines.get("id", 2)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.:-]*", value):
        problems.error(
            str(src.path), line, f"front matter 'id' {value!r} must be letters, digits, '_', '.', ':' or '-'"
        )
        return None
    if value.isdigit():
        problems.error(
            str(src.path),
            line,
            f"front matter 'id' {value!r} is only digits, which is how questions without an id are "
            "known (their number); use a name with a letter, e.g. 'ddp-buckets'",
        )
        return None
    return value
