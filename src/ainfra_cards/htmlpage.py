"""study.html: the whole bank as one self-contained offline page for reading and self-testing.

Everything is inline (CSS, JS, MathML made at build time); the page makes no network request and
loads nothing beside itself. All Markdown goes through render.to_html (nh3-sanitised); what this
module adds afterwards only rewrites or removes link targets and images in that sanitised HTML.
The output depends only on the bank, so the same bank gives byte-identical HTML.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import posixpath
import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from pathlib import Path, PurePosixPath
from urllib.parse import unquote

from .media import data_uri
from .model import Bank, MemoryPoint, Module, Page, Question
from .render import mathml, to_html

FRONT_ID = "page-front"
STORAGE_PREFIX = "ainfra-study:"


@dataclass(frozen=True)
class Branding:
    """What the page calls itself. A field left as None takes its default (see default_branding)."""

    title: str | None = None
    subtitle: str | None = None
    browser_title: str | None = None


def default_branding(bank: Bank) -> Branding:
    cards = sum(len(q.points) for q in bank.questions)
    return Branding(bank.title, f"{len(bank.questions)} 题 · {cards} 张卡片", bank.title)


def _resolve(bank: Bank, branding: Branding | None) -> Branding:
    base = default_branding(bank)
    if branding is None:
        return base
    return Branding(
        branding.title if branding.title is not None else base.title,
        branding.subtitle if branding.subtitle is not None else base.subtitle,
        branding.browser_title if branding.browser_title is not None else base.browser_title,
    )


@cache
def _static(name: str) -> str:
    return files("ainfra_cards").joinpath("static", name).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Anchors and link rewriting


def _short_hash(text: str, n: int = 8) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:n]


def question_anchor(q: Question) -> str:
    return f"q{q.number:03d}"


def module_anchor(m: Module) -> str:
    return f"m{m.number:02d}"


def _module_ids(modules: list[Module]) -> dict[Module, str]:
    ids: dict[Module, str] = {}
    for m in modules:  # two folders with one number (a bank with errors) still get distinct ids
        aid = module_anchor(m)
        ids[m] = aid if aid not in ids.values() else f"{aid}-{_short_hash(m.folder, 6)}"
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
                aid = f"{aid}-{_short_hash(str(q.path), 6)}"
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
                aid = f"page-{_short_hash(path)}"
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


def _fix_links(fragment: str, anchors: Anchors, base: PurePosixPath) -> str:
    """Point bank links at in-page anchors; drop every other target (no URL leaves the page)."""

    def a(m: re.Match[str]) -> str:
        attrs = _attrs(m.group(1))
        href = attrs.get("href")
        classes = attrs.get("class", "").split()
        extra = ""
        if href is None:
            pass
        elif href.startswith("#"):
            extra = f' href="{html.escape(href)}"'
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

    fragment = _A_RE.sub(a, fragment)
    fragment = _IMG_RE.sub(img, fragment)
    fragment = _XMLNS_RE.sub("", fragment)
    fragment = _TABLE_OPEN_RE.sub('<div class="table-wrap"><table', fragment)
    return fragment.replace("</table>", "</table></div>")


def _md(
    text: str,
    anchors: Anchors,
    base: PurePosixPath,
    inline: bool = False,
    media: dict[str, Path] | None = None,
) -> str:
    """Render Markdown; images the bank validated (media) are inlined as data: URIs."""

    def image(ref: str) -> str | None:
        return data_uri(media[ref]) if media and ref in media else None

    return _fix_links(to_html(text, math=mathml, inline=inline, images=image), anchors, base)


def _no_links(fragment: str) -> str:
    """Inline HTML for use inside another link (sidebar, card context): its own links removed."""
    return re.sub(r"</?a\b[^>]*>", "", fragment)


# ---------------------------------------------------------------------------------------------
# Page parts


def card_id(q: Question, p: MemoryPoint) -> str:
    """Stable id of a memory point in the learner's browser storage: question number + cue hash."""
    return f"{q.number:03d}-{_short_hash(p.cue)}"


