"""study.html: the offline study page, checked as text and in a real browser (Debian's chromium).

The browser tests drive /usr/bin/chromium through Playwright for Python. Without either they are
skipped, except under CI=true, where they fail: CI must not pass by silently testing nothing.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import question_md, write_bank

from ainfra_cards.bank import load_bank
from ainfra_cards.build import Paths, plan
from ainfra_cards.config import Branding
from ainfra_cards.outputs.study import default_branding, study_html

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
TOUR = "305题漫游指南.md"

FRONT = """\
# 测试题库 305 题

一个小题库，用来测试 study.html。

| 模块 | 题号 | 题数 | 重点 |
|---|---|---|---|
| [01 基础](./01-基础/README.md) | 1–2 | 2 | 入门 |
| [05 数据并行](./05-数据并行/README.md) | 46–47 | 2 | DDP |

先看 [漫游指南](./305题漫游指南.md)。
"""

TOURTEXT = """\
# 305 题漫游指南

第一站：读 [DDP 的分桶](./05-数据并行/046-DDP分桶.md)，再回到 [总览](./README.md)。
第二站：[模块 05](./05-数据并行/README.md)；这篇 [还没写](./05-数据并行/999-不存在.md)。
"""

MODULE01 = """\
# 01 基础

| 题号 | 题目 |
|---|---|
| 1 | [张量是什么](./001-张量.md) |
| 2 | [自动微分](./002-autograd.md) |

[返回总览](../README.md)
"""

MODULE05 = """\
# 05 数据并行

| 题号 | 题目 |
|---|---|
| 46 | [DDP 的分桶](./046-DDP分桶.md) |
| 47 | [危险的题](./047-危险.md) |

[返回总览](../README.md)
"""

EXPLAIN_046 = """\
DDP 把梯度装进 Bucketing 桶里，每个桶满了就发起 all-reduce，和反向计算重叠。参见 [自动微分](../01-基础/002-autograd.md)。

```python
model = DDP(model, bucket_cap_mb=25)
loss.backward()  # all-reduce overlaps with backward
torch.distributed.init_process_group(backend="nccl", init_method="env://", world_size=8, rank=0, timeout=600)
```

一行很长的公式：\\(2MNK = 2 \\times 8192 \\times 16384 \\times 4096 \\times 8192 \\times 16384 \\approx 1.10 \\times 10^{12}\\)。

\\[
T = \\frac{S}{B} + \\alpha
\\]

| 参数 | 默认 |
|---|---|
| bucket_cap_mb | 25 |

