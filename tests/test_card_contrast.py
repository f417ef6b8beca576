"""Every text on a card is readable: at least 4.5:1 against what is behind it, in Anki's light
and night modes, measured in Chromium on real cards of the bank (a revised one and a retired one
among them), with their details opened."""

from __future__ import annotations

import re

import pytest
from conftest import Builder, question_md, write_bank
from test_study_html import browser  # noqa: F401 - the browser fixture

from ainfra_cards import notetype as nt

CONTRAST = """() => {
  function rgb(s) { const m = s.match(/[\\d.]+/g).map(Number); return m.length > 3 ? m : m.concat([1]); }
  function lum(c) {
    const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  }
  function behind(el) {
    for (; el; el = el.parentElement) {
      const c = rgb(getComputedStyle(el).backgroundColor);
      if (c[3] > 0) return c;
    }
    return [255, 255, 255, 1];
  }
  const out = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || !el.checkVisibility()) continue;
    const a = lum(rgb(getComputedStyle(el).color)), b = lum(behind(el));
    const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    out.push([n.textContent.trim().slice(0, 30), el.className || el.tagName, Math.round(ratio * 100) / 100]);
  }
  return out;
}"""


def _fill(template: str, fields: dict[str, str]) -> str:
    template = re.sub(
        r"\{\{#(\w+)\}\}(.*?)\{\{/\1\}\}",
        lambda m: m.group(2) if fields.get(m.group(1)) else "",
        template,
        flags=re.S,
    )
    return re.sub(r"\{\{(\w+)\}\}", lambda m: fields.get(m.group(1), ""), template)


@pytest.mark.parametrize("night", [False, True], ids=["light", "night"])
def test_every_text_on_a_card_is_at_least_4_5_to_1(tmp_path, browser, night):  # noqa: F811
    bank = write_bank(
        tmp_path / "questions",
        {
            "05-数据并行/046-a.md": question_md(
                46, "DDP 分桶", ["1. **桶大小**：25 MB", "2. **首桶**：`1 MB`"]
            )
        },
    )
    builder = Builder(tmp_path)
    builder.build()
    path = bank / "05-数据并行/046-a.md"
    text = path.read_text("utf-8").replace("25 MB", "25 MiB").replace("2. **首桶**：`1 MB`\n", "")
    path.write_text(
        text.replace(
            "## 记忆要点", "## 参考资料\n\n- [文档](https://example.org/) — 出处\n\n---\n\n## 记忆要点"
        ),
        "utf-8",
    )
    plan = builder.build(advance=86400)
    cards = plan.cards
    assert any("notice revised" in c.fields["Back"] for c in cards)
    assert any("notice retired" in c.fields["Back"] for c in cards)
    page = browser.new_page()
    body = "nightMode card" if night else "card"
    for card in cards:
        html = _fill(nt.templates()[0]["qfmt"], card.fields) + _fill(nt.templates()[0]["afmt"], card.fields)
        page.set_content(
            f"<html><head><style>{nt.css()}</style></head><body class='{body}'>{html}</body></html>"
        )
        page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        measured = page.evaluate(CONTRAST)
        assert measured, card.guid
        low = [m for m in measured if m[2] < 4.5]
        assert not low, low
    page.close()
