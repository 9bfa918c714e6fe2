"""One run's settings: :class:`RunConfig`, built by ``topoeval run`` and :func:`topoeval.run_protocol`.

The same object reaches the runner, is handed (pickled) to worker processes and Ray tasks, and is
recorded whole in run.json (``config``; the API key left out). What of it can change an episode is
the run's **identity** (:func:`run_identity`): it is hashed into the default run id, compared key by
key when a folder is resumed (a difference is refused in one line naming the setting), and salts the
response-cache key, so a reply is never reused for a request made under other settings.

The identity holds:

- the protocol as run (its sha256: ``shots``, ``max_turns``, ``max_tokens``, ``temperature`` and
  ``top_p`` are applied to it first, see :meth:`RunConfig.effective_protocol`) and the task set;
- ``settings``: the effective sampling, limits and baselines (so a change is named, not just
  "another protocol"), the tool mode, the local context window, :data:`DECODING_VERSION`, and the user
  model with its instruction version when one plays the user (``user_model``);
- ``models``: per model, what its name alone does not fix — adapter weights, and a local model's
  inference fingerprint (llama.cpp build, CPU features, slots, context, threads).

Settings that change how episodes are scheduled or reached, not what they are (concurrency,
workers, executor, shard, timeouts, retries, the API base and key, the cache, progress) are not; nor
are the reply limits (``reply_limits``), which change only replies no sane model sends.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from topoeval.core.choices import Executor
from topoeval.core.errors import UserError
from topoeval.core.policy import Policy
from topoeval.core.replies import ReplyLimits
from topoeval.core.secrets import mask_url
from topoeval.core.users import UserSettings
from topoeval.core.version import DECODING_VERSION
from topoeval.models.options import ModelOptions
from topoeval.protocol.schema import MAX_SAMPLES, MAX_TASKS, Protocol
from topoeval.runner.shards import Shard


class RunConfig(BaseModel):
    """Every setting of one run of a protocol (see the module docstring for which are its identity)."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True, validate_assignment=False)

    protocol: Protocol | str | Path = Field(description="A Protocol, a path to a protocol YAML, or a shipped name.")
    models: list[str | Policy] = Field(default_factory=list, description=(
        "Models to evaluate: names (``oracle``, ``smollm2-135m``, ``direct:NAME``, ``provider/model``, ...) "
        "or Policy objects."))
    out: Path | None = Field(default=None, description="The run folder (default results/<protocol>/<run-id>).")
    tasks: int | None = Field(default=None, ge=1, le=MAX_TASKS, description=(
        f"Test tasks per topology (default: the protocol's; at most {MAX_TASKS:,})."))
    samples: int | None = Field(default=None, ge=1, le=MAX_SAMPLES, description=(
        f"Samples per task (default: the protocol's; at most {MAX_SAMPLES})."))
    shots: list[int] | None = Field(default=None, description="Keep only these baselines (shot counts) of the "
                                                              "protocol.")
    topologies: list[str] | None = Field(default=None, description=(
        "Keep only these topologies of a matrix protocol (``--topology``; e.g. k samples on two of them)."))
    max_turns: int | None = Field(default=None, ge=1, description="Override the protocol's turns per episode.")
    max_tokens: int | None = Field(default=None, ge=1, description="Override the protocol's tokens per turn.")
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, description="Override the protocol's temperature.")
    top_p: float | None = Field(default=None, gt=0.0, le=1.0, description="Override the protocol's top_p.")
    model_options: ModelOptions = Field(default_factory=ModelOptions, description=(
        "How every model backend is reached and driven (API base and key, tool mode, timeouts, local slots, ...)."))
    concurrency: int | None = Field(default=None, ge=1, description="Concurrent episodes per model (default: the "
                                                                    "backend's).")
    cache: bool = Field(default=True, description="Keep model responses in <run>/cache.sqlite so a re-run never pays "
                                                  "twice.")
    suites_dirs: list[Path] = Field(default_factory=list, description="Extra folders of suites.")
    trained_on: list[Path] = Field(default_factory=list, description=(
        "`topoeval export` folders the models were trained on: evaluated tasks found in them are warned about."))
    train_topologies: dict[str, str] = Field(default_factory=dict, description=(
        "Per model, the matrix topology it was trained on (``--trained-on MODEL=TOPOLOGY``): the diagonal of its row "
        "of a transfer matrix (default: its adapter's training record, else none). Recorded, not part of the "
        "identity: it changes no episode."))
    shard: Shard | None = Field(default=None, description="Run only this shard (``i/n``) of the episodes.")
    workers: int | None = Field(default=None, ge=0, description=(
        "Local worker processes (0: one per CPU core); None: chosen by runner.workers.auto_workers (1, or several "
        "sharing the concurrency for direct: models at concurrency >= 128)."))
    executor: Executor = Field(default=Executor.local, description="local processes, or Ray tasks.")
    progress: bool = Field(default=False, description="Show a progress bar.")
    reply_limits: ReplyLimits = Field(default_factory=ReplyLimits, description=(
        "What one model reply may hold (text characters, tool-name length, argument nesting depth, response bytes; "
        "topoeval.core.replies.ReplyLimits): a reply over a limit is cut or makes an invalid call, never stops the "
        "run. Raise one (e.g. reply_limits={'max_reply_chars': 1_000_000}) for a model that needs more."))
    user_model: str | None = Field(default=None, description=(
        "A model that plays the simulated user (``ask_user``) from the task's hidden slots; None: each suite's "
        "deterministic user, the reference (topoeval.core.users)."))

    @model_validator(mode="before")
    @classmethod
    def _split_trained_on(cls, data: Any) -> Any:
        """``trained_on`` entries of the form ``MODEL=TOPOLOGY`` (not an existing folder) are train
        topologies (``--trained-on`` takes both); the rest stay export folders."""
        if not isinstance(data, dict) or not data.get("trained_on"):
            return data
        folders: list[Any] = []
        pairs: list[str] = []
        for entry in data["trained_on"]:
            text = str(entry)
            (pairs if "=" in text and not Path(text).exists() else folders).append(text if "=" in text else entry)
        if pairs:
            from topoeval.runner.matrix import parse_train_topologies

            data = {**data, "trained_on": folders,
                    "train_topologies": {**(data.get("train_topologies") or {}), **parse_train_topologies(pairs)}}
        return data

    @field_validator("shard", mode="before")
    @classmethod
    def _shard(cls, value: Any) -> Any:
        return Shard.parse(value) if isinstance(value, str) else value

    @field_validator("models", mode="before")
    @classmethod
    def _models(cls, value: Any) -> Any:
        return [value] if isinstance(value, (str, Policy)) else value

    @classmethod
    def build(cls, protocol: Any, models: Any = (), out: Any = None, **settings: Any) -> RunConfig:
        """A RunConfig from :func:`topoeval.run_protocol`'s arguments; an unknown or invalid setting is one
        UserError naming the argument (with a did-you-mean)."""
        if isinstance(protocol, RunConfig):
            update = {k: v for k, v in (("models", list(models) or None), ("out", out)) if v is not None}
            settings = {**update, **settings}
            if not settings:
                return protocol
            protocol, base = protocol.protocol, protocol.model_dump(exclude_unset=True) | {"models": protocol.models}
            settings = {**base, **settings}
            settings.pop("protocol", None)
        else:
            settings = {"models": list(models), "out": out, **settings}
        unknown = [k for k in settings if k not in cls.model_fields]
        if unknown:
            hint = difflib.get_close_matches(unknown[0], list(cls.model_fields), n=1)
            raise UserError(f"run_protocol() has no setting '{unknown[0]}'"
                            + (f" (did you mean '{hint[0]}'?)" if hint else "")
                            + f"; settings: {', '.join(k for k in cls.model_fields if k != 'protocol')}")
        try:
            return cls(protocol=protocol, **{k: v for k, v in settings.items() if v is not None})
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise UserError(f"run_protocol() setting {where}: {err['msg']} (got {err.get('input')!r})") from None

    # -- what the settings do to the protocol and to the run's record ----------------------------------

    def effective_protocol(self, protocol: Protocol) -> Protocol:
        """``protocol`` with this run's overrides applied (idempotent: applying twice changes nothing)."""
        if self.shots is not None:
            kept = sorted(set(self.shots) & set(protocol.baselines.shots))
            if not kept:
                raise UserError(f"shots {sorted(set(self.shots))}: none is among the protocol's baselines "
                                f"{protocol.baselines.shots}")
            protocol = protocol.model_copy(update={"baselines": protocol.baselines.model_copy(update={"shots": kept})})
        if self.topologies is not None:
            protocol = _keep_topologies(protocol, self.topologies)
        limits = {k: v for k, v in (("max_turns", self.max_turns), ("max_tokens", self.max_tokens)) if v is not None}
        if limits:
            protocol = protocol.model_copy(update={"limits": protocol.limits.model_copy(update=limits)})
        sampling = {k: v for k, v in (("temperature", self.temperature), ("top_p", self.top_p)) if v is not None}
        if sampling:
            protocol = protocol.model_copy(update={"sampling": protocol.sampling.model_copy(update=sampling)})
        return protocol

    def overrides(self) -> dict[str, Any]:
        """What a reproduction needs besides the protocol name (run.json's ``overrides``; publish cites it)."""
        keys = ("tasks", "samples", "topologies", "max_turns", "max_tokens", "temperature", "top_p")
        return {k: getattr(self, k) for k in keys if getattr(self, k) is not None}

    def record(self) -> dict[str, Any]:
        """The whole configuration as run.json keeps it: models by name, paths as text, no API key (nor
        a credential inside an API base URL: :func:`topoeval.core.secrets.mask_url`)."""
        data = self.model_dump(mode="json", exclude={"protocol", "models", "model_options"})
        data["protocol"] = self.protocol.name if isinstance(self.protocol, Protocol) else str(self.protocol)
        data["models"] = [m.name if isinstance(m, Policy) else m for m in self.models]
        data["model_options"] = self.model_options.model_dump(mode="json", exclude={"api_key"})
        data["model_options"]["api_key"] = "(set)" if self.model_options.api_key else None
        opts = data["model_options"]  # a credential in a URL (user:token@, ?api-key=) is masked too
        opts["api_base"] = mask_url(opts["api_base"]) if opts.get("api_base") else opts.get("api_base")
        opts["api_bases"] = [mask_url(u) for u in opts.get("api_bases") or []]
        return data

    def settings(self, protocol: Protocol) -> dict[str, Any]:
        """The episode-changing settings besides the protocol's other fields (``protocol`` as run)."""
        opts = self.model_options
        return {
            "temperature": protocol.sampling.temperature, "top_p": protocol.sampling.top_p,
            "max_turns": protocol.limits.max_turns, "max_tokens": protocol.limits.max_tokens,
            "shots": list(protocol.baselines.shots), "decoding_version": DECODING_VERSION, **opts.episode_settings(),
            **UserSettings(model=self.user_model).identity(),  # nothing for the default user
        }


