"""Transfer over training: a checkpoint sweep's curves from one run's cells.

A sweep evaluates the checkpoints of one training run (one model per checkpoint, ``step`` the
optimizer step it was saved at; step 0 is the policy training started from) in one run folder.
:func:`sweep_curves` reads that run's summary and gives, for each topology of the protocol (ID, each
OOD test, each ladder step, in the protocol's order) and each metric (``success``, ``dq``), the
curve against the step: mean, bootstrap 95 % CI over tasks and n, as the run's cells have them —
and the curve's shape named (:mod:`topoeval.analysis.sweep_shape`): where it peaked, whether the end
fell below the peak by more than the tie rule ("peaked early at step k"), and how the OOD curves
moved with the ID curve (Pearson and Spearman over the steps). With the run's episodes, ``paired`` says
what each stretch of training changed task by task (flips, McNemar's exact p, the paired verdict, a sentence:
:mod:`topoeval.analysis.sweep_paired`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

SCHEMA = "topoeval.sweep/1"
METRICS = ("success", "dq")


class SweepPoint(BaseModel):
    """One checkpoint of the training run, as a model the run evaluates."""

    step: int = Field(description="Optimizer step the checkpoint was saved at (0: the policy training started from).")
    model: str = Field(description="Model string the run evaluates for it (an adapter name, or any model).")
    name: str | None = Field(default=None, description=(
        "Its model name in the run and the curves (default: ``model``); two points may share a model string "
        "(one served name on two servers) but not a name."))
    api_base: str | None = Field(default=None, description=(
        "The OpenAI-compatible server this point is reached at (None: the run's api_base); how two points reach "
        "two servers."))
    api_key: str | None = Field(default=None, repr=False, description=(
        "That point's server's API key (None: the run's --api-key); never written out."))
    lora: str | None = Field(default=None, description=(
        "A GGUF LoRA adapter file applied to ``model`` (a GGUF model, or the embedded one) per request on "
        "topoeval's llama-server."))
    serve: str | None = Field(default=None, description=(
        "A server command template (topoeval.models.managed_server) topoeval starts for this point, waits for, "
        "evaluates ``model`` (``direct:NAME``) against and stops; points whose filled templates are the same (one "
        "``{lora_modules}`` server) share one server."))
    path: str | None = Field(default=None, description="The checkpoint's weights folder (``{path}`` of ``serve``).")
    weights: str | None = Field(default=None, description=(
        "A fingerprint of the checkpoint's weights (a served checkpoint): a resumed sweep refuses a checkpoint "
        "whose weights changed under the same name."))

    @property
    def label(self) -> str:
        """Its model name in the run."""
        return self.name or self.model


def sweep_curves(summary: dict[str, Any], points: list[SweepPoint], baseline: str = "0-shot",
                 training: dict[str, Any] | None = None,
                 records: Iterable[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The sweep's summary (schema :data:`SCHEMA`): per topology and metric, the curve over ``points``; with the
    run's episode ``records``, also ``paired``: what each stretch of training changed, task by task
    (:func:`topoeval.analysis.sweep_paired.sweep_flips`)."""
    from topoeval.analysis.diagnostics import no_tool_call_notice
    from topoeval.analysis.sweep_paired import sweep_flips
    from topoeval.analysis.sweep_shape import sweep_shapes

    cells = {(c["model"], c["topology"]): c for c in summary["cells"] if c["baseline"] == baseline}
    topologies: list[tuple[str, str]] = []
    for c in summary["cells"]:
        key = (c["topology"], c["role"])
        if c["baseline"] == baseline and key not in topologies:
            topologies.append(key)
    curves = []
    for topology, role in topologies:
        entry: dict[str, Any] = {"topology": topology, "role": role}
        for metric in METRICS:
            series = []
            for p in sorted(points, key=lambda p: p.step):
                m = ((cells.get((p.label, topology)) or {}).get("metrics") or {}).get(metric) or {}
                series.append({"step": p.step, "model": p.label, "mean": m.get("mean"), "ci95": m.get("ci95"),
                               "n": m.get("n", 0), "std": m.get("std"), "se": m.get("se")})
            entry[metric] = series
        curves.append(entry)
    return {"schema": SCHEMA, "protocol": summary["protocol"], "run_id": summary.get("run_id"), "baseline": baseline,
            "points": [p.model_dump(exclude_none=True, exclude={"api_base", "api_key"})
                       for p in sorted(points, key=lambda p: p.step)],
            "training": training or {}, "curves": curves, "peaks": _peaks(curves), **sweep_shapes(curves),
            "no_tool_calls": no_tool_call_notice([c for c in summary["cells"] if c["baseline"] == baseline]),
            **({"paired": sweep_flips(records, points, baseline, [c["topology"] for c in curves])}
               if records is not None else {})}


def _peaks(curves: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each topology and metric: the step of the highest mean, and the last point's mean."""
    out = []
    for c in curves:
        for metric in METRICS:
            pts = [p for p in c[metric] if p["mean"] is not None]
            if pts:
                best = max(pts, key=lambda p: p["mean"])
                out.append({"topology": c["topology"], "role": c["role"], "metric": metric, "peak_step": best["step"],
                            "peak": best["mean"], "first": pts[0]["mean"], "last": pts[-1]["mean"]})
    return out
