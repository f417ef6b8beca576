"""The 记忆要点 items: split each into a cue and an answer, or make a cloze of a plain sentence.

This is where a card's front and back come from. The rules, in order: an explicit ``{#id}`` is
taken off the end; a bold cue or a separator (``：``, ``——``, `` = ``, ``≈`` …) splits cue from
answer; a sentence with no separator hides its key term (a cloze); a sentence with nothing to
hide asks for "point k/n" of the question.
"""

from __future__ import annotations

import re

from .errors import Collector
from .markup import CODE_SPAN_RE, NAV_RE
from .model import MemoryPoint

ITEM_RE = re.compile(r"^ {0,3}(?:\d+[.)]|[-*+])\s+(.*)$")
ID_MARKER_RE = re.compile(r"\s*\{#([A-Za-z0-9][A-Za-z0-9_.:-]*)\}\s*$")

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
_BOLD_SPAN_RE = re.compile(r"\*\*(.+?)\*\*")
_BOLD_ONLY_RE = re.compile(r"^\*\*[^*]+\*\*\s*$")  # an item that is a bold cue and nothing else
CLOZE_MARK = "［…］"


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
        if (
            point.kind == "pair"
            and strip_markup(point.answer)
            and strip_markup(point.answer) in strip_markup(point.cue)
        ):
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
    if pair is None and _BOLD_ONLY_RE.match(head) and not extra:
        return None  # a bold cue whose answer (and separator) went missing
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
    for pattern in (CODE_SPAN_RE, _BOLD_SPAN_RE, _NUMBER_RE, _LATIN_TERM_RE):
        found = [m for m in pattern.finditer(head) if _hideable(head, m, pattern, title)]
        if found and pattern is _LATIN_TERM_RE:
            # Among plain words the longest is usually the most specific (all-reduce over hook).
            found.sort(key=lambda m: -len(m.group(0)))
        if found:
            return found[0].group(0).strip()
    return None


def _hideable(head: str, m: re.Match[str], pattern: re.Pattern[str], title: str) -> bool:
    term = m.group(0).strip()
    inner = strip_markup(term)
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


def strip_markup(markdown: str) -> str:
    """Markdown with emphasis and code markers removed, whitespace folded."""
    text = re.sub(r"[`*_]", "", markdown)
    return re.sub(r"\s+", " ", text).strip()
