"""study.html's 复习 mode in the browser: FSRS scheduling on a fake clock, progress that survives
rebuilds, export and import, and the vendored scheduler checked against the Python `fsrs` package."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import question_md, write_bank
from test_study_html import Watched, browser  # noqa: F401 - the browser fixture

from ainfra_cards.cli import main

T0 = datetime(2030, 3, 4, 9, 0, tzinfo=timezone.utc)
KEY = "ainfra-study:fsrs"
POINTS = [
    "1. **桶大小默认值**：25 MB",
    "2. **首桶大小**：约 1 MB",
    "3. **何时发起 all-reduce**：桶内梯度全部就绪",
]


def _bank(root: Path, points=POINTS) -> Path:
    return write_bank(
        root / "questions",
        {
            "05-数据并行/046-a.md": question_md(46, "DDP 分桶", points),
            "08-通信/087-b.md": question_md(87, "all-reduce 通信量", ["1. **每卡发送量**：2(N-1)/N·S"]),
        },
    )


def _build(bank: Path) -> Path:
    result = CliRunner().invoke(main, ["build", "--questions", str(bank)])
    assert result.exit_code == 0, result.output
    return bank.parent / "decks" / "study.html"


def _open(browser, page_file: Path, when: datetime = T0, context=None) -> tuple[Watched, object]:  # noqa: F811
    w = Watched(browser, page_file) if context is None else context
    w.page.clock.set_fixed_time(when)
    page = w.open()
    page.click("#review-toggle")
    page.wait_for_selector("#review:not([hidden])")
    return w, page


def _state(page) -> dict:
    return json.loads(page.evaluate(f"localStorage.getItem('{KEY}')") or "{}")


def _due(page, guid: str) -> datetime:
    return datetime.fromtimestamp(_state(page)["cards"][guid]["due"] / 1000, tz=timezone.utc)


def _rate(page, key: str) -> str:
    """Show the current card's answer and rate it with a key; return its GUID."""
    guid = page.get_attribute("#rv-card", "data-guid")
    page.keyboard.press("Space")
    page.wait_for_selector("#rv-rate:not([hidden])")
    page.keyboard.press(key)
    return guid


def test_good_moves_a_card_out_and_again_brings_it_back(tmp_path, browser):  # noqa: F811
    w, page = _open(browser, _build(_bank(tmp_path)))
    assert "第 46 题" in page.inner_text("#rv-ctx") and "DDP 分桶" in page.inner_text("#rv-title")
    assert page.inner_text("#rv-cue") == "桶大小默认值" and page.is_hidden("#rv-answer")
    assert page.inner_text("#rv-left") == "待复习 4 张"  # four new cards, within the daily limit
    guid = _rate(page, "3")  # Good on a new card: first learning step
    assert _due(page, guid) - T0 == timedelta(minutes=10)
    intervals, now = [], T0
    for _ in range(4):
        now = _due(page, guid)
        page.clock.set_fixed_time(now)
        page.evaluate(
            "document.getElementById('rv-scope').dispatchEvent(new Event('change'))"
        )  # re-read the clock
        assert page.get_attribute("#rv-card", "data-guid") == guid  # due again: first in the queue
        _rate(page, "3")
        intervals.append(_due(page, guid) - now)
    assert intervals[0] >= timedelta(days=1)
    assert all(b > a for a, b in zip(intervals, intervals[1:], strict=False)), (
        intervals
    )  # each Good pushes it further out
    now = _due(page, guid)
    page.clock.set_fixed_time(now)
    page.evaluate("document.getElementById('rv-scope').dispatchEvent(new Event('change'))")
    _rate(page, "1")  # Again: back within minutes, one lapse
    assert _due(page, guid) - now == timedelta(minutes=10)
    assert _state(page)["cards"][guid]["lapses"] == 1
    page.keyboard.press("u")  # undo the Again: the card is as it was, due now, no lapse
    assert _due(page, guid) == now and _state(page)["cards"][guid]["lapses"] == 0
    assert page.get_attribute("#rv-card", "data-guid") == guid
    w.check()
    w.ctx.close()


