"""study.html: the whole bank as one self-contained offline page for reading and self-testing.

Everything is inline (CSS, JS, MathML made at build time); the page makes no network request and
loads nothing beside itself. Every piece of Markdown was rendered (and nh3-sanitised) once by
render.py, shared with the cards; this module only arranges the pieces, points bank links at
in-page anchors and removes every other link target and image. The skeleton is the template
static/study.html. The same bank gives byte-identical HTML.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from ..config import Branding
from ..media import anki_name
from ..model import Bank, MemoryPoint, Module, Page, Question
from ..render import SOURCES_SECTION, FileRenderer, Fragment, RenderedQuestion
from ..util import digest, short_hash, static_text
from . import same_bytes

if TYPE_CHECKING:
    from ..plan import Plan

FRONT_ID = "page-front"
STORAGE_PREFIX = "ainfra-study:"
NO_BRANDING = Branding()


@dataclass
class StudyOutput:
    """study.html for the whole bank."""

    path: Path
    branding: Branding = Branding()
    reuse: Reuse | None = None  # see study_html

    def fingerprint(self, plan: Plan) -> str:
        bank = plan.bank
        return digest(
            "study",
            [(q.source_key, sorted(plan.media_names(q))) for q in bank.questions],
            [p.source_key for p in bank.pages],
            [n.guid for n in plan.notes],
            bank.modules,
            self.branding,
            sorted((g, n.page) for g, n in plan.notices.items()),
            plan.version,
        )

    def render(self, plan: Plan) -> bytes:
        revisions = {g: (n.revision.version, n.page) for g, n in plan.notices.items() if n.revision}
        return study_html(
            plan.bank,
            plan.question,
            self.branding,
            plan.guid,
            plan.page_body,
            revisions,
            plan.version,
            self.reuse,
        )

    def is_current(self, plan: Plan) -> bool:
        return same_bytes(self.path, self.render(plan))


def default_branding(bank: Bank, version: str | None = None) -> Branding:
    cards = sum(len(q.points) for q in bank.questions)
    subtitle = f"{len(bank.questions)} 题 · {cards} 张卡片" + (f" · 版本 {version}" if version else "")
    return Branding(bank.title, subtitle, bank.title)


# ---------------------------------------------------------------------------------------------
# Anchors and link rewriting


def question_anchor(q: Question) -> str:
    return f"q{q.number:03d}"


def module_anchor(m: Module) -> str:
    return f"m{m.number:02d}"


def _module_ids(modules: list[Module]) -> dict[Module, str]:
    ids: dict[Module, str] = {}
    for m in modules:  # two folders with one number (a bank with errors) still get distinct ids
        aid = module_anchor(m)
        ids[m] = aid if aid not in ids.values() else f"{aid}-{short_hash(m.folder, 6)}"
    return ids


class Anchors:
    """Bank path (POSIX, relative to the bank root) -> in-page anchor id."""

    def __init__(self, bank: Bank):
        self.by_path: dict[str, str] = {}
        self.page_ids: dict[str, str] = {}
        self.module_pages: dict[Module, Page] = {}
        folders = {m.folder: m for m in bank.modules}
        used: set[str] = set()
        self.module_ids = _module_ids(bank.modules)
        for m, mid in self.module_ids.items():
            self.by_path[m.folder] = mid
            self.by_path[f"{m.folder}/README.md"] = mid
            used.add(mid)
        for q in bank.questions:
            aid = question_anchor(q)
            if aid in used:  # two files with one number (a bank with errors): keep both reachable
                aid = f"{aid}-{short_hash(str(q.path), 6)}"
            used.add(aid)
            self.by_path[str(q.path)] = aid
        for p in bank.pages:
            path = str(p.path)
            in_module = len(p.path.parts) == 2 and p.path.name == "README.md"
            module = folders.get(p.path.parts[0]) if in_module else None
            if path == "README.md":
                aid = FRONT_ID
            elif module is not None and module not in self.module_pages:
                self.module_pages[module] = p
                continue
            else:
                aid = f"page-{short_hash(path)}"
            self.page_ids[path] = aid
            self.by_path[path] = aid
        self.question_ids = {str(q.path): self.by_path[str(q.path)] for q in bank.questions}

    def target(self, href: str, base: PurePosixPath) -> str | None:
        """The anchor for a relative link from the file at base; None if it is not in the bank."""
        path = unquote(href.split("#", 1)[0].split("?", 1)[0])
        if not path:
            return None
        joined = (
            posixpath.normpath(posixpath.join(str(base.parent), path))
            if not path.startswith("/")
            else posixpath.normpath(path.lstrip("/"))
        )
        joined = joined.removeprefix("./").rstrip("/")
        if joined in ("", "."):
            joined = "README.md"
        return self.by_path.get(joined)


_A_RE = re.compile(r"<a\b([^>]*)>")
_IMG_RE = re.compile(r"<img\b([^>]*)>")
_ATTR_RE = re.compile(r'\s([a-zA-Z-]+)="([^"]*)"')
_XMLNS_RE = re.compile(r'\s+xmlns="http://www\.w3\.org/1998/Math/MathML"')
_TABLE_OPEN_RE = re.compile(r"<table\b")


def _attrs(raw: str) -> dict[str, str]:
    return {k: html.unescape(v) for k, v in _ATTR_RE.findall(raw)}


def _fix_links(fragment: str, anchors: Anchors, base: PurePosixPath, sources: bool = False) -> str:
    """Point bank links at in-page anchors; drop every other target, except the web addresses of
    a 参考资料 section (sources=True), which open in a new tab. The page itself never fetches."""

    def a(m: re.Match[str]) -> str:
        attrs = _attrs(m.group(1))
        href = attrs.get("href")
        classes = attrs.get("class", "").split()
        extra = ""
        if href is None:
            pass
        elif href.startswith("#"):
            extra = f' href="{html.escape(href)}"'
        elif sources and re.match(r"^https?://", href):
            extra = f' href="{html.escape(href)}" target="_blank" rel="noopener noreferrer"'
        elif re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", href):
            # External: shown, not linked (the page must not reach the network).
            classes.append("ext")
            extra = f' title="{html.escape(href)}"'
        elif (target := anchors.target(href, base)) is not None:
            extra = f' href="#{target}"'
        else:
            classes.append("dead")  # a link to a file that is not part of the bank: text only
        cls = f' class="{html.escape(" ".join(classes))}"' if classes else ""
        ident = f' id="{html.escape(attrs["id"])}"' if "id" in attrs else ""
        return f"<a{cls}{ident}{extra}>"

    def img(m: re.Match[str]) -> str:
        attrs = _attrs(m.group(1))
        alt = attrs.get("alt") or attrs.get("title") or "图"
        src = attrs.get("src", "")
        if src.startswith("data:image/"):  # a bank image, inlined by _md; nothing else is loaded
            return f'<img src="{html.escape(src)}" alt="{html.escape(alt)}">'
        return f'<span class="img-alt">[图：{html.escape(alt)}]</span>'

    # Most pieces (a cue, an answer) have none of these: test for each before running its regex.
    if "<a" in fragment:
        fragment = _A_RE.sub(a, fragment)
    if "<img" in fragment:
        fragment = _IMG_RE.sub(img, fragment)
    if "xmlns=" in fragment:
        fragment = _XMLNS_RE.sub("", fragment)
    if "<table" in fragment:
        fragment = _TABLE_OPEN_RE.sub('<div class="table-wrap"><table', fragment)
        fragment = fragment.replace("</table>", "</table></div>")
    return fragment


def _page_html(fragment: Fragment, anchors: Anchors, base: PurePosixPath, sources: bool = False) -> str:
    """A rendered piece as the page shows it: bank links become in-page anchors."""
    return _fix_links(fragment.page, anchors, base, sources)


def _no_links(fragment: str) -> str:
    """Inline HTML for use inside another link (sidebar, card context): its own links removed."""
    return re.sub(r"</?a\b[^>]*>", "", fragment)


# ---------------------------------------------------------------------------------------------
# Page parts


def card_id(q: Question, p: MemoryPoint) -> str:
    """Stable id of a memory point in the learner's browser storage: question number + cue hash."""
    return f"{q.number:03d}-{short_hash(p.cue)}"


