"""An OpenEnv server over any topology (extra ``topoeval[openenv]``: ``openenv==0.10.0``).

``topoeval serve-openenv [P] [--host 127.0.0.1 --port 8000 --topology T --split S]``
serves :class:`TopoevalEnvironment` through OpenEnv's ``create_app``: the WebSocket ``/ws`` holds
one environment per session (episodes run there); HTTP ``/reset`` and ``/step`` are OpenEnv's
stateless one-shot routes; ``/schema``, ``/health`` and the task API are served too.

- A refusal over HTTP is a 4xx with its one-line message (``{"detail": "..."}``): 400 for bad input
  (an argument of the wrong type, an unknown topology or metric), 404 for a protocol this server does
  not serve, 409 for a step with no episode running; over the WebSocket it is OpenEnv's error message.
  A 500 is left to a fault of the server itself.
- Browsers are kept out: a request (HTTP or WebSocket) that carries an ``Origin`` other than the server's
  own (scheme aside, the ``Host`` it was reached at) is refused (403; a WebSocket handshake is closed
  before it is accepted), so a page of another site or port, or a ``file://`` page (``Origin: null``),
  cannot drive an environment. Clients that send no ``Origin`` (OpenEnv's, curl, any program) are
  served.

- ``reset(seed=i, topology=..., protocol=..., split=..., metric=..., max_turns=...)`` starts task
  ``i`` of the split (the task ``topoeval run`` draws at that position; ``index=`` is the same);
  unset arguments take the server's defaults. ``protocol`` must be one its operator named at start
  (the default protocol, and each ``--allow-protocol`` of ``serve-openenv``): a client never chooses a file
  of the host, and what a protocol runs (an MCP server, fixture commands) is the operator's choice.
  The observation carries the system and user
  messages and the tools: OpenAI function schemas plus MCP's hints (``annotations``) and
  topoeval's own (``topoeval``: effect, idempotent, parallel_safe, needs_confirmation) — OpenEnv's
  ``Tool`` model forbids extra fields, so the annotations travel in the observation.
- ``step({"tool_calls": [{"name", "arguments"}], "content": ...})`` is one assistant message:
  its calls run against the task's world (several calls = one parallel turn; malformed ones come
  back as error results, as in an evaluation); a message without calls is the final answer.
- The last step has ``done`` true, ``reward`` the evaluation's own score (``success`` unless the
  reset's ``metric`` says otherwise: a metric name or ``{"success": 0.7, "dq": 0.3}``) and every
  score in ``observation.scores``; earlier steps have reward 0.
- Each episode's world is closed (an MCP topology's server process stops) as soon as the episode
  is done, when the session resets before finishing it, and when OpenEnv closes the session.

:class:`TopoevalClient` is the typed OpenEnv client (``async with TopoevalClient(base_url=...)``,
or ``.sync()``); OpenEnv's ``GenericEnvClient`` works as well, with plain dicts.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from topoeval.core.errors import UserError
from topoeval.core.messages import AssistantMessage
from topoeval.integrations.topology_tasks import TopologyTasks, load_topology_tasks
from topoeval.runner.episode import EpisodeState

try:
    from openenv.core import Action, EnvClient, Environment, Observation, State, create_app
    from openenv.core.client_types import StepResult
except ImportError:
    raise UserError(
        "topoeval.integrations.openenv needs the 'openenv' extra: pip install 'topoeval[openenv]'") from None

ENV_NAME = "topoeval"


class Refused(UserError):
    """A request this server refuses: a one-line message and the HTTP status it is answered with."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


class ResetArguments(BaseModel):
    """A reset's arguments as a client sends them (JSON), checked before anything is loaded."""

    model_config = ConfigDict(extra="forbid", strict=True)

    seed: int | None = Field(default=None, ge=0, lt=2**63, description="Task index (OpenEnv's seed).")
    index: int | None = Field(default=None, ge=0, lt=2**63, description="Task index (wins over seed).")
    episode_id: str | None = Field(default=None, description="The episode's id (default <task id>#<index>).")
    topology: str | None = Field(default=None, description="Topology name (default: the server's).")
    protocol: str | None = Field(default=None, description="One of the protocols the server serves.")
    split: str | None = Field(default=None, description="Split (default: the server's).")
    metric: str | dict[str, float] | None = Field(default=None, description="a score name, or score name -> weight")
    max_turns: int | None = Field(default=None, ge=1, description="Turn limit (default: the protocol's).")