def test_buttons_show_the_next_interval_of_each_rating_and_a_finished_queue_says_when(tmp_path, browser):  # noqa: F811
    w, page = _open(browser, _build(_bank(tmp_path)))
    page.click("#rv-show")
    labels = [page.inner_text(f"#rv-ivl-{r}") for r in (1, 2, 3, 4)]
    assert labels[0] == "1 分钟" and labels[2] == "10 分钟" and labels[3].endswith("天")
    page.select_option("#rv-scope", "m08")  # one module: one card
    page.click("#rv-show")
    page.click("#rv-rate button[data-rating='4']")  # Easy: graduates at once
    assert page.is_visible("#rv-done") and "下一张到期" in page.inner_text("#rv-done")
    stats = page.inner_text("#rv-stats")
    assert "08 通信" in stats and "今天已复习 1 次" in page.inner_text("#rv-today")
    assert page.eval_on_selector_all("#rv-forecast .bar", "bars => bars.length") == 30
    w.check()
    w.ctx.close()


def test_progress_survives_an_edit_and_a_retired_card_leaves_the_queue(tmp_path, browser):  # noqa: F811
    bank = _bank(tmp_path)
    page_file = _build(bank)
    w, page = _open(browser, page_file)
    first = _rate(page, "4")  # 桶大小默认值, graduated with Easy
    second = _rate(page, "3")  # 首桶大小, learning
    due_first = _due(page, first)
    edited = [
        POINTS[0].replace("25 MB", "25 MiB（可用 bucket_cap_mb 调）"),
        POINTS[2],
    ]  # fixed; item 2 deleted
    bank.joinpath("05-数据并行/046-a.md").write_text(question_md(46, "DDP 分桶", edited), "utf-8")
    _build(bank)
    page.reload()
    page.click("#review-toggle")
    guids = page.eval_on_selector_all("#docs li.pt[data-guid]", "els => els.map(e => e.dataset.guid)")
    assert (
        first in guids and second not in guids
    )  # the edited card kept its identity; the deleted one is gone
    assert _due(page, first) == due_first  # its history is intact
    queue = []
    while page.is_visible("#rv-card"):
        queue.append(_rate(page, "3"))
    assert second not in queue and first not in queue  # retired: never shown; graduated: not due today
    assert second in _state(page)["cards"]  # but nothing was dropped from the learner's progress
    w.check()
    w.ctx.close()


def _export(page, path: Path) -> Path:
    """The progress file 导出进度 downloads, saved at path."""
    with page.expect_download() as download:
        page.click("#rv-export")
    download.value.save_as(path)
    return path


def test_export_then_import_into_a_fresh_profile_restores_the_due_dates(tmp_path, browser):  # noqa: F811
    page_file = _build(_bank(tmp_path))
    w, page = _open(browser, page_file)
    for key in ("4", "3", "1"):
        _rate(page, key)
    saved = _state(page)
    exported = _export(page, tmp_path / "progress.json")
    assert json.loads(exported.read_text("utf-8"))["cards"] == saved["cards"]
    w.check()
    w.ctx.close()
    fresh, page = _open(browser, page_file)
    assert _state(page) == {}
    page.set_input_files("#rv-file", str(exported))
    page.wait_for_function("() => document.getElementById('rv-msg').textContent.startsWith('已导入')")
    assert _state(page)["cards"] == saved["cards"]
    fresh.check()
    fresh.ctx.close()


@pytest.mark.parametrize(
    "content",
    [
        "not json at all",
        json.dumps({"app": "other", "cards": {}}),
        json.dumps(
            {"app": "ainfra-cards", "kind": "fsrs-progress", "version": 1, "cards": {"x": {"due": "soon"}}}
        ),
    ],
)
def test_a_corrupt_or_foreign_import_is_refused_and_changes_nothing(tmp_path, browser, content):  # noqa: F811
    w, page = _open(browser, _build(_bank(tmp_path)))
    _rate(page, "3")
    before = page.evaluate(f"localStorage.getItem('{KEY}')")
    bad = tmp_path / "bad.json"
    bad.write_text(content, "utf-8")
    page.set_input_files("#rv-file", str(bad))
    page.wait_for_function("() => document.getElementById('rv-msg').textContent.startsWith('导入失败')")
    assert "进度未改变" in page.inner_text("#rv-msg")
    assert page.evaluate(f"localStorage.getItem('{KEY}')") == before
    w.check()
    w.ctx.close()


