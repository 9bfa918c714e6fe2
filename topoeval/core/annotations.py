"""topoeval's annotations of a bridged world's tools, and the one loader of annotation files.

A world bridged from elsewhere (AgentDojo, BFCL, an MCP server) has tools but not the
annotations of the suite contract. Its overlay file gives them: :class:`ToolAnnotation` is the
one model of a tool's annotations (a bridged suite extends it with what is its own: AgentDojo's
``why``, BFCL's ``argument_types``; an MCP overlay makes every field optional, an override of the
server's hints). :func:`load_model_file` reads any such file — YAML (or JSON) validated by a
pydantic model, the first problem reported as one line naming the file and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, TypeVar

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from topoeval.core.errors import UserError
from topoeval.core.suite import Effect, ToolSpec
from topoeval.core.yamlfile import YamlRejected, load_yaml, read_yaml_file

ModelT = TypeVar("ModelT", bound=BaseModel)


def _names(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


#: Argument names, written as one name or a list of names.
ArgNames = Annotated[list[str], BeforeValidator(_names)]


class ToolAnnotation(BaseModel):
    """topoeval's annotations of one bridged tool (see :class:`topoeval.core.suite.ToolSpec`)."""

    model_config = ConfigDict(extra="forbid")

    effect: Effect = Field(description="read | write | irreversible: what the call does to the world.")
    idempotent: bool = Field(description="Calling twice with the same arguments changes nothing more.")
    parallel_safe: bool = Field(description="May run in the same turn as other calls.")
    needs_confirmation: bool = Field(
        default=False, description="The user must confirm the call's object before it is made."
    )
    object: ArgNames = Field(
        default_factory=list,
        description="Irreversible tools: the argument(s) naming what the call acts on (risk metric, confirmations); "
        "one name or a list.",
    )

    def spec(self, name: str, description: str, parameters: dict[str, Any]) -> ToolSpec:
        """The tool spec of a bridged tool with these annotations."""
        return ToolSpec(name=name, description=description, parameters=parameters, effect=self.effect,
                        idempotent=self.idempotent, parallel_safe=self.parallel_safe,
                        needs_confirmation=self.needs_confirmation)


def first_error(exc: ValidationError) -> str:
    """'key.path: message' of a validation error's first problem (no path: the message)."""
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    msg = str(first["msg"]).removeprefix("Value error, ")
    return f"{where}: {msg}" if where else msg


def load_model_file(path: Path, model: type[ModelT], *, what: str = "", error: type[Exception] = UserError,
                    raw: Any = None) -> ModelT:
    """``path`` parsed (YAML; an empty file is ``{}``) and validated by ``model``.

    A file that cannot be read or parsed, or does not validate, raises ``error`` with one line:
    ``'<path>: cannot read<what>: <why>'`` or ``'<path>: <key.path>: <message>'``. ``raw`` skips the
    read (an already parsed document).
    """
    if raw is None:
        try:
            raw = load_yaml(read_yaml_file(path), str(path)) or {}
        except YamlRejected as exc:
            raise error(str(exc)) from None
        except (OSError, yaml.YAMLError) as exc:
            raise error(f"{path}: cannot read{what}: {exc}") from None
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise error(f"{path}: {first_error(exc)}") from None
