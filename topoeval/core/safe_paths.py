"""Paths built from what a record says, kept inside their destination.

A run folder may come from anyone, and a record's fields (a protocol, model, baseline or topology
name) end up in the paths a publish writes. :func:`safe_component` maps any name to one path
component that cannot climb out (no separator, never ``.``, ``..`` or a hidden name);
:func:`path_under` joins components under a root and checks the resolved path is still inside it
(a symlink planted in the destination cannot lead it out either). :func:`read_regular` reads a file of a
run folder only if it is a regular file, never through a symlink, and bounded.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from topoeval.core.errors import UserError

#: characters a component keeps; every run of others becomes one ``_``
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
#: a component is at most this long (file systems allow 255 bytes)
MAX_COMPONENT = 200


def safe_component(name: str) -> str:
    """``name`` as one path component: letters, digits, ``.``, ``_`` and ``-`` kept, every other run of
    characters one ``_``; a name that would be empty, ``.``, ``..`` or hidden (a leading ``.``) starts with
    ``_``. The same name always gives the same component; a plain name (``wiki_hops``, ``0-shot``) is itself."""
    slug = _UNSAFE.sub("_", str(name))[:MAX_COMPONENT]
    return "_" + slug if not slug or slug.startswith(".") else slug


def path_under(root: Path, relative: str | Path) -> Path:
    """``root / relative``, refused in one line (UserError) unless it resolves to a path inside ``root``."""
    root_resolved = Path(root).resolve()
    target = (Path(root) / relative).resolve()
    if target == root_resolved or not target.is_relative_to(root_resolved):
        raise UserError(f"{relative}: would be written outside {root}; not written")
    return Path(root) / relative


def read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes, opened without following
    a symlink (``O_NOFOLLOW``, then ``S_ISREG`` on the open file); None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:  # absent, a symlink (ELOOP), unreadable
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return raw if len(raw) <= limit else None
