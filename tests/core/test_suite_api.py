"""The imports docs/writing-a-suite.md promises suite authors: this test imports exactly those, and the page's
block lists exactly these."""

import importlib
import re
from pathlib import Path

#: module -> names a suite may import (docs/writing-a-suite.md, "The imports a suite may rely on")
SUITE_API = {
    "topoeval.core.annotations": ["ArgNames", "ToolAnnotation", "load_model_file"],
    "topoeval.core.answers": ["exact_match", "normalize_answer", "token_f1"],
    "topoeval.core.collateral": ["CollateralScope", "changed_entities", "entities_at_depth"],
    "topoeval.core.commands": ["command_env", "commands_allowed", "guard"],
    "topoeval.core.errors": ["UserError"],
    "topoeval.core.fixed_pool": ["FixedPoolSuite", "commit_targets", "derive_topology"],
    "topoeval.core.gold": ["dependents", "tool_results"],
    "topoeval.core.messages": ["AssistantMessage", "ToolCall", "calls", "final"],
    "topoeval.core.paths": ["current_protocol_folder", "relative_base"],
    "topoeval.core.state": ["diff_matches", "state_diff"],
    "topoeval.core.suite": ["SPLITS", "Effect", "GoldCall", "Instruction", "Split", "Suite", "SuiteManifest", "Task",
                            "ToolError", "ToolSpec", "TopologyDescriptor", "World", "WorldError", "task_id",
                            "task_seed"],
    "topoeval.core.users": ["active_user", "active_user_options"],
    "topoeval.core.yamlfile": ["YamlRejected", "load_yaml", "read_yaml_file"],
    "topoeval.policies.oracle": ["next_calls"],
    "topoeval.policies.user_model": ["user_model"],
}
DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_promised_name_imports():
    for module, names in SUITE_API.items():
        mod = importlib.import_module(module)
        for name in names:
            assert hasattr(mod, name), f"{module}.{name}"


def test_the_docs_block_lists_exactly_these():
    pages = [p for p in DOCS.glob("*.md") if "The imports a suite may rely on" in p.read_text(encoding="utf-8")]
    assert len(pages) == 1, pages
    text = pages[0].read_text(encoding="utf-8").split("The imports a suite may rely on", 1)[1]
    block = re.sub(r"#.*", "", text.split("```python", 1)[1].split("```", 1)[0])
    listed = {m: sorted(re.findall(r"\w+", names)) for m, names in
              re.findall(r"from (\S+) import \(?([^)]*?)\)?\n(?=from|\Z)", block + "\n", re.S)}
    assert listed == {m: sorted(n) for m, n in SUITE_API.items()}


def test_the_shipped_suites_use_nothing_else():
    root = DOCS.parent
    used: set[tuple[str, str]] = set()
    for path in [*root.glob("tool_suites/**/*.py"), *root.glob("tests/fixtures/suites/**/*.py")]:
        for module, names in re.findall(r"from (topoeval\.[\w.]+) import \(?([^)\n]*(?:\n[^)\n]*)*?)\)?\n",
                                         path.read_text(encoding="utf-8")):
            used |= {(module, n) for n in re.findall(r"\w+", names)}
    promised = {(m, n) for m, names in SUITE_API.items() for n in names}
    extra = used - promised
    assert not extra, sorted(extra)
