#!/usr/bin/env python3
"""Time the exporter's stages on the bundled bank and on a synthetic large bank.

usage: python scripts/benchmark.py [--repeat N]

Prints one row per measurement (best of N runs, wall-clock seconds). Numbers go in README.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from anki.collection import Collection, ImportAnkiPackageOptions, ImportAnkiPackageRequest

from ainfra_cards.bank import load_bank
from ainfra_cards.build import Paths, plan_build, write_build
from ainfra_cards.htmlpage import render_study_html

REPO = Path(__file__).resolve().parents[1]
NAV = "[返回模块](./README.md) | [返回总览](../README.md)"


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def synthetic_bank(root: Path, questions: int, points: int) -> Path:
    """questions files in 23 modules, each with points memory points."""
    bank = root / "questions"
    for n in range(1, questions + 1):
        folder = bank / f"{1 + n % 23:02d}-模块{1 + n % 23}"
        folder.mkdir(parents=True, exist_ok=True)
        items = "\n".join(
            f"{i}. **第 {n} 题提示 {i} 的内容**：答案 {n}-{i}，带 `code_{i}` 与 \\( x_{i}^2 \\)"
            for i in range(1, points + 1)
        )
        (folder / f"{n:03d}-q.md").write_text(
            f"# 第 {n} 题：题目 {n}\n\n## 题目\n\n问题 {n}？\n\n## 完整讲解\n\n讲解。\n\n"
            f"## 面试要点\n\n- 一\n- 二\n\n## 记忆要点\n\n{items}\n\n{NAV}\n",
            encoding="utf-8",
        )
    return bank


def measure(label: str, bank: Path, repeat: int, rows: list[tuple[str, str, float]]) -> None:
    work = Path(tempfile.mkdtemp())
    try:
        copy = work / "questions"
        shutil.copytree(bank, copy)
        paths = Paths.default(copy)
        rows.append((label, "parse bank", best(lambda: load_bank(copy), repeat)))
        parsed, _ = load_bank(copy)
        rows.append((label, "render study.html", best(lambda: render_study_html(parsed), repeat)))

        def cold() -> None:
            paths.lock.unlink(missing_ok=True)
            write_build(plan_build(paths, (), 1_800_000_000), paths)

        rows.append((label, "first build (no lock)", best(cold, repeat)))
        rows.append(
            (
                label,
                "rebuild, lock, no change",
                best(lambda: write_build(plan_build(paths, (), 1_800_000_100), paths), repeat),
            )
        )
        files = sorted(copy.glob("*/*.md"))
        edited = [f for f in files if f.name != "README.md"][::10]
        for f in edited:  # one answer fixed in every tenth question
            text = f.read_text("utf-8")
            f.write_text(text.replace("**：", "**：改 ", 1), "utf-8")
        rows.append(
            (
                label,
                f"rebuild, {len(edited)} answers edited",
                best(lambda: plan_build(paths, (), 1_800_000_200), 1),
            )
        )
        for f in files:  # the worst case for matching: two cues of every question reworded at once
            text = f.read_text("utf-8").replace("1. **", "1. **改写 ").replace("2. **", "2. **改写 ")
            f.write_text(text, "utf-8")
        worst = best(lambda: plan_build(paths, (), 1_800_000_300), 1)
        rows.append((label, "rebuild, 2 cues per question reworded", worst))

        def anki_import() -> None:
            col = Collection(str(work / f"c{time.perf_counter_ns()}.anki2"))
            try:
                col.import_anki_package(
                    ImportAnkiPackageRequest(
                        package_path=str(paths.output), options=ImportAnkiPackageOptions()
                    )
                )
            finally:
                col.close()

        rows.append((label, "Anki import into empty collection", best(anki_import, repeat)))
    finally:
        shutil.rmtree(work)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rows: list[tuple[str, str, float]] = []
    bank, _ = load_bank(REPO / "questions")
    cards = sum(len(q.points) for q in bank.questions)
    measure(f"bundled ({len(bank.questions)} q, {cards} cards)", REPO / "questions", args.repeat, rows)
    with tempfile.TemporaryDirectory() as tmp:
        big = synthetic_bank(Path(tmp), 1000, 10)
        measure("synthetic (1000 q, 10000 cards)", big, 1, rows)
    width = max(len(r[0]) for r in rows)
    print(f"{'bank'.ljust(width)}  {'stage':38} seconds")
    for bank_label, stage, seconds in rows:
        print(f"{bank_label.ljust(width)}  {stage:38} {seconds:7.2f}")


if __name__ == "__main__":
    main()
