"""The ``mcp`` suite: any MCP server's tools as a topology.

A topology names a server (a stdio command, or an in-process factory), a task file and an
annotation overlay (:mod:`.params`). Tools and their annotations come from the server's own
listing, mapped and overlaid (:mod:`.annotations`); the topology descriptor is derived from them
and from the tasks. Every episode gets a fresh scratch folder built from its task's fixture and a
fresh server on it (:mod:`.world`); concurrent episodes never share one. Tasks come from the file
in file order, per split (a fixed set: :class:`~topoeval.core.fixed_pool.FixedPoolSuite`; asked for
more than a split holds is an error naming its size; the seed enters only the task ids).

Subclass :class:`McpSuite` and set ``default_params`` to give another server its own suite name
(a suite folder or an entry point): transforms that read a suite's tool list before its parameters
(``rename_tools``, ``rename_args``, ``batch_api``) then see that server's tools.
"""

from __future__ import annotations

import difflib
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from topoeval.core.collateral import CollateralScope
from topoeval.core.commands import commands_allowed
from topoeval.core.errors import UserError
from topoeval.core.fixed_pool import FixedPoolSuite, commit_targets, derive_topology
from topoeval.core.messages import AssistantMessage
from topoeval.core.suite import (
    Effect, Split, SuiteManifest, Task, ToolSpec, TopologyDescriptor, World, WorldError, task_id, task_seed,
)

from . import collateral
from . import oracle as oracles
from .annotations import ASK_USER, tool_specs
from .connection import McpConnection
from .params import McpParams
from .taskfile import Check, answer_ok, build_fixture
from .world import McpWorld, commit_object

_LISTINGS: dict[str, list[Any]] = {}


def list_server_tools(params: McpParams) -> list[Any]:
    """The server's tool listing (``mcp.types.Tool``), from one probe start on the first task's
    fixture; cached per server and task file for the life of the process."""
    key = json.dumps([params.server.model_dump(mode="json"), str(params.task_path())], sort_keys=True)
    if key not in _LISTINGS:
        tf = params.task_file()
        root = Path(tempfile.mkdtemp(prefix="topoeval-mcp-probe-"))
        try:
            workdir = root / "work"
            workdir.mkdir()
            steps = [s.model_dump(exclude_none=True) for s in tf.fixture_steps(tf.tasks[0].fixture)]
            try:
                build_fixture(steps, workdir, tf.env, tf.pass_env)
            except RuntimeError as exc:
                raise UserError(f"{params.tasks}: task '{tf.tasks[0].name}': {exc}") from None
            try:
                conn = McpConnection(params.server.target(workdir), describe=params.server.describe(),
                                     timeout_s=params.server.timeout_s, startup_timeout_s=params.server.startup_timeout_s,
                                     errlog=root / "server.log")
            except WorldError as exc:
                raise UserError(f"cannot list the tools: {exc}") from None
            conn.close()
            _LISTINGS[key] = conn.tools
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return _LISTINGS[key]


