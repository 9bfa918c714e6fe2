"""Rows to and from parquet through ``datasets`` (the format exports and published tables share)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from topoeval.core.files import write_with


def _quiet() -> None:
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()


def write_rows(rows: list[dict[str, Any]], path: str | Path, features: Any = None) -> Path:
    """Write ``rows`` (dicts with the same keys) as one parquet file; parent folders are created.
    ``features`` (``datasets.Features``) fixes the column types instead of inferring them from
    these rows, so files written apart share one schema."""
    from datasets import Dataset

    _quiet()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = Dataset.from_list(rows, features=features)
    write_with(path, lambda tmp: data.to_parquet(str(tmp)))  # atomic: never half a file
    return path


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a parquet file, loaded with ``datasets.load_dataset``."""
    from datasets import load_dataset

    _quiet()
    return load_dataset("parquet", data_files=str(path), split="train").to_list()
