/* topoeval view: an episode's state-diff pane (record.collateral, topoeval/metrics/collateral.py): the entities
   the run or the task's gold plan changed, in the task's scope and out of it, each with its kind, whether it stayed
   reversible, the calls that wrote it and its value before, after (and, in scope, after the gold plan). The
   entities out of scope that the run left changed are the collateral damage, flagged; it sits beside success and
   never changes it. A record from before collateral was recorded says "not recorded"; one whose suite defines no
   scope says so. Every name and value is set as text (h.el), never as markup. */
(function () {
  "use strict";
  var KINDS = {
    in_scope: "in scope: as the task wants it",
    wrong_in_scope: "in scope: left otherwise than the gold plan",
    missed: "in scope: the gold plan changes it, the run did not",
    collateral: "collateral: out of scope, changed at the end",
    restored: "out of scope: written, then put back (benign)"
  };
  var IN_SCOPE = ["in_scope", "wrong_in_scope", "missed"], OUT_OF_SCOPE = ["collateral", "restored"];

  function value(v) {
    if (v === null || v === undefined) return "(absent)";
    var flat = JSON.stringify(v);
    return flat === undefined ? String(v) : flat;
  }
  function callsText(rec, calls) {
    // the calls after which the entity changed: their index in the episode and the tool's name
    return (calls || []).map(function (i) {
      var c = (rec.calls || [])[i];
      return "#" + i + " " + (c && c.name !== undefined ? String(c.name) : "?");
    }).join(", ") || "—";
  }
  function table(h, rec, entities, gold) {
    var t = h.el("table", "state-diff"), head = h.el("tr");
    ["entity", "kind", "reversible", "written by", "before", "after"].concat(gold ? ["gold"] : []).forEach(function (c) {
      head.appendChild(h.el("th", null, c));
    });
    t.appendChild(head);
    entities.forEach(function (e) {
      var tr = h.el("tr", "entity " + e.kind), name = h.el("td", "name");
      name.appendChild(h.el("span", "text", String(e.entity)));
      if (e.kind === "collateral") name.appendChild(h.el("span", "flag collateral", "collateral"));
      tr.dataset.kind = e.kind;
      h.add(tr, name, h.el("td", "kind", KINDS[e.kind] || String(e.kind)),
        h.el("td", e.reversible === false ? "irr" : "rev", e.reversible === false ? "irreversible" : "reversible"),
        h.el("td", "written-by", callsText(rec, e.calls)), h.el("td", "value before", value(e.before)),
        h.el("td", "value after", value(e.after)), gold ? h.el("td", "value gold", value(e.gold)) : null);
      t.appendChild(tr);
    });
    return h.add(h.el("div", "scroll"), t);
  }
  window.topoevalStateDiff = function (h, rec) {
    var box = h.el("div", "panel state-diff-pane"), reading = rec.collateral;
    box.appendChild(h.el("h3", null, "State diff"));
    if (reading === undefined) {
      box.appendChild(h.el("p", "muted small", "Collateral not recorded: this run predates the per-entity state diff."));
      return box;
    }
    if (reading === null || typeof reading !== "object" || !Array.isArray(reading.entities)) {
      box.appendChild(h.el("p", "muted small", "Not defined: this topology's suite gives its tasks no collateral " +
        "scope, so what the run changed outside the task is not measured (not 0)."));
      return box;
    }
    var entities = reading.entities.filter(function (e) { return e && typeof e === "object"; });
    var damage = entities.filter(function (e) { return e.kind === "collateral"; });
    var irreversible = damage.filter(function (e) { return e.reversible === false; });
    h.add(box, h.add(h.el("div", "summary"),
      damage.length ? h.pill(damage.length + " collateral " + (damage.length === 1 ? "entity" : "entities") +
        (irreversible.length ? " (" + irreversible.length + " irreversible)" : ""), "fail collateral-count")
        : h.pill("no collateral damage", "ok collateral-count"),
      h.el("span", "muted small", " scope: " + (reading.basis === "declared_scope" ? "the task's declared patterns"
        : "the world after the task's gold plan") + " · beside success, never in it")));
    [["In scope", IN_SCOPE, reading.basis !== "declared_scope"], ["Out of scope", OUT_OF_SCOPE, false]].forEach(function (part) {
      var mine = entities.filter(function (e) { return part[1].indexOf(e.kind) >= 0; });
      var sec = h.el("div", "scope " + (part[1] === IN_SCOPE ? "in" : "out"));
      sec.appendChild(h.el("h4", null, part[0] + " (" + mine.length + ")"));
      sec.appendChild(mine.length ? table(h, rec, mine, part[2]) : h.el("p", "muted small", "none changed"));
      box.appendChild(sec);
    });
    return box;
  };
})();
