"""The task file of an MCP topology: tasks, the fixtures their scratch state is built from, and
the checks that judge the end state.

YAML (or JSON Lines of tasks, for a file ending in ``.jsonl``)::

    name: git                       # the tool vocabulary's label (topology descriptor schema_name)
    env: {GIT_AUTHOR_DATE: ...}     # environment of fixture and check commands
    state: [[git, status, --porcelain]]   # commands whose outputs are the world snapshot
    fixtures:
      base: [{run: [git, init, -q]}, {write: {README.md: "# Demo\\n"}}]
      wip: {base: base, steps: [{write: {README.md: "changed\\n"}}]}
    tasks:
      - name: stage-readme
        fixture: wip
        instruction: Stage README.md.
        checks: [{command: [git, diff, --cached, --name-only], equals: README.md}]
        gold: [{id: add, tool: git_add, arguments: {files: [README.md]}}]

Commands are argument lists (no shell) run in the episode's scratch folder; ``{workdir}`` in
any of their strings is that folder.
"""

from __future__ import annotations

import json
import re
import subprocess
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from topoeval.core.answers import exact_match, normalize_answer
from topoeval.core.commands import command_env, guard
from topoeval.core.suite import GoldCall
from topoeval.core.yamlfile import YamlRejected, load_yaml, read_yaml_file

Split = Literal["train", "dev", "test", "fewshot"]
COMMAND_TIMEOUT_S = 30.0


def _argv(value: Any) -> Any:
    """YAML reads `-1` or `3` in a command as numbers: take them as the strings they are."""
    if isinstance(value, list):
        return [str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v for v in value]
    return value


class Check(BaseModel):
    """One fact the end state must show: a command's output or a tool's result, compared."""

    model_config = ConfigDict(extra="forbid")

    command: list[str] | None = Field(default=None, description="Command (argument list) run in the scratch folder.")
    tool: str | None = Field(default=None, description="Server tool called (bound arguments added) for its result text.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments of the tool call.")
    equals: str | None = Field(default=None, description="The output, stripped, equals this.")
    contains: list[str] = Field(default_factory=list, description="Each of these appears in the output.")
    absent: list[str] = Field(default_factory=list, description="None of these appears in the output.")
    matches: str | None = Field(default=None, description="This regular expression is found in the output.")

    _command_strings = field_validator("command", mode="before")(_argv)

    @model_validator(mode="after")
    def _one_source_some_test(self) -> "Check":
        if (self.command is None) == (self.tool is None):
            raise ValueError("a check needs exactly one of 'command' or 'tool'")
        if self.equals is None and not self.contains and not self.absent and self.matches is None:
            raise ValueError("a check needs a comparison: equals, contains, absent or matches")
        if self.matches is not None:
            re.compile(self.matches)
        return self

    def passes(self, output: str) -> bool:
        out = output.strip()
        return ((self.equals is None or out == self.equals.strip())
                and all(s in out for s in self.contains)
                and not any(s in out for s in self.absent)
                and (self.matches is None or re.search(self.matches, out, re.M) is not None))


class Slot(BaseModel):
    """A fact only the user knows."""

    model_config = ConfigDict(extra="forbid")

    value: str = Field(description="The fact.")
    keywords: list[str] = Field(min_length=1, description="Words that make a question about this slot (whole words).")
    answer: str | None = Field(default=None, description="What the user replies (default: the value).")


class FixtureStep(BaseModel):
    """One step of building a scratch folder: write files, or run a command."""

    model_config = ConfigDict(extra="forbid")

    write: dict[str, str] | None = Field(default=None, description="Relative path -> file content.")
    run: list[str] | None = Field(default=None, description="Command (argument list) run in the folder.")

    _run_strings = field_validator("run", mode="before")(_argv)

    @model_validator(mode="after")
    def _one(self) -> "FixtureStep":
        if (self.write is None) == (self.run is None):
            raise ValueError("a fixture step is either 'write' or 'run'")
        return self


class Fixture(BaseModel):
    """A named recipe for a scratch folder, optionally on top of another fixture."""

    model_config = ConfigDict(extra="forbid")

    base: str | None = Field(default=None, description="Fixture whose steps come first.")
    steps: list[FixtureStep] = Field(default_factory=list, description="Steps after the base's.")


