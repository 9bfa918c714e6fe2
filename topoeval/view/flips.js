/* topoeval view: the "what flipped" page of a cell. From a cell (model · baseline · topology), against
   another model of the same baseline and topology (a sweep's checkpoints are models of one run): the
   tasks that went 0 → 1 and 1 → 0 on success, the counts, McNemar's exact p and the paired verdict,
   all worked out by the server (data/<run>/flips/<cell>), never here. A row opens the two episodes
   side by side at the first turn where they differ. State is in the URL: ?run=&flips=CELL&with=CELL
   &dir=up|down&task=TASK, each checked (strict patterns, then membership in the run's lists) before
   anything is loaded or drawn. app.js calls window.topoevalFlips with its helpers. */
window.topoevalFlips = function (v) {
  "use strict";
  var el = v.el, add = v.add, link = v.link, pill = v.pill, NUMBER = /^[0-9]{1,9}$/, DIRECTION = /^(up|down)$/;
  var ARROW = { up: "0 → 1", down: "1 → 0" };

  function number(s) { return s !== null && NUMBER.test(s) ? +s : null; }
  function pvalue(p) { return p === null || p === undefined ? "—" : p < 0.001 ? p.toExponential(2) : p.toFixed(3); }
  function invalid(what, value) { return new Error("no " + what + " " + JSON.stringify(value) + " here"); }
  function choose(label, name, options, value, base) {
    var l = el("label", null, label), s = el("select"); s.name = name; s.id = "f-" + name;
    options.forEach(function (o) { var op = el("option", null, o[1]); op.value = o[0]; if (String(o[0]) === String(value)) op.setAttribute("selected", ""); s.appendChild(op); });
    s.onchange = function () { var p = Object.assign({}, base); p[name] = s.value; location.href = v.url(p); };
    l.appendChild(s); return l;
  }
  function pairOf(a, f, wanted) {
    // the comparison asked for (?with=, one of the cell's comparable cells), else the next cell in the
    // run's order (a sweep's next checkpoint), else the first
    var w = wanted === null ? null : number(wanted);
    if (wanted !== null) {
      var asked = f.against.filter(function (x) { return x.cell === w; })[0];
      if (!asked) throw invalid("comparison of cell " + a + " with", wanted);
      return asked;
    }
    return f.against.filter(function (x) { return x.cell > a; })[0] || f.against[0];
  }
  function rows(pair, dir) {
    var out = [];
    ["up", "down"].forEach(function (d) { if (!dir || dir === d) pair[d].forEach(function (r) { out.push({ dir: d, task: r[0], a: r[1], b: r[2] }); }); });
    return out;
  }
  function summary(A, B, pair) {
    var box = el("div", "panel flip-summary");
    add(box,
      add(el("div"), pill(ARROW.up + ": " + pair.up.length, "ok"), document.createTextNode(" solved by " + B.model + ", not by " + A.model)),
      add(el("div"), pill(ARROW.down + ": " + pair.down.length, "fail"), document.createTextNode(" solved by " + A.model + ", not by " + B.model)),
      el("div", "muted", "both solve " + pair.both + " · neither solves " + pair.neither + (pair.tied ? " · same pass rate " + pair.tied : "") +
        (pair.only_a || pair.only_b ? " · scored in one only: " + pair.only_a + " (" + A.model + "), " + pair.only_b + " (" + B.model + ")" : "")),
      add(el("div", "verdict"), el("b", null, "McNemar exact p = " + pvalue(pair.p)), document.createTextNode(" · verdict: "),
        el("b", "verdict-text", pair.verdict_text)),
      pair.rule ? el("div", "small muted", pair.rule) : null);
    return box;
  }
  function list(run, a, f, pair, dir) {
    var A = run.cells[a], B = run.cells[pair.cell], base = { run: run.id, flips: a, "with": pair.cell, dir: dir };
    v.crumb([{ text: "runs", href: {} }, { text: run.path, href: { run: run.id, cell: a } }, { text: "what flipped" }]);
    v.main.innerHTML = "";
    add(v.main, el("h1", null, "What flipped: " + A.model + " → " + B.model),
      el("p", "muted", A.baseline + " · " + A.topology + " · success per task, the two models paired on the same tasks"));
    add(v.main, add(el("div", "filters panel"),
      choose("Compare with", "with", f.against.map(function (x) { return [x.cell, x.model]; }), pair.cell, base),
      choose("Direction", "dir", [["", "both directions"], ["up", ARROW.up + " (" + B.model + " solves)"], ["down", ARROW.down + " (" + A.model + " solved)"]], dir, base)));
    v.main.appendChild(summary(A, B, pair));
    var shown = rows(pair, dir), t = el("table"), hr = el("tr");
    ["flip", "task", A.model, B.model, ""].forEach(function (h) { hr.appendChild(el("th", null, h)); });
    t.appendChild(hr);
    shown.forEach(function (r) {
      var tr = el("tr", "row flip"), go = Object.assign({}, base, { task: r.task });
      tr.dataset.task = r.task; tr.dataset.dir = r.dir;
      add(tr, add(el("td"), pill(ARROW[r.dir], r.dir === "up" ? "ok" : "fail")), el("td", null, run.tasks[r.task]),
        add(el("td"), r.dir === "up" ? pill("failure", "fail") : pill("success", "ok")),
        add(el("td"), r.dir === "up" ? pill("success", "ok") : pill("failure", "fail")),
        add(el("td"), link(go, "side by side →")));
      tr.onclick = function (ev) { if (ev.target.tagName !== "A") location.href = v.url(go); };
      t.appendChild(tr);
    });
    var box = add(el("div", "panel scroll"), el("p", "muted", shown.length + " flipped task(s) shown" +
      (dir ? " (" + ARROW[dir] + " only; " + (pair.up.length + pair.down.length) + " in all)" : "")), shown.length ? t : null);
    box.id = "flips";
    v.main.appendChild(box);
    v.done();
  }
  function opened(run, a, pair, dir, r) {
    // one flipped task: its two episodes side by side, scrolled to the first turn where they differ
    var A = run.cells[a], B = run.cells[pair.cell], back = { run: run.id, flips: a, "with": pair.cell, dir: dir };
    var banner = add(el("p", "flip-banner"), pill(ARROW[r.dir], r.dir === "up" ? "ok" : "fail"),
      document.createTextNode(" " + run.tasks[r.task] + ": " + (r.dir === "up" ? "solved by " + B.model + ", not by " + A.model
        : "solved by " + A.model + ", not by " + B.model) + " — shown from the first turn where the two differ"));
    return v.showEpisode(run, r.a, r.b, { back: back, crumb: "what flipped", banner: banner, scroll: true });
  }
  function show(run) {
    var q = v.q, a = number(q.get("flips")), dir = q.get("dir"), task = q.get("task");
    if (a === null || a >= run.cells.length) throw invalid("cell", q.get("flips"));
    if (dir !== null && dir !== "" && !DIRECTION.test(dir)) throw invalid("direction", dir);
    if (task !== null && number(task) === null) throw invalid("flipped task", task);
    return v.load(run.id + "/flips/" + a).then(function (f) {
      if (f.cell !== a) throw invalid("cell", q.get("flips"));
      if (!f.against.length) {
        v.main.innerHTML = "";
        add(v.main, el("h1", null, "What flipped"), el("p", "muted", "No other model ran " + v.cellLabel(run.cells[a]).replace(/^[^·]*· /, "") + " in this run: nothing to compare."));
        return v.done();
      }
      var pair = pairOf(a, f, q.get("with")), d = dir || "";
      if (task === null) return list(run, a, f, pair, d);
      var r = rows(pair, "").filter(function (x) { return x.task === +task; })[0];
      if (!r) throw invalid("flipped task", task);
      return opened(run, a, pair, d, r);
    });
  }
  return { show: show };
};