def _question_parts(
    q: Question,
    rendered: Callable[[Question], RenderedQuestion],
    anchors: Anchors,
    aid: str,
    cids: list[str],
    guids: list[str | None],
    revisions: Mapping[str, tuple[str, str]],
) -> tuple[str, str]:
    """The question's title (for the sidebar) and its article."""
    r = rendered(q)
    article = _question(q, r, anchors, aid, cids, guids, revisions)
    return _no_links(_page_html(r.title, anchors, q.path)), article


def _revision_slots(revision: tuple[str, str] | None) -> dict[str, str]:
    """A revised card's version and previous text, for 复习 to mark it 已修订 (see review.js)."""
    if revision is None:
        return {"changed": "", "was": ""}
    version, was = revision
    return {"changed": f' data-changed="{html.escape(version)}"', "was": part("was", text=_no_links(was))}


def _question(
    q: Question,
    r: RenderedQuestion,
    anchors: Anchors,
    aid: str,
    cids: list[str],
    guids: list[str | None],
    revisions: Mapping[str, tuple[str, str]],
) -> str:
    sections = _sections(q, r, anchors)
    if q.points:
        items = [
            part(
                "point",
                kind=html.escape(p.kind),
                card=cid,
                guid=_guid_attr(guid),
                cue=_page_html(cue, anchors, q.path),
                answer=_page_html(answer, anchors, q.path),
                **_revision_slots(revisions.get(guid or "")),
            )
            for p, (cue, answer), cid, guid in zip(q.points, r.points, cids, guids, strict=True)
        ]
        sections.append(part("points", items=_lines(items)))
    return part(
        "question",
        aid=aid,
        mid=anchors.module_ids[q.module],
        number=str(q.number),
        module=html.escape(q.module.label),
        title=_page_html(r.title, anchors, q.path),
        prompt=_page_html(r.prompt, anchors, q.path),
        sections=_lines(sections),
    )


