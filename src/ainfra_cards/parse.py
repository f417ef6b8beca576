"""Parse question files into Questions and their 记忆要点 items into MemoryPoints."""

from __future__ import annotations

import re
from pathlib import Path

from .errors import Collector
from .media import find_images
from .model import MemoryPoint, Module, Question
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
FENCE_RE = re.compile(r"^\s{0,3}(```|~~~)")
ITEM_RE = re.compile(r"^ {0,3}(?:\d+[.)]|[-*+])\s+(.*)$")
ID_MARKER_RE = re.compile(r"\s*\{#([A-Za-z0-9][A-Za-z0-9_.:-]*)\}\s*$")
NAV_RE = re.compile(r"^\s*(\[[^\]]*\]\([^)]*\)\s*\|?\s*)+$")

# Spans inside which nothing is a separator: code spans, inline math, link targets.
_OPAQUE_RE = re.compile(r"(`+)(?:.+?)\1|\\\(.+?\\\)|\]\([^)]*\)|https?://\S+")
# A bold cue at the very start: **cue**：answer (also with the colon inside the bold).
_BOLD_CUE_RE = re.compile(
    r"^\*\*(?P<cue>[^*]+?)\s*(?P<in>[：:])?\*\*\s*(?P<sep>[：:=≈]|——|—|--|-(?=\s))?\s*(?P<rest>.*)$"
)
# Candidate separators, found leftmost first; '=' is checked separately (see _is_equals_separator).
_SEPARATOR_RE = re.compile(r"：|:(?=\s)|\s*——\s*|\s+—\s+|\s+--\s+|\s*≈\s*|=")
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
_NUMBER_RE = re.compile(
    r"(?<![A-Za-z0-9_.\-/])\d+(?:\.\d+)?"
    r"(?:\s*(?:%|×|倍|字节|μs|(?:[KMGT]i?B|[KMGT]|ms|us|ns|s|x|bit|B)(?![A-Za-z])))?"
)
_LATIN_TERM_RE = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9_.+/=-]*[A-Za-z0-9_+]")
_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")
_BOLD_SPAN_RE = re.compile(r"\*\*(.+?)\*\*")
CLOZE_MARK = "［…］"


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
        body=src.text,
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
        if FENCE_RE.match(line):
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


# ---------------------------------------------------------------------------------------------
# 记忆要点 items


def parse_points(
    lines: list[str], first_line: int, title: str, rel: str, problems: Collector
) -> list[MemoryPoint]:
    """Turn the 记忆要点 section's lines into memory points, one per top-level item."""
    items = _collect_items(lines, first_line, rel, problems)
    points: list[MemoryPoint] = []
    for index, (line_no, head, sub) in enumerate(items, 1):
        point = split_item(head, sub, title, index, len(items), line_no)
        if point is None:
            problems.error(
                rel,
                line_no,
                f"记忆要点 item {index} has a cue but no answer; write 'cue：answer' or drop the separator",
            )
            continue
        twin = next((q for q in points if point.explicit_id and q.explicit_id == point.explicit_id), None)
        if twin is not None:
            problems.error(
                rel,
                line_no,
                f"记忆要点 item {index} repeats the id {{#{point.explicit_id}}} of item {twin.index}; "
                "give each item its own id",
            )
            continue
        if point.kind == "pair" and _plain(point.answer) and _plain(point.answer) in _plain(point.cue):
            problems.warn(rel, line_no, f"记忆要点 item {index}: the cue shows its own answer")
        points.append(point)
    return points


def _collect_items(
    lines: list[str], first_line: int, rel: str, problems: Collector
) -> list[tuple[int, str, list[str]]]:
    """Group lines into (line, head text, indented sub-lines); report stray paragraphs."""
    items: list[tuple[int, str, list[str]]] = []
    blank_before = True
    base: int | None = None  # indentation of top-level items (set by the first one)
    for i, line in enumerate(lines):
        m = ITEM_RE.match(line)
        indent = len(line) - len(line.lstrip(" "))
        if m and (base is None or indent <= base):
            base = indent if base is None else base
            items.append((first_line + i, m.group(1).strip(), []))
        elif not line.strip():
            if items:
                items[-1][2].append("")
        elif line.startswith((" ", "\t")) and items:
            items[-1][2].append(line)
        elif line.strip() == "---" or NAV_RE.match(line):
            pass
        elif items and not blank_before:
            n, head, sub = items[-1]  # a lazy continuation line of the item's first paragraph
            items[-1] = (n, f"{head} {line.strip()}", sub) if not sub else (n, head, [*sub, "  " + line])
        else:
            problems.warn(
                rel, first_line + i, "text in 记忆要点 that is not a list item is not made into a card"
            )
        blank_before = not line.strip()
    return [(n, head, _dedent(sub)) for n, head, sub in items]


def _dedent(sub: list[str]) -> list[str]:
    while sub and not sub[-1].strip():
        sub.pop()
    widths = [len(s) - len(s.lstrip()) for s in sub if s.strip()]
    cut = min(widths) if widths else 0
    return [s[cut:] for s in sub]


