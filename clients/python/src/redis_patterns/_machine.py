"""Long-running loops, written once for sync and asyncio connections, as the Rust crate's
``runtime::machine`` writes them.

A `Call` runs one script as a plan (what to send, what a reply means); a loop that runs
many of them (the worker and its renewals, the scheduler, a wait for a job's end,
Redlock's attempts) is one level up: a machine holds the loop's state and says what to
do next (`Run` this operation, `Pause` this long, or `Done`), and is fed each
operation's answer, or its error as a `Failed`. It never does I/O and never sleeps; a
driver does that, in a few lines: `drive` on a sync connection, `drive_async` on an
asyncio one, `drive_each` and `drive_each_async` for a fan-out (the same operation on
several servers at once). So what to send after an error that passes, when to give up
and what a reply means have one home, whichever kind of connection runs the loop.

A machine builds each operation when it steps, but an operation that the header refuses
(a value out of range) raises only when it runs, as `lazy` does: the machine is fed the
error, as it is the error of a call that went out.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Generic, List, NamedTuple, Optional, Protocol, Sequence, TypeVar, Union

import redis.exceptions

from ._errors import ScriptError
from ._runtime import AsyncClient, Call, Execute, Plan, SyncClient, drive as _drive_plan, drive_async as _drive_plan_async

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Op(Protocol):
    """One operation a loop runs: a `Call`, a native command (`command`), or one built
    when it runs (`lazy`)."""

    def plan(self, functions: bool) -> Plan[Any]: ...


class Failed(NamedTuple):
    """What a machine is fed when its operation failed: the error, to judge."""

    error: Exception


class Run(NamedTuple):
    """Run this operation, then feed its answer."""

    op: Op


class Pause(NamedTuple):
    """Pause this many seconds, then ask again."""

    seconds: float


@dataclass(frozen=True)
class Done(Generic[T_co]):
    """The loop ended with this."""

    value: T_co


Step = Union[Run, Pause, Done[T]]


class Machine(Protocol[T_co]):
    """A loop on one connection, without its I/O."""

    def step(self) -> Union[Run, Pause, Done[T_co]]: ...

    def feed(self, answer: Any) -> None: ...


class Fanout(Protocol[T_co]):
    """A loop that runs each operation on several servers at once (Redlock)."""

    def step(self) -> Union[Run, Pause, Done[T_co]]: ...

    def feed(self, answers: List[Any]) -> None: ...


class _Command:
    """A native command: its reply as redis-py reads it (bytes), an error reply raised."""

    __slots__ = ("args",)

    def __init__(self, *args: Any) -> None:
        self.args = args

    def __repr__(self) -> str:
        return f"<command {self.args[0]}>"

    def plan(self, functions: bool) -> Plan[Any]:
        reply = yield Execute(self.args)
        if isinstance(reply, redis.exceptions.ResponseError):
            raise reply
        return reply


def command(*args: Any) -> Op:
    """The operation that sends one native command (``BZPOPMIN``, ``XREAD``, ``CONFIG``)."""
    return _Command(*args)


class _Lazy:
    __slots__ = ("build",)

    def __init__(self, build: Callable[[], Call[Any]]) -> None:
        self.build = build

    def plan(self, functions: bool) -> Plan[Any]:
        call = self.build()
        return (yield from call.plan(functions))


def lazy(build: Callable[[], Call[Any]]) -> Op:
    """The call `build` makes, built when it runs: one the header refuses fails as it runs."""
    return _Lazy(build)


# The errors that pass.

_TRANSIENT_CODES = frozenset(("UNBLOCKED", "READONLY", "LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "BUSY"))

_CODE_OF_CLASS = (
    (redis.exceptions.ReadOnlyError, "READONLY"),
    (redis.exceptions.BusyLoadingError, "LOADING"),
    (redis.exceptions.MasterDownError, "MASTERDOWN"),
    (redis.exceptions.TryAgainError, "TRYAGAIN"),
    (redis.exceptions.ClusterDownError, "CLUSTERDOWN"),
)


def error_code(err: BaseException) -> Optional[str]:
    """The code of a server's error reply (``READONLY``, ``LEASE_LOST``, …), or None for
    an error that is no reply. redis-py strips the code off some replies and says it by
    the exception's class instead."""
    if isinstance(err, ScriptError):
        return err.code
    for cls, code in _CODE_OF_CLASS:
        if isinstance(err, cls):
            return code
    if isinstance(err, redis.exceptions.ResponseError):
        status = getattr(err, "status_code", None)
        return status if isinstance(status, str) else str(err).split(" ", 1)[0]
    return None


