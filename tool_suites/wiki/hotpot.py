"""A real QA corpus in the HotpotQA "distractor" schema, loaded through ``datasets``.

Expected columns: ``id``, ``question``, ``answer``, ``type`` (``bridge`` | ``comparison``),
``supporting_facts`` ({``title``: [...], ``sent_id``: [...]}) and ``context``
({``title``: [...], ``sentences``: [[...], ...]}) — the layout of the ``hotpot_qa``
"distractor" configuration on the Hugging Face Hub. Any local file ``datasets`` can read
(parquet, json/jsonl, csv) or a saved dataset folder works; nothing is downloaded.

Each row becomes one task whose world is that row's own context paragraphs (the gold
paragraphs plus the distractors). Rows are assigned to splits by a hash of their id, so the
four splits are disjoint. Gold DAG: one ``open_page`` per supporting title; for ``bridge``
questions the paragraph that mentions the other supporting title is opened first and the
second depends on it; for ``comparison`` questions the lookups are independent.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.suite import SPLITS, GoldCall


@lru_cache(maxsize=4)
def load_rows(path: str) -> dict[str, list[dict[str, Any]]]:
    """Rows of the file at ``path`` grouped by split (in file order)."""
    import datasets

    p = Path(path)
    if not p.exists():
        raise UserError(f"hotpotqa_path '{path}' does not exist")
    datasets.disable_progress_bars()
    try:
        if p.is_dir() and (p / "dataset_info.json").exists():
            ds = datasets.load_from_disk(str(p))
        else:
            builder = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}.get(p.suffix)
            if builder is None:
                raise UserError(f"hotpotqa_path '{path}': expected .parquet, .json, .jsonl or .csv")
            ds = datasets.load_dataset(builder, data_files=str(p), split="train")
    except (ValueError, OSError) as exc:
        raise UserError(f"hotpotqa_path '{path}': cannot load: {exc}") from None
    missing = {"id", "question", "answer", "type", "supporting_facts", "context"} - set(ds.column_names)
    if missing:
        raise UserError(f"hotpotqa_path '{path}': missing columns {sorted(missing)}")
    by_split: dict[str, list[dict[str, Any]]] = {s: [] for s in SPLITS}
    for row in ds:
        digest = hashlib.sha256(str(row["id"]).encode()).digest()
        by_split[SPLITS[digest[0] % len(SPLITS)]].append(row)
    return by_split


def row_to_task_fields(row: dict[str, Any]) -> dict[str, Any]:
    """Prompt, answer, pages and gold DAG of one HotpotQA row."""
    ctx = row["context"]
    pages = {title: " ".join(s.strip() for s in sents) for title, sents in zip(ctx["title"], ctx["sentences"])}
    titles: list[str] = []
    for t in row["supporting_facts"]["title"]:
        if t not in titles and t in pages:
            titles.append(t)
    if row["type"] == "bridge" and len(titles) == 2:
        first, second = titles
        if second.lower() not in pages[first].lower() and first.lower() in pages[second].lower():
            first, second = second, first
        gold = [
            GoldCall(id="h0", tool="open_page", arguments={"title": first}),
            GoldCall(id="h1", tool="open_page", arguments={"title": second}, depends_on=["h0"]),
        ]
    else:
        gold = [GoldCall(id=f"c{i}", tool="open_page", arguments={"title": t}) for i, t in enumerate(titles)]
    return {
        "family": f"hotpot-{row['type']}",
        "prompt": row["question"],
        "answer": str(row["answer"]),
        "pages": pages,
        "gold": gold,
        "source_id": str(row["id"]),
    }
