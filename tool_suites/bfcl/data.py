"""BFCL v4's multi-turn data, read from the pinned ``bfcl-eval`` package (imported lazily).

What the suite takes from the package, and nothing else:

- ``data/BFCL_v4_multi_turn_<variant>.json``: 200 scenarios per variant (user turns, each API
  class's initial configuration, the involved classes, excluded and held-out functions);
- ``data/possible_answer/…``: the ground truth, one list of call strings per user turn;
- ``data/multi_turn_func_doc/*.json``: the 128 tool docs of the eight classes, converted here to
  JSON schema (BFCL writes ``dict`` for ``object`` and ``float`` for ``number``);
- ``eval_checker/multi_turn_eval/func_source_code``: the eight stateful classes themselves.

``annotations.yaml`` (next to this file) overlays topoeval's annotations on those docs.
"""

from __future__ import annotations

import importlib
import json
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from topoeval.core.annotations import ToolAnnotation, load_model_file
from topoeval.core.errors import UserError
from topoeval.core.suite import ToolSpec

#: The pinned release this suite is built and tested against.
BFCL_VERSION = "2026.3.23"
INSTALL_HINT = (f"the bfcl suite needs bfcl-eval=={BFCL_VERSION} (installed without its dependencies) and mpmath: "
                f"pip install 'topoeval[bfcl]' && pip install --no-deps bfcl-eval=={BFCL_VERSION}  (make install does both)")
VARIANTS = ("base", "long_context", "miss_func", "miss_param")
#: The eight API classes of the multi-turn categories, with their doc files and modules.
CLASSES = {
    "GorillaFileSystem": ("gorilla_file_system.json", "gorilla_file_system"),
    "MathAPI": ("math_api.json", "math_api"),
    "MessageAPI": ("message_api.json", "message_api"),
    "TwitterAPI": ("posting_api.json", "posting_api"),
    "TicketAPI": ("ticket_api.json", "ticket_api"),
    "TradingBot": ("trading_bot.json", "trading_bot"),
    "TravelAPI": ("travel_booking.json", "travel_booking"),
    "VehicleControlAPI": ("vehicle_control.json", "vehicle_control"),
}
#: Classes BFCL loads without a scenario (no state).
STATELESS = ("MathAPI",)
#: What BFCL says to the model on a turn that only adds the held-out functions (miss_func).
ADDED_FUNCTIONS_PROMPT = "I have updated some more functions you can choose from. What about now?"
SOURCE_PACKAGE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"
ANNOTATIONS = Path(__file__).with_name("annotations.yaml")


def require_bfcl() -> Any:
    """The ``bfcl_eval`` package, or a one-line error saying how to install it."""
    try:
        import bfcl_eval
        import mpmath  # noqa: F401  (what the classes need besides the standard library)
    except ImportError:
        raise UserError(INSTALL_HINT) from None
    installed = _installed_version()
    if installed != BFCL_VERSION:
        raise UserError(f"bfcl-eval {installed} is installed; the bfcl suite is built and tested against "
                        f"{BFCL_VERSION}: pip install --no-deps bfcl-eval=={BFCL_VERSION}")
    return bfcl_eval


@cache
def _installed_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bfcl-eval")
    except PackageNotFoundError:
        return None


def available() -> bool:
    try:
        require_bfcl()
    except UserError:
        return False
    return True


def _data_dir() -> Path:
    return Path(require_bfcl().__file__).parent / "data"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@cache
def scenarios(variant: str) -> list[dict[str, Any]]:
    """The variant's scenarios in file order, each with its ``ground_truth`` joined in."""
    if variant not in VARIANTS:
        raise UserError(f"unknown bfcl variant '{variant}' (known: {', '.join(VARIANTS)})")
    rows = _jsonl(_data_dir() / f"BFCL_v4_multi_turn_{variant}.json")
    answers = {a["id"]: a["ground_truth"] for a in _jsonl(_data_dir() / "possible_answer" / f"BFCL_v4_multi_turn_{variant}.json")}
    return [{**row, "ground_truth": answers[row["id"]]} for row in rows]


def class_module(class_name: str) -> Any:
    return importlib.import_module(f"{SOURCE_PACKAGE}.{CLASSES[class_name][1]}")


def api_class(class_name: str) -> type:
    return getattr(class_module(class_name), class_name)


def json_schema(bfcl: dict[str, Any]) -> dict[str, Any]:
    """A BFCL parameter doc as JSON schema: ``dict`` -> ``object``, ``float`` -> ``number``, ``tuple`` -> ``array``."""
    out: dict[str, Any] = {}
    for key, value in bfcl.items():
        if key == "type":
            out[key] = {"dict": "object", "float": "number", "tuple": "array", "any": None}.get(value, value)
            if out[key] is None:
                del out[key]
        elif key == "properties":
            out[key] = {name: json_schema(prop) for name, prop in value.items()}
        elif key == "items":
            out[key] = json_schema(value)
        else:
            out[key] = value
    return out


class BfclTool(ToolAnnotation):
    """topoeval's annotations of one BFCL tool (the shared ones, plus the rare ``argument_types``)."""

    argument_types: dict[str, Any] = Field(
        default_factory=dict, description="Parameter -> the JSON type(s) BFCL's own ground truth passes it."
    )


class BfclAnnotations(BaseModel):
    """``annotations.yaml``: per API class, per tool, its annotations."""

    model_config = ConfigDict(extra="forbid")

    classes: dict[str, dict[str, BfclTool]] = Field(description="API class -> tool name -> annotations.")


@cache
def annotations() -> dict[str, BfclTool]:
    """The overlay: per tool, effect / idempotent / parallel_safe / needs_confirmation (and, rarely,
    ``argument_types`` widening a parameter's type to what BFCL's own ground truth passes)."""
    raw = load_model_file(ANNOTATIONS, BfclAnnotations)
    return {name: values for group in raw.classes.values() for name, values in group.items()}


@cache
def tool_docs() -> dict[str, tuple[str, dict[str, Any]]]:
    """Tool name -> (class name, BFCL doc) for the 128 tools."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for class_name, (doc_file, _) in CLASSES.items():
        for doc in _jsonl(_data_dir() / "multi_turn_func_doc" / doc_file):
            if doc["name"] in out:
                raise ValueError(f"tool name '{doc['name']}' is shared by {out[doc['name']][0]} and {class_name}")
            out[doc["name"]] = (class_name, doc)
    return out


@cache
def tool_specs() -> tuple[ToolSpec, ...]:
    """The 128 tools as topoeval tool specs (BFCL's docs converted, annotations overlaid)."""
    notes = annotations()
    docs = tool_docs()
    missing = sorted(set(docs) - set(notes))
    extra = sorted(set(notes) - set(docs))
    if missing or extra:
        raise ValueError(f"{ANNOTATIONS.name} out of step with bfcl-eval's docs: missing {missing}, unknown {extra}")
    specs = []
    for name, (_, doc) in docs.items():
        params = json_schema(doc["parameters"])
        params.setdefault("properties", {})
        for arg, types in notes[name].argument_types.items():
            params["properties"][arg]["type"] = types
        specs.append(notes[name].spec(name, doc["description"], params))
    return tuple(specs)


def tool_class(name: str) -> str | None:
    hit = tool_docs().get(name)
    return hit[0] if hit else None
