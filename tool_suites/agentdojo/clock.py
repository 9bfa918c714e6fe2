"""A frozen clock for AgentDojo's tools, so that two runs of an episode give identical states.

``send_email`` (and every calendar tool that mails participants) and the cloud-drive tools stamp
``datetime.datetime.now()`` into the state. While a world executes a call, :func:`frozen` makes
that ``now()`` return the world's clock instead — the domain's fixed "now", advanced one second
per reading so that two emails sent in one episode still come out in order. Outside a call (and
for every other module) time is untouched.

The two tool modules import the ``datetime`` module and read ``datetime.datetime.now`` when called;
:func:`install` swaps their module reference for a proxy whose ``datetime`` class reads the clock.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as _dt
import importlib
import types
from collections.abc import Iterator

#: AgentDojo modules that read the wall clock (0.1.35).
CLOCK_READERS = (
    "agentdojo.default_suites.v1.tools.email_client",
    "agentdojo.default_suites.v1.tools.cloud_drive_client",
)


class EpisodeClock:
    """The time a world's tools see: ``start``, plus one second per reading."""

    def __init__(self, start: _dt.datetime):
        self.start = start
        self.readings = 0

    def now(self) -> _dt.datetime:
        value = self.start + _dt.timedelta(seconds=self.readings)
        self.readings += 1
        return value


_ACTIVE: contextvars.ContextVar[EpisodeClock | None] = contextvars.ContextVar("agentdojo_clock", default=None)


class _ClockDatetime(_dt.datetime):
    """``datetime.datetime`` whose ``now()`` reads the active episode clock (plain datetimes out)."""

    @classmethod
    def now(cls, tz=None):  # type: ignore[override]
        clock = _ACTIVE.get()
        if clock is None:
            return _dt.datetime.now(tz)
        return clock.now()


def _proxy() -> types.ModuleType:
    module = types.ModuleType("datetime")
    module.__dict__.update({k: v for k, v in vars(_dt).items() if not k.startswith("__")})
    module.datetime = _ClockDatetime  # type: ignore[attr-defined]
    return module


_installed = False


def install() -> None:
    """Point the clock-reading AgentDojo modules at the proxy (once per process)."""
    global _installed
    if _installed:
        return
    proxy = _proxy()
    for name in CLOCK_READERS:
        importlib.import_module(name).datetime = proxy
    _installed = True


@contextlib.contextmanager
def frozen(clock: EpisodeClock) -> Iterator[None]:
    """Inside this block, AgentDojo's tools read ``clock`` for the current time."""
    install()
    token = _ACTIVE.set(clock)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
