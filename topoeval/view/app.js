/* topoeval view: the runs list, a run (headline, pictures, tables, episodes), an episode as a
   conversation, two episodes side by side (the first turn where they differ marked), and a cell's
   "what flipped" page (flips.js). All state is in the query string (?run=&cell=&outcome=&dim=&collateral=
   &page=&ep=&vs=, and flips.js's &flips=&with=&dir=&task=), so a URL opens any view. Data come from the server as JSON, fetched with the
   launch's token (data/*.json); a static export's page (body data-source="scripts") loads them as
   scripts calling topoevalData (data/*.js), which work from file://, and only for a run id its runs
   list holds. Episode text is always set as text (el()), never parsed as markup. */
(function () {
  "use strict";
  var PAGE = 100, RUN_ID = /^r[0-9a-f]{10}$/, NUMBER = /^[0-9]{1,9}$/;
  var SCRIPTS = document.body.getAttribute("data-source") === "scripts";
  var waiting = {}, loaded = {};
  var q = new URLSearchParams(location.search);
  var token = q.get("token");
  try {  // the launch's token: kept for this tab (the server also set it as a cookie), and out of the URL
    if (token) { sessionStorage.setItem("topoeval-token", token); q.delete("token");
      history.replaceState(null, "", location.pathname + (q.toString() ? "?" + q : "")); }
    else token = sessionStorage.getItem("topoeval-token");
  } catch (e) { /* no storage (file://): the cookie carries it */ }
  window.topoevalData = function (name, payload) {
    var w = waiting[name]; delete waiting[name]; if (w) w(payload);
  };
  function load(path) {  // data/<path>.json fetched, or data/<path>.js as a script: once per path
    return loaded[path] || (loaded[path] = SCRIPTS ? new Promise(function (resolve, reject) {
      waiting[path] = resolve;
      var s = document.createElement("script");
      s.src = "data/" + path + ".js"; s.onerror = function () { reject(new Error("could not load data/" + path + ".js")); };
      document.head.appendChild(s);
    }) : fetch("data/" + path + ".json", { credentials: "same-origin", headers: token ? { "X-Topoeval-Token": token } : {} })
      .then(function (r) {
        if (!r.ok) throw new Error("could not load data/" + path + ".json (" + r.status + (r.status === 403 ? ": open the URL topoeval view printed" : "") + ")");
        return r.json();
      }));
  }
  var main = document.getElementById("main"), crumbs = document.getElementById("crumbs");

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function add(parent) { for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]); return parent; }
  function link(params, text, cls) {
    var a = el("a", cls, text); a.href = url(params); return a;
  }
  function url(params) {
    var p = new URLSearchParams();
    Object.keys(params).forEach(function (k) { if (params[k] !== null && params[k] !== undefined && params[k] !== "") p.set(k, params[k]); });
    var s = p.toString(); return s ? "?" + s : "?";
  }
  function pill(text, cls) { return el("span", "pill " + (cls || ""), text); }
  function crumb(parts) {
    crumbs.innerHTML = "";
    parts.forEach(function (p, i) {
      if (i) crumbs.appendChild(el("span", "sep", "›"));
      crumbs.appendChild(p.href ? link(p.href, p.text) : el("span", null, p.text));
    });
  }
  function fmt(v) { return v === null || v === undefined ? "—" : (typeof v === "number" ? v.toFixed(2) : String(v)); }
  function pretty(v) {
    if (typeof v === "string") { try { v = JSON.parse(v); } catch (e) { return v; } }
    var flat = JSON.stringify(v);
    return flat !== undefined && flat.length <= 90 ? JSON.stringify(v, null, 1).replace(/\n\s*/g, " ") : JSON.stringify(v, null, 2);
  }
  function done() { console.log("topoeval-view-ready"); }

  /* ---------- runs list ---------- */
  function showRuns(runs) {
    crumb([{ text: "runs" }]);
    main.innerHTML = "";
    add(main, el("h1", null, "Runs"), el("p", "muted", runs.runs.length + " run(s) under " + runs.root));
    var t = el("table"), head = el("tr");
    ["run folder", "protocol", "models", "topologies", "episodes", "started"].forEach(function (h) { head.appendChild(el("th", null, h)); });
    t.appendChild(head);
    runs.runs.forEach(function (r) {
      var tr = el("tr", "row"), first = el("td");
      first.appendChild(link({ run: r.id }, r.path));
      if (r.kind) first.appendChild(pill(r.kind, "kind"));
      tr.onclick = function (ev) { if (ev.target.tagName !== "A") location.href = url({ run: r.id }); };
      add(tr, first, el("td", null, r.protocol), el("td", null, r.models.join(", ")),
          el("td", null, r.topologies.join(", ")),
          add(el("td", "num"), document.createTextNode(r.episodes), r.errors ? pill(r.errors + " err", "err") : null),
          el("td", "small muted", (r.started || "").replace("T", " ").slice(0, 19)));
      t.appendChild(tr);
    });
    add(main, add(el("div", "panel scroll"), t));
    done();
  }

  /* ---------- a run ---------- */
  function comparable(run, i) {
    // whether another model ran cell i's baseline and topology (its "what flipped" page has something to show)
    var c = run.cells[i];
    return run.cells.some(function (o) { return o.model !== c.model && o.baseline === c.baseline && o.topology === c.topology; });
  }
  function cellLabel(c) { return c.model + " · " + c.baseline + " · " + c.topology + (c.role ? " [" + c.role + "]" : ""); }
  function keep(run, e, f) {
    if (f.cell !== "" && e[0] !== +f.cell) return false;
    var status = run.statuses[e[3]] || e[3];
    if (f.outcome === "success" && !(status === "done" && e[4] === 1)) return false;
    if (f.outcome === "failure" && !(status !== "error" && e[4] !== 1)) return false;
    if (f.outcome === "error" && status !== "error") return false;
    if (f.dim) { var i = run.dimensions.indexOf(f.dim); if (i < 0 || !(e[5] & (1 << i))) return false; }
    // e[6]: the episode's collateral damage (index.py): 0 none, 1 reversible only, 2 irreversible, null not measured
    if (f.collateral === "yes" && !(e[6] >= 1)) return false;
    if (f.collateral === "irreversible" && e[6] !== 2) return false;
    if (f.collateral === "no" && e[6] !== 0) return false;
    return true;
  }
  function filters() {
    return { cell: q.get("cell") || "", outcome: q.get("outcome") || "", dim: q.get("dim") || "", collateral: q.get("collateral") || "" };
  }
  function collateralMark(e) {
    // the row's marker: the episode changed something outside its task's scope (beside success, never in it)
    var why = "changed something outside the task's scope (its state diff says what); beside success, never in it";
    var p = e[6] === 2 ? pill("collateral · irreversible", "collateral irr") : e[6] === 1 ? pill("collateral", "collateral") : null;
    if (p) p.title = why;
    return p;
  }
  function state(extra) {
    var s = { run: q.get("run"), cell: q.get("cell"), outcome: q.get("outcome"), dim: q.get("dim"), collateral: q.get("collateral") };
    Object.keys(extra || {}).forEach(function (k) { s[k] = extra[k]; });
    return s;
  }
  function select(label, name, options, value) {
    var l = el("label", null, label), s = el("select"); s.name = name; s.id = "f-" + name;
    options.forEach(function (o) { var op = el("option", null, o[1]); op.value = o[0]; if (String(o[0]) === String(value)) op.setAttribute("selected", ""); s.appendChild(op); });
    s.onchange = function () { var st = state({ page: null }); st[name] = s.value; location.href = url(st); };
    l.appendChild(s); return l;
  }
  function failing(run, e) {
    var out = [];
    run.dimensions.forEach(function (d, i) { if (e[5] & (1 << i)) out.push(d); });
    return out;
  }
  function showRun(run) {
    crumb([{ text: "runs", href: {} }, { text: run.path }]);
    main.innerHTML = "";
    var more = run.complete === false ? " (reading the rest of the run…)" : "";
    add(main, el("h1", null, run.protocol || run.path), el("p", "muted", run.path + " · " + run.episodes.length + " episodes" + more));
    if (run.skipped) main.appendChild(el("p", "why", run.skipped + " line(s) of its episode files skipped: not episode records (torn, or written by something else)"));
    if (run.notice) main.appendChild(el("p", "why notice", run.notice));  // cells that (nearly) never called a tool
    if (run.sweep) {  // a sweep's run: the sweep's points (built and escaped by the server) lead
      var sweep = el("section", "panel scroll sweep"); sweep.innerHTML = run.sweep; main.appendChild(sweep);
    }
    var head = el("section", "panel scroll"); head.innerHTML = run.headline || "<p class='muted'>No summary.json.</p>";
    main.appendChild(head);
    if (run.pictures.length) {
      main.appendChild(el("h2", null, "Pictures"));
      var pics = el("div", "pics");
      run.pictures.forEach(function (p) {
        var f = el("figure"), a = el("a"), img = el("img");
        var src = "files/" + run.id + "/" + p; a.setAttribute("href", src); img.setAttribute("src", src); img.alt = p; img.loading = "lazy";
        add(pics, add(f, add(a, img), el("figcaption", null, p)));
      });
      main.appendChild(pics);
    }
    if (run.tables) {
      var det = el("details", "panel tables"); det.appendChild(el("summary", null, "Tables (report.md): success, decision quality, collapse, few-shot"));
      var box = el("div", "scroll"); box.innerHTML = run.tables; det.appendChild(box); main.appendChild(det);
    }
    main.appendChild(el("h2", null, "Episodes"));
    var f = filters(), bar = el("div", "filters panel");
    add(bar,
      select("Cell", "cell", [["", "all cells"]].concat(run.cells.map(function (c, i) { return [i, cellLabel(c)]; })), f.cell),
      select("Outcome", "outcome", [["", "all"], ["success", "successes"], ["failure", "failures"], ["error", "errors (backend failed)"]], f.outcome),
      select("Failing dimension", "dim", [["", "any"]].concat(run.dimensions.map(function (d) { return [d, d + " < 1"]; })), f.dim),
      select("Collateral damage", "collateral", [["", "any"], ["yes", "collateral only"], ["irreversible", "irreversible collateral"],
        ["no", "none (scope measured)"]], f.collateral));
    main.appendChild(bar);
    if (f.cell !== "" && run.cells[+f.cell] && comparable(run, +f.cell)) {
      var what = add(el("p", "what-flipped"), link({ run: run.id, flips: f.cell }, "What flipped: " + run.cells[+f.cell].model +
        " against another model on " + run.cells[+f.cell].topology + " →"));
      main.appendChild(what);
    }
    var shown = [];
    run.episodes.forEach(function (e, n) { if (keep(run, e, f)) shown.push(n); });
    var page = +(q.get("page") || 0), t = el("table"), hr = el("tr");
    ["#", "model", "baseline", "topology", "task", "sample", "outcome", "failing dimensions"].forEach(function (h) { hr.appendChild(el("th", null, h)); });
    t.appendChild(hr);
    shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (n) {
      var e = run.episodes[n], c = run.cells[e[0]], tr = el("tr", "row"), status = run.statuses[e[3]] || e[3];
      tr.dataset.episode = n;
      var out = status === "error" ? pill("error", "err") : (e[4] === 1 ? pill("success", "ok") : pill(e[4] === null ? status : "failure", "fail"));
      out = add(el("td"), out, collateralMark(e));
      var dims = el("td"); failing(run, e).forEach(function (d) { dims.appendChild(pill(d, "dim")); });
      add(tr, add(el("td", "num"), link(state({ ep: n }), String(n))), el("td", null, c.model), el("td", null, c.baseline),
          el("td", null, c.topology), el("td", null, run.tasks[e[1]]), el("td", "num", e[2]), out, dims);
      tr.onclick = function (ev) { if (ev.target.tagName !== "A") location.href = url(state({ ep: n })); };
      t.appendChild(tr);
    });
    var list = add(el("div", "panel scroll"), el("p", "muted", shown.length + " of " + run.episodes.length + " episodes shown" +
      (shown.length > PAGE ? " (page " + (page + 1) + " of " + Math.ceil(shown.length / PAGE) + ")" : "")), t);
    list.id = "episodes";
    if (shown.length > PAGE) {
      var pager = el("div", "pager");
      if (page > 0) pager.appendChild(link(state({ page: page - 1 }), "← previous"));
      if ((page + 1) * PAGE < shown.length) pager.appendChild(link(state({ page: page + 1 }), "next →"));
      list.appendChild(pager);
    }
    main.appendChild(list);
    if (!more) done();
  }

  /* ---------- an episode ---------- */
  function record(run, n) {
    var k = Math.floor(n / run.chunk);
    return load(run.id + "/" + k).then(function (c) {
      run.prompts = Object.assign(run.prompts || {}, c.prompts);
      return c.records[n - k * run.chunk];
    });
  }
  function sameTask(run, n) {
    var e = run.episodes[n], c = run.cells[e[0]], out = [];
    run.episodes.forEach(function (o, m) {
      var oc = run.cells[o[0]];
      if (m !== n && o[1] === e[1] && o[2] === e[2] && oc.baseline === c.baseline && oc.topology === c.topology && oc.model !== c.model) out.push(m);
    });
    return out;
  }
  function scoresPanel(run, rec) {
    var s = rec.scores || {}, reasons = s.reasons || {}, box = el("div", "panel"), t = el("table", "scores");
    box.appendChild(el("h3", null, "Scores"));
    var outcome = rec.status === "error" ? pill("error", "err") : (s.success >= 1 ? pill("success", "ok") : pill("failure", "fail"));
    add(box, add(el("div"), outcome, pill("dq " + fmt(s.dq)), s.unsafe_commits ? pill(s.unsafe_commits + " unsafe commit(s)", "fail") : null,
      s.invalid_calls ? pill(s.invalid_calls + " invalid call(s)", "fail") : null, pill((s.tool_calls || 0) + " tool calls"), pill((rec.turns || 0) + " turns")));
    if (rec.final_answer !== undefined && rec.final_answer !== null) add(box, add(el("div", "answer"), el("span", "label", "final answer: "), el("span", "text final-answer", String(rec.final_answer))));
    if (rec.status !== "error" && !(s.success >= 1) && rec.expected_answer !== undefined && rec.expected_answer !== null)  // a failed episode: what the suite expected
      add(box, add(el("div", "answer expected"), el("span", "label", "expected: "), el("span", "text expected-answer", String(rec.expected_answer))));
    run.dimensions.forEach(function (d) {
      var v = s[d], tr = el("tr"), bar = el("span", "bar"), fill = el("i");
      if (v === null || v === undefined) return;
      bar.className = "bar" + (v < 0.5 ? " low" : v < 1 ? " mid" : ""); fill.style.width = Math.round(v * 100) + "%"; bar.appendChild(fill);
      add(tr, el("td", null, d), add(el("td", "num"), bar, document.createTextNode(fmt(v))),
          el("td", "reason", reasons[d] || (rec.scores && !s.reasons ? "(no reason recorded: a run from before reasons were kept)" : "")));
      t.appendChild(tr);
    });
    if (t.children.length) box.appendChild(t); else box.appendChild(el("p", "muted small", "No decision-quality dimension applies to this task."));
    return box;
  }
  function callIndex(rec) {
    // events name calls by index; a call is a traveller exchange when an ask/confirm event points at it
    var byCall = {}, risk = ((rec.scores || {}).reasons || {}).risk || "";
    (rec.events || []).forEach(function (ev) { if (ev.call !== undefined) (byCall[ev.call] = byCall[ev.call] || []).push(ev); });
    var verdicts = {};
    risk.split(" | ").forEach(function (part) { var i = part.indexOf(": "); if (i > 0) verdicts[part.slice(0, i)] = part.slice(i + 2); });
    return { byCall: byCall, verdicts: verdicts };
  }
  function callCard(call, events, verdicts) {
    var asks = events.filter(function (ev) { return ev.type === "ask" || ev.type === "confirm"; });
    var commit = events.filter(function (ev) { return ev.type === "commit" && ev.irreversible !== false; })[0];
    var card = el("div", "call"), head = el("div"), name = el("span", "name", call.name);
    head.appendChild(name);
    var verdict = commit ? verdicts[commit.tool + " " + commit.object + " (turn " + commit.turn + ")"] || "" : "";
    if (call.effect === "irreversible" || commit) { card.classList.add("irreversible"); head.appendChild(el("span", "flag irr", "irreversible")); }
    if (verdict.indexOf("unsafe") === 0) { card.classList.add("unsafe"); head.appendChild(el("span", "flag unsafe", "unsafe commit")); }
    if (call.status && call.status !== "ok") { card.classList.add("bad"); head.appendChild(el("span", "flag status", call.status)); }
    card.appendChild(head);
    if (verdict.indexOf("unsafe") === 0) card.appendChild(el("div", "why", verdict.replace(/^unsafe — /, "why unsafe: ")));
    var args = call.arguments || call.raw_arguments;
    if (asks.length && args && args.question) {
      card.classList.add("ask");
      add(card, el("div", "label", "asks the traveller"), el("div", "text question", args.question));
      var answer = add(el("div", "traveller"), el("div", "who", "traveller"), el("div", "text", typeof call.observation === "string" ? call.observation : pretty(call.observation)));
      card.appendChild(answer);
      return card;
    }
    add(card, el("div", "label", "arguments"), el("pre", null, pretty(args)));
    var result = call.error ? { error: call.error } : call.observation;
    add(card, el("div", "label", call.error ? "error" : "result"), rows(result) || el("pre", null, pretty(result)));
    return card;
  }
  function rows(v) {
    // a list of flat objects (search results) reads best as a table
    if (!Array.isArray(v) || !v.length || v.some(function (o) { return !o || typeof o !== "object" || Array.isArray(o); })) return null;
    var keys = Object.keys(v[0]), t = el("table", "result"), hr = el("tr");
    if (keys.length > 8 || v.some(function (o) { return Object.keys(o).some(function (k) { return typeof o[k] === "object" && o[k] !== null; }); })) return null;
    keys.forEach(function (k) { hr.appendChild(el("th", null, k)); }); t.appendChild(hr);
    v.forEach(function (o) { var tr = el("tr"); keys.forEach(function (k) { tr.appendChild(el("td", null, o[k] === undefined ? "" : String(o[k]))); }); t.appendChild(tr); });
    return add(el("div", "scroll"), t);
  }
  function turns(rec) {
    // the conversation cut into turns: each assistant message with the user turns just before it
    // (tool results, the traveller's answers among them, are drawn inside the assistant's calls)
    var out = [], users = [];
    (rec.messages || []).forEach(function (m) {
      if (m.role === "user") users.push(m);
      else if (m.role === "assistant") { out.push({ users: users, assistant: m }); users = []; }
    });
    if (users.length) out.push({ users: users, assistant: null });
    return out;
  }
  function turnView(rec) {
    // draws one turn after another (a call is found by its id, from where the last one was found)
    var idx = callIndex(rec), calls = rec.calls || [], next = 0;
    return function (t) {
      var out = t.users.map(function (m) { return add(el("div", "msg user"), el("div", "who", "user"), el("div", "text", m.content)); });
      var m = t.assistant;
      if (!m) return out;
      var tcs = m.tool_calls || [];
      var box = el("div", "msg assistant" + (tcs.length ? "" : " final"));
      box.appendChild(el("div", "who", "assistant" + (tcs.length ? "" : " · answer")));
      if (m.content) box.appendChild(el("div", "text", m.content));
      if (tcs.length) {
        var row = el("div", "calls" + (tcs.length > 1 ? " parallel" : ""));
        if (tcs.length > 1) box.appendChild(el("div", "calls-label", tcs.length + " calls in parallel"));
        tcs.forEach(function (tc) {
          var j = next; while (j < calls.length && calls[j].id !== tc.id) j++;
          var call = j < calls.length ? calls[j] : { name: tc["function"].name, raw_arguments: tc["function"].arguments, status: "?" };
          if (j < calls.length) next = j + 1;
          row.appendChild(callCard(call, idx.byCall[j] || [], idx.verdicts));
        });
        box.appendChild(row);
      }
      out.push(box);
      return out;
    };
  }
  function systemPrompt(run, rec) {
    // what the run recorded (prompts.json); a run from before that says so, and nothing is rebuilt
    if (run.prompts_recorded === false) return el("p", "muted small no-prompts", run.no_prompts);
    var p = (run.prompts || {})[rec.topology];
    if (!p) return null;
    var box = el("div", "prompts"), tools = p.tools || [];
    if (typeof p.system_prompt === "string") add(box, add(el("details", "msg system"), el("summary", null, "system prompt (" + p.system_prompt.length + " characters)"), el("div", "text small", p.system_prompt)));
    var list = add(el("details", "msg system tools"), el("summary", null, "tools (" + tools.length + ")"));
    tools.forEach(function (t) {
      var f = (t && t["function"]) || t || {};
      add(list, add(el("div", "tool"), el("span", "name", String(f.name)), el("div", "small", f.description === undefined ? "" : String(f.description)),
          el("pre", null, pretty(f.parameters === undefined ? {} : f.parameters))));
    });
    return add(box, list);
  }
  function epilogue(rec) {
    var out = [];
    if ((rec.errors || []).length) out.push(add(el("div", "msg"), el("div", "who", "errors"), el("pre", null, rec.errors.join("\n"))));
    if (rec.state_diff && Object.keys(rec.state_diff).length) {
      out.push(add(el("details", "raw"), el("summary", null, "state diff (" + Object.keys(rec.state_diff).length + " keys)"), el("pre", null, pretty(rec.state_diff))));
    }
    return out;
  }
  function conversation(run, rec) {
    var conv = el("div", "conv"), view = turnView(rec);
    add(conv, systemPrompt(run, rec));
    turns(rec).forEach(function (t) { view(t).forEach(function (e) { conv.appendChild(e); }); });
    epilogue(rec).forEach(function (e) { conv.appendChild(e); });
    return conv;
  }
  function turnKeys(rec) {
    // each turn as turns() cuts it (the user turns before an assistant message, that message), with the
    // results of its calls, as one comparable text (call ids left out: they differ between any two runs)
    var out = [], cur = null;
    (rec.messages || []).forEach(function (m) {
      if ((m.role === "user" || m.role === "assistant") && cur && cur.a) { out.push(cur); cur = null; }
      cur = cur || { u: [], a: null, r: [] };
      if (m.role === "user") cur.u.push(m.content);
      else if (m.role === "assistant") cur.a = [m.content || "", (m.tool_calls || []).map(function (tc) { var f = tc["function"] || {}; return [f.name, f.arguments]; })];
      else if (m.role === "tool") cur.r.push(m.content);
    });
    if (cur) out.push(cur);
    return out.map(function (t) { return JSON.stringify(t); });
  }
  function firstDiff(recs) {
    // the first turn (1-based) where the two conversations differ, or null where they are the same
    var a = turnKeys(recs[0]), b = turnKeys(recs[1]);
    for (var i = 0; i < Math.max(a.length, b.length); i++) if (i >= a.length || i >= b.length || a[i] !== b[i]) return i + 1;
    return null;
  }
  function aligned(run, recs) {
    // two conversations turn by turn: row i holds assistant turn i of each, with the user turns before
    // it and its calls' results and traveller answers; a side that ended sooner leaves its cell empty
    var grid = el("div", "aligned"), views = recs.map(turnView), lists = recs.map(turns), diff = String(firstDiff(recs));
    function row(label, key, cells, ended) {
      var r = el("div", "turn-row" + (key === diff ? " first-diff" : "")); r.dataset.turn = key;
      r.appendChild(add(el("div", "turn-label", label), key === diff ? el("div", "diff-note", "first difference") : null));
      cells.forEach(function (items, side) {
        var cell = el("div", "turn-cell conv" + (ended && ended[side] ? " none" : "")); cell.dataset.side = side ? "b" : "a";
        items.forEach(function (e) { if (e) cell.appendChild(e); });
        r.appendChild(cell);
      });
      grid.appendChild(r);
    }
    row("system", "system", recs.map(function (rec) { return [systemPrompt(run, rec)]; }));
    var n = Math.max(lists[0].length, lists[1].length);
    for (var i = 0; i < n; i++) {
      row("turn " + (i + 1), String(i + 1), lists.map(function (list, side) {
        if (i < list.length) return views[side](list[i]);
        return [el("div", "muted small", "no turn " + (i + 1) + ": ended after " + list.length + " (" + recs[side].status + ")")];
      }), lists.map(function (list) { return i >= list.length; }));
    }
    row("end", "end", recs.map(epilogue));
    return grid;
  }
  function drawn(draw) {
    // a record the index let through but the page cannot draw shows why, and the rest of the page stays
    try { return draw(); } catch (e) { return el("p", "why", "this episode's record could not be drawn: " + e); }
  }
  function episodeColumn(run, n, rec, others) {
    if (rec && rec.unreadable) return add(el("div", "col"), el("p", "why", "episode " + n + ": its line is not an episode record (" + rec.unreadable + ")"));
    // others: the same task's episodes of other models, for one episode's view (drawn with its
    // conversation); left out in a comparison, whose two conversations are drawn turn by turn below
    var col = el("div", "col"), c = run.cells[run.episodes[n][0]], head = el("div", "episode-head");
    add(head, add(el("div"), el("h2", null, c.model), el("div", "muted", c.baseline + " · " + c.topology + " · " + rec.task_id + " · family " + (rec.family || "—") + " · sample " + rec.sample + " · " + rec.status)));
    col.appendChild(head);
    if (others) {
      var o = el("div", "others small");
      if (others.length) {
        o.appendChild(document.createTextNode("Same task, other models: "));
        others.forEach(function (m) { o.appendChild(link(state({ ep: n, vs: m }), run.cells[run.episodes[m][0]].model, "pill")); });
      } else o.appendChild(el("span", "muted", "No other model ran this task in this cell's baseline."));
      col.appendChild(o);
    }
    add(col, scoresPanel(run, rec), drawn(function () {  // what it changed, in the task's scope and out (statediff.js)
      return window.topoevalStateDiff({ el: el, add: add, pill: pill }, rec);
    }), others === undefined ? null : drawn(function () { return conversation(run, rec); }));
    return col;
  }
  function showEpisode(run, n, vs, from) {
    // from: the "what flipped" page that opened this pair (flips.js): its link back, a banner, and the
    // page scrolled to the first turn where the two differ
    var back = from ? from.back : state({});
    crumb([{ text: "runs", href: {} }, { text: run.path, href: state({}) }].concat(from ? [{ text: from.crumb, href: back }] : [])
      .concat([{ text: "episode " + n + (vs !== null ? " vs " + vs : "") }]));
    main.innerHTML = "";
    var wanted = [record(run, n)].concat(vs !== null ? [record(run, vs)] : []);
    return Promise.all(wanted).then(function (recs) {
      main.appendChild(link(back, from ? "← what flipped" : "← episodes"));
      if (from) main.appendChild(from.banner);
      if (vs === null) { main.appendChild(episodeColumn(run, n, recs[0], sameTask(run, n))); return done(); }
      document.body.classList.add("wide");
      var grid = el("div", "compare");
      add(grid, episodeColumn(run, n, recs[0]), episodeColumn(run, vs, recs[1]));
      main.appendChild(add(el("p", "small"), link(state({ ep: n }), "close the comparison")));
      add(main, grid, el("h2", null, "Turn by turn"), drawn(function () {
        if (recs[0].unreadable || recs[1].unreadable) throw new Error("one side is not an episode record");
        return aligned(run, recs);
      }));
      var at = main.querySelector(".turn-row.first-diff");
      if (from && from.scroll && at) {
        // the page scrolls under a header that stays (body.pane: main is the scroller), down to that turn
        document.body.classList.add("pane");
        at.scrollIntoView({ block: "start" });
        console.log("topoeval-view-at turn " + at.dataset.turn + " scrolled " + Math.round(main.scrollTop));
      }
      done();
    });
  }

  /* ---------- routing ---------- */
  var rid = q.get("run");
  function whole(run) {
    // a big run's first payload holds its first episodes only (the server's, never an export's): the
    // page is drawn from it at once, then again from the whole run, which the server reads on from there
    return run.complete === false ? load(run.id + "/all") : Promise.resolve(run);
  }
  function known(runs) {
    // a run is loaded only by an id of the runs list: ?run=../../x loads nothing
    if (!RUN_ID.test(rid) || !runs.runs.some(function (r) { return r.id === rid; })) throw new Error("no run " + JSON.stringify(rid) + " here");
    return load(rid);
  }
  var flips = window.topoevalFlips({ el: el, add: add, link: link, url: url, pill: pill, crumb: crumb, load: load, main: main,
    q: q, done: done, cellLabel: cellLabel, showEpisode: showEpisode });
  var go = !rid ? load("runs").then(showRuns) : load("runs").then(known).then(function (run) {
    if (q.get("flips") !== null) return whole(run).then(flips.show);
    var ep = q.get("ep"), vs = q.get("vs");
    ep = ep !== null && NUMBER.test(ep) ? +ep : null; vs = vs !== null && NUMBER.test(vs) ? +vs : null;
    if (ep !== null) return whole(run).then(function (run) {
      if (ep < run.episodes.length) return showEpisode(run, ep, vs !== null && vs < run.episodes.length ? vs : null);
      showRun(run);
    });
    showRun(run);
    return whole(run).then(function (all) { if (all !== run) showRun(all); });
  });
  go.catch(function (err) { main.innerHTML = ""; main.appendChild(el("p", "why", String(err))); console.log("topoeval-view-error " + err); });
})();
