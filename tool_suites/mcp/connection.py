"""A synchronous handle on one MCP server, for a world whose calls are synchronous.

Every connection of the process runs on one background event loop (a daemon thread named
``topoeval-mcp``); a connection is one task there that holds an ``mcp.Client`` open from start to
:meth:`McpConnection.close`. The caller's thread blocks on each call, so while an MCP tool runs
the runner waits for it (a stdio server's start-up, about 1.4 s here, is paid the same way).

Failures of the server itself — it does not start, it dies, it does not answer within the
timeout, it breaks the protocol — raise :class:`~topoeval.core.suite.WorldError` (the episode
becomes an infrastructure ``error``); a tool that answers ``isError`` raises
:class:`~topoeval.core.suite.ToolError` (a recorded ``tool_error``; the episode goes on).
Closing stops the server (a stdio server's whole process tree: the SDK closes its stdin, then
terminates and kills it); connections still open when the interpreter exits are closed then.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures as cf
import threading
import weakref
from pathlib import Path
from typing import Any

from topoeval.core.errors import UserError
from topoeval.core.suite import ToolError, WorldError

INSTALL_HINT = "the mcp suite needs the MCP SDK: pip install 'topoeval[mcp]'"
#: Seconds a closing server is given (the SDK's own escalation takes at most about 6 s).
CLOSE_WAIT_S = 10.0

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()
_live: "weakref.WeakSet[McpConnection]" = weakref.WeakSet()


def require_mcp() -> None:
    """Raise a one-line :class:`UserError` with the install hint when the SDK is missing."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise UserError(INSTALL_HINT) from None


def background_loop() -> asyncio.AbstractEventLoop:
    """The process's MCP event loop, started on first use."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(target=loop.run_forever, name="topoeval-mcp", daemon=True).start()
            _loop = loop
    return _loop


def _why(exc: BaseException) -> str:
    """One line for an exception (the first leaf of an exception group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _last_line(path: Path | None) -> str:
    if path is None or not path.exists():
        return ""
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    return f" (server stderr: {lines[-1][:300]})" if lines else ""


class McpConnection:
    """One started MCP server and a client on it; ``tools`` is its tool listing (``mcp.types.Tool``)."""

    def __init__(self, target: Any, *, describe: str, timeout_s: float, startup_timeout_s: float,
                 errlog: Path | None = None):
        """Start the server and list its tools; raises :class:`WorldError` when it cannot.

        ``target`` is what ``mcp.Client`` takes: ``StdioServerParameters`` (then the server's
        stderr goes to ``errlog``) or an in-process ``Server``/``MCPServer``.
        """
        require_mcp()
        self.describe, self.timeout_s, self.errlog = describe, timeout_s, errlog
        self.tools: list[Any] = []
        self._closed = False
        self._client: Any = None
        self._closing = asyncio.Event()
        self._loop = background_loop()
        ready: cf.Future = cf.Future()
        self._main = asyncio.run_coroutine_threadsafe(self._hold(target, ready), self._loop)
        _live.add(self)
        try:
            self.tools = ready.result(startup_timeout_s)
        except cf.TimeoutError:
            self.close()
            raise WorldError(f"{describe} did not start within {startup_timeout_s:g} s{_last_line(errlog)}") from None
        except Exception as exc:
            self.close()
            raise WorldError(f"{describe} failed to start: {_why(exc)}{_last_line(errlog)}") from None

    async def _hold(self, target: Any, ready: cf.Future) -> None:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client

        errfh = None
        try:
            if isinstance(target, StdioServerParameters):
                errfh = open(self.errlog, "w", encoding="utf-8") if self.errlog else None
                target = stdio_client(target, errlog=errfh) if errfh else stdio_client(target)
            async with Client(target, cache=None) as client:
                tools, cursor = [], None
                while True:
                    page = await client.list_tools(cursor=cursor)
                    tools += page.tools
                    cursor = page.next_cursor
                    if not cursor:
                        break
                self._client = client
                if not ready.done():
                    ready.set_result(tools)
                await self._closing.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(_why(exc)))
            if not isinstance(exc, (Exception, asyncio.CancelledError)):
                raise
        finally:
            self._client = None
            if errfh is not None:
                errfh.close()

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """``CallToolResult`` of one call; :class:`ToolError` for an ``isError`` answer or a refused
        call, :class:`WorldError` when the server is gone, broke the protocol or timed out."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, INVALID_PARAMS

        if self._closed or self._main.done() or self._client is None:
            raise WorldError(f"{self.describe} is no longer running{_last_line(self.errlog)}")
        fut = asyncio.run_coroutine_threadsafe(self._call(name, arguments), self._loop)
        try:
            result = fut.result(self.timeout_s + 5.0)
        except (cf.TimeoutError, TimeoutError):
            fut.cancel()
            raise WorldError(f"{self.describe}: {name} did not answer within {self.timeout_s:g} s") from None
        except MCPError as exc:
            if exc.code == INVALID_PARAMS:  # the server refused this call (unknown tool, bad arguments)
                raise ToolError(exc.message) from None
            gone = " (the server closed the connection)" if exc.code == CONNECTION_CLOSED else ""
            raise WorldError(f"{self.describe}: {name} failed: {exc.message}{gone}{_last_line(self.errlog)}") from None
        except Exception as exc:
            raise WorldError(f"{self.describe}: {name} failed: {_why(exc)}{_last_line(self.errlog)}") from None
        if result.is_error:
            raise ToolError(result_text(result) or f"{name} failed")
        return result

    async def _call(self, name: str, arguments: dict[str, Any]) -> Any:
        client = self._client
        if client is None:
            raise ConnectionError("not connected")
        return await asyncio.wait_for(client.call_tool(name, arguments), self.timeout_s)

    def close(self) -> None:
        """Stop the server and wait (bounded) until it is gone. Idempotent."""
        if self._closed:
            return
        self._closed = True
        _live.discard(self)
        if self._main.done():
            return
        self._loop.call_soon_threadsafe(self._closing.set)
        try:
            self._main.result(CLOSE_WAIT_S)
        except cf.TimeoutError:  # stuck on start-up or shutdown: cancel (the SDK still kills the process tree)
            self._main.cancel()
            try:
                self._main.result(CLOSE_WAIT_S)
            except BaseException:
                pass
        except BaseException:
            pass


def result_text(result: Any) -> str:
    """The text of a ``CallToolResult``: its text blocks joined, else its structured content as JSON."""
    import json

    texts = [getattr(block, "text", None) for block in result.content or []]
    texts = [t for t in texts if t is not None]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)
    kinds = sorted({getattr(block, "type", "?") for block in result.content or []})
    return f"({', '.join(kinds)} content)" if kinds else ""


@atexit.register
def _close_all() -> None:
    for conn in list(_live):
        conn.close()