def _sections(q: Question, r: RenderedQuestion, anchors: Anchors) -> list[str]:
    """The answer's sections before the memory points: 完整讲解, 面试要点 and the others."""
    named = [("sec-explain", "完整讲解", r.explanation), ("sec-talk", "面试要点", r.talking_points)]
    sections = [
        part("section", kind=kind, heading=heading, body=_page_html(body, anchors, q.path))
        for kind, heading, body in named
        if body
    ]
    for name, fragment in r.extra_sections:
        body = _page_html(fragment, anchors, q.path, sources=name.strip() == SOURCES_SECTION)
        sections.append(part("section", kind="sec-extra", heading=html.escape(name.strip()), body=body))
    return sections


def _page(
    body: Fragment, page: Page, aid: str, anchors: Anchors, kind: str, module: Module | None = None
) -> str:
    """A page's article."""
    data_m = f' data-m="{anchors.module_ids[module]}"' if module else ""
    return part("page", aid=aid, kind=kind, module=data_m, body=_page_html(body, anchors, page.path))


def _module_stub(m: Module, questions: list[Question], anchors: Anchors, titles: dict[str, str]) -> str:
    """A module with no README: a heading and its question list, so #mNN always exists."""
    items = "".join(
        part("module-stub-item", aid=aid, number=str(q.number), title=titles[aid])
        for q in questions
        if (aid := anchors.question_ids[str(q.path)])
    )
    return part("module-stub", mid=anchors.module_ids[m], label=html.escape(m.label), items=items)


def _sidebar(
    bank: Bank, anchors: Anchors, titles: dict[str, str], by_module: dict[Module, list[Question]]
) -> str:
    pages = []
    for p in bank.pages:
        aid = anchors.page_ids.get(str(p.path))
        if aid is not None:
            label = "首页" if aid == FRONT_ID else html.escape(p.title)
            pages.append(part("nav-page", aid=aid, label=label))
    modules = []
    for m in bank.modules:
        links = [
            part("nav-question", aid=aid, number=str(q.number), title=titles[aid])
            for q in by_module[m]
            if (aid := anchors.question_ids[str(q.path)])
        ]
        mid, count = anchors.module_ids[m], str(len(by_module[m]))
        name = html.escape(m.name)
        modules.append(
            part(
                "nav-module",
                mid=mid,
                number=f"{m.number:02d}",
                name=name,
                count=count,
                questions=_lines(links),
            )
        )
    return part("sidebar", pages=_lines(pages), modules=_lines(modules))


def _lines(items: list[str]) -> str:
    """Items one per line, each followed by its line break (a part's slot at a line's start)."""
    return "".join(f"{item}\n" for item in items)


@cache
def _parts() -> dict[str, str]:
    """The parts of static/study-parts.html, by name."""
    chunks = re.split(r"^<!-- part: ([\w-]+) -->\n", static_text("study-parts.html"), flags=re.M)
    return {name: body.removesuffix("\n") for name, body in zip(chunks[1::2], chunks[2::2], strict=True)}