def _reset_arguments(**given: Any) -> ResetArguments:
    try:
        return ResetArguments.model_validate({k: v for k, v in given.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        name = str(first["loc"][0]) if first["loc"] else "arguments"
        field = ResetArguments.model_fields.get(name)
        # a union's or a mapping's error names one member; the field's description says what it takes
        said = first["msg"] if len(first["loc"]) <= 1 or field is None else f"expected {field.description}"
        raise Refused(f"reset argument {name}: {said} (got {first.get('input')!r:.80})") from None


class ActionToolCall(BaseModel):
    """One tool call of an action."""

    name: str = Field(description="Tool name (an unknown name is answered with an error result).")
    arguments: dict[str, Any] | str = Field(default_factory=dict,
                                            description="Arguments: an object, or its JSON text as a model emitted it.")
    id: str | None = Field(default=None, description="Call id echoed by its result (default call_<turn>_<i>).")


class TopoevalAction(Action):
    """One assistant message: tool calls (several = one parallel turn) and/or text (no calls = the answer)."""

    tool_calls: list[ActionToolCall] = Field(default_factory=list, description="Calls made this turn.")
    content: str | None = Field(default=None, description="Text of the turn; the final answer when there are no calls.")

    def assistant_message(self) -> AssistantMessage:
        return AssistantMessage.from_openai(self, id_template="")  # the env numbers calls without an id


class TopoevalObservation(Observation):
    """What the agent sees after a reset or a step."""

    messages: list[dict[str, Any]] = Field(default_factory=list,
                                           description="New messages, OpenAI format: system + user on reset, tool "
                                                       "results on a step.")
    tools: list[dict[str, Any]] = Field(default_factory=list,
                                        description="On reset: the tools with their schemas and annotations (empty on "
                                                    "steps).")
    task_id: str = Field(default="", description="Task id.")
    topology: str = Field(default="", description="Topology name.")
    split: str = Field(default="", description="Split the task is from.")
    index: int = Field(default=0, description="Task index in the split.")
    turn: int = Field(default=0, description="Assistant turns taken so far.")
    status: str = Field(default="", description="running | done | limit:max_turns | limit:max_tool_calls.")
    scores: dict[str, Any] | None = Field(default=None, description="Every score of the episode, once it is done.")


class TopoevalState(State):
    """The session's episode (``step_count`` is its assistant turns)."""

    task_id: str | None = Field(default=None, description="Task id of the current episode.")
    topology: str | None = Field(default=None, description="Topology name.")
    split: str | None = Field(default=None, description="Split.")
    index: int | None = Field(default=None, description="Task index.")
    status: str | None = Field(default=None, description="Episode status.")
    tool_calls: int = Field(default=0, description="Tool calls made so far.")


class TopoevalEnvironment(Environment[TopoevalAction, TopoevalObservation, TopoevalState]):
    """One topoeval episode per session (see the module docstring)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session owns its world; nothing is shared

    def __init__(self, protocol: str = "wiki_to_travel", topology: str | None = None, split: str = "train",
                 metric: str | dict[str, float] = "success", suites_dirs: tuple[str, ...] = (),
                 protocols: tuple[str, ...] = ()):
        super().__init__()
        self.defaults: dict[str, Any] = {"protocol": protocol, "topology": topology, "split": split, "metric": metric}
        #: what a reset's ``protocol`` may name: the default and the others the operator named
        self.served = tuple(dict.fromkeys([protocol, *protocols]))
        self.suites_dirs = suites_dirs
        self._next = itertools.count()
        self._tasks: TopologyTasks | None = None
        self._episode: EpisodeState | None = None
        self._metric = metric
        self._state = TopoevalState()

    def _topology(self, protocol: str | None, topology: str | None, split: str | None,
                  max_turns: int | None = None) -> TopologyTasks:
        if protocol is None:
            protocol = self.defaults["protocol"]
            topology = topology or self.defaults["topology"]
        elif protocol not in self.served:
            raise Refused(f"protocol {protocol[:200]!r} is not served here; this server serves "
                          f"{', '.join(repr(p) for p in self.served)} (its operator names them: "
                          "topoeval serve-openenv PROTOCOL --allow-protocol OTHER ...)", status=404)
        return load_topology_tasks(protocol, topology, split or self.defaults["split"], max_turns=max_turns,
                                   suites_dirs=self.suites_dirs)

    def reset(self, seed: int | None = None, episode_id: str | None = None, *, topology: str | None = None,
              protocol: str | None = None, split: str | None = None, index: int | None = None,
              metric: str | dict[str, float] | None = None, max_turns: int | None = None,
              **kwargs: Any) -> TopoevalObservation:
        if kwargs:
            raise Refused(f"unknown reset argument(s) {sorted(kwargs)} (known: seed, index, topology, protocol, "
                          "split, metric, max_turns)")
        args = _reset_arguments(seed=seed, index=index, episode_id=episode_id, topology=topology, protocol=protocol,
                                split=split, metric=metric, max_turns=max_turns)
        tasks = self._topology(args.protocol, args.topology, args.split, args.max_turns)
        i = args.index if args.index is not None else args.seed if args.seed is not None else next(self._next)
        metric = args.metric if args.metric is not None else self.defaults["metric"]
        task = tasks.task(i)
        tasks.reward(tasks.replay(task, [])["scores"], metric)  # an unknown metric fails at reset, not at the end
        self._tasks, self._metric = tasks, metric
        self.close()  # the session's previous episode, if it was left unfinished
        self._episode = tasks.episode(task)
        self._state = TopoevalState(episode_id=args.episode_id or f"{task.id}#{i}", step_count=0, task_id=task.id,
                                    topology=tasks.name, split=tasks.split, index=i, status="running")
        return self._observation(list(self._episode.messages), tools=tasks.tools())

    def step(self, action: TopoevalAction, timeout_s: float | None = None, **kwargs: Any) -> TopoevalObservation:
        if self._episode is None:  # always so over HTTP: /step is one-shot, on a fresh environment
            raise Refused("call reset() before step() (over HTTP, /reset and /step are one-shot each: run an "
                          "episode over the WebSocket /ws)", status=409)
        if self._episode.done:
            raise Refused("the episode is over; call reset()", status=409)
        results = self._episode.step(action.assistant_message())
        return self._observation(results)

    @property
    def state(self) -> TopoevalState:
        return self._state

    def close(self) -> None:
        """Close the current episode's world (an MCP topology's server process); OpenEnv calls it
        when the session ends. An episode's world is also closed as soon as the episode is done."""
        if self._episode is not None:
            self._episode.close()

    def _observation(self, messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]] | None = None) -> TopoevalObservation:
        ep, tasks = self._episode, self._tasks
        assert ep is not None and tasks is not None
        scores, reward = None, 0.0
        if ep.done:
            scores = ep.record()["scores"]
            reward = tasks.reward(scores, self._metric)
            ep.close()  # scored: the world is done with
        status = ep.status if ep.done else "running"
        self._state = self._state.model_copy(update={"step_count": ep.turns, "status": status,
                                                     "tool_calls": len(ep.calls)})
        return TopoevalObservation(messages=messages, tools=tools or [], task_id=ep.task.id, topology=tasks.name,
                                   split=tasks.split, index=self._state.index or 0, turn=ep.turns, status=status,
                                   scores=scores, done=ep.done, reward=reward)

    # OpenEnv's task API (discovery only): the server's default topology.
    def list_splits(self) -> list[str]:
        tasks = self._topology(None, None, None)
        return [s for s in ("train", "dev", "test", "fewshot") if getattr(tasks.protocol.tasks, s, None) is not None]

    def num_tasks(self, split: str) -> int:
        return self._topology(None, None, split).count or 0

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        tasks = self._topology(None, None, split)
        if tasks.count is not None and not 0 <= index < tasks.count:
            raise IndexError(f"split '{split}' has {tasks.count} tasks")
        task = tasks.task(index)
        return {"id": task.id, "index": index, "split": split, "topology": tasks.name, "prompt": task.prompt}


