"""``topoeval serve-openenv``, ``serve-model`` and ``serve-mcp``: a topology or a local model as a server
(docs/cli-serve.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from topoeval.commands.common import SuitesDir
from topoeval.core.choices import Split
from topoeval.core.errors import UserError


def serve_openenv(
    protocol: Annotated[str, typer.Argument(help="Default protocol of a reset (or a suite name).")] = "wiki_to_travel",
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    topology: Annotated[str | None, typer.Option(help="Default topology (default: the protocol's train "
                                                      "topology).")] = None,
    split: Annotated[Split, typer.Option(help="Default split of a reset.")] = Split.train,
    metric: Annotated[str, typer.Option(help="Default reward metric (success, dq, ...).")] = "success",
    max_sessions: Annotated[int, typer.Option(min=1, help="Concurrent WebSocket sessions.")] = 64,
    suites_dir: SuitesDir = None,
    other_protocol: Annotated[list[str] | None, typer.Option("--allow-protocol", help=(
        "Another protocol a client's reset may name (repeatable); a reset naming any other is refused.")),
    ] = None,
) -> None:
    """Serve any topology as an OpenEnv environment (needs the 'openenv' extra; see docs/training.md)."""
    from topoeval.integrations.openenv import serve

    typer.echo(f"OpenEnv server on http://{host}:{port} (WebSocket /ws, /schema, /health); Ctrl-C stops it", err=True)
    serve(host=host, port=port, protocol=protocol, topology=topology, split=split.value, metric=metric,
          max_sessions=max_sessions, suites_dirs=tuple(str(d) for d in suites_dir or ()),
          protocols=tuple(other_protocol or ()))


def serve_model(
    model: Annotated[str, typer.Argument(help="smollm2-135m (the embedded model) or a GGUF path.")] = "smollm2-135m",
    adapter: Annotated[list[str] | None, typer.Option(help="A LoRA adapter: smollm2-135m-wiki or a GGUF path "
                                                           "(repeatable).")] = None,
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port on 127.0.0.1.")] = 8080,
    slots: Annotated[int, typer.Option(min=1, help="Sequences decoded together (continuous batching).")] = 4,
    n_ctx: Annotated[int, typer.Option(min=256, help="Context window of each slot.")] = 8192,
    threads: Annotated[int | None, typer.Option(min=1, help="CPU threads (default: all cores).")] = None,
    api_key: Annotated[str | None, typer.Option(envvar="TOPOEVAL_SERVE_API_KEY", help=(
        "The key clients must send (Authorization: Bearer KEY); default: a random one, printed.")),
    ] = None,
) -> None:
    """Serve a local GGUF model with the llama-server topoeval runs (OpenAI-compatible /v1, per-request
    LoRA adapters and grammars; requests need its API key); Ctrl-C stops it. See docs/models.md."""
    from topoeval.models.serve_model import serve

    serve(model, adapter or [], port, slots, n_ctx, threads, echo=lambda line: typer.echo(line, err=True),
          api_key=api_key)


def serve_mcp(
    target: Annotated[str, typer.Argument(help="A suite name, or a protocol (name or YAML path).")],
    topology: Annotated[str | None, typer.Option(help="The protocol's topology (default: its train topology).")] = None,
    split: Annotated[Split, typer.Option(help="The task's split.")] = Split.test,
    index: Annotated[int | None, typer.Option(min=0, help="Task index in the split (default 0).")] = None,
    task_id: Annotated[str | None, typer.Option(help="The task's id, e.g. travel/test/3-1a2b3c4d (instead of "
                                                     "--index).")] = None,
    suites_dir: SuitesDir = None,
) -> None:
    """Serve one task of a topology as a stdio MCP server: its tools with MCP annotations (topoeval's in
    _meta), the task and its scores as resources (needs the 'mcp' extra; see docs/suites-mcp.md)."""
    from topoeval.integrations.mcp_server import serve

    if index is not None and task_id is not None:
        raise UserError("give --index or --task-id, not both")
    serve(target, topology=topology, split=split.value, index=index, task_id=task_id,
          suites_dirs=tuple(str(d) for d in suites_dir or ()))