def test_without_local_storage_the_page_says_so_and_keeps_working(tmp_path, browser):  # noqa: F811
    w = Watched(browser, _build(_bank(tmp_path)))
    w.page.add_init_script(
        "Object.defineProperty(window, 'localStorage', {get() { throw new DOMException('no', 'SecurityError'); }});"
    )
    _, page = _open(browser, w.url and Path(w.url[len("file://") :]), context=w)
    assert "导出进度" in page.inner_text("#rv-msg")
    _rate(page, "4")
    assert page.inner_text("#rv-left") == "待复习 3 张"  # the rating counted for this session
    w.check()
    w.ctx.close()


# (day of review, rating): whole-day gaps between reviews. The two implementations count a
# sub-day gap differently (the Python package floors it, ts-fsrs counts calendar days) and time
# Hard in a learning step differently, so they are compared where both define the same thing:
# graduation, Hard/Good/Easy reviews, a lapse and relearning, over months.
SEQUENCES = [
    [(0, 4), (9, 3), (30, 3), (95, 3)],
    [(0, 4), (5, 2), (12, 3), (40, 1), (41, 3), (50, 4)],
    [(0, 4), (3, 3), (10, 4), (60, 2), (61, 3), (200, 1), (202, 3)],
]


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_the_vendored_scheduler_agrees_with_the_python_fsrs_package(tmp_path, browser, sequence):  # noqa: F811
    fsrs = pytest.importorskip("fsrs")
    scheduler = fsrs.Scheduler(enable_fuzzing=False, desired_retention=0.9)
    card = fsrs.Card(due=T0)
    expected = []
    for days, rating in sequence:
        card, _ = scheduler.review_card(card, fsrs.Rating(rating), review_datetime=T0 + timedelta(days=days))
        expected.append(card.due)
    w, page = _open(browser, _build(_bank(tmp_path)))
    steps = [{"at": int((T0 + timedelta(days=d)).timestamp() * 1000), "rating": r} for d, r in sequence]
    got = page.evaluate("steps => AinfraReview.simulate(steps)", steps)
    got_dates = [datetime.fromtimestamp(ms / 1000, tz=timezone.utc) for ms in got]
    assert [abs((g - e).total_seconds()) < 1 for g, e in zip(got_dates, expected, strict=True)] == [
        True
    ] * len(sequence), (
        got_dates,
        expected,
    )
    w.check()
    w.ctx.close()


def _build_at(bank: Path, when: datetime) -> Path:
    env = {"SOURCE_DATE_EPOCH": str(int(when.timestamp()))}
    result = CliRunner(env=env).invoke(main, ["build", "--questions", str(bank)])
    assert result.exit_code == 0, result.output
    return bank.parent / "decks" / "study.html"


def test_a_card_revised_since_its_last_review_is_due_at_once_and_shows_its_old_text(tmp_path, browser):  # noqa: F811
    bank = _bank(tmp_path)
    page_file = _build_at(bank, T0 - timedelta(days=3))
    w, page = _open(browser, page_file)
    first = _rate(page, "4")  # 桶大小默认值: Easy, due in days
    second = _rate(page, "3")  # 首桶大小
    assert _due(page, first) - T0 > timedelta(days=2)
    assert page.is_hidden("#rv-retired")
    edited = [POINTS[0].replace("25 MB", "25 MiB"), POINTS[2]]  # card 1 corrected, card 2 deleted
    bank.joinpath("05-数据并行/046-a.md").write_text(question_md(46, "DDP 分桶", edited), "utf-8")
    _build_at(bank, T0 + timedelta(days=2))
    w.page.clock.set_fixed_time(T0 + timedelta(days=3))
    page.reload()
    page.click("#review-toggle")
    page.wait_for_selector("#review:not([hidden])")
    # the corrected card comes first although it is not due, marked with the version that changed it
    assert page.get_attribute("#rv-card", "data-guid") == first
    assert page.is_visible("#rv-mark") and "已修订（2030.03.06）" in page.inner_text("#rv-mark")
    assert page.is_hidden("#rv-was")
    page.keyboard.press("Space")
    assert page.inner_text("#rv-answer") == "25 MiB"
    assert page.is_visible("#rv-was") and "25 MB" in page.inner_text("#rv-was")
    assert "1 张已退役" in page.inner_text("#rv-retired")
    before = _state(page)["cards"][first]
    page.keyboard.press("3")
    after = _state(page)["cards"][first]
    assert after["reps"] == before["reps"] + 1 and after["seen"] == "2030.03.06"  # its history kept
    # rated once, it is an ordinary card again: not shown again, and not marked
    shown = []
    while page.is_visible("#rv-card"):
        shown.append(page.get_attribute("#rv-card", "data-guid"))
        assert page.is_hidden("#rv-mark")
        _rate(page, "3")
    assert first not in shown and second not in shown
    w.check()
    w.ctx.close()


