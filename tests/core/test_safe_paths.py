"""Names from records become safe path components, and joined paths stay under their root."""

import pytest

from topoeval.core.errors import UserError
from topoeval.core.safe_paths import path_under, safe_component


@pytest.mark.parametrize(("name", "component"), [
    ("wiki_hops", "wiki_hops"), ("0-shot", "0-shot"), ("smollm2-135m.Q4", "smollm2-135m.Q4"),
    ("..", "_.."), (".", "_."), ("", "_"), (".hidden", "_.hidden"), ("../../etc", "_.._.._etc"),
    ("a/b\\c", "a_b_c"), ("direct:http://h/v1", "direct_http_h_v1"), ("/abs", "_abs"),
])
def test_a_name_becomes_one_component_that_cannot_climb_out(name, component):
    assert safe_component(name) == component
    assert "/" not in component and component not in (".", "..") and not component.startswith(".")


def test_a_path_that_resolves_outside_its_root_is_refused(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    assert path_under(root, "episodes/p/m/b.parquet") == root / "episodes/p/m/b.parquet"
    for bad in ("../x", "a/../../x", "/etc/passwd"):
        with pytest.raises(UserError, match="would be written outside"):
            path_under(root, bad)
    (root / "link").symlink_to(tmp_path)  # a symlink planted in the destination does not lead out either
    with pytest.raises(UserError, match="would be written outside"):
        path_under(root, "link/x.parquet")
