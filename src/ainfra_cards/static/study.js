/* study.html behaviour (inlined by ainfra_cards.outputs.study): navigation, search, answers, cards,
   theme. No network, no external code. Works when localStorage is unavailable (file:// in some
   browsers, private modes): state then lasts only as long as the tab. */
(function () {
  "use strict";
  var CONFIG = window.STUDY_CONFIG || { storage: "ainfra-study:" };
  var PREFIX = CONFIG.storage;
  var doc = document;
  var body = doc.body;
  var root = doc.documentElement;

  // ---- storage that never throws -------------------------------------------------------------
  var memory = {};
  var store = {
    get: function (key) {
      try {
        var v = window.localStorage.getItem(PREFIX + key);
        if (v !== null) return v;
      } catch (e) { /* unavailable */ }
      return Object.prototype.hasOwnProperty.call(memory, key) ? memory[key] : null;
    },
    set: function (key, value) {
      memory[key] = value;
      try { window.localStorage.setItem(PREFIX + key, value); } catch (e) { /* unavailable */ }
    }
  };

  function $(id) { return doc.getElementById(id); }
  function all(sel, el) { return Array.prototype.slice.call((el || doc).querySelectorAll(sel)); }

  root.classList.add("js");
  var docs = all("#docs > .doc");
  var questions = docs.filter(function (a) { return a.getAttribute("data-kind") === "q"; });
  var navLinks = all("#sidebar a[data-target]");
  var navByTarget = {};
  navLinks.forEach(function (a) { navByTarget[a.getAttribute("data-target")] = a; });
  var current = null;

  // ---- articles -------------------------------------------------------------------------------
  // Each article's body ships as the text of a <script type="text/html"> inside it, so opening
  // the page does not build the DOM of every article (that was most of the time it took). An
  // article is built when it is shown; 卡片模式, 复习 and printing build them all; search reads
  // the text without building anything.
  var sources = {};
  function sourceOf(el) {
    if (Object.prototype.hasOwnProperty.call(sources, el.id)) return sources[el.id];
    var s = el.firstElementChild;
    return s && s.tagName === "SCRIPT" && s.type === "text/html" ? s.textContent : null;
  }
  function fill(el) {
    var html = sourceOf(el);
    if (html === null || Object.prototype.hasOwnProperty.call(sources, el.id)) return;
    sources[el.id] = html;
    el.innerHTML = html;
  }
  function fillAll() { docs.forEach(fill); }
  window.AinfraStudy = { fillAll: fillAll, textOf: textOf };
  window.addEventListener("beforeprint", fillAll);

  // ---- theme ----------------------------------------------------------------------------------
  $("theme-toggle").addEventListener("click", function () {
    var next = root.getAttribute("data-theme") === "dark" ? "light" : "dark";
    root.setAttribute("data-theme", next);
    store.set("theme", next);
  });
  if (window.matchMedia) {
    var mq = window.matchMedia("(prefers-color-scheme: dark)");
    var follow = function (e) {
      var saved = store.get("theme");
      if (saved !== "light" && saved !== "dark") root.setAttribute("data-theme", e.matches ? "dark" : "light");
    };
    if (mq.addEventListener) mq.addEventListener("change", follow);
    else if (mq.addListener) mq.addListener(follow);
  }

  // ---- sidebar (phone) ------------------------------------------------------------------------
  function setNav(open) {
    body.classList.toggle("nav-open", open);
    $("menu").setAttribute("aria-expanded", open ? "true" : "false");
    $("scrim").hidden = !open;
  }
  $("menu").addEventListener("click", function () { setNav(!body.classList.contains("nav-open")); });
  $("scrim").addEventListener("click", function () { setNav(false); });
  $("sidebar").addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("a[href]") : null;
    if (a) {
      setNav(false);
      if (a.getAttribute("href") === "#" + (current && current.id)) show(current.id, true);
    }
  });

  // ---- showing one article --------------------------------------------------------------------
  function show(id, scroll) {
    var target = id ? doc.getElementById(id) : null;
    if (!target && id) {  // an anchor inside an article not built yet: build that article first
      var holder = docs.filter(function (d) {
        var html = sourceOf(d);
        return html !== null && html.indexOf('id="' + id + '"') >= 0;
      })[0];
      if (holder) { fill(holder); target = doc.getElementById(id); }
    }
    var el = target && target.closest ? target.closest("#docs > .doc") : null;
    if (!el) {
      if (target && current) return;  // an anchor outside the articles (e.g. the skip link)
      el = docs[0];
    }
    if (!el) return;
    fill(el);
    if (body.classList.contains("cards-on")) setCards(false);
    body.classList.remove("view-results");
    $("search-status").hidden = true;
    if (current && current !== el) current.classList.remove("current");
    el.classList.add("current");
    current = el;
    navLinks.forEach(function (a) { a.classList.remove("active"); });
    var link = navByTarget[el.id];
    if (link) {
      link.classList.add("active");
      var det = link.closest("details");
      if (det) det.open = true;
      if (link.scrollIntoView && !body.classList.contains("nav-open")) {
        // After two frames, not now: scrolling now would lay the page out in the middle of
        // building it (70 ms on opening it), and links laid out only when on screen
        // (content-visibility) have their real height only once a frame has drawn them.
        var put = function () {
          try { link.scrollIntoView({ block: "nearest" }); } catch (e) { /* old browsers */ }
        };
        requestAnimationFrame(function () { requestAnimationFrame(put); });
      }
    }
    if (target && target !== el && target.scrollIntoView) target.scrollIntoView();
    else if (scroll !== false) window.scrollTo(0, 0);
    var title = el.querySelector("h1");
    doc.title = (title ? title.textContent + " · " : "") + BASE_TITLE;
  }
  var BASE_TITLE = doc.title;

  function go(id) {
    if (location.hash === "#" + id) show(id);
    else location.hash = "#" + id;
  }

  window.addEventListener("hashchange", function () { show(decodeURIComponent(location.hash.slice(1))); });

  // ---- answers --------------------------------------------------------------------------------
  doc.addEventListener("click", function (e) {
    var btn = e.target.closest ? e.target.closest("button.reveal") : null;
    if (!btn) return;
    var art = btn.closest("article");
    var ans = art && art.querySelector(".answer");
    if (!ans) return;
    var open = ans.hidden;
    ans.hidden = !open;
    btn.setAttribute("aria-expanded", open ? "true" : "false");
    btn.textContent = open ? "隐藏答案" : "查看答案";
  });

  // ---- previous / next / random ---------------------------------------------------------------
  function pool() {
    if (body.classList.contains("view-results") || query()) {
      if (hits.length) return hits.map(function (h) { return h.el; });
    }
    return questions;
  }
  function step(delta) {
    var list = pool();
    if (!list.length) return;
    var i = list.indexOf(current);
    if (i < 0) {
      // From a page: the first question after it in document order (or the last before it).
      var at = docs.indexOf(current);
      var after = list.filter(function (q) { return docs.indexOf(q) > at; });
      var target = delta > 0 ? (after[0] || list[0]) : (list[list.indexOf(after[0]) - 1] || list[list.length - 1]);
      go(target.id);
      return;
    }
    go(list[(i + delta + list.length) % list.length].id);
  }
  $("prev").addEventListener("click", function () { step(-1); });
  $("next").addEventListener("click", function () { step(1); });
  $("random").addEventListener("click", function () {
    var list = pool();
    if (!list.length) return;
    var pick = list[Math.floor(Math.random() * list.length)];
    if (pick === current && list.length > 1) pick = list[(list.indexOf(pick) + 1) % list.length];
    go(pick.id);
  });

  // ---- search ---------------------------------------------------------------------------------
  // Every question gets a score: questions with all terms come first, then by where the terms
  // are (title, then 面试要点/记忆要点, then the rest), then bank order. Results are a ranked
  // list, each with its 第 N 题 label and a snippet of where it matched, terms marked.
  // Terms never contain whitespace, so matching needs only lower case; whitespace is collapsed
  // only around the place a snippet shows (collapsing the whole bank's text cost ~150 ms).
  var fieldCache = {};
  function squash(s) { return s.replace(/\s+/g, " "); }
  var ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0" };
  function textOf(html) {  // what textContent gives once the HTML is built: tags out, entities in
    return html.replace(/<(?:[^>"']|"[^"]*"|'[^']*')*>/g, "").replace(/&(#[xX][0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);/g,
      function (m, e) {
        if (e.charAt(0) === "#") {
          var n = /^#[xX]/.test(e) ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
          try { return String.fromCodePoint(n); } catch (x) { return m; }
        }
        return Object.prototype.hasOwnProperty.call(ENTITIES, e) ? ENTITIES[e] : m;
      });
  }
  function fieldsOf(el) {
    var f = fieldCache[el.id];
    if (!f) {
      var html = sourceOf(el), title, key, text;
      if (html === null) {  // an article without a source: read its DOM
        var h1 = el.querySelector(".qtitle");
        title = (h1 && h1.textContent) || "";
        key = all(".sec-talk, .sec-points", el).map(function (x) { return x.textContent; }).join(" ");
        text = el.textContent || "";
      } else {
        var t = /<h1 class="qtitle">([\s\S]*?)<\/h1>/.exec(html);
        title = t ? textOf(t[1]) : "";
        key = (html.match(/<section class="sec sec-(?:talk|points)">[\s\S]*?<\/section>/g) || []).map(textOf).join(" ");
        text = textOf(html);
      }
      f = { title: title.toLowerCase(), key: key.toLowerCase(), body: text.toLowerCase(),
            rawTitle: title, rawKey: key, rawBody: text };
      fieldCache[el.id] = f;
    }
    return f;
  }
  function query() { return $("search").value.trim(); }
  function terms() { return query().toLowerCase().split(/\s+/).filter(Boolean); }
  function score(el, ts) {
    var f = fieldsOf(el), found = 0, inTitle = 0, inKey = 0;
    ts.forEach(function (t) {
      if (f.body.indexOf(t) < 0) return;
      found++;
      if (f.title.indexOf(t) >= 0) inTitle++;
      else if (f.key.indexOf(t) >= 0) inKey++;
    });
    return found ? { el: el, all: found === ts.length, title: inTitle, key: inKey, found: found } : null;
  }
  function better(a, b) {
    if (a.all !== b.all) return a.all ? -1 : 1;
    if (a.title !== b.title) return b.title - a.title;
    if (a.key !== b.key) return b.key - a.key;
    if (a.found !== b.found) return b.found - a.found;
    return questions.indexOf(a.el) - questions.indexOf(b.el);
  }
  function escapeHtml(s) {
    return s.replace(/[&<>"]/g, function (c) { return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c]; });
  }
  function snippet(el, ts) {
    var f = fieldsOf(el);
    var sources = [[f.rawKey, f.key], [f.rawBody, f.body]];
    for (var s = 0; s < sources.length; s++) {
      var text = sources[s][0], low = sources[s][1];
      for (var i = 0; i < ts.length; i++) {
        var at = low.indexOf(ts[i]);
        if (at < 0) continue;
        var end = at + ts[i].length;
        // about 30 characters before the term and 60 after, once whitespace is collapsed, and
        // never ending inside a word
        var head = squash(text.slice(Math.max(0, at - 300), at));
        var tail = squash(text.slice(end, end + 300));
        var from = wordStart(head, head.length - 30), to = wordEnd(tail, 60);
        var piece = (from > 0 || at > 300 ? "…" : "") + head.slice(from) + text.slice(at, end) +
          tail.slice(0, to) + (to < tail.length || end + 300 < text.length ? "…" : "");
        return mark(escapeHtml(piece), ts);
      }
    }
    return "";
  }
  // Where a snippet may start at or before i (and where it may end at or after i): not inside
  // a Latin word or number, looking at most 20 characters further for the word's edge.
  var WORD = /[0-9A-Za-z_]/;
  function inWord(s, i) { return i > 0 && i < s.length && WORD.test(s.charAt(i - 1)) && WORD.test(s.charAt(i)); }
  function wordStart(s, i) {  // (a longer word is cut where it was)
    i = Math.max(0, i);
    for (var j = i; j >= Math.max(0, i - 20); j--) if (!inWord(s, j)) return j;
    return i;
  }
  function wordEnd(s, i) {
    i = Math.min(s.length, i);
    for (var j = i; j <= Math.min(s.length, i + 20); j++) if (!inWord(s, j)) return j;
    return i;
  }
  function mark(safe, ts) {
    var words = ts.map(function (t) { return escapeHtml(t).replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); });
    return safe.replace(new RegExp("(" + words.join("|") + ")", "gi"), "<mark>$1</mark>");
  }
  var hits = [], searches = 0;
  var FIRST_RESULTS = 12;  // about a screenful: drawn at once, the rest the frame after
  function afterFrame(f) { requestAnimationFrame(function () { setTimeout(f, 0); }); }
  function runSearch(showResults) {
    var ts = terms(), q = query(), run = ++searches;
    var status = $("search-status");
    var list = $("results");
    if (!ts.length) {
      hits = [];
      narrowSidebar(null);
      list.innerHTML = "";
      list.setAttribute("data-query", q);
      status.hidden = true;
      if (body.classList.contains("view-results")) {
        body.classList.remove("view-results");
        show(current ? current.id : null);
      }
      return;
    }
    hits = questions.map(function (h) { return score(h, ts); }).filter(Boolean).sort(better);
    var items = hits.map(function (h) {
      var title = fieldsOf(h.el).rawTitle;
      return '<li class="hit' + (h.all ? "" : " partial") + '"><a href="#' + h.el.id + '">' +
        '<span class="qnum">第 ' + h.el.getAttribute("data-n") + " 题</span> " +
        '<span class="hit-title">' + mark(escapeHtml(title || h.el.id), ts) + "</span></a>" +
        '<p class="snip">' + snippet(h.el, ts) + "</p></li>";
    });
    // The first results are drawn before the rest and the sidebar are laid out (laying out a
    // hundred CJK snippets and the opened sidebar took longer than the search itself); data-query
    // says when the page is done with this query.
    list.innerHTML = items.slice(0, FIRST_RESULTS).join("");
    var found = hits;
    afterFrame(function () {
      if (run !== searches) return;  // a newer search has taken over
      if (items.length > FIRST_RESULTS) list.insertAdjacentHTML("beforeend", items.slice(FIRST_RESULTS).join(""));
      narrowSidebar(found);
      list.setAttribute("data-query", q);
    });
    if (showResults) {
      if (body.classList.contains("cards-on")) setCards(false);
      body.classList.add("view-results");
      status.hidden = false;
      var full = hits.filter(function (h) { return h.all; }).length;
      status.textContent = !hits.length ? "没有找到匹配的题目。" :
        "找到 " + hits.length + " 题" + (full < hits.length ? "（" + full + " 题含全部关键词，排在前面）" : "") +
        "；按 Enter 打开第一题";
      window.scrollTo(0, 0);
    }
  }
  // The sidebar shows only the questions found (and their modules, opened); null: all of them.
  function narrowSidebar(found) {
    var hitIds = {}, hitModules = {};
    (found || []).forEach(function (h) { hitIds[h.el.id] = true; hitModules[h.el.getAttribute("data-m")] = true; });
    questions.forEach(function (d) {
      var link = navByTarget[d.id];
      if (link) link.hidden = found ? !hitIds[d.id] : false;
    });
    all("#sidebar details.nav-mod").forEach(function (d) {
      var any = !found || !!hitModules[d.getAttribute("data-m")];
      d.hidden = !any;
      if (found && any) d.open = true;
    });
  }
  // The first keystroke after a pause searches at once; the keystrokes of a word being typed
  // are gathered into one search 50 ms after the last of them.
  var timer = null, lastSearch = -Infinity;
  $("search").addEventListener("input", function () {
    clearTimeout(timer);
    var now = Date.now();
    if (now - lastSearch > 300) { lastSearch = now; runSearch(true); return; }
    timer = setTimeout(function () { lastSearch = Date.now(); runSearch(true); }, 50);
  });
  $("search").addEventListener("keydown", function (e) {
    if (e.key === "Escape") { $("search").value = ""; runSearch(false); $("search").blur(); }
    if (e.key === "Enter") {
      clearTimeout(timer);
      runSearch(true);
      if (hits.length) { body.classList.remove("view-results"); go(hits[0].el.id); }
    }
  });
  $("results").addEventListener("click", function (e) {
    var a = e.target.closest ? e.target.closest("a[href]") : null;
    if (a) body.classList.remove("view-results");
  });

  // ---- cards mode -----------------------------------------------------------------------------
  var known = {};
  try {
    var saved = JSON.parse(store.get("known") || "[]");
    if (Array.isArray(saved)) saved.forEach(function (k) { known[k] = true; });
  } catch (e) { known = {}; }
  function saveKnown() {
    store.set("known", JSON.stringify(Object.keys(known).sort()));
  }
  var deck = [];
  var pos = 0;
  var flipped = false;

  function cardInfo(li) {
    var art = li.closest("article");
    var h1 = art.querySelector(".qtitle");
    return {
      id: li.getAttribute("data-card"),
      module: art.getAttribute("data-m"),
      number: art.getAttribute("data-n"),
      title: h1 ? h1.innerHTML : "",
      cue: li.querySelector(".pt-cue").innerHTML,
      answer: li.querySelector(".pt-ans").innerHTML,
      article: art.id
    };
  }
  var cards = null;  // every memory point of the bank, collected when 卡片模式 first opens
  function allCards() {
    if (!cards) {
      fillAll();
      cards = all("#docs li.pt[data-card]").map(cardInfo);
    }
    return cards;
  }

  function buildDeck(keepOrder) {
    var scope = $("card-scope").value;
    var onlyUnknown = $("card-unknown").checked;
    deck = allCards().filter(function (c) {
      return (scope === "all" || c.module === scope) && !(onlyUnknown && known[c.id]);
    });
    if (!keepOrder) pos = 0;
    flipped = false;
    renderCard();
  }
  function renderCard() {
    var card = $("card");
    var empty = $("card-empty");
    var knownCount = allCards().filter(function (c) {
      return ($("card-scope").value === "all" || c.module === $("card-scope").value) && known[c.id];
    }).length;
    if (!deck.length) {
      card.hidden = true;
      empty.hidden = false;
      $("card-count").textContent = "0 张 · 已掌握 " + knownCount;
      ["card-prev", "card-next", "card-flip", "card-known"].forEach(function (id) { $(id).disabled = true; });
      return;
    }
    ["card-prev", "card-next", "card-flip", "card-known"].forEach(function (id) { $(id).disabled = false; });
    if (pos >= deck.length) pos = deck.length - 1;
    var c = deck[pos];
    card.hidden = false;
    empty.hidden = true;
    card.setAttribute("data-card", c.id);
    card.querySelector(".card-ctx").innerHTML =
      '<a href="#' + c.article + '">第 ' + c.number + " 题</a> · " + c.title;
    card.querySelector(".card-cue").innerHTML = c.cue;
    card.querySelector(".card-ans").innerHTML = c.answer;
    card.querySelector(".card-ans").hidden = !flipped;
    card.querySelector(".card-hint").hidden = flipped;
    card.classList.toggle("known", !!known[c.id]);
    $("card-known").setAttribute("aria-pressed", known[c.id] ? "true" : "false");
    $("card-flip").textContent = flipped ? "看提示" : "翻面";
    $("card-count").textContent = (pos + 1) + " / " + deck.length + " · 已掌握 " + knownCount;
  }
  function flip() { if (deck.length) { flipped = !flipped; renderCard(); } }
  function move(delta) {
    if (!deck.length) return;
    pos = (pos + delta + deck.length) % deck.length;
    flipped = false;
    renderCard();
  }
  function setCards(on) {
    body.classList.toggle("cards-on", on);
    $("cards").hidden = !on;
    $("cards-toggle").setAttribute("aria-pressed", on ? "true" : "false");
    if (on) {
      setNav(false);
      var m = current && current.getAttribute("data-m");
      $("card-scope").value = m && $("card-scope").querySelector('option[value="' + m + '"]') ? m : "all";
      buildDeck(false);
      window.scrollTo(0, 0);
    }
  }
  $("cards-toggle").addEventListener("click", function () { setCards(!body.classList.contains("cards-on")); });
  $("cards-exit").addEventListener("click", function () { setCards(false); });
  $("card-scope").addEventListener("change", function () { buildDeck(false); });
  $("card-unknown").addEventListener("change", function () { buildDeck(false); });
  $("card-shuffle").addEventListener("click", function () {
    for (var i = deck.length - 1; i > 0; i--) {
      var j = Math.floor(Math.random() * (i + 1));
      var t = deck[i]; deck[i] = deck[j]; deck[j] = t;
    }
    pos = 0;
    flipped = false;
    renderCard();
  });
  $("card-prev").addEventListener("click", function () { move(-1); });
  $("card-next").addEventListener("click", function () { move(1); });
  $("card-flip").addEventListener("click", flip);
  $("card").addEventListener("click", function (e) {
    if (e.target.closest && e.target.closest("a")) return;
    flip();
  });
  $("card-known").addEventListener("click", function () {
    if (!deck.length) return;
    var id = deck[pos].id;
    if (known[id]) delete known[id];
    else known[id] = true;
    saveKnown();
    renderCard();
  });

  // ---- keyboard -------------------------------------------------------------------------------
  doc.addEventListener("keydown", function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var tag = (e.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "select" || tag === "textarea") return;
    if (e.key === "/") { e.preventDefault(); $("search").focus(); return; }
    if (body.classList.contains("review-on")) return;  // review.js has the keys there
    if (body.classList.contains("cards-on")) {
      if (e.key === " " || e.key === "Enter") { if (tag !== "button") { e.preventDefault(); flip(); } }
      else if (e.key === "ArrowRight") move(1);
      else if (e.key === "ArrowLeft") move(-1);
      return;
    }
    if (e.key === "ArrowRight" || e.key === "j") step(1);
    else if (e.key === "ArrowLeft" || e.key === "k") step(-1);
  });

  // ---- start ----------------------------------------------------------------------------------
  show(decodeURIComponent(location.hash.slice(1)), false);
  // Read the articles' text for search in idle moments, a few at a time (at most ~20 ms in a
  // row, though the browser may offer 50), so the first search is quick and a keystroke or
  // click never waits long for it.
  var idle = window.requestIdleCallback ||
    function (f) { return setTimeout(function () { f({ timeRemaining: function () { return 10; } }); }, 30); };
  var indexed = 0;
  function indexSome(deadline) {
    var until = Date.now() + 20;
    while (indexed < questions.length && deadline.timeRemaining() > 1 && Date.now() < until) {
      fieldsOf(questions[indexed++]);
    }
    if (indexed < questions.length) idle(indexSome);
  }
  idle(indexSome);
})();
