"""What an episode record must hold to be read: one pydantic model, checked as every line is read.

A run folder may come from anyone, and a line of ``episodes.jsonl`` may be foreign (another tool's
JSON, a hand edit, a record of another layout). Every reader (the store's, a merge's, publish's, the
viewer's index) checks each record with :func:`record_problem` before it uses it: a record the summary,
the reports or a publish would index or compute from wrongly (a missing field, ``"scores": null``,
``"messages": "x"``, a key that is not ``model|baseline|topology|task_id|sample`` of its own fields) is
skipped, counted in the file's one warning, and its key is not finished (a resume runs it again).

The model is strict on the fields readers index or compute from and ignores the others (a record
may carry more than this version of topoeval knows). Checking costs one ``model_validate`` of the
parsed dict per record (see docs/large-runs.md for what it costs on ``bench/scale.py``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

#: scores that readers compute with (the summary's metrics and diagnostics, publish's columns): a number or null
NUMERIC_SCORES = ("success", "f1", "dq", "clarification", "priority", "risk", "parallelism", "efficiency",
                  "tool_calls", "invalid_calls", "tool_errors", "redundant_calls", "unanswered_questions",
                  "turns", "prompt_tokens", "completion_tokens", "cost")


class EpisodeRecord(BaseModel):
    """One line of an episode file, as far as readers rely on it (other fields are kept, unchecked)."""

    model_config = ConfigDict(strict=True, extra="ignore")

    key: str = Field(description="The episode's identity, model|baseline|topology|task_id|sample of this record.")
    episode_id: str = Field(description="A short hash of the key (the summary lists cells' episodes by it).")
    model: str = Field(description="The model (policy) that played the episode.")
    baseline: str = Field(description="The baseline it ran under (zero-shot, k-shot).")
    topology: str = Field(description="The topology it ran on.")
    suite: str = Field(description="The suite of that topology.")
    role: str | None = Field(description="The topology's role (id, ood, ladder; null in a matrix protocol).")
    task_id: str = Field(description="The task.")
    sample: int = Field(ge=0, description="Which sample of the task (0 for greedy runs).")
    status: str = Field(description="How the episode ended (done, a limit, error, ...).")
    scores: dict[str, Any] = Field(description="Scores by name; those in NUMERIC_SCORES are numbers or null.")
    messages: list[Any] = Field(description="The conversation, one dict (JSON object) per message.")
    calls: list[Any] = Field(default_factory=list, description="Every tool call, one dict each.")
    events: list[Any] = Field(default_factory=list, description="The world's events, one dict each.")
    errors: list[Any] | None = Field(default=None, description="What went wrong (texts), if anything.")

    @field_validator("scores")
    @classmethod
    def _numeric_scores(cls, scores: dict[str, Any]) -> dict[str, Any]:
        for name in NUMERIC_SCORES:
            value = scores.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise ValueError(f"scores.{name} is not a number")
        return scores

    @field_validator("messages", "calls", "events")
    @classmethod
    def _objects(cls, items: list[Any]) -> list[Any]:
        # checked here, not as list[dict]: pydantic would copy every dict of every record (four times slower)
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValueError(f"item {i} is not an object")
        return items

    @model_validator(mode="after")
    def _key_matches(self) -> EpisodeRecord:
        if self.key != f"{self.model}|{self.baseline}|{self.topology}|{self.task_id}|{self.sample}":
            raise ValueError("key is not model|baseline|topology|task_id|sample of the record")
        return self


def record_problem(record: Any) -> str | None:
    """Why ``record`` (a parsed JSON line) is not an episode record readers can use, in a few words;
    None when it is one. Never raises."""
    if not isinstance(record, dict):
        return "not an episode record (not an object)"
    if not isinstance(record.get("key"), str):
        return "not an episode record (no string key)"
    try:
        EpisodeRecord.model_validate(record)
    except ValidationError as exc:
        err = exc.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        return f"not an episode record ({where + ': ' if where else ''}{msg})"
    except RecursionError:
        return "not an episode record (nested too deep)"
    return None


def is_episode_record(record: Any) -> bool:
    """Whether ``record`` is an episode record readers can use (:func:`record_problem` finds nothing)."""
    return record_problem(record) is None