def test_after_a_rating_the_next_card_is_another_and_a_learning_card_returns_when_its_step_is_up(
    tmp_path,
    browser,  # noqa: F811
):
    """Anki's order: a rated card waits for its learning step; new cards come meanwhile; with
    nothing else left the learning card comes back early; once its step is up it comes first."""
    w, page = _open(browser, _build(_bank(tmp_path)))

    def current() -> str:
        return page.get_attribute("#rv-card", "data-guid")

    first = _rate(page, "3")  # Good: its next step is in 10 minutes
    assert current() != first and page.inner_text("#rv-left") == "待复习 4 张"
    second = _rate(page, "3")
    assert current() not in (first, second)
    third = _rate(page, "3")
    fourth = _rate(page, "3")
    assert len({first, second, third, fourth}) == 4
    # nothing new is left: the learning cards come back early, soonest first
    assert current() == first and page.inner_text("#rv-left") == "待复习 4 张"
    # ten minutes on, the first three steps are up: they come first, in the order they fell due
    page.clock.set_fixed_time(T0 + timedelta(minutes=11))
    page.evaluate("document.getElementById('rv-scope').dispatchEvent(new Event('change'))")
    assert current() == first
    again = _rate(page, "1")  # Again: relearn from the first step, behind the others that are due
    assert again == first and current() == second
    w.check()
    w.ctx.close()


def test_each_practice_mode_says_what_it_is_for(tmp_path, browser):  # noqa: F811
    w, page = _open(browser, _build(_bank(tmp_path)))
    assert "按 FSRS 排期" in page.inner_text("#review .mode-note")
    page.click("#rv-exit")
    page.click("#cards-toggle")
    page.wait_for_selector("#cards:not([hidden])")
    note = page.inner_text("#cards .mode-note")
    assert "不影响任何排期" in note and "复习" in note
    page.click("#card-known")  # a card-mode mark schedules nothing
    assert _state(page).get("cards", {}) == {}
    w.check()
    w.ctx.close()


def test_rating_buttons_show_their_keys_and_the_forecast_its_numbers(tmp_path, browser):  # noqa: F811
    w, page = _open(browser, _build(_bank(tmp_path)))
    page.keyboard.press("Space")
    keys = page.eval_on_selector_all("#rv-rate button kbd.key", "els => els.map(e => e.textContent)")
    assert keys == ["1", "2", "3", "4"]
    page.keyboard.press("4")  # Easy: due in days, so the forecast has a bar with a count
    counts = page.eval_on_selector_all("#rv-forecast .bar b", "els => els.map(e => e.textContent)")
    assert counts == ["1"]
    w.check()
    w.ctx.close()


