"""pyproject.toml lists every folder the distribution must carry (its package list is explicit)."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def folders(package: str, folder: Path) -> set[str]:
    """``package`` and every sub-folder of ``folder`` that holds a .py or .yaml file, as package names."""
    out = {package}
    for sub in folder.rglob("*"):
        if sub.is_dir() and sub.name != "__pycache__" and any(sub.glob("*.py")) | any(sub.glob("*.yaml")):
            out.add(".".join([package, *sub.relative_to(folder).parts]))
    return out


def test_every_package_and_data_folder_is_listed():
    mapped = {name: ROOT / path for name, path in CONFIG["package-dir"].items()}
    assert mapped == {"topoeval_protocols": ROOT / "protocols", "topoeval_tool_suites": ROOT / "tool_suites",
                      "topoeval_adapters": ROOT / "adapters"}
    expected = folders("topoeval", ROOT / "topoeval") | folders("topoeval_verifiers", ROOT / "topoeval_verifiers")
    for name, folder in mapped.items():
        expected |= folders(name, folder)
    assert set(CONFIG["packages"]) == expected


def test_the_shipped_files_are_package_data():
    data = CONFIG["package-data"]
    assert "*.yaml" in data["*"] and {"*.gguf", "*.json"} <= set(data["topoeval_adapters"])
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["topoeval.suites"]
    suites = {p.name for p in (ROOT / "tool_suites").iterdir() if (p / "suite.yaml").is_file()}
    assert entry == {name: f"topoeval_tool_suites:{name}" for name in suites}
