"""The dataset card (README.md) of a published leaderboard repo."""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

import yaml

from topoeval.analysis.stats import is_tie, noise, tie_margin
from topoeval.core.version import __version__

CONFIGS: list[dict[str, Any]] = [
    {"config_name": "results", "data_files": [{"split": "train", "path": "data/results.parquet"}], "default": True},
    {"config_name": "latest", "data_files": [{"split": "train", "path": "data/latest.parquet"}]},
    {"config_name": "episodes", "data_files": [{"split": "train", "path": "episodes/**/*.parquet"}]},
    {"config_name": "matrix", "data_files": [{"split": "train", "path": "data/matrix.parquet"}]},
]


def _mean_of(rows: list[dict[str, Any]], role: str, metric: str) -> tuple[float | None, float]:
    """Mean of ``metric`` over the topologies of ``role``, and the largest noise among them."""
    sel = [r for r in rows if r["role"] == role and r["metric"] == metric and r["mean"] is not None]
    if not sel:
        return None, 0.0
    return sum(r["mean"] for r in sel) / len(sel), max(noise(r) for r in sel)


def _scoped_mean(rows: list[dict[str, Any]], metric: str) -> float | None:
    """Mean of ``metric`` over the topologies (ID and OOD) that have a row of it: for collateral damage, those
    whose suite defines a scope (a topology without one has no row, never a 0); None where none has."""
    sel = [r["mean"] for r in rows if r["metric"] == metric and r["mean"] is not None]
    return sum(sel) / len(sel) if sel else None