def test_a_mock_interview_times_the_answer_then_rates_each_point_and_is_kept(tmp_path, browser):  # noqa: F811
    """模拟面试: a question of the scope with only its 题目 and a clock; 对照要点 shows 面试要点 and
    its memory points as a checklist; 记录结果 rates every point's card (covered: Good, missed:
    Again) in 复习's FSRS state and keeps the attempt, which export carries."""
    w, page = _open(browser, _build(_bank(tmp_path)))
    page.select_option("#rv-scope", "m05")  # question 46 alone: three memory points
    page.click("#mk-start")
    assert page.is_visible("#mock") and page.is_hidden("#rv-card")
    assert "DDP 分桶" in page.inner_text("#mk-title") and page.is_hidden("#mk-review")
    assert page.input_value("#mk-target") == "3"
    page.clock.set_fixed_time(T0 + timedelta(seconds=65))
    page.wait_for_function("() => document.getElementById('mk-time').textContent === '1:05'")
    assert page.is_hidden("#mk-over")
    page.keyboard.press("Space")  # 对照要点
    assert page.is_visible("#mk-review") and "先讲机制" in page.inner_text("#mk-talk")
    boxes = page.query_selector_all("#mk-points input[type=checkbox]")
    assert len(boxes) == 3
    boxes[0].check()
    page.click("#mk-save")
    assert page.is_hidden("#mock")
    state = _state(page)
    ratings = [entry["rating"] for entry in state["log"]]
    assert sorted(ratings) == [1, 1, 3] and all(entry["mock"] for entry in state["log"])
    assert len(state["cards"]) == 3 and state["mocks"][0]["seconds"] == 65
    assert (state["mocks"][0]["covered"], state["mocks"][0]["total"], state["mocks"][0]["number"]) == (
        1,
        3,
        46,
    )
    assert "第 46 题 · 用时 1:05 · 讲到 1/3 条" in page.inner_text("#mk-history")
    # the attempt travels with the progress
    exported = _export(page, tmp_path / "progress.json")
    assert json.loads(exported.read_text("utf-8"))["mocks"] == state["mocks"]
    w.check()
    w.ctx.close()


def test_a_plan_to_the_interview_date_sets_the_new_cards_a_day_and_warns_when_unrealistic(
    tmp_path,
    browser,  # noqa: F811
):
    w, page = _open(browser, _build(_bank(tmp_path)))
    assert page.is_hidden("#rv-plan") and page.input_value("#rv-new") == "20"
    page.fill("#rv-date", "2030-03-11")  # a week away: 4 days to learn the 4 new cards, margin 3 days
    page.dispatch_event("#rv-date", "change")
    plan = page.inner_text("#rv-plan")
    assert "每天 1 张新卡" in plan and "4 张新卡" in plan and "约每天 4 次" in plan
    assert page.input_value("#rv-new") == "1" and page.inner_text("#rv-left") == "待复习 1 张"
    assert "不现实" not in plan
    page.fill("#rv-date", "2030-03-05")  # tomorrow: too late
    page.dispatch_event("#rv-date", "change")
    assert "来不及" in page.inner_text("#rv-plan") and "不现实" in page.inner_text("#rv-plan")
    page.fill("#rv-date", "2030-03-11")
    page.dispatch_event("#rv-date", "change")
    page.fill("#rv-new", "3")  # set by hand: the plan no longer sets the limit
    page.dispatch_event("#rv-new", "change")
    assert page.input_value("#rv-new") == "3" and "手动设为 3" in page.inner_text("#rv-plan")
    assert page.inner_text("#rv-left") == "待复习 3 张"
    page.reload()
    page.click("#review-toggle")
    assert page.input_value("#rv-date") == "2030-03-11" and page.input_value("#rv-new") == "3"
    w.check()
    w.ctx.close()


FIXTURES = Path(__file__).parent / "fixtures"


def test_progress_saved_by_the_previous_page_loads_into_this_one(tmp_path, browser):  # noqa: F811
    """tests/fixtures/progress-2026-12-01.json is what the page of 2026-12-01 stored after three
    ratings on this test bank (same GUIDs: derived from number and cue). This page reads it as it
    is: the same cards, due dates and log, and schedules on from them."""
    saved = (FIXTURES / "progress-2026-12-01.json").read_text("utf-8")
    page_file = _build(_bank(tmp_path))
    w = Watched(browser, page_file)
    w.ctx.add_init_script(
        f"try {{ localStorage.setItem({json.dumps(KEY)}, {json.dumps(saved)}); }} catch (e) {{}}"
    )
    w, page = _open(browser, page_file, when=T0 + timedelta(minutes=30), context=w)
    old = json.loads(saved)
    state = _state(page)
    assert state["cards"] == old["cards"] and state["log"] == old["log"]
    guids = page.eval_on_selector_all("#docs li.pt[data-guid]", "els => els.map(e => e.dataset.guid)")
    assert set(old["cards"]) <= set(guids)
    # the two learning cards are due again after 30 minutes; the graduated one is not
    shown = page.get_attribute("#rv-card", "data-guid")
    assert shown in old["cards"] and old["cards"][shown]["state"] != 2
    _rate(page, "3")
    assert _state(page)["cards"][shown]["reps"] == old["cards"][shown]["reps"] + 1
    w.check()
    w.ctx.close()