def _keep_topologies(protocol: Protocol, names: list[str]) -> Protocol:
    """``protocol`` with only the matrix topologies ``names`` (in the protocol's order; idempotent)."""
    if protocol.matrix is None:
        raise UserError(f"--topology picks topologies of a matrix protocol; '{protocol.name}' is not one")
    have = [t.name for t in protocol.matrix.topologies]
    unknown = [n for n in names if n not in have]
    if unknown:
        hint = difflib.get_close_matches(unknown[0], have, n=1)
        raise UserError(f"--topology {unknown[0]}: the matrix has no such topology"
                        + (f" (did you mean '{hint[0]}'?)" if hint else "") + f"; it has: {', '.join(have)}")
    kept = [t for t in protocol.matrix.topologies if t.name in names]
    if len(kept) < 2:  # the schema's minimum: a matrix of one topology has no off-diagonal
        raise UserError(f"--topology keeps {len(kept)} topology; a matrix needs at least 2")
    return protocol.model_copy(update={"matrix": protocol.matrix.model_copy(update={"topologies": kept})})


def model_identity(policy: Policy) -> dict[str, Any]:
    """What a model's name alone does not fix: its adapter weights, a local model's inference fingerprint."""
    out: dict[str, Any] = {}
    if policy.weights:
        out["weights"] = policy.weights
    if policy.inference:
        out["inference"] = policy.inference
    return out


