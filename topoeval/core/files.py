"""Writing a file so that a crash, a kill or a power cut never leaves half of it.

Every file a run leaves (run.json, plan.json, summary.json, report.md/html, plots, merged episode
files) is written by :func:`write_atomic`: the bytes go to a scratch file with a unique name in the
same folder, are flushed to disk (``fsync``), replace the target in one ``os.replace``, and the
folder itself is synced so the new name survives a power cut. A reader sees the old file or the new
one, never a mix; two processes writing the same file side by side never share a scratch file.
Use it as ``write_json_atomic(run_dir / "run.json", meta)`` or ``write_atomic(path, text)``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any


def fsync_dir(folder: str | Path) -> None:
    """Make a rename or a new file in ``folder`` durable (a no-op where folders cannot be opened)."""
    try:
        fd = os.open(str(folder), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _scratch(path: Path, suffix: str = ".tmp") -> tuple[int, Path]:
    """A new file beside ``path`` with a name no other writer uses (pid and a random part), created with
    the usual permissions (0666 less the umask, as ``open`` gives)."""
    while True:
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}{suffix}")
        try:
            return os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666), tmp
        except FileExistsError:  # pragma: no cover - a random clash
            continue


@contextlib.contextmanager
def atomic_file(path: str | Path) -> Iterator[IO[bytes]]:
    """A binary file handle whose contents replace ``path`` atomically when the block ends without
    an error (the scratch file is removed when it raises)."""
    path = Path(path)
    fd, tmp = _scratch(path, path.suffix + ".tmp")
    with _replacing(tmp, path):
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())


def write_atomic(path: str | Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically (module docstring)."""
    with atomic_file(path) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)


def write_json_atomic(path: str | Path, data: Any, indent: int | None = 2) -> None:
    """``data`` as JSON (UTF-8, a final newline) written atomically, as it is encoded: the text of a large
    summary is never one string in memory (the bytes are those ``json.dumps`` gives)."""
    with atomic_file(path) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="")
        json.dump(data, text, indent=indent, ensure_ascii=False)
        text.write("\n")
        text.flush()
        text.detach()


def write_with(path: str | Path, writer: Callable[[Path], None]) -> None:
    """Atomically write a file a library writes by name (``writer(tmp_path)``, e.g. matplotlib's
    ``savefig``): the scratch name keeps ``path``'s suffix, so the library picks the same format."""
    path = Path(path)
    fd, tmp = _scratch(path, path.suffix)
    os.close(fd)
    with _replacing(tmp, path):
        writer(Path(tmp))
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())


@contextlib.contextmanager
def _replacing(tmp: str | Path, path: Path) -> Iterator[None]:
    """The block writes and syncs ``tmp``; then it replaces ``path`` and the folder is synced (``tmp`` is
    removed when the block raises)."""
    try:
        yield
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)
