"""Formats from other packages: the ``topoeval.formats`` entry-point group, found like any installed plug-in
(a real ``.dist-info`` on ``sys.path``), and usable by name and in a ``MODEL@FORMAT`` spec."""

import importlib

import pytest

from topoeval.core.errors import UserError
from topoeval.formats import get_format, known_formats, split_format
from topoeval.models.options import ModelOptions
from topoeval.policies.registry import make_policy

PLUGIN = '''
from topoeval.formats import ToolFormat

class Bracket(ToolFormat):
    name = "bracket"

    def render_tools(self, tools):
        return "Tools: " + ", ".join(t["function"]["name"] for t in tools) + ". Call as [name] {json}."

    def render_calls(self, calls, tools):
        return "\\n".join(f"[{n}] {a}" for n, a in calls)

    def render_result(self, name, content, tools):
        return f"[{name} said] {content}"

    def parse(self, text, tools):
        if text.startswith("["):
            name, _, args = text[1:].partition("] ")
            return "", [(name, args)]
        return text, []
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    (tmp_path / "bracket_fmt.py").write_text(PLUGIN)
    info = tmp_path / "bracket_fmt-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bracket-fmt\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[topoeval.formats]\nbracket = bracket_fmt:Bracket\n"
                                           "broken = bracket_fmt:Missing\nhermes = bracket_fmt:Bracket\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield


def test_an_entry_point_format_is_found_and_used(plugin):
    assert {"bracket", "broken"} <= set(known_formats())
    fmt = get_format("bracket")
    assert fmt.parse('[search] {"query": "x"}', [])[1] == [("search", '{"query": "x"}')]
    assert split_format("direct:m@bracket") == ("direct:m", "bracket")
    policy = make_policy("direct:m@bracket", ModelOptions(api_base="http://127.0.0.1:9/v1"))
    assert policy.name == "direct:m@bracket" and policy.format.name == "bracket"
    # a shipped name cannot be taken over by a plug-in
    assert type(get_format("hermes")).__module__ == "topoeval.formats.hermes"


def test_a_broken_plugin_is_one_line(plugin):
    with pytest.raises(UserError, match=r"tool format 'broken' \(bracket_fmt:Missing\) could not be loaded"):
        get_format("broken")


def test_tool_mode_and_format_must_agree():
    with pytest.raises(UserError, match="--tool-mode native contradicts --tool-format json"):
        make_policy("direct:m", ModelOptions(api_base="http://127.0.0.1:9/v1", tool_mode="native", tool_format="json"))
    # the legacy prompt mode is hermes, and a name of its own
    assert make_policy("direct:m", ModelOptions(api_base="http://127.0.0.1:9/v1", tool_mode="prompt")).name == "direct:m@hermes"
    assert make_policy("direct:m@native", ModelOptions(api_base="http://127.0.0.1:9/v1")).name == "direct:m"
