"""topoeval.core.yamlfile: the limits topoeval puts on a YAML file before anything is built, each its own one line.

tests/protocol/test_bad_input.py checks a 5,000-level file, which the YAML library's own limit (about
1,000 levels) refuses first; these check the depths only topoeval's own limit (64) refuses, and the
other refusals of the module at their edges."""

import pytest

from topoeval.core import yamlfile
from topoeval.core.yamlfile import MAX_DEPTH, YamlRejected, check_events, decode_yaml, load_yaml


def nested(levels: int, flow: bool = True) -> str:
    """A document ``levels`` collections deep: a mapping holding ``levels - 1`` nested sequences (flow style:
    ``deep: [[[...]]]``), or ``levels`` nested block sequences (``- - - x``)."""
    if flow:
        return "deep: " + "[" * (levels - 1) + "]" * (levels - 1) + "\n"
    return "".join("  " * i + "-\n" for i in range(levels - 1)) + "  " * (levels - 1) + "- x\n"


def test_the_nesting_limit_is_64_levels():
    assert MAX_DEPTH == 64


@pytest.mark.parametrize("levels", [65, 66, 500, 900])
def test_nesting_past_64_levels_is_refused_by_topoeval_s_own_limit_in_its_own_words(levels):
    # under the YAML library's own limit (about 1,000 levels): only topoeval's refuses these
    with pytest.raises(YamlRejected) as info:
        load_yaml(nested(levels), "deep.yaml")
    assert str(info.value) == "deep.yaml:1: nested deeper than 64 levels"
    assert (info.value.filename, info.value.line, info.value.problem) == ("deep.yaml", 1,
                                                                          "nested deeper than 64 levels")


def test_64_levels_load_and_65_do_not():
    data = load_yaml(nested(64), "ok.yaml")  # 63 sequences inside the top mapping
    depth, value = 0, data["deep"]
    while isinstance(value, list):
        depth, value = depth + 1, value[0] if value else None
    assert depth == 63
    assert load_yaml(nested(64, flow=False), "ok.yaml") is not None
    with pytest.raises(YamlRejected, match="nested deeper than 64 levels"):
        load_yaml(nested(65), "ok.yaml")


def test_block_style_nesting_names_the_line_where_it_passes_the_limit():
    with pytest.raises(YamlRejected) as info:
        load_yaml(nested(80, flow=False), "block.yaml")
    assert info.value.problem == "nested deeper than 64 levels"
    assert info.value.line == 65  # the 65th ``-`` opens the 65th level


@pytest.mark.parametrize("levels", [65, 500])
def test_the_pure_python_pass_refuses_the_same_depths(monkeypatch, levels):
    # where PyYAML has no LibYAML (CSafeLoader), its own parser's events are measured the same way
    monkeypatch.delattr(yamlfile.yaml, "CSafeLoader", raising=False)
    with pytest.raises(YamlRejected, match=r"^d\.yaml:1: nested deeper than 64 levels$"):
        check_events(nested(levels), "d.yaml")


def test_the_yaml_library_s_own_depth_refusal_is_reworded_into_topoeval_s_line():
    with pytest.raises(YamlRejected, match=r"^d\.yaml:1: nested deeper than 64 levels$"):
        check_events(nested(5000), "d.yaml")


