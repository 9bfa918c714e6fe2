"""``topoeval serve-mcp``: one task of any topology as a stdio MCP server.

The server is one episode: started for one task (``--split``/``--index`` or ``--task-id``), its
world lives as long as the process (a stdio client that reconnects gets a fresh process, hence a
fresh episode). It offers:

- **tools** — the topology's tools with their JSON schemas; MCP's hints set from topoeval's
  annotations (``readOnlyHint`` for read tools, ``destructiveHint`` for irreversible ones,
  ``idempotentHint``, ``openWorldHint`` false) and every annotation MCP has no hint for in the
  tool's ``_meta`` under ``topoeval/`` (``effect``, ``idempotent``, ``parallel_safe``,
  ``needs_confirmation``, ``user_channel``) — what the ``mcp`` suite reads back;
- **resource** ``topoeval://episode/task`` — the task (id, prompt, system prompt, topology);
- **resource** ``topoeval://episode/scores?answer=...`` — ends the episode with that final
  answer and returns its scores, the same ``topoeval run`` computes for the same calls.

Calls that carry the same ``_meta["topoeval/turn"]`` value form one turn (parallel calls);
without it every call is a turn of its own. Tool results are the runner's: an invalid call or a
world's refusal is an ``isError`` result, recorded in the episode as ``topoeval run`` records it.
"""

from __future__ import annotations

import json
import threading
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from topoeval.core.errors import UserError
from topoeval.core.messages import ToolCall
from topoeval.core.suite import Split, Task, ToolSpec, WorldError
from topoeval.integrations.topology_tasks import (
    TopologyTasks,
    load_topology_tasks,
    mcp_annotations,
    topoeval_annotations,
)
from topoeval.runner.tool_exec import CallRecord, execute_call, observation_text

INSTALL_HINT = "serve-mcp needs the MCP SDK: pip install 'topoeval[mcp]'"
TURN_META = "topoeval/turn"
TASK_URI = "topoeval://episode/task"
SCORES_URI = "topoeval://episode/scores"


def tool_meta(spec: ToolSpec) -> dict[str, Any]:
    """topoeval's annotations as ``_meta`` keys (``topoeval/effect``, ...)."""
    return {f"topoeval/{k}": v for k, v in topoeval_annotations(spec).items()}


class ServedEpisode:
    """One episode driven call by call (see the module docstring). Thread-safe: calls are serialised."""

    def __init__(self, tasks: TopologyTasks, task: Task):
        self.tasks, self.task = tasks, task
        self.state = tasks.episode(task)
        self.specs = {t.name: t for t in tasks.topology.suite.tools}
        self._turns: dict[Any, int] = {}
        self._assistant: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._scores: dict[str, Any] | None = None

    def _turn(self, key: Any) -> int:
        if key is None or isinstance(key, (dict, list)):
            key = object()  # a turn of its own
        if key not in self._turns:
            self._turns[key] = len(self._turns)
        return self._turns[key]

    def call(self, name: str, arguments: dict[str, Any], turn_key: Any = None) -> CallRecord:
        """Run one call in the episode's world; the record as ``topoeval run`` would keep it."""
        with self._lock:
            st = self.state
            turn = self._turn(turn_key)
            call_id = f"call_{len(st.calls)}"
            call = ToolCall.make(call_id, name, arguments)
            if self._scores is not None or st.status == "error":
                return CallRecord(turn=turn, id=call_id, name=name, raw_arguments=call.arguments, status="skipped",
                                  error="the episode is over")
            if turn >= st.limits.max_turns or len(st.calls) >= st.limits.max_tool_calls:
                rec = CallRecord(turn=turn, id=call_id, name=name, raw_arguments=call.arguments, status="skipped",
                                 error="the episode's turn or tool-call limit is reached")
            else:
                assert st.world is not None
                n_events = len(st.world.events)
                try:
                    rec = execute_call(call, turn, st.tool_specs, st.world)
                except WorldError as exc:
                    rec = CallRecord(turn=turn, id=call_id, name=name, raw_arguments=call.arguments,
                                     status="tool_error", error=str(exc))
                    st.fail(f"world: {exc}")
                for event in st.world.events[n_events:]:
                    event.update(call=len(st.calls), turn=turn)
            st.calls.append(rec)
            if turn not in self._assistant:
                self._assistant[turn] = {"role": "assistant", "content": None, "tool_calls": []}
                st.messages.append(self._assistant[turn])
            self._assistant[turn]["tool_calls"].append(call.openai())
            st.messages.append({"role": "tool", "tool_call_id": call_id, "name": name,
                                "content": observation_text(rec)})
            st.turns = len(self._turns)
            return rec

    def scores(self, answer: str | None) -> dict[str, Any]:
        """End the episode with ``answer`` as the final message (once) and return its scores."""
        with self._lock:
            if self._scores is None:
                st = self.state
                if st.status == "limit:max_turns" and st.turns < st.limits.max_turns:
                    st.turns += 1  # the final message is an assistant turn, as in topoeval run
                    st.final_answer = answer or ""
                    st.messages.append({"role": "assistant", "content": st.final_answer})
                    st.status = "done"
                record = st.record()
                self._scores = {"task_id": self.task.id, "status": st.status, "scores": record["scores"]}
            return self._scores

    def task_info(self) -> dict[str, Any]:
        return {"task_id": self.task.id, "protocol": self.tasks.protocol.name, "topology": self.tasks.name,
                "split": self.task.split, "index": self.task.index, "prompt": self.task.prompt,
                "system_prompt": self.tasks.system_prompt()}

    def close(self) -> None:
        self.state.close()