class McpSuite(FixedPoolSuite[McpParams]):
    """See the module docstring."""

    Params = McpParams
    #: The task file's order is its author's: the seed enters only the task ids.
    seed_orders = False
    #: Parameters of a topology that gives none (empty: the shipped mcp-server-git example).
    default_params: ClassVar[dict[str, Any]] = {}

    def __init__(self, manifest: SuiteManifest, folder: str | None = None):
        self._derived: SuiteManifest | None = None
        super().__init__(manifest, folder)

    # The manifest's tools and topology are those of the default parameters, listed on first use
    # (so `topoeval suites` shows them); without the MCP SDK, or when that server cannot start,
    # the declared (empty) manifest stands.
    @property
    def manifest(self) -> SuiteManifest:
        if self._derived is None:
            self._derived = self._declared
            try:
                with commands_allowed():  # the suite's own default server (shipped or installed), not a protocol's
                    params = self.parse_params(self.default_params)
                    self._derived = self._declared.model_copy(
                        update={"tools": self.tools_for(params), "topology": self.topology_for(params)})
            except (UserError, ValueError, ValidationError):
                pass
        return self._derived

    @manifest.setter
    def manifest(self, value: SuiteManifest) -> None:
        self._declared, self._derived = value, None

    @property
    def name(self) -> str:
        return self._declared.name

    def parse_params(self, params: dict[str, Any] | None) -> McpParams:
        return McpParams.model_validate(params or self.default_params)

    # -- tools and topology --------------------------------------------------------------
    def _annotated(self, params: McpParams) -> tuple[list[ToolSpec], dict[str, str], dict[str, list[str]]]:
        """(tool specs, object argument per tool, bound arguments per tool)."""
        listing = list_server_tools(params)
        overlay = params.overlay_file()
        tf = params.task_file()
        confirmed = any(o.needs_confirmation for o in overlay.tools.values()) or any(
            (t.meta or {}).get("topoeval/needs_confirmation") for t in listing)
        # the simulated user is offered when a task has something to ask, or a call to confirm
        specs, objects = tool_specs(listing, overlay, source=params.tasks,
                                    with_user=confirmed or any(t.hidden for t in tf.tasks))
        bind = {t.name: sorted(set(overlay.bind) & set((t.input_schema or {}).get("properties") or {})) for t in listing}
        return specs, objects, bind

    def tools_for(self, params: McpParams) -> list[ToolSpec]:
        return self._annotated(params)[0]

    def task_problems(self, params: McpParams) -> list[str]:
        """A gold call or a check naming a tool the topology does not offer (misspelled, hidden by
        the overlay, or ``ask_user`` where no task has anything to ask): one line per mistake."""
        offered = sorted(t.name for t in self.tools_for(params))
        served = {t.name for t in list_server_tools(params)}
        out = []
        for spec in params.task_file().tasks:
            uses = [(f"gold call '{g.id}'", g.tool) for g in spec.gold]
            uses += [(f"check {i + 1}", c.tool) for i, c in enumerate(spec.checks) if c.tool is not None]
            damage = spec.collateral if spec.collateral is not None else params.task_file().collateral
            uses += [(f"collateral call {i + 1}", c.tool) for i, c in enumerate(damage)]
            for what, tool in uses:
                if tool in offered or (what.startswith("check") and tool in served):
                    continue
                why = ("which the overlay hides" if tool in served else
                       "but no task has hidden slots and no tool needs confirmation, so ask_user is not offered"
                       if tool == ASK_USER else "which the server does not offer")
                close = difflib.get_close_matches(tool, offered, n=1, cutoff=0.6)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (tools: {', '.join(offered)})"
                out.append(f"{params.tasks}: task '{spec.name}': {what} uses tool '{tool}', {why}"
                           f"{hint if tool != ASK_USER else ''}")
        return out

    def topology_for(self, params: McpParams) -> TopologyDescriptor:
        """Derived: state and reversibility from the tools' effects, the user from hidden slots, the
        dependency shape from the gold plans, distractors = tools no gold plan uses."""
        tf = params.task_file()
        golds = [t.gold for t in tf.tasks if t.gold]
        return derive_topology(
            self.tools_for(params), golds, schema_name=f"mcp-{tf.name}",
            answer_channel="state" if any(t.checks for t in tf.tasks) else "text",
            used={c.tool for g in golds for c in g}, user="hidden_slots" if any(t.hidden for t in tf.tasks) else "none",
            overrides=params.overlay_file().topology,
        )

    def system_prompt(self, params: McpParams) -> str:
        text = super().system_prompt(params)
        if any(t.name == ASK_USER for t in self.tools_for(params)):
            text += (" Ask the user (ask_user) for details only they know. Before an action that needs the user's"
                     " confirmation, ask them to confirm it and quote exactly what you will do.")
        return text

    # -- tasks: the file's tasks of a split, in file order ----------------------------
    def split_keys(self, params: McpParams, split: Split) -> range:
        return range(len(params.task_file().split(split)))

    def pool_note(self, params: McpParams, split: Split) -> str:
        return f" in {params.tasks}"

    def pool_task(self, params: McpParams, split: Split, seed: int, index: int, key: int) -> Task:
        tf = params.task_file()
        spec = tf.split(split)[key]
        tools, objects, bind = self._annotated(params)
        irreversible = [t.name for t in tools if t.effect == Effect.irreversible]
        targets = commit_targets(spec.gold, irreversible, lambda g: commit_object(g.tool, g.arguments, objects.get(g.tool)))
        overlay = params.overlay_file()
        s = task_seed(self.name, params, split, seed, index)
        return Task(
            id=task_id(self.name, split, index, s), suite=self.name, split=split, index=index, family=spec.family,
            prompt=spec.instruction,
            answer=spec.answer if spec.answer is not None else ("; ".join(spec.answer_contains) or None),
            answer_aliases=spec.answer_aliases,
            hidden_slots={k: v.value for k, v in spec.hidden.items()},
            gold=spec.gold, irreversible_tools=irreversible, commit_targets=targets,
            data={
                "name": spec.name, "file": tf.name,
                "server": params.server.model_dump(mode="json"),
                "fixture": [s.model_dump(exclude_none=True) for s in tf.fixture_steps(spec.fixture)],
                "env": tf.env, "state": tf.state, **({"pass_env": tf.pass_env} if tf.pass_env else {}),
                "checks": [c.model_dump(exclude_defaults=True) for c in spec.checks],
                "answer": spec.answer, "answer_aliases": spec.answer_aliases, "answer_contains": spec.answer_contains,
                "final": spec.final,
                **({"scope": spec.scope} if spec.scope else {}),
                "collateral": [c.model_dump() for c in (tf.collateral if spec.collateral is None else spec.collateral)],
                "slots": {k: v.model_dump() for k, v in spec.hidden.items()},
                "targets": targets,
                "bind": overlay.bind,
                "tools": {t.name: {"effect": t.effect.value, "object": objects.get(t.name), "bind": bind.get(t.name, []),
                                   "user_channel": t.user_channel} for t in tools},
                # ask_user answered here (the server has none of its own) or by the server
                "local_user": any(t.name == ASK_USER for t in tools) and ASK_USER not in bind,
            },
        )

    # -- episodes ------------------------------------------------------------------------
    def make_world(self, task: Task) -> World:
        return McpWorld(task.data)

    def score(self, task: Task, final_answer: str | None, world: World) -> dict[str, float | None]:
        """success: every check passes and the answer (if any) is right; partial: the share of those.
        A reference policy whose own gold plan errored says so (``oracle.PLAN_FAILED``) and fails."""
        assert isinstance(world, McpWorld)
        d = task.data
        results = [world.check(Check.model_validate(c))[0] for c in d["checks"]]
        if d["answer"] is not None or d["answer_contains"]:
            results.append(answer_ok(final_answer, d["answer"], d["answer_aliases"], d["answer_contains"]))
        failed = (final_answer or "").startswith(oracles.PLAN_FAILED)
        return {"success": float(all(results) and not failed), "partial": sum(results) / len(results)}

    def require_extra(self) -> None:
        from .connection import require_mcp

        require_mcp()

    def collateral_scope(self, task: Task) -> CollateralScope | None:
        return collateral.scope(task)

    def collateral_entities(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        return collateral.entities(snapshot)

    def collateral_call(self, task: Task, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        return collateral.collateral_call(task, messages)

    def oracle(self, task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        """Reference policies: see :mod:`.oracle`."""
        return oracles.next_message(task, messages, variant)
