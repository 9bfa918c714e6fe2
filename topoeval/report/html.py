"""``report.html``: one self-contained page (tables, plots inlined, an episode browser).

No external URL: the plots are base64 PNGs and the episodes an inline JSON block, so the file
opens offline. ``#cell=I&episode=J`` in the URL opens episode J of cell I directly.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from topoeval.report.markdown import render_report_md

MAX_EPISODES_PER_CELL = 50
MAX_TEXT = 2000

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 13px; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: left; }}
pre {{ white-space: pre-wrap; background: #f6f6f6; padding: 6px; margin: 4px 0; }}
.msg {{ border-left: 4px solid #999; padding-left: 8px; margin: 8px 0; }}
.user {{ border-color: #2a7; }} .assistant {{ border-color: #27a; }} .tool {{ border-color: #a72; }}
.bad {{ color: #b00; font-weight: bold; }} .ok {{ color: #070; }}
#episodes li {{ cursor: pointer; }}
</style></head><body>
<h1>{title}</h1>
{tables}
{plots}
<h2>Episode browser</h2>
<label>Cell: <select id="cell"></select></label>
<ul id="episodes"></ul>
<div id="episode"></div>
<script type="application/json" id="data">{data}</script>
<script>
(function () {{
  var data = JSON.parse(document.getElementById("data").textContent);
  var cellSel = document.getElementById("cell"), list = document.getElementById("episodes"),
      view = document.getElementById("episode");
  function el(tag, cls, text) {{ var e = document.createElement(tag); if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text; return e; }}
  data.cells.forEach(function (c, i) {{ var o = el("option", null, c.label); o.value = i; cellSel.appendChild(o); }});
  function showEpisode(ci, ei) {{
    var ep = data.cells[ci].episodes[ei]; view.innerHTML = "";
    view.appendChild(el("h3", null, ep.task_id + " — " + ep.status));
    view.appendChild(el("pre", null, "scores: " + JSON.stringify(ep.scores)));
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
    data.cells[ci].episodes.forEach(function (ep, ei) {{
      var li = el("li", ep.scores.success ? "ok" : "bad", ep.task_id + " (success " + ep.scores.success + ")");
      li.onclick = function () {{ showEpisode(ci, ei); }}; list.appendChild(li); }});
  }}
  cellSel.onchange = function () {{ showCell(+cellSel.value); }};
  var params = {{}}; location.hash.replace(/^#/, "").split("&").forEach(function (kv) {{
    var p = kv.split("="); if (p[0]) params[p[0]] = p[1]; }});
  var ci = +(params.cell || 0); if (data.cells.length) {{ cellSel.value = ci; showCell(ci);
    if (params.episode !== undefined) showEpisode(ci, +params.episode); }}
  console.log("topoeval-report-ready");
}})();
</script></body></html>
"""


def _md_tables_to_html(markdown: str) -> str:
    """The report.md tables as HTML (headings and table rows only)."""
    out: list[str] = []
    in_table = False
    for line in markdown.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if all(set(c) <= {"-"} for c in cells):
                continue
            if not in_table:
                out.append("<table>")
                in_table = True
            tag = "th" if out[-1] == "<table>" else "td"
            out.append("<tr>" + "".join(f"<{tag}>{html.escape(c)}</{tag}>" for c in cells) + "</tr>")
            continue
        if in_table:
            out.append("</table>")
            in_table = False
        if line.startswith("## "):
            out.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.strip() and not line.startswith("# "):
            out.append(f"<p>{html.escape(line)}</p>")
    if in_table:
        out.append("</table>")
    return "\n".join(out)


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
        "task_id": rec["task_id"], "status": rec["status"], "messages": messages,
        "calls": [{"id": c["id"], "status": c["status"], "error": c["error"]} for c in rec["calls"]],
        "events": rec.get("events", []),
        "scores": {k: v for k, v in rec["scores"].items() if v is not None},
    }


def render_report_html(summary: dict[str, Any], records: list[dict[str, Any]], plots: list[Path]) -> str:
    by_cell: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in records:
        by_cell.setdefault((r["model"], r["baseline"], r["topology"]), []).append(r)
    cells = []
    for c in summary["cells"]:
        recs = sorted(by_cell.get((c["model"], c["baseline"], c["topology"]), []), key=lambda r: (r["task_id"], r["sample"]))
        cells.append({"label": f"{c['model']} · {c['baseline']} · {c['topology']} ({c['role']})",
                      "episodes": [_episode_view(r) for r in recs[:MAX_EPISODES_PER_CELL]]})
    images = "\n".join(
        f'<img alt="{p.stem}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">' for p in plots
    )
    data = json.dumps({"cells": cells}, ensure_ascii=False).replace("</", "<\\/")
    title = html.escape(f"topoeval — {summary['protocol']} — {summary.get('run_id', '')}")
    return PAGE.format(title=title, tables=_md_tables_to_html(render_report_md(summary)),
                       plots=f"<h2>Plots</h2>{images}" if images else "", data=data)


def write_report_html(summary: dict[str, Any], records: list[dict[str, Any]], run_dir: Path, plots: list[Path]) -> Path:
    path = run_dir / "report.html"
    path.write_text(render_report_html(summary, records, plots), encoding="utf-8")
    return path