def is_connection_failure(err: BaseException) -> bool:
    """A failure of the connection rather than an answer of the server's: the command may
    or may not have run, and a new connection may do better."""
    if error_code(err) is not None or isinstance(err, redis.exceptions.AuthenticationError):
        return False
    return isinstance(err, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError))


def is_transient(err: BaseException) -> bool:
    """Whether a loop sends the call again (on a new connection, after a pause) rather than
    stop: a failed connection (refused, closed, timed out), or the error reply of a server
    that changes roles, loads its data or moves slots: ``UNBLOCKED`` (a blocked
    ``BZPOPMIN`` on a demoted server), ``READONLY``, ``LOADING``, ``MASTERDOWN``,
    ``TRYAGAIN``, ``CLUSTERDOWN``, ``BUSY``. Every other error (a script's declared code,
    ``NOPERM``, ``WRONGTYPE``, ``OOM``, …) is not: the loop raises it.

    >>> import redis.exceptions
    >>> is_transient(redis.exceptions.ReadOnlyError("You can't write against a read only replica."))
    True
    >>> is_transient(redis.exceptions.ResponseError("WRONGTYPE Operation against a key"))
    False
    """
    if isinstance(err, ScriptError):
        return False
    code = error_code(err)
    return code in _TRANSIENT_CODES if code is not None else is_connection_failure(err)


FIRST_RETRY_PAUSE = 0.010
"""The first pause (seconds) before a loop sends a call again after an error that passes."""
MOST_RETRY_PAUSE = 1.0
"""The longest such pause: they double from `FIRST_RETRY_PAUSE` up to it."""


class Retries:
    """How a loop meets the errors that pass: it counts them and pauses before it sends the
    call again, from 10 ms doubling up to 1 s, each pause drawn from half of it to all of
    it; a call that goes through starts the pauses over."""

    def __init__(self) -> None:
        self.pause = FIRST_RETRY_PAUSE
        self.reconnects = 0
        """Failed connections met."""
        self.server_retries = 0
        """Other errors that pass met (a demoted, loading or resharding server)."""

    def after(self, err: BaseException) -> Optional[float]:
        """The pause (seconds) before sending again after `err`, counted; None for an
        error that does not pass."""
        if not is_transient(err):
            return None
        if is_connection_failure(err):
            self.reconnects += 1
        else:
            self.server_retries += 1
        pause = self.pause / 2 + random.uniform(0, self.pause / 2)
        self.pause = min(self.pause * 2, MOST_RETRY_PAUSE)
        return pause

    def passed(self) -> None:
        """A call went through: the next error pauses from the first pause again."""
        self.pause = FIRST_RETRY_PAUSE


# Connections that open themselves again.

Connect = Union[SyncClient, Callable[[], SyncClient]]
"""What a sync loop runs on: a client (``redis.Redis``, ``RedisCluster``), whose pool
opens a new connection after one failed, or a function that answers a new client (one
that asks Sentinel, or a list of servers, which is the primary now), called again after
an error that passes."""

ConnectAsync = Union[AsyncClient, Callable[[], Union[AsyncClient, Awaitable[AsyncClient]]]]
"""`Connect`, for an asyncio loop: an asyncio client, or a function that answers one
(or a coroutine function)."""


