"""The points of ``topoeval sweep PROTOCOL``: ``--point STEP=MODEL`` and ``--points FILE``.

``--points`` is YAML, a mapping from the step to a model spec, or to a mapping with ``model`` and
optionally ``api_base`` (that point's server; two points can reach two servers), ``api_key`` (that
server's key) and ``name`` (its name in the run, needed when two points share a model spec)::

    0: smollm2-135m
    100: {model: direct:qwen-ckpt, api_base: http://127.0.0.1:8001/v1, name: ckpt-100}
    200: {model: direct:qwen-ckpt, api_base: http://127.0.0.1:8002/v1, api_key: KEY, name: ckpt-200}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topoeval.analysis.sweep import SweepPoint
from topoeval.core.errors import UserError

#: the keys a point's mapping may have (``api_key``: that point's server's key, once SweepPoint carries one)
KEYS = tuple(k for k in ("model", "api_base", "api_key", "name") if k in SweepPoint.model_fields)


def _step(value: Any, where: str) -> int:
    try:
        step = int(str(value).strip())
    except ValueError:
        raise UserError(f"{where}: the step must be a whole number, not {value!r}") from None
    if step < 0:
        raise UserError(f"{where}: the step must be 0 or more, not {step}")
    return step


def parse_point(text: str) -> SweepPoint:
    """``STEP=MODEL`` as a point."""
    step, sep, model = text.partition("=")
    if not sep or not model.strip():
        raise UserError(f"--point {text}: write STEP=MODEL (e.g. --point 0=smollm2-135m)")
    return SweepPoint(step=_step(step, f"--point {text}"), model=model.strip())


def read_points(path: Path) -> list[SweepPoint]:
    """The points of a ``--points`` YAML file (see the module docstring)."""
    import yaml

    from topoeval.core.yamlfile import YamlRejected, load_yaml, read_yaml_file

    try:  # UTF-8 only, aliases expanded with a bound, nesting bounded: bad bytes or a bomb are one line
        data = load_yaml(read_yaml_file(path), str(path))
    except FileNotFoundError:
        raise UserError(f"--points {path}: no such file") from None
    except OSError as exc:
        raise UserError(f"--points {path}: cannot read: {exc.strerror or exc}") from None
    except YamlRejected as exc:
        raise UserError(f"--points {exc}") from None
    except yaml.YAMLError as exc:
        raise UserError(f"--points {path}: not YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict) or not data:
        raise UserError(f"--points {path}: write a mapping of step -> model (e.g. '0: smollm2-135m')")
    out = []
    for key, value in data.items():
        where = f"--points {path}: step {key}"
        step = _step(key, where)
        if isinstance(value, str) and value.strip():
            out.append(SweepPoint(step=step, model=value.strip()))
            continue
        if not isinstance(value, dict) or not isinstance(value.get("model"), str):
            raise UserError(f"{where}: give a model spec, or a mapping with 'model' (and optionally "
                            f"{', '.join(k for k in KEYS if k != 'model')})")
        unknown = [k for k in value if k not in KEYS]
        if unknown:
            raise UserError(f"{where}: unknown key '{unknown[0]}' (known: {', '.join(KEYS)})")
        out.append(SweepPoint(step=step, **{k: str(v) for k, v in value.items()}))
    return out