def part(which: str, /, **values: str) -> str:
    """One part of study-parts.html with every {{slot}} filled; every slot must be given."""
    template = _parts()[which]
    missing = set(_SLOT_RE.findall(template)) - set(values)
    if missing:
        raise KeyError(f"part {which!r}: slots without a value: {sorted(missing)}")
    return _SLOT_RE.sub(lambda m: values[m.group(1)], template)


def _csp(*scripts: str) -> str:
    """Only this page's own scripts may run (by hash) and nothing may be fetched."""
    hashes = " ".join(
        f"'sha256-{base64.b64encode(hashlib.sha256(s.encode('utf-8')).digest()).decode('ascii')}'"
        for s in scripts
    )
    return (
        "default-src 'none'; style-src 'unsafe-inline'; "
        f"script-src {hashes}; img-src data:; base-uri 'none'; form-action 'none'"
    )


PageBody = Callable[[Page], "Fragment | None"]  # a page's rendered body, if known


def study_html(
    bank: Bank,
    rendered: Callable[[Question], RenderedQuestion],
    branding: Branding = NO_BRANDING,
    guids: Guids | None = None,
    page_body: PageBody | None = None,
    revisions: Mapping[str, tuple[str, str]] | None = None,
    version: str | None = None,
    reuse: Reuse | None = None,
) -> bytes:
    """The whole bank as one self-contained HTML document, UTF-8 (deterministic for a bank).

    guids gives each memory point its note's GUID (from the lock): the 复习 mode keeps a card's
    progress under it, so progress follows the same identity as a learner's Anki history.
    page_body gives a page's rendered body (rendered here when it gives None); revisions, by
    GUID, a revised card's version and previous text; version is the bank's. reuse(kind, parts,
    make) may give back what make() gave for the same parts before (the build's memo): each
    question's article is made from its parts alone.
    """
    revisions = revisions or {}
    brand = branding.over(default_branding(bank, version))
    anchors = Anchors(bank)
    links = digest(sorted(anchors.by_path.items()))  # where every bank link points in the page
    by_module: dict[Module, list[Question]] = {m: [] for m in bank.modules}
    for q in bank.questions:
        by_module.setdefault(q.module, []).append(q)
    seen_cards: set[str] = set()
    titles: dict[str, str] = {}
    questions: dict[str, str] = {}
    for m in bank.modules:  # in page order: a card id taken twice gets its item number the second time
        for q in by_module[m]:
            aid = anchors.question_ids[str(q.path)]
            cids = _card_ids(q, seen_cards)
            note_guids = [guids(q, p) if guids else None for p in q.points]
            revised = [revisions.get(g or "") for g in note_guids]
            images = sorted((ref, anki_name(path)) for ref, path in q.media.items())
            parts = (q.source_key, images, aid, cids, note_guids, revised, links)
            titles[aid], questions[aid] = (reuse or _made)(
                "article",
                parts,
                partial(_question_parts, q, rendered, anchors, aid, cids, note_guids, revisions),
            )

    articles = _articles(bank, anchors, by_module, titles, questions, page_body)
    return fill_template(
        static_text("study.html"),
        **_page_chrome(bank, anchors, brand),
        sidebar=_sidebar(bank, anchors, titles, by_module),
        articles=[_deferred(a).encode("utf-8") for a in articles],
    )


def _articles(
    bank: Bank,
    anchors: Anchors,
    by_module: dict[Module, list[Question]],
    titles: dict[str, str],
    questions: dict[str, str],
    page_body: PageBody | None,
) -> list[str]:
    """Every article in page order: the root pages, then each module's page and its questions."""

    def body(page: Page) -> Fragment:
        return (page_body(page) if page_body else None) or render_page(page)

    articles: list[str] = []
    for p in bank.pages:
        pid = anchors.page_ids.get(str(p.path))
        if pid is not None:
            articles.append(_page(body(p), p, pid, anchors, "page"))
    for m in bank.modules:
        page, mid = anchors.module_pages.get(m), anchors.module_ids[m]
        articles.append(
            _page(body(page), page, mid, anchors, "m", m)
            if page
            else _module_stub(m, by_module[m], anchors, titles)
        )
        articles += [questions[anchors.question_ids[str(q.path)]] for q in by_module[m]]
    return articles


