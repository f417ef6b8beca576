"""Markdown to safe HTML, shared by the Anki fields and study.html.

Math (``\\( … \\)``, ``\\[ … \\]``) is lifted out before Markdown sees it, so its backslashes and
underscores survive, and put back either as Anki's MathJax delimiters or as MathML. Code is
highlighted by Pygments with CSS classes. Every result passes through nh3 (the Rust ammonia
sanitiser) with an allow-list, so raw HTML in a source file can never become active content.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .media import anki_name, data_uri
from .model import Question

_MATH_OR_CODE_RE = re.compile(
    r"(?P<fence>^[ \t]*(?P<f>```|~~~).*?^[ \t]*(?P=f)[ \t]*$)"
    r"|(?P<code>(?P<ticks>`+).+?(?P=ticks))"
    r"|\\\[(?P<display>.+?)\\\]"
    r"|\\\((?P<inline>.+?)\\\)",
    re.S | re.M,
)
_PLACEHOLDER = "\u2063MATH{}\u2063"
_PLACEHOLDER_RE = re.compile("\u2063MATH(\\d+)\u2063")

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "del", "details", "div", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "mark", "ol", "p", "pre", "s", "span", "strong",
    "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "*": {"class", "id"},
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"align", "style"},
    "th": {"align", "style"},
    "ol": {"start"},
}
MATHML_TAGS = {
    "math", "mi", "mn", "mo", "ms", "mrow", "msub", "msup", "msubsup", "mfrac", "msqrt", "mroot",
    "mtext", "mspace", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle", "semantics",
    "annotation", "mpadded", "mphantom", "menclose",
}  # fmt: skip
MATHML_ATTRIBUTES = {
    "math": {"display", "xmlns"}, "mo": {"stretchy", "fence", "separator", "lspace", "rspace", "form"},
    "mstyle": {"displaystyle", "scriptlevel", "mathvariant"}, "mi": {"mathvariant"},
    "mtable": {"columnalign", "rowspacing", "columnspacing"}, "mtd": {"columnalign"},
    "mspace": {"width"}, "mfrac": {"linethickness"}, "annotation": {"encoding"}, "menclose": {"notation"},
}  # fmt: skip


def _lift_math(text: str) -> tuple[str, list[tuple[bool, str]]]:
    """Replace math outside code with placeholders; return the text and the formulas."""
    formulas: list[tuple[bool, str]] = []

    def repl(m: re.Match[str]) -> str:
        if m.group("fence") or m.group("code"):
            return m.group(0)
        display = m.group("display") is not None
        formulas.append((display, m.group("display") if display else m.group("inline")))
        return _PLACEHOLDER.format(len(formulas) - 1)

    return _MATH_OR_CODE_RE.sub(repl, text), formulas


def anki_math(display: bool, tex: str) -> str:
    """Math as Anki's MathJax reads it."""
    body = html.escape(tex, quote=False)
    return f"\\[{body}\\]" if display else f"\\({body}\\)"