def run_identity(config: RunConfig, protocol: Protocol, p_hash: str, t_hash: str,
                 policies: list[Policy], suite_versions: dict[str, str] | None = None) -> dict[str, Any]:
    """The run's identity (module docstring): run.json's ``identity``, hashed into the run id.
    ``suite_versions``: the :meth:`~topoeval.core.suite.Suite.behaviour_version` of each suite the run uses
    that has one (none: the settings as before, so those runs keep their ids)."""
    settings = config.settings(protocol)
    if suite_versions:
        settings["suite_versions"] = dict(sorted(suite_versions.items()))
    return {"protocol_sha256": p_hash, "task_set_sha256": t_hash, "settings": settings,
            "models": {p.name: model_identity(p) for p in policies}}


def digest(data: Any) -> str:
    """sha256 of ``data``'s canonical JSON."""
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()


#: The identity settings that change the reply to one request beyond what the cache key already holds
#: (model, messages, tools, sampling): the harness's prompt/decoding code and the model options that
#: decide what is sent (:attr:`ModelOptions.EPISODE_FIELDS`). Turn limits, baselines and the user
#: change which requests are made, not their replies, so a cache seeded from another protocol's run
#: (``make leaderboard``'s reverse direction) still answers them.
CACHE_SETTINGS = ("decoding_version", *ModelOptions.EPISODE_FIELDS)