class DamageCall(BaseModel):
    """One call of ``oracle-collateral``'s damage: a write on something outside the task."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1, description="Server tool called (bound arguments added).")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments of the tool call.")


#: Between a state command and one line of its output in an entity name (``git status | ## main``).
ENTITY_SEPARATOR = " | "


class TaskSpec(BaseModel):
    """One task of the file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="Unique name within the file.")
    family: str = Field(default="mcp", description="Task family (per-family breakdowns).")
    split: Split = Field(default="test", description="train | dev | test | fewshot.")
    fixture: str | None = Field(default=None, description="Fixture the scratch folder is built from.")
    instruction: str = Field(min_length=1, description="The user's message.")
    hidden: dict[str, Slot] = Field(default_factory=dict, description="Slots only the user knows (ask_user).")
    checks: list[Check] = Field(default_factory=list, description="The expected end state.")
    answer: str | None = Field(default=None, description="Expected answer (normalised exact match, or aliases).")
    answer_aliases: list[str] = Field(default_factory=list, description="Other accepted answers.")
    answer_contains: list[str] = Field(
        default_factory=list, description="Strings the final answer must all contain (case-insensitive).")
    gold: list[GoldCall] = Field(default_factory=list, description="Gold call plan (the oracle, the dimensions).")
    final: str | None = Field(default=None, description="The oracle's final message (default: the answer, or 'Done.').")
    scope: list[str] = Field(default_factory=list, description=(
        "Entities the task may change whatever its gold plan does: fnmatch patterns '<state command> | <line>' "
        "over the lines of the state commands' outputs (collateral damage; the gold plan's own changes are "
        "in scope anyway)."))
    collateral: list[DamageCall] | None = Field(default=None, description=(
        "oracle-collateral's damage on this task (default: the file's 'collateral'; [] for none)."))

    @model_validator(mode="after")
    def _judged(self) -> "TaskSpec":
        if not self.checks and self.answer is None and not self.answer_contains:
            raise ValueError(f"task '{self.name}' has nothing to judge it by: give checks, answer or answer_contains")
        return self


class TaskFile(BaseModel):
    """A whole task file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, description="Label of the tool vocabulary (schema_name: 'mcp-<name>').")
    description: str = Field(default="", description="What the tasks exercise.")
    env: dict[str, str] = Field(default_factory=dict, description="Environment of fixture and check commands.")
    pass_env: list[str] = Field(default_factory=list, description=(
        "Variables of topoeval's own environment the fixture, state and check commands get besides the base set "
        "(PATH, HOME, the locale, ...: topoeval.core.commands.BASE_ENV); nothing else is passed, so API keys and "
        "tokens stay behind unless named here."))
    state: list[list[str]] = Field(default_factory=list, description="Commands whose outputs form the snapshot.")
    fixtures: dict[str, Fixture | list[FixtureStep]] = Field(default_factory=dict, description="Named fixtures.")
    tasks: list[TaskSpec] = Field(min_length=1, description="The tasks.")
    collateral: list[DamageCall] = Field(default_factory=list, description=(
        "oracle-collateral's damage, made after a task's gold plan: calls that write outside every task's scope "
        "(a task's own 'collateral' replaces it)."))

    @field_validator("state", mode="before")
    @classmethod
    def _state_strings(cls, value: Any) -> Any:
        return [_argv(v) for v in value] if isinstance(value, list) else value

    @model_validator(mode="after")
    def _consistent(self) -> "TaskFile":
        names = [t.name for t in self.tasks]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"task names repeat: {', '.join(dupes)}")
        for t in self.tasks:
            if t.fixture is not None and t.fixture not in self.fixtures:
                raise ValueError(f"task '{t.name}': unknown fixture '{t.fixture}'")
        for name in self.fixtures:
            self.fixture_steps(name)  # bases exist, no cycles
        commands = [" ".join(argv) for argv in self.state]
        for t in self.tasks:
            for pattern in t.scope:
                command, sep, _ = pattern.partition(ENTITY_SEPARATOR)
                if not sep or not any(fnmatchcase(c, command) for c in commands):
                    raise ValueError(f"task '{t.name}': scope pattern '{pattern}' names no state command: write it "
                                     f"as '<state command>{ENTITY_SEPARATOR}<line>' "
                                     f"(state: {'; '.join(commands) or 'none'})")
        return self

    def fixture_steps(self, name: str | None, seen: tuple[str, ...] = ()) -> list[FixtureStep]:
        """Every step of fixture ``name``, its bases' first."""
        if name is None:
            return []
        if name in seen:
            raise ValueError(f"fixture '{name}' is its own base")
        if name not in self.fixtures:
            raise ValueError(f"unknown fixture '{name}'")
        fx = self.fixtures[name]
        if isinstance(fx, list):
            return list(fx)
        return [*self.fixture_steps(fx.base, (*seen, name)), *fx.steps]

    def split(self, split: str) -> list[TaskSpec]:
        return [t for t in self.tasks if t.split == split]