def make_app(protocol: str = "wiki_to_travel", topology: str | None = None, split: str = "train",
             metric: str | dict[str, float] = "success", max_sessions: int = 64, suites_dirs: tuple[str, ...] = (),
             protocols: tuple[str, ...] = ()):
    """The FastAPI app OpenEnv builds around :class:`TopoevalEnvironment` (one per WebSocket session);
    a reset may name ``protocol`` or one of ``protocols`` (the operator's choice), nothing else."""
    load_topology_tasks(protocol, topology, split, suites_dirs=suites_dirs)  # a bad protocol fails here, once
    for other in protocols:
        load_topology_tasks(other, None, split, suites_dirs=suites_dirs)
    factory = functools.partial(TopoevalEnvironment, protocol, topology, split, metric, tuple(suites_dirs),
                                tuple(protocols))
    app = create_app(factory, TopoevalAction, TopoevalObservation, env_name=ENV_NAME,
                     max_concurrent_envs=max_sessions, state_cls=TopoevalState)
    app.add_exception_handler(UserError, _refusal)
    app.add_middleware(SameOriginOnly)
    return app


async def _refusal(request: Any, exc: Exception) -> Any:
    """A refusal over HTTP: its status (400 unless it says another) and its message, not a bare 500."""
    from fastapi.responses import JSONResponse

    return JSONResponse({"detail": str(exc)}, status_code=getattr(exc, "status", 400))