更多见 [PyTorch 文档](https://pytorch.org/docs/stable/ddp.html)。"""

HOSTILE = """\
<script>alert(1)</script>

<img src=x onerror=alert(1)>

[点我](javascript:alert(1)) 和 <a href="javascript:alert(2)">也点我</a> <iframe src="https://evil.example/"></iframe>"""


def make_bank(root: Path) -> Path:
    q46 = question_md(
        46, "DDP 的分桶", ["1. **分桶要解决的问题**：减少 all-reduce 次数", "2. **默认桶大小**：25 MB"]
    )
    q46 = q46.replace("讲解正文。", EXPLAIN_046)
    q47 = question_md(
        47,
        "危险的题",
        ["1. **危险**：<img src=x onerror=alert(1)> 与 [x](javascript:alert(1))", "2. **安全**：只有文本"],
    )
    q47 = q47.replace("讲解正文。", HOSTILE)
    return write_bank(
        root,
        {
            "README.md": FRONT,
            TOUR: TOURTEXT,
            "01-基础/README.md": MODULE01,
            "01-基础/001-张量.md": question_md(
                1, "张量是什么", ["1. **张量**：多维数组", "2. **Stride**：步长"]
            ),
            "01-基础/002-autograd.md": question_md(
                2, "自动微分 Autograd", ["1. **反向图**：动态构建"], talking="- 讲清楚分片和计算图"
            ),
            "05-数据并行/README.md": MODULE05,
            "05-数据并行/046-DDP分桶.md": q46,
            "05-数据并行/047-危险.md": q47,
        },
    )


def render(root: Path, branding: Branding | None = None) -> str:
    page = plan(Paths.default(root), 1_800_000_000)
    return study_html(page.bank, page.question, branding or Branding()).decode("utf-8")


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("study")
    bank = make_bank(tmp / "questions")
    out = tmp / "study.html"
    out.write_text(render(bank), encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------------------
# As text


def test_output_is_deterministic_and_branded(tmp_path):
    root = make_bank(tmp_path / "questions")
    first = render(root)
    assert first == render(root)
    bank, _ = load_bank(root)
    assert default_branding(bank) == Branding("测试题库 305 题", "4 题 · 7 张卡片", "测试题库 305 题")
    assert "<title>测试题库 305 题</title>" in first and "4 题 · 7 张卡片" in first
    branded = render(root, Branding(title="我的 <题库>", subtitle="副标题", browser_title="浏览器标题"))
    assert "<title>浏览器标题</title>" in branded
    assert "我的 &lt;题库&gt;" in branded and "副标题" in branded and "我的 <题库>" not in branded
    partial = render(root, Branding(title="只改标题"))
    assert "只改标题" in partial and "<title>测试题库 305 题</title>" in partial


def test_nothing_points_outside_the_page(study):
    text = study.read_text("utf-8")
    for attr, value in re.findall(r"\b(src|href)\s*=\s*[\"']?([^\"'\s>]*)", text, re.I):
        assert not value.lower().startswith(("http:", "https:", "//", "javascript:", "data:")), (attr, value)
        if attr.lower() == "href":
            assert value.startswith("#"), value
    assert not re.search(r"\bsrc\s*=", text, re.I)
    assert "<link" not in text.lower() and "fetch(" not in text and "XMLHttpRequest" not in text
    # URLs appear only as visible text or a title tooltip
    assert not re.search(r"(?:src|href)=\S*(?:https?:|//)", text)
    # the external link is shown, not linked
    assert '<a class="ext" title="https://pytorch.org/docs/stable/ddp.html">PyTorch 文档</a>' in text


def test_hostile_markdown_is_inert(study):
    text = study.read_text("utf-8")
    # the page's own two scripts; every other script element is an article body (text, never run)
    scripts = re.findall(r"<script\b([^>]*)>", text, re.I)
    assert [attrs for attrs in scripts if attrs != ' type="text/html"'] == ["", ""]
    # the content, outside the page's own (hash-pinned) scripts, whose code may say "onerror"
    content = re.sub(r"<script>.*?</script>", "", text, flags=re.S)
    for bad in ("<script>alert", "onerror", "javascript:", "<iframe", "evil.example"):
        assert bad not in content.lower(), bad
    assert "<img" not in text.lower()
    # only the page's own scripts may run (CSP by hash), and nothing may be fetched
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text).group(1)
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp.split("script-src")[1].split(";")[0]


def test_bank_links_become_in_page_anchors(study):
    text = study.read_text("utf-8")
    tour = re.search(r'<article class="doc page" id="(page-[0-9a-f]+)".*?</article>', text, re.S)
    assert tour and "漫游指南" in tour.group(0)
    body = tour.group(0)
    assert '<a href="#q046">DDP 的分桶</a>' in body
    assert '<a href="#page-front">总览</a>' in body and '<a href="#m05">模块 05</a>' in body
    assert '<a class="dead">还没写</a>' in body  # unknown .md: text only
    assert f'<a href="#{tour.group(1)}">漫游指南</a>' in text  # front page -> tour
    assert '<a href="#q002">自动微分</a>' in text  # ../01-基础/002-autograd.md from question 46
    assert '<a href="#m01">01 基础</a>' in text and '<a href="#q001">张量是什么</a>' in text
    assert text.count('<a href="#page-front">返回总览</a>') == 2


# ---------------------------------------------------------------------------------------------
# In the browser


def _missing(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required when CI=true)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("playwright is not installed")
    if not CHROMIUM.exists():
        _missing(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


class Watched:
    """A page with every request, page error, console error and dialog recorded."""

    def __init__(self, browser, study: Path, **context):
        self.ctx = browser.new_context(**context)
        self.page = self.ctx.new_page()
        self.url = study.as_uri()
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))
        self.page.on(
            "console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None
        )
        self.page.on("dialog", lambda d: (self.errors.append(f"dialog: {d.message}"), d.dismiss()))

    def open(self, fragment: str = ""):
        self.page.goto(self.url + fragment)
        self.page.wait_for_function("() => document.querySelector('#docs > .doc.current') !== null")
        return self.page

    def check(self):
        outside = [u for u in self.requests if u.split("#")[0] != self.url]
        assert not outside, outside
        assert not self.errors, self.errors


