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
from functools import cache

import markdown
import nh3
from markdown.extensions.codehilite import CodeHiliteExtension

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
def _converter() -> markdown.Markdown:
    return markdown.Markdown(
        extensions=[
            "fenced_code",
            "tables",
            "sane_lists",
            CodeHiliteExtension(css_class="highlight", guess_lang=False, use_pygments=True),
        ],
        output_format="html",
    )


def _markdown(text: str) -> str:
    md = _converter()
    md.reset()
    return md.convert(text)


def to_html(
    text: str,
    math: Callable[[bool, str], str] = anki_math,
    inline: bool = False,
    images: Callable[[str], str | None] | None = None,
) -> str:
    """Render Markdown to sanitised HTML; inline=True drops a lone wrapping <p>.

    images maps an image reference as written to the src to use (an Anki media name or a data:
    URI); an image it does not know (or every image, without it) is replaced by its alt text.
    """
    lifted, formulas = _lift_math(text)
    rendered = _markdown(lifted)
    if inline:
        m = re.fullmatch(r"\s*<p>(.*)</p>\s*", rendered, re.S)
        if m and "<p>" not in m.group(1):
            rendered = m.group(1)
    safe = sanitize(rendered)
    if "<img" in safe:
        safe = _rewrite_images(safe, images or (lambda src: None))
    return _PLACEHOLDER_RE.sub(lambda m: _math_html(formulas[int(m.group(1))], math), safe)


def _rewrite_images(fragment: str, images: Callable[[str], str | None]) -> str:
    """Point each <img> at its packaged file, after sanitising (so data: URIs survive)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(fragment, "html.parser")
    for img in soup.find_all("img"):
        src = images(html.unescape(str(img.get("src", ""))))
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
    return nh3.clean(
        fragment, tags=MATHML_TAGS, attributes=MATHML_ATTRIBUTES, link_rel=None, strip_comments=True
    )