def leaderboard(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per protocol, one entry per model × baseline × task set: ID and OOD success and dq, and the
    collateral damage rate and its irreversible part (:func:`_scoped_mean`, beside success and never in it),
    sorted by OOD success (mean over the OOD topologies), with ``tie`` set when it ties the entry above
    (the tie rule, :data:`topoeval.analysis.stats.TIE_SIGMAS`, over each entry's OOD noise)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["role"] == "matrix":  # a transfer matrix has no ID/OOD: its own table (matrix_table)
            continue
        groups[(r["protocol"], r["model"], r["baseline"], r["task_set_sha256"])].append(r)
    boards: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (protocol, model, baseline, task_set), mine in groups.items():
        s_id, _ = _mean_of(mine, "id", "success")
        s_ood, ood_noise = _mean_of(mine, "ood", "success")
        dq_id, _ = _mean_of(mine, "id", "dq")
        dq_ood, _ = _mean_of(mine, "ood", "dq")
        boards[protocol].append({
            "model": model, "baseline": baseline, "task_set": task_set[:12], "S_id": s_id, "S_ood": s_ood,
            "dq_id": dq_id, "dq_ood": dq_ood, "noise": ood_noise, "n": max(r["n"] for r in mine),
            "collateral": _scoped_mean(mine, "collateral"),
            "collateral_irreversible": _scoped_mean(mine, "collateral_irreversible"),
            # episodes whose backend failed, left out of the means (one success row per topology)
            "n_errors": sum(r.get("n_errors") or 0 for r in mine if r["metric"] == "success"),
            "reproduce": mine[0]["reproduce"], "protocol_sha256": mine[0]["protocol_sha256"],
        })
    for entries in boards.values():
        entries.sort(key=lambda e: (-(e["S_ood"] if e["S_ood"] is not None else -1), e["model"], e["baseline"]))
        for above, e in itertools.pairwise(entries):
            if e["S_ood"] is not None and above["S_ood"] is not None:
                e["tie"] = is_tie(above["S_ood"] - e["S_ood"], tie_margin(above["noise"], e["noise"]))
    return dict(boards)


def _f(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}"


def _collateral(entry: dict[str, Any]) -> str:
    """The card's collateral cell: the rate, its irreversible part in brackets; "—" where no topology of the
    entry has a collateral scope (not measured, not 0)."""
    if entry.get("collateral") is None:
        return "—"
    irreversible = entry.get("collateral_irreversible")
    return _f(entry["collateral"]) + (f" ({irreversible:.2f})" if irreversible is not None else "")


def _sampling(samples: int, temperature: float | None) -> str:
    if samples < 2:
        return "greedy" if temperature in (None, 0.0) else f"one sample at temperature {temperature:g}"
    return f"k = {samples} samples" + (f" at temperature {temperature:g}" if temperature is not None else "")


def matrix_table(matrix: list[dict[str, Any]]) -> list[str]:
    """The card's transfer matrices: per protocol, task set and sampling, success [95 % CI] per model ×
    topology, ``*`` on the model's own topology, ``×r`` its transfer ratio (``×—``: undefined, the own score
    ties with 0); with k ≥ 2 samples also pass@k and the zero-signal share."""
    lines: list[str] = []
    groups: dict[tuple[str, str, int, float | None], list[dict[str, Any]]] = defaultdict(list)
    for r in matrix:
        if r["metric"] == "success":
            groups[(r["protocol"], r["task_set_sha256"], r.get("samples") or 1, r.get("temperature"))].append(r)

    def order(key: tuple[str, str, int, float | None]) -> tuple[str, str, int, bool, float]:
        return (*key[:3], key[3] is not None, key[3] or 0.0)  # no temperature first

    for (protocol, task_set, samples, temperature) in sorted(groups, key=order):
        mine = groups[(protocol, task_set, samples, temperature)]
        topos = list(dict.fromkeys(r["topology"] for r in sorted(mine, key=lambda r: r.get("column") or 0)))
        sampling = _sampling(samples, temperature)
        lines += [f"## Transfer matrix: {protocol}, {sampling} (task set `{task_set[:12]}`)", "",
                  "| model | baseline | trained on | " + " | ".join(topos) + " |",
                  "|" + "---|" * (3 + len(topos))]
        by_row: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
        for r in mine:
            by_row[(r["model"], r["baseline"])][r["topology"]] = r
        for (model, baseline), per in by_row.items():
            train = next(iter(per.values()))["train_topology"]
            vals = []
            for t in topos:
                got = per.get(t)
                if got is None or got["mean"] is None:
                    vals.append("—")
                    continue
                ci = f" [{got['ci_low']:.2f}, {got['ci_high']:.2f}]" if got["ci_low"] is not None else ""
                text = f"{got['mean']:.2f}{ci}"
                if got["own"]:
                    text += " *"
                elif train:
                    text += f" ×{got['transfer_ratio']:.2f}" if got["transfer_ratio"] is not None else " ×—"
                if samples >= 2:
                    text += (f"; pass@{samples} {_f(got.get('pass_at_k'))}, "
                             f"zero-signal {_f(got.get('zero_signal_share'))}")
                vals.append(text)
            lines.append(f"| {model} | {baseline} | {train or '—'} | " + " | ".join(vals) + " |")
        lines += ["", "`*`: the model's own (train) topology; `×r`: success there / success on its own topology "
                  "(`×—`: undefined, the own score ties with 0 under the tie rule; the `ratio_note` column says why)."
                  + (f" Success is the mean over the {samples} samples (pass@1); pass@{samples}: some sample "
                     "succeeds; zero-signal: the share of tasks whose samples all got the same success, so that a "
                     "GRPO group of them would have no signal." if samples >= 2 else ""),
                  ""]
    return lines


def render_card(rows: list[dict[str, Any]], repo_id: str, episodes: bool = True,
                matrix: list[dict[str, Any]] | None = None, viewer: bool = False) -> str:
    """README.md: YAML metadata (configs, license, tags), then the transfer matrices (``matrix`` rows), then
    one leaderboard per protocol. ``episodes=False``: the repo holds no per-episode files, so that config is
    not declared; nor is ``matrix`` without matrix rows. ``viewer``: a paragraph on opening ``viewer/``."""
    configs = [c for c in CONFIGS if (episodes or c["config_name"] != "episodes")
               and (matrix or c["config_name"] != "matrix")]
    meta: dict[str, Any] = {
        "configs": configs, "license": "apache-2.0", "pretty_name": f"topoeval leaderboard ({repo_id})",
        "tags": ["topoeval", "agents", "tool-use", "evaluation", "leaderboard"]}
    lines = ["---", yaml.safe_dump(meta, sort_keys=False).strip(), "---", "",
             f"# topoeval leaderboard — `{repo_id}`", "",
             f"How agents trained on one tool topology generalise to another, measured with topoeval {__version__}. "
             "Configs: `results` (one row per "
             "protocol × model × baseline × topology × metric: mean, std, se, 95 % CI, n, pass@k, pass^k, n_errors "
             "and incomplete, hashes, date), `latest` (the newest row of each)"
             + (", `episodes` (every episode's conversation and scores)" if episodes else "")
             + (", `matrix` (transfer matrices: per model × topology success and dq with CIs, the model's own "
                "topology, transfer ratios)." if matrix else "."), "",
             "Rows are sorted by OOD success (mean over the protocol's OOD topologies); `=` marks a row that ties "
             "the one above it (difference below 2 × the larger std / standard error). Each row is reproduced by "
             "its command on the protocol of the stated sha256. **Collateral (irreversible)**: the share of "
             "episodes that left something changed outside their task's scope (in brackets: irreversibly), mean over "
             "the topologies whose suite defines a scope; `—`: none does (not measured, not 0). It sits beside "
             "success and never changes it.", ""]
    if viewer:
        lines += ["## Browse the episodes", "",
                  "`viewer/` holds topoeval's viewer of the runs of this publish (each episode as a conversation, "
                  "two models side by side, what flipped between them). It opens offline from the files alone: "
                  f"`hf download {repo_id} --repo-type dataset --include \"viewer/*\" --local-dir board`, then "
                  "open `board/viewer/index.html` in a browser.", ""]
    lines += matrix_table(matrix or [])
    for protocol, entries in sorted(leaderboard(rows).items()):
        lines += [f"## {protocol}", "",
                  "| # | model | baseline | OOD success | ID success | OOD dq | ID dq | collateral (irreversible) | n "
                  "| task set | reproduce |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for i, e in enumerate(entries, 1):
            tie = "=" if e.get("tie") else ""
            model = e["model"] + (f" (incomplete: {e['n_errors']} err)" if e.get("n_errors") else "")
            lines.append(f"| {i} | {model} | {e['baseline']} | {_f(e['S_ood'])}{tie} | {_f(e['S_id'])} | "
                         f"{_f(e['dq_ood'])} | {_f(e['dq_id'])} | {_collateral(e)} | {e['n']} | `{e['task_set']}` | "
                         f"`{e['reproduce']}` |")
        hashes = sorted({e["protocol_sha256"][:16] for e in entries})
        lines.append("")
        if any(e.get("n_errors") for e in entries):
            lines += ["**Incomplete rows**: `(incomplete: N err)` marks a row whose run left N episodes in error (the "
                      "backend failed, not the model); they are left out of its means. Re-running its command retries "
                      "them.", ""]
        lines += [f"Protocol sha256: {', '.join(f'`{h}`' for h in hashes)}.", ""]
    return "\n".join(lines)
