"""`topoeval models`, the unknown-model message and `--tool-format` on reference policies: every model
topoeval can run is named, including an adapter registered through $TOPOEVAL_ADAPTERS."""

import shutil

from topoeval.models.adapters import ADAPTERS_DIR, known_adapters
from topoeval.policies.registry import ignored_format, runnable_names, unknown_model


def test_models_lists_every_runnable_model_and_format(cli):
    proc = cli("models")
    assert proc.returncode == 0, proc.stderr
    for name in ("oracle", "oracle-no-ask", "noop", "random", "smollm2-135m", "smollm2-135m-wiki",
                 "smollm2-135m-travel", "smollm2-135m-wiki-grpo", "direct:NAME", "gguf:PATH", "hf:PATH",
                 "provider/model"):
        assert f"│ {name} " in proc.stdout, name
    for fmt in ("native", "hermes", "search-r1", "react", "json"):
        assert f"│ {fmt} " in proc.stdout, fmt


def test_unknown_model_names_every_adapter_shipped_or_registered(cli, tmp_path):
    shipped = sorted(p.stem for p in ADAPTERS_DIR.glob("smollm2-135m-*.gguf"))
    assert "smollm2-135m-wiki-grpo" in shipped  # the one the old message left out
    mine = tmp_path / "adapters"
    mine.mkdir()
    shutil.copy(ADAPTERS_DIR / "smollm2-135m-wiki.json", mine / "smollm2-135m-mine.json")
    (mine / "smollm2-135m-mine.gguf").write_bytes(b"GGUF")
    proc = cli("run", "wiki_to_travel", "-m", "nosuchmodel", env={"TOPOEVAL_ADAPTERS": str(mine)})
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    for name in [*shipped, "smollm2-135m-mine", "smollm2-135m", "oracle", "random", "direct:NAME"]:
        assert name in proc.stderr, name
    assert "topoeval models" in proc.stderr


def test_every_listed_name_is_one_the_registry_runs(monkeypatch):
    monkeypatch.delenv("TOPOEVAL_ADAPTERS", raising=False)
    names = runnable_names()
    assert set(known_adapters()) <= set(names) and "smollm2-135m-wiki-grpo" in names
    assert all(name in unknown_model("x") for name in names)


def test_tool_format_on_reference_policies_is_a_one_line_warning(cli, tmp_path):
    proc = cli("run", "wiki_hops", "-m", "oracle", "-m", "random", "--tool-format", "json", "--tasks", "1",
               "--shots", "0", "--out", str(tmp_path / "run"))
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: --tool-format json is ignored: every model here is a reference policy (oracle, "
                        "random), and they act on the world directly, not through a format"]


def test_a_format_that_reaches_a_model_is_no_warning():
    assert ignored_format(["oracle", "smollm2-135m"], "json") is None
    assert ignored_format(["oracle", "random"], None) is None
    assert "oracle@json" in ignored_format(["oracle@json", "smollm2-135m"], None)
