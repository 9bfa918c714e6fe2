"""YAML as topoeval reads it from files a user may not have written: aliases expanded with a bound.

Protocols, task files, overlays and suite manifests are read through :func:`load_yaml` (or
:func:`compose_yaml`, which also gives the node tree for line numbers). Before anything is built,
one linear pass over the parser's events measures the document **as it is once aliases are
expanded** and refuses

- an alias inside the value it names (``a: &x [*x]``, a value that contains itself);
- more than :data:`MAX_NODES` values after expansion: anchors and aliases (``&name`` / ``*name``,
  ``<<`` merge keys) stay allowed — a shipped protocol shares one ``env`` that way — but a
  "billion laughs" chain (each level repeating the one before) is a tree of exponential size to
  anything that walks it, and is refused by its size, not after it has been built;
- nesting deeper than :data:`MAX_DEPTH` levels (PyYAML's composer recurses per level).

Each is one line, ``<file>:<line>: ...`` (a :class:`YamlRejected`, a :class:`UserError`).

Files are read as UTF-8 (:func:`read_yaml_file`, :func:`decode_yaml`; a UTF-8 byte order mark is
dropped): a byte that is not UTF-8 (even in a comment), a NUL byte, or a UTF-16/UTF-32 byte order mark
is the same kind of one line, naming the byte offset, never a ``UnicodeDecodeError`` traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from topoeval.core.errors import UserError

#: Deepest nesting of mappings and sequences a topoeval YAML file may have.
MAX_DEPTH = 64
#: Most values (scalars, mappings, sequences) a topoeval YAML file may hold with its aliases expanded.
MAX_NODES = 200_000


class YamlRejected(UserError):
    """A YAML file refused before it is built; ``line`` (1-based) and ``problem`` say where and why."""

    def __init__(self, filename: str, line: int, problem: str):
        super().__init__(f"{filename}:{line}: {problem}")
        self.filename, self.line, self.problem = filename, line, problem


#: byte order marks of the encodings a YAML file is refused in (longest first: UTF-32 LE starts like UTF-16 LE)
_FOREIGN_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32 (little-endian)"), (b"\x00\x00\xfe\xff", "UTF-32 (big-endian)"),
                 (b"\xff\xfe", "UTF-16 (little-endian)"), (b"\xfe\xff", "UTF-16 (big-endian)"))
_UTF8_BOM = b"\xef\xbb\xbf"


def decode_yaml(data: bytes, filename: str) -> str:
    """``data`` as text: UTF-8 (a UTF-8 byte order mark dropped). A UTF-16/32 byte order mark, a byte that is
    not UTF-8 or a NUL byte (UTF-16 without a mark) is a one-line :class:`YamlRejected` with its byte offset."""
    for bom, encoding in _FOREIGN_BOMS:
        if data.startswith(bom):
            raise YamlRejected(filename, 1, f"the file is {encoding} text (a byte order mark at byte offset 0); "
                                            "topoeval reads YAML as UTF-8 only: save it as UTF-8")
    start = len(_UTF8_BOM) if data.startswith(_UTF8_BOM) else 0
    try:
        text = data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        raise YamlRejected(filename, data.count(b"\n", 0, offset) + 1,
                           f"not UTF-8: byte 0x{data[offset]:02x} at byte offset {offset} (topoeval reads YAML as "
                           "UTF-8: save the file as UTF-8)") from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise YamlRejected(filename, data.count(b"\n", 0, nul) + 1,
                           f"a NUL byte at byte offset {nul} (UTF-16 text without a byte order mark?); topoeval reads "
                           "YAML as UTF-8: save the file as UTF-8")
    return text


def read_yaml_file(path: str | Path, filename: str | None = None) -> str:
    """The text of the YAML file ``path`` (:func:`decode_yaml`; ``filename`` labels its errors, default the
    path); ``OSError`` when it cannot be read."""
    return decode_yaml(Path(path).read_bytes(), str(path) if filename is None else filename)


def check_events(text: str, filename: str) -> None:
    """Refuse self-referencing aliases, documents over :data:`MAX_NODES` values once expanded and
    nesting over :data:`MAX_DEPTH` (module docstring); syntax errors are left to the load that
    follows (``yaml.YAMLError``).

    The pass reads LibYAML's events where PyYAML has it (``CSafeLoader``): PyYAML's own scanner
    spends about a second on a thousand nested ``[`` before its first event. Where LibYAML refuses
    the text, the pure-Python pass decides (the two differ on a few corner cases of the syntax)."""
    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            _check(text, filename, fast)
            return
        except yaml.YAMLError as exc:
            if "maximum nesting depth" in str(exc):
                mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
                raise YamlRejected(filename, mark.line + 1 if mark else 1,
                                   f"nested deeper than {MAX_DEPTH} levels") from None
    _check(text, filename, yaml.SafeLoader)


def _check(text: str, filename: str, loader: Any) -> None:
    sizes: dict[str, int] = {}  # anchor -> values in its subtree, expanded
    open_: list[tuple[str | None, int]] = []  # the collections being read: (anchor, expanded total before it)
    total = 0
    for event in yaml.parse(text, Loader=loader):
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in open_):
                raise YamlRejected(filename, line, f"YAML alias '*{event.anchor}' is inside the value it names "
                                                   "(a value that contains itself)")
            total += sizes.get(event.anchor or "", 1)
        elif isinstance(event, yaml.ScalarEvent):
            total += 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            open_.append((event.anchor, total))
            total += 1
            if len(open_) > MAX_DEPTH:
                raise YamlRejected(filename, line, f"nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, before = open_.pop()
            if anchor is not None:
                sizes[anchor] = total - before
        if total > MAX_NODES:
            raise YamlRejected(filename, line, f"more than {MAX_NODES:,} values once its aliases are expanded "
                                               "(YAML anchors/aliases repeat a value; write less, or split the file)")


def compose_yaml(text: str, filename: str) -> tuple[yaml.Node | None, Any]:
    """(node tree, data) of ``text`` after :func:`check_events`; ``yaml.YAMLError`` on bad syntax."""
    check_events(text, filename)
    return yaml.compose(text, Loader=yaml.SafeLoader), yaml.safe_load(text)


def load_yaml(text: str, filename: str) -> Any:
    """The data of ``text`` after :func:`check_events`; ``yaml.YAMLError`` on bad syntax."""
    check_events(text, filename)
    return yaml.safe_load(text)
