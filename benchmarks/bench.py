#!/usr/bin/env python3
"""How fast a build is, measured against the floors, side by side (these machines are noisy).

usage: python benchmarks/bench.py [--runs N] [--questions DIR] [--skip-growth] [--skip-browser]
                                 [--browser-only]

Every figure is a whole process, timed from the outside, repeated --runs times and alternated
with its floor, so that a slow moment of the machine hits both. Printed: median and min-max in
seconds, and the ratio of the medians.

- rebuild, nothing changed / one memory point's answer changed / one sentence of an explanation
  changed: `ainfra-cards build` with a warm cache, against the genanki-only floor
  (benchmarks/floor.py package: the same notes, only packaged);
- cold build: `ainfra-cards build --no-cache`, against one Python-Markdown pass over every
  question file plus the same packaging (floor.py markdown);
- growth: the bank repeated ten times (files renumbered), a first build with no lock and no
  cache, against the bank itself; and the peak memory of that build;
- study.html: from opening the file in Chromium to the first search results drawn, with the
  query typed the moment the first article shows, on the page's own clock; against the load
  event of the same bytes with no script run. Also as Playwright sees it from outside, next to
  the same steps on a one-line page (the round trips alone).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLOOR = Path(__file__).resolve().parent / "floor.py"
ONE_CHANGE = "（基准测试）"


def run(cmd: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return time.perf_counter() - start


def peak_kib(cmd: list[str], env: dict[str, str]) -> int:
    """Peak resident memory of cmd (and its children), in KiB, from a fresh wrapper process."""
    wrapper = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, "
        "stdout=subprocess.DEVNULL); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], env=env, check=True, capture_output=True)
    return int(out.stdout.decode().strip())


def alternate(ours, floor, runs: int, before=None) -> tuple[list[float], list[float]]:
    """Time ours and floor in turn, runs times each; before() is called before each of ours."""
    a, b = [], []
    for _ in range(runs):
        b.append(floor())
        if before:
            before()
        a.append(ours())
    return a, b


def summary(times: list[float]) -> str:
    return f"{statistics.median(times):6.3f} ({min(times):.3f}-{max(times):.3f})"


def export_notes(bank: Path, out: Path) -> None:
    """The notes a build of bank makes, as JSON for floor.py (same fields, tags, decks, GUIDs)."""
    from ainfra_cards import notetype as nt
    from ainfra_cards.build import Paths, plan

    built = plan(Paths.default(bank), 1_800_000_000)
    notes = [
        {
            "guid": c.guid,
            "fields": [c.fields[f] for f in nt.FIELDS],
            "tags": c.tags,
            "deck_id": nt.deck_id(c.module.number),
            "deck": nt.deck_name(c.module.label),
        }
        for c in built.cards
    ]
    data = {"model_id": nt.NOTETYPE_ID, "fields": nt.FIELDS, "notes": notes}
    out.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def toggle(bank: Path, where: str) -> None:
    """Edit one line of question 046 with text no build has seen yet: a real edit, which the
    cache can only partly answer (each call replaces the previous call's marker by a new one).

    where="card": the first memory point's answer, so the deck, study.html and the lock change;
    where="text": the first numbered item of the explanation, so only study.html changes.
    Each kind has its own marker, so alternating measurements never undo each other's edit.
    """
    path = sorted(bank.glob("05-*/046-*.md"))[0]
    head, cards = path.read_text(encoding="utf-8").split("\n## 记忆要点\n", 1)
    part = cards if where == "card" else head
    marker = re.compile(f"{ONE_CHANGE[:-1]}·{where}·(\\d+)）")
    found = marker.search(part)
    n = int(found.group(1)) + 1 if found else 1
    new = f"{ONE_CHANGE[:-1]}·{where}·{n}）"
    if found:
        part = marker.sub(new, part, count=1)
    else:
        part = re.sub(r"(\n1\. \*\*[^\n]*)", lambda m: m.group(1) + new, part, count=1)
    head, cards = (head, part) if where == "card" else (part, cards)
    path.write_text(head + "\n## 记忆要点\n" + cards, encoding="utf-8")


def tenfold(bank: Path, out: Path) -> Path:
    """The bank's question files ten times over, renumbered (no front page, so no ranges)."""
    files = sorted(bank.glob("[0-9][0-9]-*/[0-9][0-9][0-9]-*.md"))
    for copy in range(10):
        for src in files:
            number = int(src.name[:3]) + 310 * copy
            folder = out / src.parent.name
            folder.mkdir(parents=True, exist_ok=True)
            text = re.sub(r"^# 第 \d+ 题", f"# 第 {number} 题", src.read_text(encoding="utf-8"), count=1)
            (folder / f"{number:04d}{src.name[3:]}").write_text(text, encoding="utf-8")
    return out


def same_bytes_floor(page_file: Path, out: Path) -> Path:
    """study.html with every script made inert (``type="text/plain"``): about the same bytes to
    load and parse, nothing run. What Chromium takes to open it is the floor of opening the page."""
    html = page_file.read_text("utf-8")
    out.write_text(html.replace("<script>", '<script type="text/plain">'), "utf-8")
    return out


# Types the query the moment the page shows its first article, as a user who never pauses
# would, and notes on the page's own clock (0 = the start of the navigation) when it typed and
# when the results had been drawn (the frame after they went in).
TYPE_AT_ONCE = """
(() => {
  const QUERY = %s;
  const typeNow = () => {
    const input = document.getElementById("search");
    if (!input || !document.querySelector("#docs > .doc.current")) return false;
    window.__typed = performance.now();
    new MutationObserver((_, mo) => {
      if (!document.body.classList.contains("view-results")) return;
      mo.disconnect();
      requestAnimationFrame(() => setTimeout(() => { window.__hit = performance.now(); }, 0));
    }).observe(document.body, { attributes: true, attributeFilter: ["class"] });
    input.value = QUERY;
    input.dispatchEvent(new Event("input", { bubbles: true }));
    return true;
  };
  document.addEventListener("DOMContentLoaded", () => {
    if (typeNow()) return;
    new MutationObserver((_, mo) => { if (typeNow()) mo.disconnect(); })
      .observe(document.documentElement, { subtree: true, childList: true, attributes: true });
  });
})();
"""
QUERY = "NCCL"
LOAD_EVENT = "() => performance.getEntriesByType('navigation')[0].loadEventEnd / 1000"


def browser_open_to_search(page_file: Path, runs: int) -> dict[str, list[float]] | None:
    """study.html against the same bytes with no script run, in Chromium, in turn.

    On the page's own clock (seconds from the start of the navigation): the floor's load event;
    study.html typed into (its first article shown) and its first results drawn. From outside,
    as Playwright sees it: goto, wait for the first article, fill the search box, wait for the
    results, and the same steps on a one-line page (what the round trips alone cost)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    floor_file = same_bytes_floor(page_file, page_file.with_name("floor.html"))
    tiny = page_file.with_name("tiny.html")
    tiny.write_text(
        '<!doctype html><input id="search"><div id="docs"><div class="doc current"></div></div><script>'
        "document.getElementById('search').addEventListener('input', function () {"
        " document.body.classList.add('view-results'); });</script>",
        "utf-8",
    )
    times: dict[str, list[float]] = {k: [] for k in ("floor", "typed", "hit", "outside", "harness")}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium) if chromium else p.chromium.launch()
        for _ in range(runs):
            page = browser.new_page()
            page.goto(floor_file.as_uri(), wait_until="load")
            times["floor"].append(page.evaluate(LOAD_EVENT))
            page.close()
            page = browser.new_page()
            page.add_init_script(TYPE_AT_ONCE % json.dumps(QUERY))
            page.goto(page_file.as_uri())
            page.wait_for_function("() => window.__hit !== undefined")
            typed, hit = page.evaluate("() => [window.__typed / 1000, window.__hit / 1000]")
            times["typed"].append(typed)
            times["hit"].append(hit)
            page.close()
            for target, key in ((page_file, "outside"), (tiny, "harness")):
                page = browser.new_page()
                start = time.perf_counter()
                page.goto(target.as_uri())
                page.wait_for_function("() => document.querySelector('#docs > .doc.current') !== null")
                page.fill("#search", QUERY)
                page.wait_for_function("() => document.body.classList.contains('view-results')")
                times[key].append(time.perf_counter() - start)
                page.close()
        browser.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--questions", type=Path, default=REPO / "questions")
    ap.add_argument("--skip-growth", action="store_true")
    ap.add_argument("--skip-browser", action="store_true")
    ap.add_argument("--browser-only", action="store_true", help="only study.html (builds it once)")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ainfra-bench-"))
    try:
        bench(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def compile_package() -> None:
    """Byte-compile ainfra_cards as `pip install` does: an editable install run with
    PYTHONDONTWRITEBYTECODE=1 would otherwise compile every module on every run (~0.06 s)."""
    import compileall

    import ainfra_cards

    compileall.compile_dir(Path(ainfra_cards.__file__).parent, quiet=1)


def bench(args: argparse.Namespace, work: Path) -> None:
    compile_package()
    bank = work / "bank" / "questions"
    shutil.copytree(args.questions, bank)
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "SOURCE_DATE_EPOCH": "1800000000"}
    cli = [sys.executable, "-m", "ainfra_cards.cli", "build", "--questions", str(bank)]
    subprocess.run(cli, env=env, check=True, capture_output=True)  # lock and warm cache
    if not args.browser_only:
        builds(args, bank, work, env, cli)
    if not args.skip_browser:
        study_page((bank.parent / "decks" / "study.html").resolve(), args.runs)


def builds(args: argparse.Namespace, bank: Path, work: Path, env: dict[str, str], cli: list[str]) -> None:
    notes = work / "notes.json"
    export_notes(bank, notes)
    floor_pkg = [sys.executable, str(FLOOR), "package", str(notes), str(work / "floor.apkg")]
    floor_md = [sys.executable, str(FLOOR), "markdown", str(notes), str(work / "floor.apkg"), str(bank)]
    count = len(json.loads(notes.read_text(encoding="utf-8"))["notes"])
    questions = len(list(bank.glob("*/[0-9]*.md")))
    print(f"bank: {questions} questions, {count} notes; {args.runs} runs each; {os.cpu_count()} cores")
    rows = []

    def measure(label, ours_cmd, floor_cmd, floor_label, before=None):
        ours, floor = alternate(lambda: run(ours_cmd, env), lambda: run(floor_cmd, env), args.runs, before)
        ratio = statistics.median(ours) / statistics.median(floor)
        rows.append((label, summary(ours), floor_label, summary(floor), ratio))

    measure("rebuild, nothing changed", cli, floor_pkg, "genanki only")
    measure("rebuild, one card changed", cli, floor_pkg, "genanki only", lambda: toggle(bank, "card"))
    measure("rebuild, explanation changed", cli, floor_pkg, "genanki only", lambda: toggle(bank, "text"))
    measure("cold build (--no-cache)", [*cli, "--no-cache"], floor_md, "Markdown pass + genanki")
    print(f"\n{'measure':30} {'ours (s)':>22} {'floor':>24} {'floor (s)':>22} {'ratio':>6}")
    for label, ours, floor_label, floor, ratio in rows:
        print(f"{label:30} {ours:>22} {floor_label:>24} {floor:>22} {ratio:6.2f}")
    if not args.skip_growth:
        growth(bank, work, env, args.runs)


def study_page(page_file: Path, runs: int) -> None:
    times = browser_open_to_search(page_file, runs)
    if times is None:
        print("study.html: playwright is not installed; skipped")
        return
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\nstudy.html, on the page's clock, searching {QUERY!r} the moment it shows:")
    print(f"  first article shown, query typed: {summary(times['typed'])} s")
    print(f"  first results drawn:              {summary(times['hit'])} s")
    print(f"  same bytes, no script, loaded:    {summary(times['floor'])} s (the floor)")
    print(f"  first results / floor:            {med['hit'] / med['floor']:.2f}")
    print("study.html from outside (Playwright goto, wait, fill, wait):")
    print(f"  study.html: {summary(times['outside'])} s")
    print(f"  a one-line page, the same steps: {summary(times['harness'])} s")


def growth(bank: Path, work: Path, env: dict[str, str], runs: int) -> None:
    big = tenfold(bank, work / "big" / "questions")

    def first_build(questions: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "ainfra_cards.cli",
            "build",
            "--no-cache",
            "--questions",
            str(questions),
        ]

    def clean(questions: Path) -> None:
        shutil.rmtree(questions.parent / "decks", ignore_errors=True)

    small_times, big_times = [], []
    for _ in range(max(2, runs // 2)):
        clean(bank)
        small_times.append(run(first_build(bank), env))
        clean(big)
        big_times.append(run(first_build(big), env))
    clean(big)
    peak = peak_kib(first_build(big), env)
    ratio = statistics.median(big_times) / statistics.median(small_times)
    print(f"\ngrowth: first build {summary(small_times)} s; ten times the bank {summary(big_times)} s")
    print(f"        ratio {ratio:.1f}x for 10x the questions; peak memory (10x) {peak / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