def laughs(levels: int, width: int) -> str:
    """A billion-laughs chain: each anchor a list of ``width`` aliases of the one before."""
    lines = ["l0: &l0 [x]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def test_a_document_just_under_the_value_limit_loads_and_one_over_is_refused(monkeypatch):
    # the mapping, a, its list and 4 items, b, its list and 3 items: 12 values
    monkeypatch.setattr(yamlfile, "MAX_NODES", 12)
    assert load_yaml("a: [1, 2, 3, 4]\nb: [5, 6, 7]\n", "f.yaml") == {"a": [1, 2, 3, 4], "b": [5, 6, 7]}
    with pytest.raises(YamlRejected) as info:
        load_yaml("a: [1, 2, 3, 4]\nb: [5, 6, 7, 8]\n", "f.yaml")  # 13 values
    assert info.value.line == 2 and info.value.problem.startswith("more than 12 values once its aliases are expanded")


def test_aliases_count_every_value_of_what_they_name():
    # 1 mapping + l0's key and list (+ its x) + l1's key, its list and 3 aliases of a 2-value list = 12 values
    yamlfile.check_events(laughs(2, 3), "f.yaml")
    import topoeval.core.yamlfile as y

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(y, "MAX_NODES", 11)
        with pytest.raises(YamlRejected, match="more than 11 values"):
            check_events(laughs(2, 3), "f.yaml")
        mp.setattr(y, "MAX_NODES", 12)
        check_events(laughs(2, 3), "f.yaml")


def test_an_alias_of_a_scalar_counts_one_value_and_of_an_unknown_anchor_one():
    import topoeval.core.yamlfile as y

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(y, "MAX_NODES", 5)  # mapping, key a, &s 1, key b, *s = 5
        check_events("a: &s 1\nb: *s\n", "f.yaml")
        mp.setattr(y, "MAX_NODES", 4)
        with pytest.raises(YamlRejected, match="more than 4 values"):
            check_events("a: &s 1\nb: *s\n", "f.yaml")


def test_a_billion_laughs_chain_is_refused_by_its_size_on_the_line_that_passes_it():
    with pytest.raises(YamlRejected) as info:
        load_yaml(laughs(10, 10), "laughs.yaml")
    assert "once its aliases are expanded" in info.value.problem and info.value.line == 6  # 10^5 * 2 > 200,000


def test_an_alias_inside_the_value_it_names_is_refused():
    with pytest.raises(YamlRejected, match=r"^f\.yaml:2: YAML alias '\*x' is inside the value it names"):
        check_events("a: &x\n  - *x\n", "f.yaml")
    check_events("a: &x [1]\nb: [*x, *x]\n", "f.yaml")  # an alias of a closed anchor is fine


@pytest.mark.parametrize("data,encoding", [
    (b"\xff\xfe\x00\x00a\x00\x00\x00", "UTF-32 (little-endian)"), (b"\x00\x00\xfe\xffa", "UTF-32 (big-endian)"),
    (b"\xff\xfea\x00", "UTF-16 (little-endian)"), (b"\xfe\xff\x00a", "UTF-16 (big-endian)"),
])
def test_a_foreign_byte_order_mark_is_named(data, encoding):
    with pytest.raises(YamlRejected) as info:
        decode_yaml(data, "f.yaml")
    assert info.value.line == 1 and info.value.problem.startswith(f"the file is {encoding} text")


def test_a_utf8_bom_is_dropped_and_bad_bytes_and_nul_name_their_offset_and_line():
    assert decode_yaml(b"\xef\xbb\xbfa: 1\n", "f.yaml") == "a: 1\n"
    with pytest.raises(YamlRejected) as info:
        decode_yaml(b"\xef\xbb\xbfa: 1\nb: \xff\n", "f.yaml")
    assert info.value.line == 2 and info.value.problem.startswith("not UTF-8: byte 0xff at byte offset 11 ")
    with pytest.raises(YamlRejected) as info:
        decode_yaml(b"a: 1\n\nb\x00\n", "f.yaml")
    assert info.value.line == 3 and info.value.problem.startswith("a NUL byte at byte offset 7 ")


def test_read_yaml_file_labels_its_errors_with_the_path_or_the_name_given(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes(b"a: \xff\n")
    with pytest.raises(YamlRejected, match=rf"^{path}:1: not UTF-8"):
        yamlfile.read_yaml_file(path)
    with pytest.raises(YamlRejected, match=r"^shown\.yaml:1: not UTF-8"):
        yamlfile.read_yaml_file(path, "shown.yaml")


def test_compose_gives_the_node_tree_and_the_data_after_the_checks():
    node, data = yamlfile.compose_yaml("a:\n  b: 1\n", "f.yaml")
    assert data == {"a": {"b": 1}} and node.value[0][1].start_mark.line == 1
    with pytest.raises(YamlRejected, match="nested deeper than 64 levels"):
        yamlfile.compose_yaml(nested(65), "f.yaml")


def test_each_refusal_is_worded_in_full():
    with pytest.raises(YamlRejected) as info:
        check_events("a: &x\n  - *x\n", "f.yaml")
    assert info.value.problem == "YAML alias '*x' is inside the value it names (a value that contains itself)"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(yamlfile, "MAX_NODES", 1000)
        with pytest.raises(YamlRejected) as info:
            check_events(laughs(6, 4), "f.yaml")
    assert info.value.problem == ("more than 1,000 values once its aliases are expanded (YAML anchors/aliases repeat "
                                  "a value; write less, or split the file)")
    with pytest.raises(YamlRejected) as info:
        decode_yaml(b"\xfe\xff\x00a", "f.yaml")
    assert info.value.problem == ("the file is UTF-16 (big-endian) text (a byte order mark at byte offset 0); topoeval "
                                  "reads YAML as UTF-8 only: save it as UTF-8")
    with pytest.raises(YamlRejected) as info:
        decode_yaml(b"a: \xff\n", "f.yaml")
    assert info.value.problem == ("not UTF-8: byte 0xff at byte offset 3 (topoeval reads YAML as UTF-8: save the file "
                                  "as UTF-8)")
    with pytest.raises(YamlRejected) as info:
        decode_yaml(b"a\x00", "f.yaml")
    assert info.value.problem == ("a NUL byte at byte offset 1 (UTF-16 text without a byte order mark?); topoeval "
                                  "reads YAML as UTF-8: save the file as UTF-8")


def test_the_line_counts_a_newline_at_the_very_start_and_a_nul_there_is_refused():
    with pytest.raises(YamlRejected) as info:
        decode_yaml(b"\nb: \xff\n", "f.yaml")
    assert info.value.line == 2
    with pytest.raises(YamlRejected) as info:
        decode_yaml(b"\n\x00", "f.yaml")
    assert info.value.line == 2 and "byte offset 1" in info.value.problem
    with pytest.raises(YamlRejected) as info:
        decode_yaml(b"\x00a: 1\n", "f.yaml")  # the very first byte
    assert info.value.line == 1 and "a NUL byte at byte offset 0" in info.value.problem


def test_an_alias_of_an_anchor_never_defined_counts_one_value(monkeypatch):
    # the events are read before the document is built, so an unknown alias still reaches the count
    monkeypatch.setattr(yamlfile, "MAX_NODES", 3)  # mapping, key, alias
    check_events("a: *nowhere\n", "f.yaml")
    monkeypatch.setattr(yamlfile, "MAX_NODES", 2)
    with pytest.raises(YamlRejected, match="more than 2 values"):
        check_events("a: *nowhere\n", "f.yaml")


def test_an_anchor_defined_again_counts_the_size_of_its_latest_value(monkeypatch):
    text = "a: &x [1, 2, 3]\nb: &x 5\nc: *x\n"  # *x is the scalar 5 now: 1 value, not the list's 4
    monkeypatch.setattr(yamlfile, "MAX_NODES", 10)  # mapping, a, list, 1, 2, 3, b, 5, c, *x
    check_events(text, "f.yaml")
    monkeypatch.setattr(yamlfile, "MAX_NODES", 9)
    with pytest.raises(YamlRejected, match="more than 9 values"):
        check_events(text, "f.yaml")


def loaders_used(monkeypatch) -> list:
    """The Loader of every yaml.parse call from here on."""
    used = []
    real = yamlfile.yaml.parse

    def spy(text, Loader):  # noqa: N803 (PyYAML's keyword)
        used.append(Loader)
        return real(text, Loader=Loader)

    monkeypatch.setattr(yamlfile.yaml, "parse", spy)
    return used


def test_the_events_are_libyaml_s_and_a_depth_it_refuses_is_never_parsed_again_in_pure_python(monkeypatch):
    import yaml

    used = loaders_used(monkeypatch)
    check_events("a: [1, 2]\n", "f.yaml")
    assert used == [yaml.CSafeLoader]  # PyYAML's own scanner takes about a second on 1,000 nested "["
    used.clear()
    with pytest.raises(YamlRejected, match=r"^f\.yaml:3: nested deeper than 64 levels$"):
        check_events("a: 1\nb: 2\ndeep: " + "[" * 5000 + "]" * 5000 + "\n", "f.yaml")  # LibYAML's own limit
    assert used == [yaml.CSafeLoader]
    used.clear()
    with pytest.raises(YamlRejected, match="nested deeper than 64 levels"):
        check_events(nested(70), "f.yaml")  # under LibYAML's limit: topoeval's count refuses it
    assert used == [yaml.CSafeLoader]


def test_what_libyaml_refuses_otherwise_the_pure_python_pass_decides(monkeypatch):
    import yaml

    used = loaders_used(monkeypatch)
    check_events("a: 1\n", "f.yaml")
    used.clear()
    with pytest.raises(yaml.YAMLError):
        load_yaml("a: [1\n", "f.yaml")  # a syntax error: left to the load, after both passes
    assert used == [yaml.CSafeLoader, yaml.SafeLoader]


@pytest.mark.parametrize("error,line", [
    (lambda: __import__("yaml").MarkedYAMLError(context_mark=__import__("yaml").Mark("f", 0, 4, 0, None, None),
                                                problem="exceeded maximum nesting depth"), 5),  # no problem mark
    (lambda: __import__("yaml").MarkedYAMLError(context_mark=__import__("yaml").Mark("f", 0, 4, 0, None, None),
                                                problem="exceeded maximum nesting depth",
                                                problem_mark=__import__("yaml").Mark("f", 0, 1, 0, None, None)), 2),
    (lambda: __import__("yaml").YAMLError("exceeded maximum nesting depth"), 1),  # no mark at all
])
def test_a_libyaml_depth_refusal_names_the_line_of_whatever_mark_it_has(monkeypatch, error, line):
    def refuse(text, Loader):  # noqa: N803
        raise error()

    monkeypatch.setattr(yamlfile.yaml, "parse", refuse)
    with pytest.raises(YamlRejected) as info:
        check_events("a: 1\n", "f.yaml")
    assert (info.value.line, info.value.problem) == (line, "nested deeper than 64 levels")


def test_compose_names_the_file_in_its_refusal():
    with pytest.raises(YamlRejected, match=r"^shown\.yaml:1: nested deeper than 64 levels$"):
        yamlfile.compose_yaml(nested(65), "shown.yaml")
