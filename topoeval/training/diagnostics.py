"""Per-step GRPO diagnostics: whether the run had signal (the rl-training-metrics seed's list).

:func:`grpo_curve` turns TRL's ``log_history`` into one row per optimizer step with stable names:

| key | meaning (source) |
|---|---|
| ``reward`` / ``reward_std`` | mean episode reward of the step's rollouts and its std (TRL ``reward`` / ``reward_std``) |
| ``zero_std_share`` | share of the step's groups whose rollouts all got one reward: no group-relative gradient (TRL ``frac_reward_zero_std``) |
| ``kl`` | mean per-token KL to the reference policy (TRL ``kl``; absent when ``beta`` is 0) |
| ``entropy`` | mean per-token entropy of the policy on its own tokens (TRL ``entropy``) |
| ``clip_fraction`` | share of tokens whose ratio was clipped (TRL ``clip_ratio/region_mean``; 0 by construction with one update per generation) |
| ``completion_tokens`` | tokens the model wrote per rollout (TRL ``completions/mean_length``, env tokens excluded) |
| ``tool_calls`` / ``invalid_calls`` / ``redundant_calls`` | per rollout (the episode's scores) |
| ``success`` / ``dq`` / ``turns`` | per rollout (the episode's scores) |
| ``loss`` / ``step_s`` / ``rollout_s`` | the step's loss, its seconds, and the seconds of its rollouts (the rest is the policy update) |

:func:`plot_diagnostics` draws them (PNG), :func:`diagnostics_table` prints them as Markdown.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: our name -> TRL's log key
KEYS = {
    "reward": "reward", "reward_std": "reward_std", "zero_std_share": "frac_reward_zero_std", "kl": "kl",
    "entropy": "entropy", "clip_fraction": "clip_ratio/region_mean", "completion_tokens": "completions/mean_length",
    "tool_calls": "tools/tool_calls", "invalid_calls": "tools/invalid_calls",
    "redundant_calls": "tools/redundant_calls",
    "success": "episode/success", "dq": "episode/dq", "turns": "episode/turns", "loss": "loss", "step_s": "step_time",
    "rollout_s": "timing/rollout_s",
}
#: the panels of the plot: (title, keys)
PANELS = [("reward (mean, std)", ("reward", "reward_std")), ("zero-std group share", ("zero_std_share",)),
          ("KL to reference", ("kl",)), ("entropy", ("entropy",)), ("clip fraction", ("clip_fraction",)),
          ("completion tokens / rollout", ("completion_tokens",)),
          ("calls / rollout", ("tool_calls", "invalid_calls", "redundant_calls")), ("success, dq", ("success", "dq"))]


def grpo_curve(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per logged training step (see the module docstring); missing values are None."""
    rows = []
    for h in log_history:
        if "reward" not in h or "step" not in h:
            continue
        row: dict[str, Any] = {"step": int(h["step"])}
        for ours, theirs in KEYS.items():
            v = h.get(theirs)
            row[ours] = round(float(v), 5) if isinstance(v, (int, float)) else None
        rows.append(row)
    return rows


def summary(curve: list[dict[str, Any]], window: int = 5) -> dict[str, Any]:
    """First and last reward (means over ``window`` steps), mean zero-std share, last KL."""
    if not curve:
        return {}

    def mean(rows: list[dict[str, Any]], key: str) -> float | None:
        vals = [r[key] for r in rows if r.get(key) is not None]
        return round(sum(vals) / len(vals), 4) if vals else None

    return {"steps": curve[-1]["step"], "reward_first": mean(curve[:window], "reward"),
            "reward_last": mean(curve[-window:], "reward"), "zero_std_share": mean(curve, "zero_std_share"),
            "kl_last": curve[-1].get("kl"), "success_last": mean(curve[-window:], "success")}


def plot_diagnostics(curve: list[dict[str, Any]], path: str | Path, title: str = "GRPO diagnostics") -> Path:
    """A 2x4 grid of the diagnostics against the step, written to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(2, 4, figsize=(16, 6.5))
    steps = [r["step"] for r in curve]
    for ax, (name, keys) in zip(axes.flat, PANELS, strict=True):
        for key in keys:
            pts = [(s, r[key]) for s, r in zip(steps, curve, strict=True) if r.get(key) is not None]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="." if len(pts) < 40 else None, label=key)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("step")
        if len(keys) > 1:
            ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


COLUMNS = ("step", "reward", "reward_std", "zero_std_share", "kl", "entropy", "clip_fraction", "completion_tokens",
           "tool_calls", "invalid_calls", "redundant_calls", "success")


def diagnostics_table(curve: list[dict[str, Any]], every: int = 1) -> str:
    """The curve as a Markdown table (every ``every``-th step, and the last)."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for i, row in enumerate(curve):
        if i % every and i != len(curve) - 1:
            continue
        cells = ["—" if row.get(c) is None else (f"{row[c]:.3g}" if isinstance(row[c], float) else str(row[c]))
                 for c in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def find_training_record(path: str | Path) -> dict[str, Any] | None:
    """The GRPO training record at ``path``: the record file, or a folder holding one (an adapters
    folder with one record, or a training work folder whose record sits in ``train_state.json``'s
    out_dir). None when ``path`` is not a training run."""
    path = Path(path)
    candidates = [path] if path.is_file() else sorted(path.glob("*.json")) if path.is_dir() else []
    for c in candidates:
        try:
            data = json.loads(c.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and data.get("method") == "grpo" and "diagnostics" in data:
            data["_path"] = str(c)
            return data
    return None


def training_report(record: dict[str, Any], out_dir: str | Path) -> list[Path]:
    """``<name>.report.md`` (settings, the diagnostics summary and table) and the PNG, next to the record."""
    out_dir = Path(out_dir)
    name = record["model"]
    curve = record.get("diagnostics") or []
    png = plot_diagnostics(curve, out_dir / f"{name}.png", title=f"{name}: GRPO on {record.get('train_topology')}") \
        if curve else None
    s = summary(curve)
    cfg = record.get("config", {})
    md = [f"# {name}: GRPO on {record.get('train_topology')} ({record.get('protocol')})", "",
          f"init `{record.get('init', {}).get('kind')}`, reward `{record.get('reward')}`, "
          f"{record.get('steps')} steps of {record.get('rollouts_per_step')} rollouts "
          f"(group size {cfg.get('num_generations')}), beta {cfg.get('beta')}, "
          f"temperature {cfg.get('temperature')}, learning rate {cfg.get('learning_rate')}; "
          f"{record.get('seconds', {}).get('per_step')} s a step.", "",
          "reward first → last (5-step means): " f"{s.get('reward_first')} → {s.get('reward_last')}; "
          f"mean zero-std group share {s.get('zero_std_share')}; last KL {s.get('kl_last')}.", ""]
    if png:
        md += [f"![diagnostics]({png.name})", ""]
    md += [diagnostics_table(curve, every=max(1, len(curve) // 30)), ""]
    path = out_dir / f"{name}.report.md"
    path.write_text("\n".join(md), encoding="utf-8")
    return [path] + ([png] if png else [])