_CACHE: dict[tuple[str, float], TaskFile] = {}


def load_task_file(path: Path) -> TaskFile:
    """Parse and validate a task file (cached by path and modification time); ValueError when bad."""
    try:
        key = (str(path), path.stat().st_mtime)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the task file: {exc.strerror}") from None
    if key in _CACHE:
        return _CACHE[key]
    try:
        text = read_yaml_file(path)
        if path.suffix == ".jsonl":
            raw: Any = {"name": path.stem, "tasks": [json.loads(line) for line in text.splitlines() if line.strip()]}
        else:
            raw = load_yaml(text, str(path)) or {}
    except YamlRejected as exc:
        raise ValueError(str(exc)) from None
    except (OSError, yaml.YAMLError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot parse the task file: {exc}") from None
    try:
        parsed = TaskFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{path}: {where + ': ' if where else ''}{first['msg'].removeprefix('Value error, ')}") from None
    _CACHE[key] = parsed
    return parsed


def substitute(value: Any, workdir: str) -> Any:
    """``{workdir}`` replaced in every string of ``value``."""
    if isinstance(value, str):
        return value.replace("{workdir}", workdir)
    if isinstance(value, list):
        return [substitute(v, workdir) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, workdir) for k, v in value.items()}
    return value


def run_command(argv: list[str], workdir: Path, env: dict[str, str],
                pass_env: list[str] | tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """Run one fixture or check command in ``workdir`` (no shell, bounded time), with the base
    environment, the ``pass_env`` variables and ``env`` only (:func:`topoeval.core.commands.command_env`)."""
    guard(f"command '{' '.join(argv)}'")
    return subprocess.run(substitute(argv, str(workdir)), cwd=workdir, env=command_env(pass_env, env),
                          capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)


def build_fixture(steps: list[dict[str, Any]], workdir: Path, env: dict[str, str],
                  pass_env: list[str] | tuple[str, ...] = ()) -> None:
    """Carry out fixture steps (as dumped dicts) in ``workdir``; RuntimeError names a failing step."""
    for i, step in enumerate(steps):
        if step.get("write") is not None:
            for rel, content in step["write"].items():
                target = (workdir / rel).resolve()
                if workdir.resolve() not in target.parents:
                    raise RuntimeError(f"fixture step {i}: '{rel}' is outside the scratch folder")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
        else:
            try:
                proc = run_command(step["run"], workdir, env, pass_env)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise RuntimeError(f"fixture step {i} {step['run']}: {exc}") from None
            if proc.returncode != 0:
                why = (proc.stderr or proc.stdout).strip().splitlines()
                raise RuntimeError(f"fixture step {i} {step['run']} failed: {why[-1] if why else proc.returncode}")


def answer_ok(final_answer: str | None, answer: str | None, aliases: list[str], contains: list[str]) -> bool:
    """Whether the final answer is right: it matches ``answer`` (or an alias) after normalisation,
    or it contains every string of ``contains``; True when the task expects no answer."""
    if answer is None and not contains:
        return True
    if answer is not None and exact_match(final_answer, [answer, *aliases]):
        return True
    text = normalize_answer(final_answer)
    return bool(contains) and bool(text) and all(normalize_answer(c) in text for c in contains)
