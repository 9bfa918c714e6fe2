"""``report.html``: one self-contained page: the run's headline (per model, ID vs OOD success with
95 % CIs and the collapse's shape), the report.md tables, the plots, and an episode browser.

No external URL: the plots are base64 PNGs and the episodes an inline JSON block, so the file
opens offline. Plots and tables never widen the page (plots scale to its width, wide tables scroll
in place). The browser lists a cell's episodes by task index and sample and filters them to
failures, errors or one task family. ``#cell=I&episode=J`` in the URL opens episode J of cell I
directly (``&filter=errors``, ``failures``, ``unanswered`` or ``family:NAME`` preselects a filter).
Under report.md's "Questions to the simulated user" table, the page lists the questions the simulated
user could not map (each linked to its episode), so a reader sees what the simulator missed.
"""

from __future__ import annotations

import base64
import bisect
import html
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from topoeval.core.files import write_atomic
from topoeval.report.headline import build_headline
from topoeval.report.markdown import NO_TOOL_CALLS_MARK, render_report_md
from topoeval.report.tables import INCOMPLETE_NOTE, mean_ci

MAX_EPISODES_PER_CELL = 200
MAX_TEXT = 2000
MAX_UNANSWERED_PER_CELL = 20
USER_HEADING = "<h2>Questions to the simulated user</h2>"

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 13px; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; }}
.scroll {{ overflow-x: auto; max-width: 100%; }}
img {{ display: block; max-width: 100%; height: auto; margin: 1em 0; }}
pre {{ white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: 6px; margin: 4px 0; }}
.msg {{ border-left: 4px solid #999; padding-left: 8px; margin: 8px 0; }}
.user {{ border-color: #2a7; }} .assistant {{ border-color: #27a; }} .tool {{ border-color: #a72; }}
.bad {{ color: #b00; font-weight: bold; }} .ok {{ color: #070; }} .err {{ color: #a60; font-style: italic; }}
.warn {{ color: #b00; }}
#headline td.num {{ text-align: right; white-space: nowrap; }}
#episodes li {{ cursor: pointer; }}
</style></head><body>
<h1>{title}</h1>
{headline}
{tables}
{plots}
<h2>Episode browser</h2>
<label>Cell: <select id="cell"></select></label>
<label>Show: <select id="filter"></select></label>
<span id="count"></span>
<ul id="episodes"></ul>
<div id="episode"></div>
<script type="application/json" id="data">{data}</script>
<script>
(function () {{
  var data = JSON.parse(document.getElementById("data").textContent);
  var cellSel = document.getElementById("cell"), filterSel = document.getElementById("filter"),
      list = document.getElementById("episodes"), view = document.getElementById("episode"),
      count = document.getElementById("count");
  function el(tag, cls, text) {{ var e = document.createElement(tag); if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text; return e; }}
  data.cells.forEach(function (c, i) {{ var o = el("option", null, c.label); o.value = i; cellSel.appendChild(o); }});
  function keep(ep, f) {{
    if (f === "failures") return ep.status !== "error" && ep.scores.success !== 1;
    if (f === "errors") return ep.status === "error";
    if (f === "unanswered")
      return ep.events.some(function (e) {{ return e.type === "ask" && !(e.slots || []).length; }});
    if (f.indexOf("family:") === 0) return ep.family === f.slice(7);
    return true;
  }}
  function fillFilter(ci, wanted) {{
    filterSel.innerHTML = "";
    var opts = [["all", "all episodes"], ["failures", "failures"], ["errors", "errors (backend failed)"]];
    if (data.cells[ci].episodes.some(function (ep) {{ return keep(ep, "unanswered"); }}))
      opts.push(["unanswered", "with unanswered questions"]);
    var fams = {{}}; data.cells[ci].episodes.forEach(function (ep) {{ if (ep.family) fams[ep.family] = 1; }});
    Object.keys(fams).sort().forEach(function (f) {{ opts.push(["family:" + f, "family " + f]); }});
    opts.forEach(function (o) {{ var e = el("option", null, o[1]); e.value = o[0]; filterSel.appendChild(e); }});
    filterSel.value = opts.some(function (o) {{ return o[0] === wanted; }}) ? wanted : "all";
  }}
  function showEpisode(ci, ei) {{
    var ep = data.cells[ci].episodes[ei]; view.innerHTML = "";
    if (!ep) return;
    view.appendChild(el("h3", null, ep.task_id + " (sample " + ep.sample + ") — " + ep.status));
    ep.errors.forEach(function (e) {{ view.appendChild(el("pre", "bad", e)); }});
    view.appendChild(el("pre", null, "scores: " + JSON.stringify(ep.scores)));
    if (ep.collateral && ep.collateral.length) {{  // damage outside the task's scope, beside success
      var dmg = el("div", "bad", "collateral damage (" + ep.collateral.length + " entities outside the task's scope):");
      ep.collateral.forEach(function (d) {{
        dmg.appendChild(el("pre", "collateral", d.entity + " — " + (d.reversible ? "reversible" : "IRREVERSIBLE")
          + ", written by call(s) " + d.calls.map(function (i) {{ return "#" + i + " " + ((ep.calls[i] || {{}}).name || "?"); }}).join(", ")
          + ": " + d.before + " → " + d.after)); }});
      view.appendChild(dmg);
    }} else if (ep.collateral) view.appendChild(el("pre", "ok", "collateral damage: none outside the task's scope"));
    if (ep.status !== "error" && ep.scores.success !== 1 && ep.expected_answer != null)
      view.appendChild(el("pre", "bad", "final answer: " + (ep.final_answer ? ep.final_answer : "(none)")
        + "\\nexpected: " + ep.expected_answer));
    var calls = {{}}; ep.calls.forEach(function (c) {{ calls[c.id] = c; }});
    ep.messages.forEach(function (m) {{
      var box = el("div", "msg " + m.role); box.appendChild(el("b", null, m.role));
      if (m.content) box.appendChild(el("pre", null, m.content));
      (m.tool_calls || []).forEach(function (tc) {{
        var c = calls[tc.id] || {{}}; var line = el("div", c.status === "ok" ? "ok" : "bad",
          "call " + tc.name + " " + tc.arguments + "  [" + (c.status || "?") + (c.error ? ": " + c.error : "") + "]");
        box.appendChild(line); }});
      view.appendChild(box); }});
    if (ep.events.length) view.appendChild(el("pre", null, "events: " + JSON.stringify(ep.events)));
  }}
  function showCell(ci) {{
    list.innerHTML = ""; view.innerHTML = "";
    var eps = data.cells[ci].episodes, f = filterSel.value, shown = 0;
    eps.forEach(function (ep, ei) {{
      if (!keep(ep, f)) return;
      shown += 1;
      var li = ep.status === "error" ? el("li", "err", ep.task_id + " (sample " + ep.sample + ") — error")
        : el("li", ep.scores.success ? "ok" : "bad", ep.task_id + " (sample " + ep.sample + ", success " + ep.scores.success + ")");
      li.setAttribute("data-episode", ei);
      li.onclick = function () {{ showEpisode(ci, ei); }}; list.appendChild(li); }});
    var total = data.cells[ci].total;
    count.textContent = shown + " shown" + (total > eps.length ? " (the first " + eps.length + " of " + total + " episodes)" : "");
  }}
  cellSel.onchange = function () {{ fillFilter(+cellSel.value, filterSel.value); showCell(+cellSel.value); }};
  filterSel.onchange = function () {{ showCell(+cellSel.value); }};
  function openHash() {{
    var params = {{}}; location.hash.replace(/^#/, "").split("&").forEach(function (kv) {{
      var p = kv.split("="); if (p[0]) params[p[0]] = decodeURIComponent(p[1] || ""); }});
    var ci = +(params.cell || 0); if (data.cells.length) {{ cellSel.value = ci; fillFilter(ci, params.filter || "all"); showCell(ci);
      if (params.episode !== undefined) showEpisode(ci, +params.episode); }}
  }}
  openHash();
  window.addEventListener("hashchange", openHash);  // the unanswered questions' links
  window.addEventListener("load", function () {{  // once the plots are laid out: the page's width
    var root = document.documentElement;
    console.log("topoeval-layout " + root.scrollWidth + " " + root.clientWidth);
  }});
  console.log("topoeval-report-ready");
}})();
</script></body></html>
"""


def _inline(text: str) -> str:
    """Escaped text with Markdown's **bold** kept as <b>."""
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", html.escape(text))


def md_tables_to_html(markdown: str) -> str:
    """The report.md tables as HTML (headings, paragraphs and table rows only); each table scrolls
    inside its own box, so a wide one never widens the page."""
    out: list[str] = []
    in_table = False
    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if all(set(c) <= {"-"} for c in cells):
                continue
            if not in_table:
                out.append('<div class="scroll"><table>')
                in_table = True
            tag = "th" if out[-1] == '<div class="scroll"><table>' else "td"
            out.append("<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>")
            continue
        if in_table:
            out.append("</table></div>")
            in_table = False
        if line.startswith("## "):
            out.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("### "):
            out.append(f"<h3>{html.escape(line[4:])}</h3>")
        elif line.strip() and not line.startswith("# "):
            out.append(f'<p class="warn">{_inline(line)}</p>' if line.startswith(("**Incomplete", NO_TOOL_CALLS_MARK))
                       else f"<p>{_inline(line)}</p>")
    if in_table:
        out.append("</table></div>")
    return "\n".join(out)


def _ci(point: dict[str, Any]) -> str:
    if point.get("mean") is None:
        return "—"
    text = mean_ci(point)
    if point.get("n_errors"):
        text += f" ({point['n_errors']} err)"
    return text


def render_headline(summary: dict[str, Any]) -> str:
    """The headline table: per model, ID vs OOD success (mean [95 % CI]) and the collapse's shape."""
    rows = build_headline(summary)
    if not rows:
        return ""
    # collateral damage beside success, where any cell defines it (never folded into success)
    damage = any(p.get("collateral") for r in rows for p in [r["id"], *r["ood"]])
    out = ['<section id="headline"><h2>Headline</h2>',
           "<p>Per model: success on the trained topology (ID) against each OOD topology, mean [bootstrap 95 % CI "
           "over tasks], and the shape of the collapse."
           + (" Collateral: share of episodes that changed an entity outside the task's scope (n episodes), beside "
              "success and never in it; — (no scope) where the suite does not define one." if damage else "")
           + "</p>",
           '<div class="scroll"><table><tr><th>model</th><th>baseline</th><th>ID success</th><th>OOD success</th>'
           + ("<th>collateral</th>" if damage else "") + "<th>shape</th></tr>"]
    for r in rows:
        ood = "<br>".join(f"{html.escape(o['topology'])}: {html.escape(_ci(o))}" for o in r["ood"]) or "—"
        mark = f' <span class="warn">(incomplete: {r["n_errors"]} err)</span>' if r["n_errors"] else ""
        out.append(f"<tr><td>{html.escape(r['model'])}{mark}</td><td>{html.escape(r['baseline'])}</td>"
                   f"<td class=\"num\">{html.escape(_ci(r['id']))}</td><td class=\"num\">{ood}</td>"
                   + (f'<td class="num collateral">{_collateral_cell(r)}</td>' if damage else "")
                   + f"<td>{html.escape(r['shape'])}</td></tr>")
    out.append("</table></div>")
    if any(r["n_errors"] for r in rows):
        out.append(f'<p class="warn">{html.escape(INCOMPLETE_NOTE)}</p>')
    out.append("</section>")
    return "\n".join(out)


def _collateral_cell(row: dict[str, Any]) -> str:
    """A headline row's collateral damage per topology (ID, then OOD), escaped."""
    points = ([row["id"]] if "collateral" in row["id"] else []) + row["ood"]  # a mean over ID cells has none
    return "<br>".join(f"{html.escape(str(p['topology']))}: "
                       + (html.escape(f"{mean_ci(p['collateral'])} (n={p['collateral']['n']})") if p.get("collateral")
                          else "— (no scope)") for p in points) or "—"


def task_order(task_id: str) -> tuple:
    """Sort key of a task id by its numbers ('travel/test/10-...' after 'travel/test/9-...')."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", task_id) if part)


def _episode_view(rec: dict[str, Any]) -> dict[str, Any]:
    def clip(text: Any) -> Any:
        return text[:MAX_TEXT] if isinstance(text, str) else text

    messages = [
        {"role": m["role"], "content": clip(m.get("content")),
         "tool_calls": [{"id": c["id"], "name": c["function"]["name"], "arguments": clip(c["function"]["arguments"])}
                        for c in m.get("tool_calls") or []]}
        for m in rec["messages"]
    ]
    return {
        "task_id": rec["task_id"], "sample": rec.get("sample", 0), "family": rec.get("family"),
        "status": rec["status"], "errors": [clip(e) for e in rec.get("errors") or []], "messages": messages,
        "final_answer": clip(rec.get("final_answer")),
        # the suite's gold answer, where the record carries one (a failed episode shows it beside the model's)
        "expected_answer": clip(rec.get("expected_answer")),
        "calls": [{"id": c["id"], "status": c["status"], "error": c["error"], "name": c.get("name")}
                  for c in rec["calls"]],
        "events": rec.get("events", []),
        "scores": {k: v for k, v in (rec.get("scores") or {}).items() if v is not None},
        # the entities it changed outside the task's scope (metrics/collateral.py), where the suite defines one
        "collateral": _damage(rec.get("collateral")),
    }


def _damage(reading: Any) -> list[dict[str, Any]] | None:
    """The collateral entities of an episode's collateral reading (name, reversible, the calls that wrote them,
    before and after, clipped), None where it has none (not defined, or a run from before it was recorded)."""
    if not isinstance(reading, dict) or not isinstance(reading.get("entities"), list):
        return None
    return [{"entity": str(e.get("entity"))[:MAX_TEXT], "reversible": e.get("reversible") is not False,
             "calls": [c for c in e.get("calls") or [] if isinstance(c, int)],
             "before": json.dumps(e.get("before"), default=str)[:MAX_TEXT],
             "after": json.dumps(e.get("after"), default=str)[:MAX_TEXT]}
            for e in reading["entities"] if isinstance(e, dict) and e.get("kind") == "collateral"]


def unanswered_html(cells: list[dict[str, Any]]) -> str:
    """The questions the simulated user mapped to nothing (``ask`` events without a slot), per cell,
    each linked to its episode in the browser; empty when there are none."""
    out = []
    for ci, cell in enumerate(cells):
        items = [(ei, ep, e["question"]) for ei, ep in enumerate(cell["episodes"]) for e in ep["events"]
                 if e.get("type") == "ask" and not e.get("slots") and e.get("question")]
        if not items:
            continue
        out.append(f"<p>{html.escape(cell['label'])}: {len(items)} unanswered</p><ul>")
        for ei, ep, question in items[:MAX_UNANSWERED_PER_CELL]:
            out.append(f'<li><a href="#cell={ci}&amp;episode={ei}">{html.escape(ep["task_id"])} (sample {ep["sample"]})'
                       f"</a>: {html.escape(question)}</li>")
        if len(items) > MAX_UNANSWERED_PER_CELL:
            out.append(f"<li>… {len(items) - MAX_UNANSWERED_PER_CELL} more (filter the cell to “with unanswered "
                       "questions” below)</li>")
        out.append("</ul>")
    if not out:
        return ""
    return ('<section id="unanswered"><h3>Questions the simulated user could not map</h3>\n' + "\n".join(out)
            + "</section>")


def _with_unanswered(tables: str, cells: list[dict[str, Any]]) -> str:
    """The tables with the unanswered questions placed right after the simulated user's table."""
    at = tables.find(USER_HEADING)
    listing = unanswered_html(cells)
    if at < 0 or not listing:
        return tables
    end = tables.find("</table></div>", at)
    end = len(tables) if end < 0 else end + len("</table></div>")
    return tables[:end] + "\n" + listing + tables[end:]


class EpisodeSample:
    """The episodes the browser shows, read in one pass: per cell its first :data:`MAX_EPISODES_PER_CELL`
    by task index and sample (clipped as shown), and how many it has — never every episode in memory."""

    def __init__(self, limit: int = MAX_EPISODES_PER_CELL):
        self.limit = limit
        self.kept: dict[tuple[str, str, str], list[tuple[tuple, int, dict[str, Any]]]] = {}
        self.totals: dict[tuple[str, str, str], int] = {}
        self._seen = 0

    def add(self, r: dict[str, Any]) -> None:
        key = (r["model"], r["baseline"], r["topology"])
        self.totals[key] = self.totals.get(key, 0) + 1
        kept = self.kept.setdefault(key, [])
        rank = (task_order(r["task_id"]), r.get("sample", 0))
        self._seen += 1  # ties keep their order of arrival, as a stable sort would
        if len(kept) >= self.limit and (rank, self._seen) > kept[-1][:2]:
            return
        bisect.insort(kept, (rank, self._seen, _episode_view(r)), key=lambda e: e[:2])
        if len(kept) > self.limit:
            kept.pop()

    def cell(self, key: tuple[str, str, str]) -> tuple[int, list[dict[str, Any]]]:
        """(the cell's episodes, the views kept), in the browser's order."""
        return self.totals.get(key, 0), [view for _, _, view in self.kept.get(key, [])]


def render_report_html(summary: dict[str, Any], records: Iterable[dict[str, Any]], plots: list[Path]) -> str:
    """The page; ``records`` are read once (a list or a stream), and only a bounded sample is kept."""
    sample = EpisodeSample()
    for r in records:
        sample.add(r)
    cells = []
    for c in summary["cells"]:
        total, episodes = sample.cell((c["model"], c["baseline"], c["topology"]))
        label = f"{c['model']} · {c['baseline']} · {c['topology']} ({c['role']})"
        if c.get("n_errors"):
            label += f" — incomplete: {c['n_errors']} err"
        cells.append({"label": label, "total": total, "episodes": episodes})

    def img(p: Path) -> str:
        return f'<img alt="{p.stem}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">'

    # a transfer matrix's heatmap leads the page, as its tables lead report.md
    first = [p for p in plots if p.name == "matrix.png"]
    images = "\n".join(img(p) for p in plots if p not in first)
    headline = (f'<section id="matrix"><h2>Transfer matrix</h2>{img(first[0])}</section>' if first
                else render_headline(summary))
    data = json.dumps({"cells": cells}, ensure_ascii=False).replace("</", "<\\/")
    title = html.escape(f"topoeval — {summary['protocol']} — {summary.get('run_id', '')}")
    tables = _with_unanswered(md_tables_to_html(render_report_md(summary)), cells)
    return PAGE.format(title=title, headline=headline, tables=tables,
                       plots=f"<h2>Plots</h2>{images}" if images else "", data=data)


def write_report_html(summary: dict[str, Any], records: Iterable[dict[str, Any]], run_dir: Path, plots: list[Path]) -> Path:
    path = run_dir / "report.html"
    write_atomic(path, render_report_html(summary, records, plots))
    return path
