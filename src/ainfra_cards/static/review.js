/* study.html 复习 mode: spaced repetition in the page, scheduled by FSRS (the vendored ts-fsrs,
   the algorithm Anki ships). Each card's state is kept under its note's GUID, the identity the
   Anki deck uses, so progress survives edits to the bank and rebuilds of the page. Progress is
   saved after every rating (localStorage; memory only where that is unavailable) and can be
   exported to a file and merged back. */
(function () {
  "use strict";
  var F = window.FSRS;
  var CONFIG = window.STUDY_CONFIG || { storage: "ainfra-study:" };
  var KEY = CONFIG.storage + "fsrs";
  var DAY = 86400000, LEARN_AHEAD = 20 * 60000, MATURE_DAYS = 21, FORECAST_DAYS = 30;
  var doc = document, body = doc.body;
  function $(id) { return doc.getElementById(id); }
  function all(sel, el) { return Array.prototype.slice.call((el || doc).querySelectorAll(sel)); }
  if (!F || !$("review")) return;

  // ---- storage --------------------------------------------------------------------------------
  var persistent = (function () {
    try {
      var probe = KEY + ":probe";
      window.localStorage.setItem(probe, "1");
      window.localStorage.removeItem(probe);
      return true;
    } catch (e) { return false; }
  })();
  function emptyData() {
    return { app: "ainfra-cards", kind: "fsrs-progress", version: 1, cards: {}, log: [],
             settings: { retention: 0.9, newPerDay: 20 } };
  }
  var data = emptyData();
  function load() {
    if (!persistent) return;
    try {
      var raw = window.localStorage.getItem(KEY);
      var parsed = raw ? JSON.parse(raw) : null;
      if (parsed && validate(parsed) === null) {
        data = parsed;
        data.settings = data.settings || emptyData().settings;
      }
    } catch (e) { /* a damaged entry: start empty, never overwrite it until a rating */ }
  }
  function save() {
    if (!persistent) return;
    try { window.localStorage.setItem(KEY, JSON.stringify(data)); } catch (e) { warn("无法保存进度（存储已满？），请导出进度。"); }
  }

  // A progress file (or stored entry) as this page writes it; returns what is wrong, or null.
  function validate(d) {
    if (!d || typeof d !== "object") return "不是 JSON 对象";
    if (d.app !== "ainfra-cards" || d.kind !== "fsrs-progress") return "不是 ainfra-cards 的复习进度文件";
    if (d.version !== 1) return "进度文件版本 " + d.version + " 不受支持";
    if (!d.cards || typeof d.cards !== "object" || Array.isArray(d.cards)) return "缺少 cards";
    var guids = Object.keys(d.cards);
    for (var i = 0; i < guids.length; i++) {
      var c = d.cards[guids[i]];
      if (!c || typeof c.due !== "number" || typeof c.stability !== "number" || typeof c.difficulty !== "number" ||
          typeof c.reps !== "number" || typeof c.lapses !== "number" || [0, 1, 2, 3].indexOf(c.state) < 0) {
        return "卡片 " + guids[i] + " 的记录不完整";
      }
    }
    if (d.log !== undefined && !Array.isArray(d.log)) return "log 必须是数组";
    if (d.mocks !== undefined && !Array.isArray(d.mocks)) return "mocks 必须是数组";
    return null;
  }

  // ---- cards in the page ----------------------------------------------------------------------
  // Collected the first time 复习 opens: a page opened only to read should not pay for it.
  var items = null, byGuid = {};
  function collect() {
    if (items) return;
    if (window.AinfraStudy) window.AinfraStudy.fillAll();  // articles are built on demand (study.js)
    items = all("#docs li.pt[data-guid]").map(function (li) {
    var art = li.closest("article");
    var crumbs = art.querySelector(".crumbs a");
    return { guid: li.getAttribute("data-guid"), li: li, article: art.id, module: art.getAttribute("data-m"),
             moduleLabel: crumbs ? crumbs.textContent : "", number: art.getAttribute("data-n"),
             title: (art.querySelector(".qtitle") || {}).innerHTML || "",
             cue: li.querySelector(".pt-cue").innerHTML, answer: li.querySelector(".pt-ans").innerHTML,
             changed: li.getAttribute("data-changed") || "", was: (li.querySelector(".pt-was") || {}).innerHTML || "" };
    });
    items.forEach(function (it) { byGuid[it.guid] = it; });
  }

  function scheduler() {
    return F.fsrs(F.generatorParameters({ request_retention: data.settings.retention, enable_fuzz: false }));
  }
  function toCard(s) {
    return F.TypeConvert.card({ due: new Date(s.due), stability: s.stability, difficulty: s.difficulty,
      elapsed_days: s.elapsed_days || 0, scheduled_days: s.scheduled_days || 0, learning_steps: s.learning_steps || 0,
      reps: s.reps, lapses: s.lapses, state: s.state,
      last_review: s.last_review ? new Date(s.last_review) : undefined });
  }
  function fromCard(c) {
    return { due: +c.due, stability: c.stability, difficulty: c.difficulty, elapsed_days: c.elapsed_days,
             scheduled_days: c.scheduled_days, learning_steps: c.learning_steps, reps: c.reps, lapses: c.lapses,
             state: +c.state, last_review: c.last_review ? +c.last_review : null };
  }
  function now() { return Date.now(); }
  // The version (UTC date, YYYY.MM.DD) of a time: what a card's data-changed is compared with.
  function versionOf(t) {
    var d = new Date(t), pad = function (n) { return (n < 10 ? "0" : "") + n; };
    return d.getUTCFullYear() + "." + pad(d.getUTCMonth() + 1) + "." + pad(d.getUTCDate());
  }
  // A card whose text changed (data-changed) since the learner last saw it: due at once, marked
  // 已修订 with its previous text. Its memory state is kept (see README): the learner's answer to
  // the corrected card tells FSRS how well the new text is known. `seen` is the version of the
  // card the learner last rated; older progress has only the review time.
  function revised(it, s) {
    if (!it.changed || !s) return false;
    var seen = s.seen || (s.last_review ? versionOf(s.last_review) : "");
    return seen < it.changed;
  }
  function startOfDay(t) { var d = new Date(t); d.setHours(0, 0, 0, 0); return +d; }

  // ---- the queue ------------------------------------------------------------------------------
  function inScope() {
    var scope = $("rv-scope").value;
    if (scope === "search") {
      var ids = {};
      all("#results li a").forEach(function (a) { ids[a.getAttribute("href").slice(1)] = true; });
      return items.filter(function (it) { return ids[it.article]; });
    }
    return scope === "all" ? items : items.filter(function (it) { return it.module === scope; });
  }
  // ---- the plan to the interview date --------------------------------------------------------
  // Every unseen card of the scope is met by MARGIN_DAYS before the date: that many new cards a
  // day. Each new card costs about REVIEWS_PER_NEW reviews in its first month (learning steps, then
  // the first intervals), which gives the daily review load. Past MAX_NEW_PER_DAY, or with fewer
  // days left than the margin, the plan says it cannot be done. The daily new-card limit follows
  // the plan unless the learner sets it by hand.
  var MARGIN_DAYS = 3, REVIEWS_PER_NEW = 4, MAX_NEW_PER_DAY = 100;
  function plan(t) {
    var date = data.settings.interviewDate;
    if (!date) return null;
    var parts = date.split("-").map(Number);
    var at = +new Date(parts[0], parts[1] - 1, parts[2]);
    var days = Math.round((at - startOfDay(t)) / DAY) - MARGIN_DAYS;
    var unseen = inScope().filter(function (it) { return !data.cards[it.guid]; }).length;
    var perDay = days > 0 ? Math.ceil(unseen / days) : unseen;
    return { days: days, unseen: unseen, perDay: perDay,
             realistic: unseen === 0 || (days > 0 && perDay <= MAX_NEW_PER_DAY) };
  }
  function newLimit(t) {
    var p = data.settings.newByHand ? null : plan(t);
    return p ? p.perDay : data.settings.newPerDay;
  }
  function showPlan(t) {
    var p = plan(t), el = $("rv-plan");
    el.hidden = !p;
    if (!p) return;
    el.classList.toggle("unrealistic", !p.realistic);
    if (!p.unseen) { el.textContent = "这个范围的卡片都已经学过了：到面试前按时复习就好。"; return; }
    var text = p.days > 0
      ? "离面试还有 " + (p.days + MARGIN_DAYS) + " 天：每天 " + p.perDay + " 张新卡，可在面试前 " + MARGIN_DAYS +
        " 天学完这个范围的 " + p.unseen + " 张新卡；复习量约每天 " + p.perDay * REVIEWS_PER_NEW + " 次。"
      : "离面试不到 " + (MARGIN_DAYS + 1) + " 天，这个范围还有 " + p.unseen + " 张新卡：来不及全部学完。";
    if (!p.realistic) text += " 这个计划不现实：缩小范围（选一个模块）或推迟日期。";
    if (data.settings.newByHand) text += "（每日新卡已手动设为 " + data.settings.newPerDay + "，不跟随计划；清空面试日期后再设即可恢复。）";
    el.textContent = text;
  }
  function newToday(t) {
    var start = startOfDay(t);
    return data.log.filter(function (l) { return l.first && l.review >= start; }).length;
  }
  // What is left today, in the order Anki shows it: corrected cards, learning cards whose step is
  // up, due reviews, then new cards (up to the day's limit). A learning card whose step is not up
  // yet waits; it comes back early (up to LEARN_AHEAD) only when nothing else is left, as in Anki.
  function queue(t) {
    var endOfDay = startOfDay(t) + DAY;
    var changed = [], learnNow = [], reviews = [], ahead = [], fresh = [];
    inScope().forEach(function (it) {
      var s = data.cards[it.guid];
      if (!s) { fresh.push(it); return; }
      if (revised(it, s)) { changed.push(it); return; }
      if (s.state === 1 || s.state === 3) {
        if (s.due <= t) learnNow.push(it); else if (s.due <= t + LEARN_AHEAD) ahead.push(it);
      } else if (s.due < endOfDay) reviews.push(it);
    });
    var byDue = function (a, b) { return data.cards[a.guid].due - data.cards[b.guid].due; };
    [learnNow, reviews, ahead].forEach(function (list) { list.sort(byDue); });  // overdue first
    var room = Math.max(0, newLimit(t) - newToday(t));
    var now = changed.concat(learnNow, reviews, fresh.slice(0, room));
    return now.concat(ahead);
  }

  // ---- showing and rating ---------------------------------------------------------------------
  var currentItem = null, undoStack = [];
  function interval(ms) {
    var m = ms / 60000;
    if (m < 1) return "<1 分钟";
    if (m < 60) return Math.round(m) + " 分钟";
    if (m < 1440) return Math.round(m / 60) + " 小时";
    var d = m / 1440;
    if (d < 30) return Math.round(d) + " 天";
    if (d < 365) return (d / 30).toFixed(1) + " 个月";
    return (d / 365).toFixed(1) + " 年";
  }
  function when(t) {
    var d = new Date(t);
    var pad = function (n) { return (n < 10 ? "0" : "") + n; };
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + pad(d.getHours()) + ":" + pad(d.getMinutes());
  }
  function render() {
    collect();
    if (mock) { renderStats(now()); return; }  // a mock interview holds the card area until it ends
    var t = now();
    showPlan(t);
    $("rv-new").value = newLimit(t);
    var q = queue(t);
    currentItem = q[0] || null;
    $("rv-left").textContent = q.length ? "待复习 " + q.length + " 张" : "";
    $("rv-undo").disabled = !undoStack.length;
    $("rv-card").hidden = !currentItem;
    $("rv-done").hidden = !!currentItem;
    if (!currentItem) {
      var next = null;
      inScope().forEach(function (it) {
        var s = data.cards[it.guid];
        if (s && (next === null || s.due < next)) next = s.due;
      });
      $("rv-done").textContent = "这一组已经复习完了。" +
        (next !== null ? "下一张到期：" + when(Math.max(next, t)) + "。" : "还没有学过的卡片：调整范围或每日新卡上限。");
    } else {
      var it = currentItem;
      $("rv-ctx").textContent = it.moduleLabel + " · 第 " + it.number + " 题";
      $("rv-title").innerHTML = it.title;
      $("rv-cue").innerHTML = it.cue;
      $("rv-answer").innerHTML = it.answer;
      $("rv-answer").hidden = true;
      var isRevised = revised(it, data.cards[it.guid]);
      $("rv-mark").hidden = !isRevised;
      $("rv-mark").textContent = isRevised ? "已修订（" + it.changed + "）" : "";
      $("rv-was").innerHTML = isRevised ? "<b>修订前</b>：" + it.was : "";
      $("rv-was").hidden = true;
      $("rv-show").hidden = false;
      $("rv-rate").hidden = true;
      $("rv-card").setAttribute("data-guid", it.guid);
      var s = data.cards[it.guid];
      var card = s ? toCard(s) : F.createEmptyCard(new Date(t));
      var preview = scheduler().repeat(card, new Date(t));
      [1, 2, 3, 4].forEach(function (r) {
        $("rv-ivl-" + r).textContent = interval(+preview[r].card.due - t);
      });
    }
    renderStats(t);
  }
  function showAnswer() {
    if (!currentItem) return;
    $("rv-answer").hidden = false;
    $("rv-was").hidden = !$("rv-was").innerHTML;
    $("rv-show").hidden = true;
    $("rv-rate").hidden = false;
  }
  function rate(rating) {
    if (!currentItem || $("rv-rate").hidden) return;
    var t = now();
    var guid = currentItem.guid;
    var before = data.cards[guid] || null;
    var card = before ? toCard(before) : F.createEmptyCard(new Date(t));
    var rec = scheduler().next(card, new Date(t), rating);
    undoStack.push({ guid: guid, before: before, logLength: data.log.length });
    data.cards[guid] = fromCard(rec.card);
    if (currentItem.changed) data.cards[guid].seen = currentItem.changed;
    data.log.push({ guid: guid, rating: rating, review: t, first: !before });
    save();
    render();
  }
  function undo() {
    var u = undoStack.pop();
    if (!u) return;
    if (u.before) data.cards[u.guid] = u.before; else delete data.cards[u.guid];
    data.log.length = u.logLength;
    save();
    render();
  }

  // ---- at a glance ----------------------------------------------------------------------------
  function renderStats(t) {
    var start = startOfDay(t), end = start + DAY;
    var rows = {}, order = [];
    items.forEach(function (it) {
      var row = rows[it.module];
      if (!row) { row = rows[it.module] = { label: it.moduleLabel, n: 0, l: 0, d: 0, m: 0 }; order.push(it.module); }
      var s = data.cards[it.guid];
      if (!s) { row.n++; return; }
      if (s.state === 1 || s.state === 3) row.l++;
      if (s.due < end) row.d++;
      if (s.state === 2 && s.scheduled_days >= MATURE_DAYS) row.m++;
    });
    $("rv-stats").innerHTML = "<tr><th>模块</th><th>新卡</th><th>学习中</th><th>今日到期</th><th>已熟练</th></tr>" +
      order.map(function (m) {
        var r = rows[m];
        return '<tr data-m="' + m + '"><td>' + escapeHtml(r.label) + "</td><td>" + r.n + "</td><td>" + r.l +
          "</td><td>" + r.d + "</td><td>" + r.m + "</td></tr>";
      }).join("");
    var today = data.log.filter(function (l) { return l.review >= start; }).length;
    $("rv-today").textContent = "今天已复习 " + today + " 次";
    var gone = Object.keys(data.cards).filter(function (g) { return !byGuid[g]; }).length;
    $("rv-retired").hidden = !gone;
    $("rv-retired").textContent = gone ? "你学过的卡片中有 " + gone + " 张已退役（题库删除了这些记忆要点），" +
      "它们不再出现在队列里；记录仍保留在进度中。" : "";
    var counts = [];
    for (var i = 0; i < FORECAST_DAYS; i++) counts.push(0);
    Object.keys(data.cards).forEach(function (g) {
      if (!byGuid[g]) return;  // a retired memory point: kept in storage, left out of the page
      var day = Math.floor((data.cards[g].due - start) / DAY);
      if (day < FORECAST_DAYS) counts[Math.max(0, day)]++;
    });
    renderMocks();
    var top = Math.max.apply(null, counts.concat([1]));
    $("rv-forecast").innerHTML = counts.map(function (c, d) {
      return '<span class="bar" title="' + (d === 0 ? "今天" : d + " 天后") + "：" + c + ' 张" style="height:' +
        Math.round(100 * c / top) + '%">' + (c ? "<b>" + c + "</b>" : "") + "</span>";
    }).join("");
  }
  function escapeHtml(s) {
    return String(s).replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]; });
  }


  // ---- 模拟面试 ----------------------------------------------------------------------------------
  // One question of the scope, picked with a weight that grows with how many of its cards are due;
  // its 题目 and a clock; then 面试要点 and its memory points as a checklist. 记录结果 rates every
  // point's card in the same FSRS state as 复习 (covered: Good, missed: Again, or as adjusted), and
  // keeps the attempt (question, time, points covered) with the progress.
  var mock = null, tick = null;
  function mockTarget() { return data.settings.mockMinutes || 3; }
  function clockText(ms) {
    var s = Math.max(0, Math.floor(ms / 1000));
    return Math.floor(s / 60) + ":" + (s % 60 < 10 ? "0" : "") + (s % 60);
  }
  function pickQuestion(t) {
    var byArticle = {}, order = [];
    inScope().forEach(function (it) {
      if (!byArticle[it.article]) { byArticle[it.article] = []; order.push(it.article); }
      byArticle[it.article].push(it);
    });
    if (!order.length) return null;
    var weights = order.map(function (a) {
      return 1 + 3 * byArticle[a].filter(function (it) {
        var s = data.cards[it.guid];
        return !s || s.due <= t;
      }).length;
    });
    var total = weights.reduce(function (x, y) { return x + y; }, 0), r = Math.random() * total;
    for (var i = 0; i < order.length; i++) { r -= weights[i]; if (r < 0) break; }
    var article = order[Math.min(i, order.length - 1)];
    return { article: article, items: byArticle[article] };
  }
  function showClock() {
    if (!mock || mock.seconds !== null) return;
    var ms = now() - mock.start;
    $("mk-time").textContent = clockText(ms);
    $("mk-over").hidden = ms < mockTarget() * 60000;
  }
  function startMock() {
    collect();
    var t = now(), pick = pickQuestion(t);
    if (!pick) return warn("当前范围里没有题目：换一个范围再试。");
    var art = doc.getElementById(pick.article), it = pick.items[0];
    mock = { article: pick.article, items: pick.items, start: t, seconds: null };
    $("mk-ctx").textContent = it.moduleLabel + " · 第 " + it.number + " 题";
    $("mk-title").innerHTML = it.title;
    var prompt = art.querySelector(".sec-prompt");
    $("mk-prompt").innerHTML = prompt ? prompt.innerHTML.replace(/<h2>[^<]*<\/h2>/, "") : "";
    var talk = art.querySelector(".sec-talk");
    $("mk-talk").innerHTML = talk ? talk.innerHTML.replace(/<h2>[^<]*<\/h2>/, "") : "";
    $("mk-points").innerHTML = pick.items.map(function (p, i) {
      return '<li><label><input type="checkbox" data-i="' + i + '"> <span><b>' + p.cue + "</b>：" + p.answer +
        '</span><select data-i="' + i + '" aria-label="评分"><option value="1">重来</option><option value="2">困难</option>' +
        '<option value="3">良好</option><option value="4">简单</option></select></label></li>';
    }).join("");
    all("#mk-points input[type=checkbox]").forEach(function (box) {
      box.addEventListener("change", function () {
        $("mk-points").querySelector('select[data-i="' + box.getAttribute("data-i") + '"]').value = box.checked ? "3" : "1";
      });
    });
    $("mk-target").value = mockTarget();
    $("mk-notes").value = "";
    $("mk-review").hidden = true;
    $("mk-check").hidden = false;
    $("rv-card").hidden = true;
    $("rv-done").hidden = true;
    $("mock").hidden = false;
    showClock();
    clearInterval(tick);
    tick = setInterval(showClock, 250);
    $("mk-check").focus({ preventScroll: true });
  }
  function checkMock() {
    if (!mock || mock.seconds !== null) return;
    mock.seconds = Math.round((now() - mock.start) / 1000);
    clearInterval(tick);
    $("mk-time").textContent = clockText(mock.seconds * 1000);
    $("mk-check").hidden = true;
    $("mk-review").hidden = false;
  }
  function endMock() {
    clearInterval(tick);
    mock = null;
    $("mock").hidden = true;
    render();
  }
  function saveMock() {
    if (!mock || mock.seconds === null) return;
    var t = now(), f = scheduler(), covered = 0;
    mock.items.forEach(function (it, i) {
      var rating = +$("mk-points").querySelector('select[data-i="' + i + '"]').value;
      if (rating >= 3) covered++;
      var before = data.cards[it.guid] || null;
      var card = before ? toCard(before) : F.createEmptyCard(new Date(t));
      data.cards[it.guid] = fromCard(f.next(card, new Date(t), rating).card);
      data.log.push({ guid: it.guid, rating: rating, review: t, first: !before, mock: true });
    });
    data.mocks = (data.mocks || []).concat([{ at: t, article: mock.article, number: +mock.items[0].number,
      seconds: mock.seconds, covered: covered, total: mock.items.length }]);
    undoStack.length = 0;  // a mock interview is recorded whole; 撤销 works on single ratings
    save();
    endMock();
  }
  function renderMocks() {
    var list = (data.mocks || []).slice(-10).reverse();
    $("mk-history").innerHTML = list.length ? list.map(function (m) {
      return "<li>" + when(m.at) + " · 第 " + m.number + " 题 · 用时 " + clockText(m.seconds * 1000) +
        " · 讲到 " + m.covered + "/" + m.total + " 条</li>";
    }).join("") : "<li>还没有模拟面试记录。</li>";
  }

  // ---- export and import ----------------------------------------------------------------------
  function exportProgress() {
    var blob = new Blob([JSON.stringify(data, null, 1)], { type: "application/json" });
    var url = URL.createObjectURL(blob);  // a local download: nothing leaves the machine
    var a = doc.createElement("a");
    a.setAttribute("href", url);
    a.setAttribute("download", "ainfra-cards-progress-" + when(now()).slice(0, 10) + ".json");
    doc.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  function importText(text) {
    var incoming;
    try { incoming = JSON.parse(text); } catch (e) { return warn("导入失败：文件不是 JSON（" + e.message + "），进度未改变。"); }
    var problem = validate(incoming);
    if (problem) return warn("导入失败：" + problem + "，进度未改变。");
    var taken = 0;
    Object.keys(incoming.cards).forEach(function (g) {
      var mine = data.cards[g], theirs = incoming.cards[g];
      if (!mine || (theirs.last_review || 0) > (mine.last_review || 0)) { data.cards[g] = theirs; taken++; }
    });
    var seen = {};
    data.log.forEach(function (l) { seen[l.guid + "|" + l.review + "|" + l.rating] = true; });
    (incoming.log || []).forEach(function (l) {
      if (l && typeof l.review === "number" && !seen[l.guid + "|" + l.review + "|" + l.rating]) data.log.push(l);
    });
    data.log.sort(function (a, b) { return a.review - b.review; });
    var had = {};
    (data.mocks || []).forEach(function (m) { had[m.at + "|" + m.article] = true; });
    data.mocks = (data.mocks || []).concat((incoming.mocks || []).filter(function (m) {
      return !had[m.at + "|" + m.article];
    })).sort(function (a, b) { return a.at - b.at; });
    undoStack = [];
    save();
    render();
    warn("已导入：" + taken + " 张卡片采用了文件里更新的记录。", true);
  }
  function warn(text, ok) {
    var m = $("rv-msg");
    m.textContent = text;
    m.hidden = false;
    m.classList.toggle("ok", !!ok);
  }

  // ---- wiring ---------------------------------------------------------------------------------
  function setReview(on) {
    if (!on && mock) endMock();
    body.classList.toggle("review-on", on);
    $("review").hidden = !on;
    $("review-toggle").setAttribute("aria-pressed", on ? "true" : "false");
    if (on) {
      if (body.classList.contains("cards-on")) $("cards-exit").click();
      render();
      window.scrollTo(0, 0);
      $("rv-card").focus({ preventScroll: true });  // so Space shows the answer, not re-presses the toggle
    }
  }
  load();
  $("rv-retention").value = data.settings.retention;
  $("rv-new").value = data.settings.newPerDay;
  if (!persistent) warn("这个浏览器不允许本页保存数据（例如用 file:// 打开时的某些浏览器或隐私模式）：" +
                        "进度只保留到关闭页面为止，请在结束前“导出进度”。");
  $("review-toggle").addEventListener("click", function () { setReview(!body.classList.contains("review-on")); });
  $("rv-exit").addEventListener("click", function () { setReview(false); });
  $("rv-show").addEventListener("click", showAnswer);
  all("#rv-rate button[data-rating]").forEach(function (b) {
    b.addEventListener("click", function () { rate(+b.getAttribute("data-rating")); });
  });
  $("rv-undo").addEventListener("click", undo);
  $("rv-scope").addEventListener("change", render);
  $("rv-retention").addEventListener("change", function () {
    var v = parseFloat($("rv-retention").value);
    if (v >= 0.7 && v <= 0.99) { data.settings.retention = v; save(); render(); }
    else { $("rv-retention").value = data.settings.retention; warn("目标记忆率需在 0.70 到 0.99 之间。"); }
  });
  $("rv-new").addEventListener("change", function () {
    var v = parseInt($("rv-new").value, 10);
    if (v >= 0 && v <= 9999) {
      data.settings.newPerDay = v;
      data.settings.newByHand = !!data.settings.interviewDate;  // set by hand: the plan no longer sets it
      save();
      render();
    }
    else { $("rv-new").value = newLimit(now()); }
  });
  $("rv-date").value = data.settings.interviewDate || "";
  $("rv-date").addEventListener("change", function () {
    data.settings.interviewDate = $("rv-date").value || null;
    data.settings.newByHand = false;
    save();
    render();
  });
  $("mk-start").addEventListener("click", startMock);
  $("mk-check").addEventListener("click", checkMock);
  $("mk-save").addEventListener("click", saveMock);
  $("mk-cancel").addEventListener("click", endMock);
  $("mk-target").addEventListener("change", function () {
    var v = parseInt($("mk-target").value, 10);
    if (v >= 1 && v <= 30) { data.settings.mockMinutes = v; save(); showClock(); }
    else $("mk-target").value = mockTarget();
  });
  $("rv-export").addEventListener("click", exportProgress);
  $("rv-import").addEventListener("click", function () { $("rv-file").click(); });
  $("rv-file").addEventListener("change", function () {
    var file = $("rv-file").files[0];
    if (!file) return;
    var reader = new FileReader();
    reader.onload = function () { importText(String(reader.result)); $("rv-file").value = ""; };
    reader.readAsText(file);
  });
  window.addEventListener("hashchange", function () { if (body.classList.contains("review-on")) setReview(false); });
  doc.addEventListener("keydown", function (e) {
    if (!body.classList.contains("review-on") || e.altKey || e.ctrlKey || e.metaKey) return;
    var tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea") return;
    if (mock) {  // 模拟面试: Space checks the answer against the points; nothing else is a shortcut
      if (e.key === " " && tag !== "button") { e.preventDefault(); checkMock(); }
      return;
    }
    if ((e.key === " " || e.key === "Enter") && (tag !== "button" || e.target.id === "review-toggle")) {
      e.preventDefault();
      showAnswer();
    }
    else if (e.key >= "1" && e.key <= "4") rate(+e.key);
    else if (e.key === "u") undo();
  });
  // For tests and for checking a refreshed scheduler: due dates of ratings given at times.
  window.AinfraReview = {
    simulate: function (steps, retention) {
      var f = F.fsrs(F.generatorParameters({ request_retention: retention || 0.9, enable_fuzz: false }));
      var card = F.createEmptyCard(new Date(steps[0].at));
      return steps.map(function (s) { card = f.next(card, new Date(s.at), s.rating).card; return +card.due; });
    },
    version: F.FSRSVersion
  };
})();