def _question(q: Question, anchors: Anchors, aid: str, seen_cards: set[str]) -> str:
    base = q.path
    title = _md(q.title, anchors, base, inline=True)
    m = q.module
    mid = anchors.module_ids[m]
    parts = [
        f'<article class="doc question" id="{aid}" data-kind="q" data-m="{mid}" data-n="{q.number}">',
        '<header class="doc-head">',
        f'<p class="crumbs"><a href="#{mid}">{html.escape(m.label)}</a>'
        f'<span class="qnum">第 {q.number} 题</span></p>',
        f'<h1 class="qtitle">{title}</h1>',
        "</header>",
        '<section class="sec sec-prompt"><h2>题目</h2>',
        _md(q.prompt, anchors, base, media=q.media),
        "</section>",
        '<div class="reveal-row"><button type="button" class="reveal" aria-expanded="false">查看答案</button></div>',
        '<div class="answer" hidden>',
    ]
    if q.explanation:
        parts += [
            '<section class="sec sec-explain"><h2>完整讲解</h2>',
            _md(q.explanation, anchors, base, media=q.media),
            "</section>",
        ]
    if q.talking_points:
        parts += [
            '<section class="sec sec-talk"><h2>面试要点</h2>',
            _md(q.talking_points, anchors, base, media=q.media),
            "</section>",
        ]
    for name, body in q.extra_sections:
        if body.strip():
            parts += [
                f'<section class="sec sec-extra"><h2>{html.escape(name.strip())}</h2>',
                _md(body, anchors, base, media=q.media),
                "</section>",
            ]
    if q.points:
        parts.append('<section class="sec sec-points"><h2>记忆要点</h2><ol class="points">')
        for p in q.points:
            cid = card_id(q, p)
            if cid in seen_cards:
                cid = f"{cid}-{p.index}"
            seen_cards.add(cid)
            parts.append(
                f'<li class="pt pt-{html.escape(p.kind)}" data-card="{cid}">'
                f'<div class="pt-cue">{_md(p.cue, anchors, base, inline=True, media=q.media)}</div>'
                f'<div class="pt-ans">{_md(p.answer, anchors, base, inline=True, media=q.media)}</div></li>'
            )
        parts.append("</ol></section>")
    parts.append("</div></article>")
    return "\n".join(parts)


def _page(page: Page, aid: str, anchors: Anchors, kind: str, module: Module | None = None) -> str:
    data_m = f' data-m="{anchors.module_ids[module]}"' if module else ""
    return (
        f'<article class="doc page" id="{aid}" data-kind="{kind}"{data_m}>\n'
        f"{_md(page.body, anchors, page.path)}\n</article>"
    )


def _module_stub(bank: Bank, m: Module, anchors: Anchors) -> str:
    """A module with no README: a heading and its question list, so #mNN always exists."""
    items = "".join(
        f'<li><a href="#{anchors.question_ids[str(q.path)]}">{q.number}. '
        f"{_no_links(_md(q.title, anchors, q.path, inline=True))}</a></li>"
        for q in bank.module_questions(m)
    )
    return (
        f'<article class="doc page" id="{anchors.module_ids[m]}" data-kind="m" data-m="{anchors.module_ids[m]}">\n'
        f"<h1>{html.escape(m.label)}</h1>\n<ul>{items}</ul>\n</article>"
    )


def _sidebar(bank: Bank, anchors: Anchors, titles: dict[str, str]) -> str:
    out = ['<nav id="sidebar" aria-label="目录"><div class="side-pages">']
    for p in bank.pages:
        aid = anchors.page_ids.get(str(p.path))
        if aid is None:
            continue
        label = "首页" if aid == FRONT_ID else html.escape(p.title)
        out.append(f'<a class="nav-page" href="#{aid}" data-target="{aid}">{label}</a>')
    out.append("</div>")
    for m in bank.modules:
        qs = bank.module_questions(m)
        mid = anchors.module_ids[m]
        out.append(
            f'<details class="nav-mod" data-m="{mid}"><summary>'
            f'<span class="mod-num">{m.number:02d}</span> {html.escape(m.name)}'
            f'<span class="count">{len(qs)}</span></summary>'
            f'<a class="nav-modpage" href="#{mid}" data-target="{mid}">模块概览</a>'
        )
        for q in qs:
            aid = anchors.question_ids[str(q.path)]
            out.append(
                f'<a class="nav-q" href="#{aid}" data-target="{aid}"><span class="num">{q.number}</span>'
                f'<span class="t">{titles[aid]}</span></a>'
            )
        out.append("</details>")
    out.append("</nav>")
    return "\n".join(out)


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