def _deferred(article: str) -> str:
    """The article with its body as the text of a <script type="text/html">: the browser reads
    it as text, without building its DOM, and study.js builds it when the article is shown.

    The body is sanitised HTML, so it has no comment and no script; either would end or bend
    the script element early, so it is refused rather than shipped broken."""
    opening, rest = article.split(">", 1)
    body, closing = rest.rsplit("</article>", 1)
    low = body.lower()
    if "</script" in low or "<!--" in low:
        raise ValueError(f"an article body must not contain '</script' or '<!--': {opening}>")
    return f'{opening}><script type="text/html">{body}</script></article>{closing}'


def _card_ids(q: Question, seen: set[str]) -> list[str]:
    cids = []
    for p in q.points:
        cid = card_id(q, p)
        if cid in seen:
            cid = f"{cid}-{p.index}"
        seen.add(cid)
        cids.append(cid)
    return cids


Guids = Callable[[Question, MemoryPoint], "str | None"]
Reuse = Callable[[str, tuple[Any, ...], Callable[[], Any]], Any]  # the build memo's get_or


def _made(kind: str, parts: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """Reuse nothing: make it."""
    return make()


def _guid_attr(guid: str | None) -> str:
    return f' data-guid="{html.escape(guid)}"' if guid else ""


def _vendored_fsrs() -> str:
    """ts-fsrs (MIT), the FSRS reference implementation for JavaScript, with its licence."""
    version = static_text("vendor/ts-fsrs.VERSION").strip()
    notice = static_text("vendor/ts-fsrs.LICENSE").strip()
    return f"/*! ts-fsrs {version}\n{notice}\n*/\n{static_text('vendor/ts-fsrs.umd.js')}"


def render_page(page: Page) -> Fragment:
    """A page's body (README, guided tour), rendered; pages show no images."""
    return FileRenderer()(page.body, images=False)


def _page_chrome(bank: Bank, anchors: Anchors, brand: Branding) -> dict[str, str]:
    """Everything around the articles: scripts and their CSP hashes, styles, titles, options."""
    config = json.dumps({"storage": STORAGE_PREFIX}, ensure_ascii=False, sort_keys=True)
    config = config.replace("<", "\\u003c")
    script = "\n".join(
        (
            f"window.STUDY_CONFIG = {config};",
            _vendored_fsrs(),
            static_text("study.js"),
            static_text("review.js"),
        )
    )
    if "</script" in script.lower():
        raise ValueError("the page's scripts must not contain '</script'")
    theme_boot = (
        "(function(){var t=null;try{t=localStorage.getItem('" + STORAGE_PREFIX + "theme')}catch(e){}"
        "if(t!=='light'&&t!=='dark'){t=window.matchMedia&&matchMedia('(prefers-color-scheme: dark)').matches"
        "?'dark':'light'}var r=document.documentElement;r.setAttribute('data-theme',t);r.classList.add('js')})();"
    )
    module_options = "".join(
        f'<option value="{anchors.module_ids[m]}">{html.escape(m.label)}</option>' for m in bank.modules
    )
    subtitle = f'<p class="brand-sub">{html.escape(brand.subtitle)}</p>' if brand.subtitle else ""
    return {
        "csp": _csp(theme_boot, script),
        "browser_title": html.escape(brand.browser_title or ""),
        "theme_boot": theme_boot,
        "css": "\n".join((static_text("pygments-light.css"), static_text("study.css"))),
        "front_id": FRONT_ID,
        "title": html.escape(brand.title or ""),
        "subtitle": subtitle,
        "module_options": module_options,
        "script": script,
    }


_SLOT_RE = re.compile(r"\{\{(\w+)\}\}")


def fill_template(template: str, **values: str | list[bytes]) -> bytes:
    """The template, UTF-8, with each {{name}} replaced by values[name] (a list: its items, one
    per line); every slot must be given. Joined once: the articles are most of 5 MB."""
    parts = _SLOT_RE.split(template)  # text, slot name, text, ..., text
    missing = set(parts[1::2]) - set(values)
    if missing:
        raise KeyError(f"template slots without a value: {sorted(missing)}")
    pieces: list[bytes] = []
    for i, part in enumerate(parts):
        value = values[part] if i % 2 else part
        if isinstance(value, list):
            pieces += [x for item in value for x in (b"\n", item)][1:]
        else:
            pieces.append(value.encode("utf-8"))
    return b"".join(pieces)
