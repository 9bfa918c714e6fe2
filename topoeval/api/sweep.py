"""Transfer over training from the Python API: :func:`run_sweep` evaluates a training run's checkpoints
on one protocol, in one run folder, and writes the curves (docs/sweeping.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from topoeval.analysis.sweep import SweepPoint
from topoeval.api import run_protocol
from topoeval.core.errors import UserError
from topoeval.core.files import write_json_atomic
from topoeval.models.adapters import ENV as ADAPTERS_ENV


def run_sweep(protocol: str | Path, points: list[SweepPoint], out: str | Path, *,
              training: dict[str, Any] | None = None,
              adapters: Path | None = None, baseline: int = 0, **settings: Any) -> dict[str, Any]:
    """Transfer over training: evaluate ``points``' models (one per checkpoint, ``SweepPoint(step, model)``)
    on ``protocol`` in one run folder, ``out/run`` (resumable; ``settings``: :func:`run_protocol`'s), at the
    ``baseline``-shot baseline, and write the curves to ``out`` (``summary.json``, schema
    ``topoeval.sweep/1``; ``sweep.png``, ``report.md``, ``report.html``); returns that summary.
    ``adapters``: a folder of GGUF adapters to find the models in before the usual ones.

    A point may carry its own ``api_base`` (two points, two servers), a GGUF ``lora`` for topoeval's
    llama-server, or a ``serve`` template: the points of one filled template (a server per checkpoint, or
    one ``{lora_modules}`` server for all) are run while topoeval holds that server
    (:class:`topoeval.models.managed_server.ManagedServer`), one server at a time; then every point
    together, which runs what is left (the points without a server) and writes the curves."""
    from topoeval.analysis.sweep import sweep_curves
    from topoeval.report.sweep import write_sweep_reports
    from topoeval.runner.store import read_episodes

    if len({p.step for p in points}) != len(points):
        raise UserError("two sweep points share a step")
    labels = [p.label for p in points]
    if len(set(labels)) != len(labels):
        twice = next(x for x in labels if labels.count(x) > 1)
        raise UserError(f"two sweep points share the model name '{twice}'; give them names (name: in --points)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    options = _options(settings)
    previous = os.environ.get(ADAPTERS_ENV)
    if adapters is not None:
        os.environ[ADAPTERS_ENV] = os.pathsep.join(filter(None, [str(adapters.resolve()), previous]))
    try:
        served = _run_served(protocol, points, out / "run", options, baseline, settings)
        models = [_point_policy(p, options, *served.get(p.step, (None, None))) for p in points]
        result = run_protocol(protocol, models, out / "run", shots=[baseline], **settings)
    finally:
        if adapters is not None:
            if previous is None:
                os.environ.pop(ADAPTERS_ENV, None)
            else:
                os.environ[ADAPTERS_ENV] = previous
    summary = json.loads((Path(result.run_dir) / "summary.json").read_text(encoding="utf-8"))
    sweep = sweep_curves(summary, points, baseline=f"{baseline}-shot", training=training,
                         records=read_episodes(result.run_dir))
    sweep["run_dir"] = str(result.run_dir)
    sweep["errors"] = result.errors
    write_json_atomic(out / "summary.json", sweep, indent=1)
    write_sweep_reports(sweep, out)
    return sweep


def _options(settings: dict[str, Any]) -> Any:
    from topoeval.models.options import ModelOptions

    given = settings.get("model_options")
    return given if isinstance(given, ModelOptions) else ModelOptions.model_validate(given or {})


def _run_served(protocol: str | Path, points: list[SweepPoint], run_dir: Path, options: Any, baseline: int,
                settings: dict[str, Any]) -> dict[int, tuple[str, str]]:
    """Run the points that have a ``serve`` template, one server at a time; per step, the (served model name,
    API base) it was reached at (the server is gone afterwards: the final pass only summarises them)."""
    from topoeval.models.managed_server import ManagedServer

    groups: dict[tuple[str, str | None], list[SweepPoint]] = {}
    for p in sorted(points, key=lambda p: p.step):
        if p.serve:
            shared = "{lora_modules}" in p.serve
            groups.setdefault((p.serve, None if shared else p.path), []).append(p)
    reached: dict[int, tuple[str, str]] = {}
    done = _finished_models(run_dir, baseline)
    for (template, path), group in groups.items():
        if all(p.label in done for p in group):  # nothing left to run on this server: not started
            reached.update({p.step: (p.label, "http://127.0.0.1:9/v1") for p in group})
            continue
        modules = {p.label: str(p.path) for p in group} if path is None else None
        with ManagedServer(template, path=path, name=group[0].label, lora_modules=modules) as server:
            names = {p.step: _served_name(p, server, modules is not None) for p in group}
            models = [_point_policy(p, options, names[p.step], server.api_base, True) for p in group]
            run_protocol(protocol, models, run_dir, shots=[baseline], **settings)
        reached.update({p.step: (names[p.step], server.api_base) for p in group})
    return reached


def _finished_models(run_dir: Path, baseline: int) -> set[str]:
    """The models of a run folder's last summary whose every cell at ``baseline`` finished without an error
    (a served checkpoint already evaluated: its server need not be started again)."""
    try:
        cells = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))["cells"]
    except (OSError, ValueError, KeyError):
        return set()
    mine = [c for c in cells if c.get("baseline") == f"{baseline}-shot"]
    return {c["model"] for c in mine} - {c["model"] for c in mine if c.get("n_errors") or not c.get("n_episodes", 1)}


def _served_name(point: SweepPoint, server: Any, lora_modules: bool) -> str:
    """The name to request a served point by: its own, or the one model a per-checkpoint server lists (a
    template without ``{name}`` serves it under the server's own name)."""
    listed = server.models()
    if point.label in listed or lora_modules:
        return point.label
    if len(listed) == 1:
        return listed[0]
    raise UserError(f"--serve: the server for step {point.step} lists {', '.join(listed) or 'no model'}, not "
                    f"'{point.label}'; pass {{name}} to it (vLLM: --served-model-name {{name}})")


def _point_policy(point: SweepPoint, options: Any, served: str | None = None, api_base: str | None = None,
                  final_pass_alive: bool = False) -> Any:
    """What the run evaluates for a point: its model string, or a policy built for it (its own server, its
    GGUF LoRA, its name in the run)."""
    from topoeval.policies.registry import make_policy

    if point.serve and api_base is None:
        raise UserError(f"sweep point at step {point.step}: its server was not started")
    base = api_base or point.api_base
    if base is None and point.lora is None and point.name is None and point.api_key is None:
        return point.model
    opts = options
    if point.api_key is not None:
        from topoeval.core.secrets import remember_secret

        remember_secret(point.api_key)  # masked wherever an error text quotes it
        opts = opts.model_copy(update={"api_key": point.api_key})
    if base is not None:
        opts = opts.model_copy(update={"api_base": base, "api_bases": [base]})
        if point.serve and not final_pass_alive:
            opts = opts.model_copy(update={"max_retries": 0})  # its server is gone: an episode left fails fast
    if point.lora is not None:
        from topoeval.models.llama_server_policy import LlamaServerPolicy
        from topoeval.models.serve_model import resolve_gguf

        return LlamaServerPolicy(resolve_gguf(point.model), opts, name=point.label, lora_path=point.lora)
    policy = make_policy(f"direct:{served}" if served else point.model, opts)
    policy.name = point.label
    if point.weights:
        policy.weights = point.weights
    return policy