def _tool(spec: ToolSpec) -> Any:
    import mcp.types as types

    hints = mcp_annotations(spec)
    return types.Tool(
        name=spec.name, description=spec.description, input_schema=spec.parameters, _meta=tool_meta(spec),
        annotations=types.ToolAnnotations(read_only_hint=hints["readOnlyHint"],
                                          destructive_hint=hints["destructiveHint"],
                                          idempotent_hint=hints["idempotentHint"],
                                          open_world_hint=hints["openWorldHint"]),
    )


def build_server(episode: ServedEpisode) -> Any:
    """A low-level MCP ``Server`` over ``episode``."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    tools = [_tool(t) for t in episode.specs.values()]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        meta = (params.meta if isinstance(params.meta, dict)
                else (params.meta.model_dump(by_alias=True) if params.meta else {}))
        rec = await anyio.to_thread.run_sync(episode.call, params.name, dict(params.arguments or {}),
                                             meta.get(TURN_META))
        structured = rec.observation if rec.status == "ok" and isinstance(rec.observation, dict) else None
        return types.CallToolResult(content=[types.TextContent(type="text", text=observation_text(rec))],
                                    structured_content=structured, is_error=rec.status != "ok")

    async def list_resources(ctx: Any, params: Any) -> Any:
        return types.ListResourcesResult(resources=[
            types.Resource(name="task", uri=TASK_URI, mime_type="application/json",
                           description="The served task: id, prompt, system prompt, topology."),
            types.Resource(name="scores", uri=SCORES_URI, mime_type="application/json",
                           description="Read with ?answer=<final answer> to end the episode and get its scores."),
        ])

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        parts = urlsplit(uri)
        base = f"{parts.scheme}://{parts.netloc}{parts.path}"
        if base == TASK_URI:
            data = episode.task_info()
        elif base == SCORES_URI:
            answer = parse_qs(parts.query).get("answer", [""])[0]
            data = await anyio.to_thread.run_sync(episode.scores, answer)
        else:
            from mcp import MCPError
            from mcp.types import INVALID_PARAMS

            raise MCPError(code=INVALID_PARAMS, message=f"unknown resource {uri} (resources: {TASK_URI}, {SCORES_URI})")
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps(data, ensure_ascii=False, sort_keys=True))])

    info = episode.task_info()
    return Server("topoeval", instructions=f"{info['system_prompt']}\n\nTask: {info['prompt']}",
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource)


def pick_task(tasks: TopologyTasks, index: int | None, task_id: str | None) -> Task:
    """The task to serve: by index in the split, or by its id (``<suite>/<split>/<index>-<hash>``)."""
    if task_id is not None:
        try:
            index = int(task_id.rsplit("/", 1)[1].split("-", 1)[0])
            split = task_id.split("/")[-2]
        except (IndexError, ValueError):
            raise UserError(f"task id '{task_id}' is not of the form <suite>/<split>/<index>-<hash>") from None
        if split != tasks.split:
            raise UserError(f"task id '{task_id}' is of the {split} split; add --split {split}")
    index = index or 0
    size = tasks.topology.suite.pool_size(tasks.topology.params, cast(Split, tasks.split))
    if index < 0 or (size is not None and index >= size):
        raise UserError(f"no task {index} in the {tasks.split} split of '{tasks.name}'"
                        + (f" (it has {size})" if size is not None else ""))
    task = tasks.task(index)
    if task_id is not None and task.id != task_id:
        raise UserError(f"task id '{task_id}' is not in this topology "
                        f"(task {index} of its {tasks.split} split is {task.id})")
    return task


def serve(target: str, *, topology: str | None = None, split: str = "test", index: int | None = None,
          task_id: str | None = None, suites_dirs: tuple[str, ...] = ()) -> None:
    """Serve one task over stdio until the client closes the connection."""
    try:
        import anyio
        from mcp.server.stdio import stdio_server
    except ImportError:
        raise UserError(INSTALL_HINT) from None
    tasks = load_topology_tasks(target, topology, split, suites_dirs=suites_dirs)
    episode = ServedEpisode(tasks, pick_task(tasks, index, task_id))
    if episode.state.world is None:
        raise UserError(f"the task's world did not start: {'; '.join(episode.state.errors)}")
    server = build_server(episode)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        episode.close()