def cache_salt(identity: dict[str, Any], model: str) -> str:
    """What a model's response-cache keys are salted with: :data:`CACHE_SETTINGS` and that model's
    identity (its adapter weights, a local model's inference fingerprint)."""
    settings = identity["settings"]
    return digest([{k: settings.get(k) for k in CACHE_SETTINGS}, identity["models"].get(model, {})])


def check_identity(run_dir: Path, before: dict[str, Any] | None, now: dict[str, Any]) -> None:
    """Refuse (one line naming the setting) to resume ``run_dir`` under settings its episodes were not run
    with. ``before``: the folder's recorded identity (None: a folder from before run identities)."""
    where = f"{run_dir}: its episodes were run with"
    fix = "use another out folder (or the same settings)"
    if before is None:
        raise UserError(f"{run_dir}: was written by a topoeval without run identities (before decoding version "
                        f"{DECODING_VERSION}); its episodes may differ from this version's: {fix}")
    recorded = before.get("settings", {})
    for key in [*now["settings"], *(k for k in recorded if k not in now["settings"])]:  # one recorded, now unset too
        old, value = recorded.get(key), now["settings"].get(key)
        if old != value:
            raise UserError(f"{where} {key} {old!r}, this run asks for {value!r}; {fix}")
    for name, mine in now["models"].items():
        old = before.get("models", {}).get(name)
        if old is None:
            continue  # a model new to the folder
        for part in sorted(set(old) | set(mine)):
            if old.get(part) != mine.get(part):
                was, new = _short(old.get(part)), _short(mine.get(part))
                if part == "weights":
                    raise UserError(f"{where} other weights for '{name}' ({was}, now "
                                    f"{new.removeprefix('sha256 ')}: the adapter was retrained); {fix}")
                raise UserError(f"{where} another {part} for '{name}' ({was}, now {new}); {fix}")


def _short(value: Any) -> str:
    if isinstance(value, str):
        return f"sha256 {value[:12]}" if len(value) == 64 else value
    return "none" if value is None else f"fingerprint {digest(value)[:12]}"