class Link:
    """A loop's sync connection: the client it was given, or one from its connect
    function, made on first use and made again after an error that passes (a demoted
    server's connection stays on it: a new one may reach the primary)."""

    def __init__(self, connect: Connect, functions: bool = False) -> None:
        self._connect: Optional[Callable[[], SyncClient]] = connect if callable(connect) else None
        self._client: Optional[SyncClient] = None if callable(connect) else connect
        self.functions = functions

    def run(self, op: Op) -> Any:
        """Runs `op` once: its answer, or `Failed` with its error."""
        try:
            if self._client is None:
                assert self._connect is not None
                self._client = self._connect()
            return _drive_plan(op.plan(self.functions), self._client)
        except Exception as err:
            if self._connect is not None and is_transient(err):
                self.close()
            return Failed(err)

    def close(self) -> None:
        """Closes a client this link made (a client it was given is the caller's)."""
        client, self._client = self._client, None
        if client is not None and self._connect is not None:
            try:
                client.close()
            except Exception:  # a client of a dead server fails to close: it is gone anyway
                pass


class AsyncLink:
    """`Link`, for asyncio."""

    def __init__(self, connect: ConnectAsync, functions: bool = False) -> None:
        self._connect: Optional[Callable[[], Any]] = connect if callable(connect) else None
        self._client: Optional[AsyncClient] = None if callable(connect) else connect
        self.functions = functions

    async def run(self, op: Op) -> Any:
        """Runs `op` once: its answer, or `Failed` with its error."""
        try:
            if self._client is None:
                assert self._connect is not None
                made = self._connect()
                self._client = await made if inspect.isawaitable(made) else made
            return await _drive_plan_async(op.plan(self.functions), self._client)
        except Exception as err:
            if self._connect is not None and is_transient(err):
                await self.close()
            return Failed(err)

    async def close(self) -> None:
        """Closes a client this link made."""
        client, self._client = self._client, None
        if client is not None and self._connect is not None:
            try:
                close = getattr(client, "aclose", None) or client.close
                await close()
            except Exception:
                pass


# The drivers.


def drive(machine: Machine[T], link: Link) -> T:
    """Runs `machine` to its end, its operations on `link`."""
    while True:
        step = machine.step()
        if isinstance(step, Run):
            machine.feed(link.run(step.op))
        elif isinstance(step, Pause):
            time.sleep(step.seconds)
        else:
            return step.value


async def drive_async(machine: Machine[T], link: AsyncLink) -> T:
    """Runs `machine` to its end, its operations on an asyncio `link`."""
    while True:
        step = machine.step()
        if isinstance(step, Run):
            machine.feed(await link.run(step.op))
        elif isinstance(step, Pause):
            await asyncio.sleep(step.seconds)
        else:
            return step.value


def drive_each(machine: Fanout[T], servers: Sequence[SyncClient], functions: bool = False) -> T:
    """Runs `machine` to its end, each operation on every server at once (a thread each;
    inline for one server)."""
    links = [Link(server, functions) for server in servers]
    with ThreadPoolExecutor(max_workers=max(1, len(links) - 1)) as pool:
        while True:
            step = machine.step()
            if isinstance(step, Run):
                op = step.op
                others = [pool.submit(link.run, op) for link in links[1:]]
                first = links[0].run(op)
                machine.feed([first, *(f.result() for f in others)])
            elif isinstance(step, Pause):
                time.sleep(step.seconds)
            else:
                return step.value


async def drive_each_async(machine: Fanout[T], servers: Sequence[AsyncClient], functions: bool = False) -> T:
    """Runs `machine` to its end on asyncio clients, each operation on every server at once."""
    links = [AsyncLink(server, functions) for server in servers]
    while True:
        step = machine.step()
        if isinstance(step, Run):
            op = step.op
            machine.feed(list(await asyncio.gather(*(link.run(op) for link in links))))
        elif isinstance(step, Pause):
            await asyncio.sleep(step.seconds)
        else:
            return step.value