def split_item(
    head: str, sub: list[str], title: str, index: int, total: int, line: int
) -> MemoryPoint | None:
    """Make one memory point from an item's first paragraph and its indented sub-lines.

    Returns None for an item that has a cue and an empty answer.
    """
    explicit_id = None
    m = ID_MARKER_RE.search(head)
    if m:
        explicit_id, head = m.group(1), head[: m.start()]
    extra = "\n".join(sub).strip()
    pair = _split_pair(head)
    if pair is not None:
        cue, answer = pair
        if not answer and not extra:
            return None
        answer = f"{answer}\n\n{extra}".strip() if extra else answer
        return MemoryPoint(cue, answer, "pair", line, index, explicit_id)
    return _cloze(head, extra, title, index, total, line, explicit_id)


def _split_pair(head: str) -> tuple[str, str] | None:
    """Split 'cue SEP answer'; None when the item has no separator (a plain sentence)."""
    bold = _BOLD_CUE_RE.match(head)
    if bold and (bold.group("in") or bold.group("sep")):
        return bold.group("cue").strip(), bold.group("rest").strip()
    masked = _OPAQUE_RE.sub(lambda m: "\0" * len(m.group(0)), head)
    for sep in _SEPARATOR_RE.finditer(masked):
        if sep.group(0) == "=" and not _is_equals_separator(masked, sep.start()):
            continue
        cue, answer = head[: sep.start()].strip(), head[sep.end() :].strip()
        if cue:
            return _unbold(cue), answer
    return None


def _is_equals_separator(text: str, at: int) -> bool:
    """'=' separates 'term = meaning' but not 'NCCL_DEBUG=INFO', '==', '<=', '>=' or '!='."""
    before, after = text[at - 1 : at], text[at + 1 : at + 2]
    if (before and before in "=<>!") or after in ("=", ">"):
        return False
    spaced = before.isspace() and (after.isspace() or after == "")
    return spaced or bool(_CJK.match(before) or _CJK.match(after))


def _unbold(text: str) -> str:
    m = re.fullmatch(r"\*\*(.+)\*\*", text)
    return m.group(1) if m else text


def _cloze(
    head: str, extra: str, title: str, index: int, total: int, line: int, explicit_id: str | None
) -> MemoryPoint:
    """A plain sentence: hide its key term on the front (a cloze), or fall back to the title.

    Why a cloze: the front keeps the sentence's own context, so it asks one concrete thing
    (a flag, a number, a term) that the back answers; "point k/n of <title>" asks for a whole
    sentence with no hint. The term is chosen by how likely an interviewer is to probe it:
    a code span (flag, API, value), then bold text, then a number with its unit, then a Latin
    technical term. Terms that appear in the title are skipped: the title is on the front too.
    """
    answer = f"{head}\n\n{extra}".strip() if extra else head
    term = _key_term(head, title)
    if term is None:
        return MemoryPoint(f"{title}（要点 {index}/{total}）", answer, "title", line, index, explicit_id)
    front = head.replace(term, CLOZE_MARK)
    back = head.replace(term, term if term.startswith("**") else f"**{term}**")
    back = f"{back}\n\n{extra}".strip() if extra else back
    return MemoryPoint(front, back, "cloze", line, index, explicit_id, term)


def _key_term(head: str, title: str) -> str | None:
    for pattern in (_CODE_SPAN_RE, _BOLD_SPAN_RE, _NUMBER_RE, _LATIN_TERM_RE):
        found = [m for m in pattern.finditer(head) if _hideable(head, m, pattern, title)]
        if found and pattern is _LATIN_TERM_RE:
            # Among plain words the longest is usually the most specific (all-reduce over hook).
            found.sort(key=lambda m: -len(m.group(0)))
        if found:
            return found[0].group(0).strip()
    return None


def _hideable(head: str, m: re.Match[str], pattern: re.Pattern[str], title: str) -> bool:
    term = m.group(0).strip()
    inner = _plain(term)
    if not inner or inner.lower() in title.lower() or head.strip() == term:
        return False  # shown in the title anyway, or hiding everything asks nothing
    if pattern is _LATIN_TERM_RE and len(inner) < 2:
        return False
    return pattern is not _NUMBER_RE and pattern is not _LATIN_TERM_RE or _outside_code(head, m)


def _outside_code(head: str, m: re.Match[str]) -> bool:
    """A bare term counts only outside code, math and links, and not inside a word like H100."""
    masked = _OPAQUE_RE.sub(lambda mm: "\0" * len(mm.group(0)), head)
    return "\0" not in masked[m.start() : m.end()] and not re.match(
        r"[A-Za-z0-9]", masked[m.end() : m.end() + 1]
    )


def _plain(markdown: str) -> str:
    """Markdown with emphasis and code markers removed, whitespace folded."""
    text = re.sub(r"[`*_]", "", markdown)
    return re.sub(r"\s+", " ", text).strip()