def same_origin(origin: bytes | None, host: bytes | None) -> bool:
    """Whether a request's ``Origin`` header is absent (not a browser) or names the host and port the request
    was sent to (its ``Host`` header); ``null`` (a ``file://`` or sandboxed page) and anything else is not."""
    if origin is None:
        return True
    if host is None:
        return False
    try:
        parts = urlsplit(origin.decode("latin-1").strip())
        port = parts.port or {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(parts.scheme)
        served = urlsplit("//" + host.decode("latin-1").strip())
        served_port = served.port or port
    except ValueError:  # a malformed header, a port out of range
        return False
    return bool(parts.hostname) and parts.hostname == served.hostname and port == served_port


class SameOriginOnly:
    """ASGI middleware: refuse HTTP requests and WebSocket handshakes from another origin (:func:`same_origin`)
    with 403, before the app sees them."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = dict(scope.get("headers") or [])
            if not same_origin(headers.get(b"origin"), headers.get(b"host")):
                if scope["type"] == "websocket":  # closed before it is accepted: the handshake gets 403
                    await send({"type": "websocket.close", "code": 1008, "reason": "cross-origin request refused"})
                    return
                body = b'{"detail":"cross-origin request refused: its Origin is not this server"}'
                await send({"type": "http.response.start", "status": 403,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def serve(host: str = "127.0.0.1", port: int = 8000, **app_kwargs: Any) -> None:
    """Serve :func:`make_app` with uvicorn until interrupted."""
    import uvicorn

    uvicorn.run(make_app(**app_kwargs), host=host, port=port, log_level="warning")


class TopoevalClient(EnvClient[TopoevalAction, TopoevalObservation, TopoevalState]):
    """OpenEnv's WebSocket client, typed for this server: ``step`` takes a :class:`TopoevalAction`
    (or its dict) and results carry :class:`TopoevalObservation`."""

    def _step_payload(self, action: TopoevalAction | dict[str, Any]) -> dict[str, Any]:
        return TopoevalAction.model_validate(action).model_dump(exclude={"metadata"}) if isinstance(action, dict) \
            else action.model_dump(exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[TopoevalObservation]:
        obs = TopoevalObservation.model_validate({**payload.get("observation", {}), "done": payload.get("done", False),
                                                  "reward": payload.get("reward")})
        return StepResult(observation=obs, reward=payload.get("reward"), done=payload.get("done", False),
                          metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> TopoevalState:
        return TopoevalState.model_validate(payload)