def mathml(display: bool, tex: str) -> str:
    """Math as MathML made at build time (no script, no network); the TeX if it will not convert."""
    from latex2mathml.converter import convert

    try:
        return convert(tex, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 - a formula latex2mathml cannot read is shown as its source
        return f'<code class="tex">{html.escape(tex)}</code>'


@cache
def _converter():  # type: ignore[no-untyped-def]
    """One configured converter for the whole process (building one costs more than a render).

    Imported here, not at the top: a build whose every piece is cached never loads Markdown.
    """
    import markdown
    from markdown.extensions.codehilite import CodeHiliteExtension
    from markdown.extensions.fenced_code import FencedCodeExtension
    from markdown.extensions.sane_lists import SaneListExtension
    from markdown.extensions.tables import TableExtension

    return markdown.Markdown(  # instances, not names: a name makes Markdown scan every installed package
        extensions=[
            FencedCodeExtension(),
            TableExtension(),
            SaneListExtension(),
            CodeHiliteExtension(css_class="highlight", guess_lang=False, use_pygments=True),
        ],
        output_format="html",
    )


def _markdown(text: str) -> str:
    md = _converter()
    md.reset()
    return md.convert(text)


@dataclass(frozen=True)
class Fragment:
    """One piece of Markdown, rendered once for both audiences.

    Both forms are sanitised HTML. ``anki`` keeps ``\\( … \\)`` for Anki's MathJax and points
    images at packaged media; ``page`` has MathML made at build time and images as data: URIs.
    """

    anki: str
    page: str


Images = Callable[[str], "str | None"]  # image reference as written -> src to use, or None


def render_fragment(
    text: str, inline: bool = False, anki_images: Images | None = None, page_images: Images | None = None
) -> Fragment:
    """Render Markdown once into a Fragment; inline=True drops a lone wrapping <p>.

    An image that an images function does not know (or every image, without one) becomes its
    alt text.
    """
    lifted, formulas = _lift_math(text)
    return _finish(_markdown(lifted), formulas, inline, anki_images, page_images)


def _finish(
    rendered: str,
    formulas: list[tuple[bool, str]],
    inline: bool,
    anki_images: Images | None,
    page_images: Images | None,
) -> Fragment:
    """Markdown's HTML made safe, its images pointed at files, its math put back both ways."""
    if inline:
        m = re.fullmatch(r"\s*<p>(.*)</p>\s*", rendered, re.S)
        if m and "<p>" not in m.group(1):
            rendered = m.group(1)
    safe = sanitize(rendered)
    anki, page = safe, safe
    if "<img" in safe:  # after sanitising, so data: URIs survive
        anki, page = _rewrite_images(safe, anki_images), _rewrite_images(safe, page_images)
    if not formulas:
        return Fragment(anki, page)

    def put_back(html_: str, math: Callable[[bool, str], str]) -> str:
        return _PLACEHOLDER_RE.sub(lambda m: _math_html(formulas[int(m.group(1))], math), html_)

    return Fragment(put_back(anki, anki_math), put_back(page, mathml))


_SEPARATOR = "\u2063\u2062PIECE\u2062\u2063"  # invisible separators: no bank text contains them
_UNBATCHABLE_RE = re.compile(r"[\n<>&\[\]!\u2062\u2063]|^[\s\-*+>#|=0-9]")


def _batchable(text: str) -> bool:
    """A one-line piece with no HTML, link, image or block syntax: safe to render in a batch."""
    return bool(text) and _UNBATCHABLE_RE.search(text) is None


def to_html(
    text: str,
    math: Callable[[bool, str], str] = anki_math,
    inline: bool = False,
    images: Images | None = None,
) -> str:
    """Render Markdown to sanitised HTML with one math form (a convenience for one-off texts)."""
    fragment = render_fragment(text, inline, images, images)
    return fragment.page if math is mathml else fragment.anki


def _rewrite_images(fragment: str, images: Images | None) -> str:
    """Point each <img> at its packaged file or data: URI, or replace it by its alt text."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(fragment, "html.parser")
    for img in soup.find_all("img"):
        src = images(html.unescape(str(img.get("src", "")))) if images else None
        if src is None:
            img.replace_with(str(img.get("alt", "")))
        else:
            img["src"] = src
    return str(soup)


def _math_html(formula: tuple[bool, str], math: Callable[[bool, str], str]) -> str:
    out = math(*formula)
    return sanitize_mathml(out) if out.startswith("<math") else out


def sanitize(fragment: str) -> str:
    """Allow-list sanitising: scripts, handlers, javascript: URLs, iframes and styles are removed."""
    import nh3

    return nh3.clean(
        fragment,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer",
        strip_comments=True,
        filter_style_properties={"text-align"},
    )


def sanitize_mathml(fragment: str) -> str:
    import nh3

    return nh3.clean(
        fragment, tags=MATHML_TAGS, attributes=MATHML_ATTRIBUTES, link_rel=None, strip_comments=True
    )


# ---------------------------------------------------------------------------------------------
# Rendering a whole source file, each piece once


class FileRenderer:
    """Renders the Markdown pieces of one source file, each distinct piece once.

    Images are resolved against the file's own media (packaged names for Anki, data: URIs for
    the page); pieces are named by their text, so a repeated piece is rendered once.
    """

    def __init__(self, media: dict[str, Path] | None = None):
        self.media = media or {}
        self.memo: dict[str, Fragment] = {}

    def __call__(self, text: str, inline: bool = False, images: bool = True) -> Fragment:
        piece = (inline, images, text)
        hit = self.memo.get(_piece_key(*piece))
        if hit is not None:
            return hit
        anki_images = page_images = None
        if images and self.media:
            anki_images, page_images = self._anki_image, self._page_image
        fragment = self.memo[_piece_key(*piece)] = render_fragment(text, inline, anki_images, page_images)
        return fragment

    def prefetch(self, texts: list[str]) -> None:
        """Render many short inline pieces (cues, answers, a title) in one Markdown run.

        Markdown's cost is mostly per call, and a question has a dozen such pieces. Only plain
        one-line pieces are batched, separated by a paragraph no text can contain; each comes
        out exactly as a call of its own would make it (a test compares the two on the bank).
        """
        todo = [
            t for t in dict.fromkeys(texts) if _piece_key(True, True, t) not in self.memo and _batchable(t)
        ]
        if len(todo) < 2:
            return
        lifted = [_lift_math(t) for t in todo]
        html_ = _markdown(f"\n\n{_SEPARATOR}\n\n".join(text for text, _ in lifted))
        chunks = html_.split(f"\n<p>{_SEPARATOR}</p>\n")
        if len(chunks) != len(todo):
            return  # something joined two pieces: render them one by one
        for text, (_, formulas), chunk in zip(todo, lifted, chunks, strict=True):
            fragment = _finish(chunk, formulas, inline=True, anki_images=None, page_images=None)
            self.memo[_piece_key(True, True, text)] = fragment

    def _anki_image(self, ref: str) -> str | None:
        return anki_name(self.media[ref]) if ref in self.media else None

    def _page_image(self, ref: str) -> str | None:
        return data_uri(self.media[ref]) if ref in self.media else None


def _piece_key(inline: bool, images: bool, text: str) -> str:
    return ("i" if inline else "b") + ("m" if images else "t") + text


@dataclass(frozen=True)
class RenderedQuestion:
    """Every Markdown piece of one question, rendered."""

    title: Fragment  # without images: a title is text
    prompt: Fragment
    explanation: Fragment | None
    talking_points: Fragment | None
    extra_sections: list[tuple[str, Fragment]]
    points: list[tuple[Fragment, Fragment]]  # (cue, answer) per memory point


def render_question(q: Question) -> RenderedQuestion:
    """Render one question's pieces."""
    r = FileRenderer(q.media)
    r.prefetch([text for p in q.points for text in (p.cue, p.answer)])
    rendered = RenderedQuestion(
        title=r(q.title, inline=True, images=False),
        prompt=r(q.prompt),
        explanation=r(q.explanation) if q.explanation else None,
        talking_points=r(q.talking_points) if q.talking_points else None,
        extra_sections=[(name, r(body)) for name, body in q.extra_sections if body.strip()],
        points=[(r(p.cue, inline=True), r(p.answer, inline=True)) for p in q.points],
    )
    return rendered


def question_fields(q: Question, r: RenderedQuestion) -> dict[str, str]:
    """The note fields every memory point of a question shares."""
    return {
        "Number": str(q.number),
        "Title": r.title.anki,
        "Module": q.module.label,
        "Source": html.escape(str(q.path)),
        "Context": r.talking_points.anki if r.talking_points else "",
        "Prompt": r.prompt.anki,
        "Extra": _sources(r),
    }


SOURCES_SECTION = "参考资料"


def _sources(r: RenderedQuestion) -> str:
    """The question's 参考资料 (links to primary sources), for the back of each card.

    The notetype's Extra field was kept free for content like this: filling it changes no
    field list, so learners' notes update in place.
    """
    return next((f.anki for name, f in r.extra_sections if name.strip() == SOURCES_SECTION), "")


def card_fields(shared: dict[str, str], cue: Fragment, answer: Fragment) -> dict[str, str]:
    """One note's fields: the memory point's cue and answer, then the question's shared fields."""
    return {"Front": cue.anki, "Back": answer.anki, **shared}