@pytest.fixture
def watched(browser, study):
    made: list[Watched] = []

    def make(**context) -> Watched:
        w = Watched(browser, study, **context)
        made.append(w)
        return w

    yield make
    for w in made:
        w.check()
        w.ctx.close()


# The page shows an article from its hashchange handler: a changed location.hash alone does not
# mean the page has caught up, so tests wait for the page's own state (the article it marks current).
SHOWN_JS = (
    "() => { const id = ID; const cur = document.querySelector('#docs > .doc.current');"
    " return location.hash === '#' + id && cur !== null && cur.id === id; }"
)


def wait_shown(page, doc_id: str) -> None:
    page.wait_for_function(SHOWN_JS.replace("ID", repr(doc_id)))


def visible_ids(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(
        selector,
        "els => els.filter(e => e.offsetParent !== null || e.getClientRects().length)"
        ".map(e => e.id || e.getAttribute('data-target'))",
    )


def test_page_is_offline_complete_and_quiet(watched):
    w = watched()
    page = w.open()
    assert page.title() and "测试题库" in page.title()
    ids = page.eval_on_selector_all("article.question", "els => els.map(e => e.id)")
    assert ids == ["q001", "q002", "q046", "q047"]
    nav = page.eval_on_selector_all("#sidebar a.nav-q", "els => els.map(e => e.getAttribute('href'))")
    assert nav == ["#q001", "#q002", "#q046", "#q047"]
    pages = page.eval_on_selector_all("#sidebar .side-pages a", "els => els.map(e => e.textContent)")
    assert pages == ["首页", "305 题漫游指南"]
    assert visible_ids(page, "#docs > .doc") == ["page-front"]
    # the hostile question's answer shows, and nothing in it runs
    page.goto(w.url + "#q047")
    page.click("#q047 button.reveal")
    assert "也点我" in page.inner_text("#q047 .answer")
    assert page.eval_on_selector_all("#q047 [onerror], #q047 script, #q047 iframe", "els => els.length") == 0


def built_study(tmp_path: Path, files: dict[str, str]) -> Path:
    """study.html of a bank of the given files, built by the command a user runs."""
    from click.testing import CliRunner

    from ainfra_cards.cli import main

    bank = write_bank(tmp_path / "questions", files)
    assert CliRunner().invoke(main, ["build", "--questions", str(bank)]).exit_code == 0
    return tmp_path / "decks" / "study.html"


def search(page, term: str) -> None:
    """Type a query and wait until the page has searched for exactly it (typing waits for a pause)."""
    page.fill("#search", term)
    page.wait_for_function("q => document.getElementById('results').dataset.query === q", arg=term)


def result_ids(page) -> list[str]:
    return page.eval_on_selector_all("#results li a", "els => els.map(a => a.getAttribute('href').slice(1))")


def test_many_hits_all_listed_and_a_newer_search_wins(tmp_path, browser):
    """The first results are drawn at once and the rest a frame later: every hit is listed, the
    sidebar narrows to them, and a search typed meanwhile is never joined by the older one's rest."""
    files = {
        f"01-模块1/{n:03d}-q.md": question_md(
            n, f"第 {n} 个问题", [f"1. **提示 {n}**：共同词 {'独有词' if n == 7 else ''}"]
        )
        for n in range(1, 31)
    }
    w = Watched(browser, built_study(tmp_path, files))
    page = w.open()
    search(page, "共同词")
    assert len(result_ids(page)) == 30 and len(visible_ids(page, "#sidebar a.nav-q")) == 30
    assert "找到 30 题" in page.inner_text("#search-status")
    page.fill("#search", "")
    page.wait_for_timeout(400)  # a pause: the next keystroke searches at once
    # 共同词 searched, and before its other results are drawn, 独有词 and Enter (which searches now)
    page.evaluate(
        "() => { const s = document.getElementById('search'); s.value = '共同词';"
        " s.dispatchEvent(new Event('input')); s.value = '独有词';"
        " s.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' })); }"
    )
    page.wait_for_function("() => document.getElementById('results').dataset.query === '独有词'")
    page.wait_for_timeout(200)
    assert result_ids(page) == ["q007"] and visible_ids(page, "#sidebar a.nav-q") == ["q007"]
    wait_shown(page, "q007")  # Enter opened the one hit
    w.check()
    w.ctx.close()


def test_search_lists_hits_and_narrows_the_sidebar(watched):
    page = watched().open("#q001")
    page.fill("#search", "BUCKETING")  # English, any case, in the explanation text
    page.wait_for_function("() => document.body.classList.contains('view-results')")  # as you type
    search(page, "BUCKETING")
    assert result_ids(page) == ["q046"] and visible_ids(page, "#docs > .doc") == []
    assert visible_ids(page, "#sidebar a.nav-q") == ["q046"]
    assert page.is_hidden("#sidebar details.nav-mod[data-m='m01']")
    assert page.inner_text("#results li .qnum") == "第 46 题"
    assert "bucketing" in page.inner_text("#results li mark").lower()
    search(page, "分片")  # Chinese: in question 2's 面试要点 only
    assert result_ids(page) == ["q002"]
    assert visible_ids(page, "#sidebar a.nav-q") == ["q002"]
    search(page, "没有这个词")
    assert result_ids(page) == [] and visible_ids(page, "#sidebar a.nav-q") == []
    assert "没有找到" in page.inner_text("#search-status")
    page.press("#search", "Escape")  # clears the search and returns to the page
    page.wait_for_function("() => !document.body.classList.contains('view-results')")
    assert page.input_value("#search") == ""
    assert len(visible_ids(page, "#sidebar a.nav-q")) == 4
    assert visible_ids(page, "#docs > .doc") == ["q001"]


RANKED = {
    "08-通信/090-a.md": question_md(90, "梯度同步", ["1. **甲**：乙"]).replace(
        "讲解正文。", "讲解正文提到 all-reduce 的通信量。"
    ),
    "08-通信/091-b.md": question_md(91, "集合通信", ["1. **all-reduce 通信量**：2(N-1)/N·S"]),
    "08-通信/092-c.md": question_md(92, "all-reduce 的通信量怎么算", ["1. **公式**：2(N-1)/N·S"]),
    "08-通信/093-d.md": question_md(93, "all-reduce 的算法", ["1. **ring**：带宽最优"]),
    "08-通信/094-e.md": question_md(94, "与搜索无关", ["1. **无**：无"]),
}


@pytest.fixture(scope="module")
def ranked_page(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("ranked")
    out = tmp / "study.html"
    out.write_text(render(write_bank(tmp / "questions", RANKED)), encoding="utf-8")
    return out


WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliett",
    "kilo",
    "lima",
    "mike",
    "november",
]


def test_a_snippet_neither_starts_nor_ends_inside_a_word(browser, tmp_path):
    talk = "- " + " ".join(WORDS) + " needle " + " ".join(reversed(WORDS)) + " 然后是中文的结尾部分"
    out = tmp_path / "study.html"
    files = {"01-m/001-q.md": question_md(1, "标题", ["1. **提示**：答案"], talking=talk)}
    out.write_text(render(write_bank(tmp_path / "questions", files)), encoding="utf-8")
    w = Watched(browser, out)
    page = w.open()
    search(page, "needle")
    snip = page.inner_text("#results .snip")
    assert "needle" in snip and snip.startswith("…") and snip.endswith("…"), snip
    shown = snip.strip("…").split()
    assert shown[0] in WORDS and shown[-1] in WORDS, snip  # whole words at both ends
    w.check()
    w.ctx.close()


def test_results_rank_title_then_key_points_then_body_all_terms_first(browser, ranked_page):
    w = Watched(browser, ranked_page)
    page = w.open()
    search(page, "all-reduce 通信量")
    # all terms in the title, in 记忆要点, in the body; then the one with only some terms
    assert result_ids(page) == ["q092", "q091", "q090", "q093"]
    assert page.eval_on_selector_all(
        "#results li", "els => els.map(e => e.classList.contains('partial'))"
    ) == [
        False,
        False,
        False,
        True,
    ]
    snippets = page.eval_on_selector_all("#results .snip", "els => els.map(e => e.innerHTML)")
    assert "<mark>all-reduce</mark>" in snippets[2] and "<mark>通信量</mark>" in snippets[2]
    page.press("#search", "Enter")  # opens the first hit
    wait_shown(page, "q092")
    page.click("#q092 h1")
    page.keyboard.press("/")  # focuses the search box again
    assert page.evaluate("document.activeElement.id") == "search"
    w.check()
    w.ctx.close()


def test_answer_button_reveals_and_hides(watched):
    page = watched().open("#q046")
    button = page.locator("#q046 button.reveal")
    assert page.is_visible("#q046 .sec-prompt") and page.is_hidden("#q046 .answer")
    assert button.inner_text() == "查看答案"
    button.click()
    for part in ("完整讲解", "面试要点", "记忆要点"):
        assert page.is_visible(f"#q046 .answer h2:text-is('{part}')")
    assert page.is_visible("#q046 .answer .highlight") and page.is_visible("#q046 .answer math")
    assert button.inner_text() == "隐藏答案"
    button.click()
    assert page.is_hidden("#q046 .answer") and button.inner_text() == "查看答案"


def test_tour_and_module_links_jump_within_the_page(watched):
    page = watched().open()
    page.click("#sidebar .side-pages a:text-is('305 题漫游指南')")
    tour = page.eval_on_selector("#sidebar .side-pages a:text-is('305 题漫游指南')", "a => a.dataset.target")
    assert visible_ids(page, "#docs > .doc") == [tour]
    page.click(f"#{tour} a:text-is('DDP 的分桶')")
    wait_shown(page, "q046")
    assert visible_ids(page, "#docs > .doc") == ["q046"]
    assert page.get_attribute("#sidebar a[data-target='q046']", "class").split()[-1] == "active"
    page.click("#q046 .crumbs a")  # -> module page
    wait_shown(page, "m05")
    page.click("#m05 a:text-is('返回总览')")
    wait_shown(page, "page-front")
    assert visible_ids(page, "#docs > .doc") == ["page-front"]
    page.go_back()
    wait_shown(page, "m05")
    assert visible_ids(page, "#docs > .doc") == ["m05"]


def test_previous_next_and_random(watched):
    page = watched().open("#q002")
    page.click("#next")
    wait_shown(page, "q046")
    page.click("#prev")
    page.click("#prev")
    wait_shown(page, "q001")
    page.click("#prev")  # wraps around
    wait_shown(page, "q047")
    page.click("#random")
    page.wait_for_function(SHOWN_JS.replace("ID", "location.hash.slice(1)"))
    assert (
        re.fullmatch(r"#q0\d\d", page.evaluate("location.hash")) and page.evaluate("location.hash") != "#q047"
    )
    assert len(visible_ids(page, "#docs > .doc")) == 1


def _card_ids(page) -> list[str]:
    """Every card id of the current deck, stepping with 下一张 from the first."""
    count = page.inner_text("#card-count")
    total = int(re.match(r"\s*(\d+)\s*/\s*(\d+)", count).group(2)) if "/" in count else 0
    seen = []
    for _ in range(total):
        seen.append(page.get_attribute("#card", "data-card"))
        page.click("#card-next")
    return seen


def test_cards_flip_and_remember_known_across_a_reload(watched):
    page = watched().open("#q046")
    page.click("#cards-toggle")
    assert page.is_visible("#cards") and page.is_hidden("#docs")
    assert page.input_value("#card-scope") == "m05"  # the current question's module
    assert page.inner_text("#card-count").startswith("1 / 4")
    assert "DDP 的分桶" in page.inner_text("#card .card-ctx")
    assert page.inner_text("#card .card-cue") == "分桶要解决的问题"
    assert page.is_hidden("#card .card-ans")
    page.click("#card")
    assert page.is_visible("#card .card-ans") and "减少 all-reduce 次数" in page.inner_text("#card .card-ans")
    first = page.get_attribute("#card", "data-card")
    page.click("#card-known")
    assert page.get_attribute("#card-known", "aria-pressed") == "true"
    page.select_option("#card-scope", "all")
    assert sorted(_card_ids(page)) == sorted(
        page.eval_on_selector_all("li.pt", "els => els.map(e => e.dataset.card)")
    )

    page.reload()
    page.click("#cards-toggle")
    assert page.get_attribute("#card", "data-card") == first
    assert page.get_attribute("#card-known", "aria-pressed") == "true"
    assert "known" in page.get_attribute("#card", "class")
    page.check("#card-unknown")
    remaining = _card_ids(page)
    assert first not in remaining and len(remaining) == 3
    page.select_option("#card-scope", "all")
    assert first not in _card_ids(page)
    page.uncheck("#card-unknown")
    assert first in _card_ids(page)
    page.click("#card-shuffle")
    assert page.inner_text("#card-count").startswith("1 / 7")
    page.click("#cards-exit")
    assert page.is_visible("#docs") and page.is_hidden("#cards")
    stored = page.evaluate("localStorage.getItem('ainfra-study:known')")
    assert json.loads(stored) == [first]


def test_works_without_local_storage(watched):
    w = watched()
    w.page.add_init_script(
        "Object.defineProperty(window, 'localStorage', {get() { throw new DOMException('no', 'SecurityError'); }});"
    )
    page = w.open("#q001")
    page.click("#theme-toggle")
    page.click("#cards-toggle")
    page.click("#card")
    page.click("#card-known")
    assert page.get_attribute("#card-known", "aria-pressed") == "true"
    page.check("#card-unknown")
    assert page.inner_text("#card-count").startswith("1 / 2")


def test_theme_follows_the_system_and_the_toggle_is_remembered(watched):
    page = watched(color_scheme="dark").open()
    assert page.get_attribute("html", "data-theme") == "dark"
    page.click("#theme-toggle")
    assert page.get_attribute("html", "data-theme") == "light"
    page.reload()
    assert page.get_attribute("html", "data-theme") == "light"
    bg = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert bg == "rgb(255, 255, 255)"


@pytest.mark.parametrize("size", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_screenshots_and_layout(watched, tmp_path, size, scheme):
    w, h = size
    page = watched(viewport={"width": w, "height": h}, color_scheme=scheme).open("#q046")
    page.click("#q046 button.reveal")
    assert page.get_attribute("html", "data-theme") == scheme
    # nothing is wider than the screen (wide code, tables and formulas scroll in their own box)
    assert page.evaluate("document.documentElement.scrollWidth") <= w
    phone = w < 800
    assert page.is_visible("#menu") == phone
    side = page.evaluate("document.querySelector('#sidebar').getBoundingClientRect().right")
    assert (side <= 1) if phone else (side > 200)  # on a phone it waits off-screen
    if phone:
        page.click("#menu")
        page.wait_for_timeout(300)
        assert page.evaluate("document.querySelector('#sidebar').getBoundingClientRect().left") >= -1
        page.click("#sidebar a[data-target='q047']")
        wait_shown(page, "q047")
        page.wait_for_timeout(300)
        assert page.evaluate("document.querySelector('#sidebar').getBoundingClientRect().right") <= 1
        page.goto(page.url.split("#")[0] + "#q046")
    shot = tmp_path / f"study-{'phone' if phone else 'desktop'}-{scheme}.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 5000


def test_a_bank_without_pages_still_has_every_anchor(tmp_path):
    root = write_bank(
        tmp_path / "bare",
        {
            "01-基础/001-a.md": question_md(1, "甲题", ["1. **一**：壹"]),
            "02-进阶/011-b.md": question_md(11, "乙题 `code`", ["1. **三**：叁"]),
        },
    )
    text = render(root)
    for anchor in ("m01", "m02", "q001", "q011"):
        assert f'id="{anchor}"' in text
    assert '<a href="#q011">11. 乙题 <code>code</code></a>' in text  # the module stub lists its questions
    assert "<title>bare</title>" in text and 'class="nav-page"' not in text


def test_articles_are_built_on_demand_and_search_reads_what_they_show(browser):
    """Opening the page builds only the article shown; search reads every other article's text
    from its source, and on the whole committed bank that text is exactly what the article
    shows once built (entities, MathML, code, tables)."""
    page = browser.new_page()
    page.goto((REPO / "decks" / "study.html").as_uri() + "#q046")
    page.wait_for_function("() => document.querySelector('#docs > .doc.current') !== null")
    unbuilt = "el => !el.querySelector(':scope > script[type=\"text/html\"]')"
    assert page.eval_on_selector_all("#docs > .doc", f"els => els.filter({unbuilt}).map(e => e.id)") == [
        "q046"
    ]
    differing = page.evaluate(
        """() => {
          const docs = [...document.querySelectorAll('#docs > .doc')];
          const read = docs.map(el => {
            const src = el.querySelector(':scope > script[type="text/html"]');
            return src ? window.AinfraStudy.textOf(src.textContent) : null;
          });
          window.AinfraStudy.fillAll();
          return docs.filter((el, i) => read[i] !== null && read[i] !== el.textContent).map(el => el.id);
        }"""
    )
    assert differing == []
    bank, _ = load_bank(REPO / "questions")
    assert page.eval_on_selector_all("#docs li.pt", "els => els.length") == sum(
        len(q.points) for q in bank.questions
    )
    page.close()


def test_a_link_to_an_anchor_inside_an_article_not_built_yet_opens_it(browser, tmp_path):
    explanation = '前文。\n\n<a id="deep-anchor"></a>这里是被链接的段落。'
    root = write_bank(
        tmp_path / "questions",
        {"01-基础/001-a.md": question_md(1, "甲", ["1. **提示**：答案"]).replace("先讲机制", explanation)},
    )
    out = tmp_path / "study.html"
    out.write_text(render(root), encoding="utf-8")
    page = browser.new_page()
    page.goto(out.as_uri() + "#deep-anchor")
    page.wait_for_function("() => document.querySelector('#docs > .doc.current') !== null")
    assert page.evaluate("document.querySelector('#docs > .doc.current').id") == "q001"
    assert page.evaluate("document.getElementById('deep-anchor') !== null")
    page.close()


def test_the_sidebar_keeps_the_current_question_in_view(tmp_path, browser):
    """However a question is opened (a link or bookmark with its anchor, 随机一题), its sidebar
    entry is on screen, in a bank long enough that most entries start off screen."""
    files = {
        f"{1 + (n - 1) // 20:02d}-模块{1 + (n - 1) // 20}/{n:03d}-q.md": question_md(
            n, f"第 {n} 个问题的标题", [f"1. **提示 {n}**：答案 {n}"]
        )
        for n in range(1, 121)
    }
    page_file = built_study(tmp_path, files)
    in_view = (
        "id => { const a = document.querySelector(`#sidebar a[data-target=${id}]`);"
        " const r = a.getBoundingClientRect(), s = document.getElementById('sidebar').getBoundingClientRect();"
        " return r.height > 0 && r.top >= Math.max(0, s.top) - 1 && r.bottom <= Math.min(innerHeight, s.bottom) + 1; }"
    )
    w = Watched(browser, page_file, viewport={"width": 1280, "height": 900})
    page = w.open("#q110")
    wait_shown(page, "q110")
    page.wait_for_function(in_view, arg="q110", timeout=5000)  # scrolled after two frames
    current = "() => document.querySelector('#docs > .doc.current').id"
    for _ in range(3):
        before = page.evaluate(current)
        page.click("#random")
        page.wait_for_function(f"before => ({current})() !== before", arg=before)
        shown = page.evaluate(current)
        page.wait_for_function(in_view, arg=shown, timeout=5000)
    w.check()
    w.ctx.close()


def test_status_lines_sit_flush_with_what_they_describe(watched):
    """At any width the column of a status line (found N, left to review, today) is that of the
    results or cards it describes."""
    left = "ids => ids.map(id => Math.round(document.getElementById(id).getBoundingClientRect().left))"
    for width in (1280, 1600, 390):
        page = watched(viewport={"width": width, "height": 900}).open()
        search(page, "DDP")
        status, results = page.evaluate(left, ["search-status", "results"])
        assert status == results, (width, status, results)
        page.press("#search", "Escape")
        page.click("#review-toggle")
        page.wait_for_selector("#rv-today", state="visible")
        lines = page.evaluate(left, ["rv-left", "rv-today", "rv-stats"])
        assert len(set(lines)) == 1, (width, lines)
