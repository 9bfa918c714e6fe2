"""Closing what a run opened, on every path out of it.

A run opens model backends (local llama-servers, HTTP sessions), the episode file, the response
cache, the user models and the folder's lock one after another; any step can fail (a corrupt cache,
a full disk, an unwritable folder, Ctrl-C). :class:`Cleanup` is the run's one list of what to close:
each thing is added the moment it is open, and when the block ends, however it ends, every one is
closed, last opened first, even when closing an earlier one fails. The first error is the one that
propagates; a close that fails after it is attached to it as a note (``add_note``), never in its
place. Without an error, the first failing close is raised (the others as its notes).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


class Cleanup:
    """An async context manager closing what was added to it (module docstring)."""

    def __init__(self) -> None:
        #: (what, close, only when the block fails)
        self._items: list[tuple[str, Callable[[], Any], bool]] = []

    def add(self, what: str, close: Callable[[], Any]) -> None:
        """Close ``what`` with ``close()`` (a function, or one returning an awaitable) when the block ends."""
        self._items.append((what, close, False))

    def on_error(self, what: str, undo: Callable[[], Any]) -> None:
        """Run ``undo()`` only if the block ends with an error (e.g. give a lock back that would else be
        handed on to the caller)."""
        self._items.append((what, undo, True))

    async def close(self, error: BaseException | None = None) -> None:
        """Run every close, last added first; see the module docstring for which error is raised."""
        failures: list[tuple[str, BaseException]] = []
        while self._items:
            what, close, only_on_error = self._items.pop()
            if only_on_error and error is None:
                continue
            try:
                result = close()
                if inspect.isawaitable(result):
                    await result
            except BaseException as exc:  # noqa: BLE001 - every close runs; the errors are reported below
                failures.append((what, exc))
        if not failures:
            return
        if error is not None:
            for what, failed in failures:
                error.add_note(f"also, closing {what} failed: {type(failed).__name__}: {failed}")
            return
        first = failures[0][1]
        for what, failed in failures[1:]:
            first.add_note(f"also, closing {what} failed: {type(failed).__name__}: {failed}")
        raise first

    async def __aenter__(self) -> Cleanup:
        return self

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        await self.close(exc)
        return False
