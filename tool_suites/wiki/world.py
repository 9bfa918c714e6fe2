"""The wiki suite: read-only search over an encyclopedia, answers in text.

Each task owns a small encyclopedia generated from the task's seed (or, with
``corpus: hotpotqa``, the context paragraphs of one HotpotQA row), so a task is a pure
function of (suite, params, split, seed, index) and carries its whole world in ``data``.
"""

from __future__ import annotations

import difflib
import random
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from topoeval.core.answers import exact_match, token_f1
from topoeval.core.messages import AssistantMessage, final
from topoeval.policies.oracle import next_calls
from topoeval.core.suite import SPLITS, Suite, Task, ToolError, World, task_id, task_seed

from . import encyclopedia, hotpot
from .questions import chain_question, compare_question


class WikiParams(BaseModel):
    """Parameters of the wiki suite a protocol topology may set."""

    model_config = ConfigDict(extra="forbid")

    question_types: list[Literal["single", "chain", "compare"]] = Field(
        default_factory=lambda: ["single", "chain", "compare"], min_length=1, description="Question families to draw."
    )
    hops: list[int] = Field(default_factory=lambda: [2], min_length=1, description="Depths of 'chain' questions (2-4).")
    compare_n: int = Field(default=2, ge=2, le=3, description="Entities compared by 'compare' questions.")
    corpus: Literal["synthetic", "hotpotqa"] = Field(default="synthetic", description="Generated or HotpotQA corpus.")
    hotpotqa_path: str | None = Field(default=None, description="Local HotpotQA-schema file for corpus: hotpotqa.")
    top_k: int = Field(default=5, ge=1, le=20, description="Results returned by search.")

    @field_validator("hops")
    @classmethod
    def _hops_range(cls, hops: list[int]) -> list[int]:
        bad = [h for h in hops if not 2 <= h <= 4]
        if bad:
            raise ValueError(f"chain depth {bad[0]} is outside 2-4")
        return hops

    def families(self) -> list[str]:
        out: list[str] = []
        for qt in self.question_types:
            if qt == "single":
                out.append("single")
            elif qt == "chain":
                out += [f"chain-{h}" for h in self.hops]
            else:
                out.append(f"compare-{self.compare_n}")
        return out


SYSTEM_PROMPT = (
    "Answer the user's question using the encyclopedia tools. open_page needs an exact title; "
    "search finds titles. Independent look-ups may go in one turn. "
    "When you know the answer, reply with only the answer (a name, year or short phrase) and no tool call."
)


class WikiSuite(Suite[WikiParams]):
    Params = WikiParams

    def system_prompt(self, params: WikiParams) -> str:
        return SYSTEM_PROMPT

    def generate(self, params: WikiParams, split, seed: int, index: int) -> Task:
        s = task_seed(self.name, params, split, seed, index)
        if params.corpus == "hotpotqa":
            return self._hotpot_task(params, split, index, s)
        rng = random.Random(s)
        families = params.families()
        family = families[index % len(families)]
        enc = encyclopedia.generate(rng, SPLITS.index(split), len(SPLITS))
        if family.startswith("compare"):
            q = compare_question(enc, rng, params.compare_n)
        else:
            q = chain_question(enc, rng, 1 if family == "single" else int(family.split("-")[1]))
        return Task(
            id=task_id(self.name, split, index, s),
            suite=self.name,
            split=split,
            index=index,
            family=family,
            prompt=q.text,
            answer=q.answer,
            gold=q.gold,
            data={"pages": enc.pages, "top_k": params.top_k},
        )

    def _hotpot_task(self, params: WikiParams, split, index: int, s: int) -> Task:
        from topoeval.core.errors import UserError

        if not params.hotpotqa_path:
            raise UserError("wiki: corpus 'hotpotqa' needs params.hotpotqa_path")
        rows = hotpot.load_rows(params.hotpotqa_path)[split]
        if index >= len(rows):
            raise UserError(f"wiki: {params.hotpotqa_path} has only {len(rows)} rows in split '{split}'")
        f = hotpot.row_to_task_fields(rows[index])
        return Task(
            id=task_id(self.name, split, index, s),
            suite=self.name,
            split=split,
            index=index,
            family=f["family"],
            prompt=f["prompt"],
            answer=f["answer"],
            gold=f["gold"],
            data={"pages": f["pages"], "top_k": params.top_k, "source_id": f["source_id"]},
        )

    def make_world(self, task: Task) -> "WikiWorld":
        return WikiWorld(task.data["pages"], task.data.get("top_k", 5))

    def score(self, task: Task, final_answer: str | None, world: World) -> dict[str, float | None]:
        golds = [task.answer or "", *task.answer_aliases]
        return {"success": exact_match(final_answer, golds), "f1": token_f1(final_answer, golds)}

    def oracle(self, task: Task, messages: list[dict[str, Any]], variant: str = "oracle") -> AssistantMessage:
        """Open the gold pages as soon as their dependencies are read (parallel), then answer.

        The wiki has no user, no commitment and no trade-off, so ``oracle-no-ask``,
        ``oracle-reckless`` and ``oracle-no-priority`` behave exactly like the oracle here.
        """
        return next_calls(task.gold, messages, self.tools, variant) or final(task.answer or "")


class WikiWorld(World):
    """Read-only: search (BM25 over the task's pages) and open_page."""

    def __init__(self, pages: dict[str, str], top_k: int):
        self.pages = pages
        self.top_k = top_k
        self.events = []
        self._folded = {" ".join(t.lower().split()): t for t in pages}

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        if name == "search":
            return self._search(arguments["query"])
        if name == "open_page":
            return self._open(arguments["title"])
        raise ToolError(f"unknown tool '{name}'")

    def snapshot(self) -> dict[str, Any]:
        return {}

    def _open(self, title: str) -> dict[str, str]:
        key = " ".join(title.lower().split())
        if key in self._folded:
            real = self._folded[key]
            return {"title": real, "text": self.pages[real]}
        close = difflib.get_close_matches(title, list(self.pages), n=3, cutoff=0.5)
        hint = f" Closest titles: {', '.join(close)}." if close else " Use search to find titles."
        raise ToolError(f"No page titled '{title}'.{hint}")

    def _search(self, query: str) -> list[dict[str, str]]:
        titles = list(self.pages)
        retriever = _index(tuple(titles), tuple(self.pages[t] for t in titles))
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        if not tokens[0]:
            return []
        k = min(self.top_k, len(titles))
        docs, scores = retriever.retrieve(tokens, k=k, show_progress=False)
        hits = []
        for doc, score in zip(docs[0], scores[0]):
            if score > 0:
                text = self.pages[titles[int(doc)]]
                hits.append({"title": titles[int(doc)], "snippet": text.split(". ")[0][:160]})
        return hits


@lru_cache(maxsize=256)
def _index(titles: tuple[str, ...], texts: tuple[str, ...]):
    """A BM25 index over title + text, cached so k samples of a task share one."""
    import bm25s

    corpus = [f"{t}. {x}" for t, x in zip(titles, texts)]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    return retriever