def render_study_html(bank: Bank, branding: Branding | None = None) -> str:
    """The whole bank as one self-contained HTML document (deterministic for a given bank)."""
    brand = _resolve(bank, branding)
    anchors = Anchors(bank)
    titles = {
        anchors.question_ids[str(q.path)]: _no_links(_md(q.title, anchors, q.path, inline=True))
        for q in bank.questions
    }
    articles: list[str] = []
    for p in bank.pages:
        aid = anchors.page_ids.get(str(p.path))
        if aid is not None:
            articles.append(_page(p, aid, anchors, "page"))
    seen_cards: set[str] = set()
    for m in bank.modules:
        page = anchors.module_pages.get(m)
        mid = anchors.module_ids[m]
        articles.append(_page(page, mid, anchors, "m", m) if page else _module_stub(bank, m, anchors))
        for q in bank.module_questions(m):
            articles.append(_question(q, anchors, anchors.question_ids[str(q.path)], seen_cards))
    config = json.dumps({"storage": STORAGE_PREFIX}, ensure_ascii=False, sort_keys=True)
    config = config.replace("<", "\\u003c")
    script = f"window.STUDY_CONFIG = {config};\n{_static('study.js')}"
    if "</script" in script.lower():
        raise ValueError("study.js must not contain '</script'")
    theme_boot = (
        "(function(){var t=null;try{t=localStorage.getItem('" + STORAGE_PREFIX + "theme')}catch(e){}"
        "if(t!=='light'&&t!=='dark'){t=window.matchMedia&&matchMedia('(prefers-color-scheme: dark)').matches"
        "?'dark':'light'}var r=document.documentElement;r.setAttribute('data-theme',t);r.classList.add('js')})();"
    )
    csp = _csp(theme_boot, script)
    css = "\n".join((_static("pygments-light.css"), _static("study.css")))
    module_options = "".join(
        f'<option value="{anchors.module_ids[m]}">{html.escape(m.label)}</option>' for m in bank.modules
    )
    subtitle = f'<p class="brand-sub">{html.escape(brand.subtitle)}</p>' if brand.subtitle else ""
    doc = f"""<!DOCTYPE html>
<html lang="zh-CN" data-theme="light">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="color-scheme" content="light dark">
<title>{html.escape(brand.browser_title or "")}</title>
<script>{theme_boot}</script>
<style>
{css}
</style>
</head>
<body>
<a class="skip" href="#main">跳到正文</a>
<header id="topbar">
<button type="button" id="menu" class="icon-btn" aria-controls="sidebar" aria-expanded="false" title="目录">☰<span class="sr">目录</span></button>
<a class="brand" href="#{FRONT_ID}"><span class="brand-title">{html.escape(brand.title or "")}</span>{subtitle}</a>
<div class="search-box"><input type="search" id="search" placeholder="搜索题目与讲解…" autocomplete="off" spellcheck="false" aria-label="搜索"></div>
<div class="tools">
<button type="button" id="cards-toggle" aria-pressed="false">卡片模式</button>
<button type="button" id="theme-toggle" class="icon-btn" title="切换深色/浅色">◐<span class="sr">切换主题</span></button>
</div>
</header>
<div id="layout">
{_sidebar(bank, anchors, titles)}
<div id="scrim" hidden></div>
<main id="main" tabindex="-1">
<p id="search-status" class="status" hidden></p>
<div id="docs">
{chr(10).join(articles)}
</div>
<section id="cards" hidden aria-label="卡片模式">
<div class="cards-bar">
<label>范围 <select id="card-scope"><option value="all">全部模块</option>{module_options}</select></label>
<label class="check"><input type="checkbox" id="card-unknown"> 只看未掌握</label>
<button type="button" id="card-shuffle">洗牌</button>
<button type="button" id="cards-exit">返回阅读</button>
</div>
<p id="card-count" class="status"></p>
<div id="card" class="flashcard" tabindex="0" role="button" aria-label="翻面">
<p class="card-ctx"></p>
<div class="card-cue"></div>
<div class="card-ans" hidden></div>
<p class="card-hint">点击卡片或按空格翻面</p>
</div>
<p id="card-empty" class="status" hidden>这里没有要复习的卡片了。</p>
<div class="card-actions">
<button type="button" id="card-prev">上一张</button>
<button type="button" id="card-flip">翻面</button>
<button type="button" id="card-known" aria-pressed="false">已掌握</button>
<button type="button" id="card-next">下一张</button>
</div>
</section>
</main>
</div>
<nav id="pager" aria-label="题目导航">
<button type="button" id="prev">上一题</button>
<button type="button" id="random">随机一题</button>
<button type="button" id="next">下一题</button>
</nav>
<script>{script}</script>
</body>
</html>
"""
    return doc
