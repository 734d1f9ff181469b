"""Redlock: one lock across independent Redis masters, with a best-effort fencing token,
as the Rust crate's ``redlock::Redlock`` takes it: one machine (`_Acquire`) whose every
step runs on all the servers at once, by threads or by ``asyncio.gather``.

An acquisition draws a fresh token and notes the time on this process's monotonic
clock; runs ``redlock/acquire`` on every server (``SET lock token NX PX ttl``, then the
server's fencing counter ``{name}:fence``); where a majority granted, raises each
granting server's counter to the highest number answered (``redlock/raise``: the lock's
fencing token); and holds the lock when a majority granted and raised it while its
validity (the lease less the time taken, less a drift allowance of 1 % + 2 ms) is
positive. Otherwise it releases it everywhere (a server that did not answer may have
set it), waits a random delay and tries again, at most `retries` times.

Redlock rests on timing: a server that restarts without its data, a holder that pauses
past its validity, a server's clock that jumps, each can let two clients hold the lock.
Use it for efficiency; where correctness depends on mutual exclusion, write through a
resource that checks the fencing token (the crate's module docs say more).
"""

from __future__ import annotations

import random
import secrets
import time
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Iterator, List, Optional, Sequence, Tuple, Union

from ._errors import NotGranted
from ._generated import identity_lock as _identity_lock
from ._generated import redlock as _redlock
from ._machine import Done, Failed, Op, Pause, Run, drive_each, drive_each_async
from ._runtime import AsyncClient, Ms, SyncClient
from ._worker import _ms


@dataclass
class Held:
    """A Redlock held: the token it is held with on each server, its best-effort fencing
    token, and until when it is valid (this process's ``time.monotonic()``)."""

    token: str
    fence: int
    valid_until: float
    extensions: int = 0

    def validity(self) -> float:
        """How long (seconds) the lock stays valid from now; 0 once it may have passed to
        someone else."""
        return max(0.0, self.valid_until - time.monotonic())


def quorum(servers: int) -> int:
    """A majority of `servers`.

    >>> [quorum(n) for n in range(1, 8)]
    [1, 2, 2, 3, 3, 4, 4]
    """
    return servers // 2 + 1


def drift_ms(ttl_ms: int) -> float:
    """The allowance for the servers' clocks running faster than this process's: 1 % of the
    lease, plus 2 ms for the expiry's own granularity (the Redis docs' figure).

    >>> drift_ms(10_000)
    102.0
    """
    return ttl_ms / 100 + 2


class QuorumLock:
    """Redlock: the lock `name` (its key on each server; the fencing counter is
    ``{name}:fence``) taken on a majority of independent masters, not replicas of one
    another. Each server is a client: ``redis.Redis``, or ``RedisCluster`` (the keys of
    one server share a hash slot); give each a socket timeout and no retries of
    redis-py's own, so that a server that hangs or is down does not eat the lease.

        servers = [redis.Redis(host=h, socket_timeout=0.05, retry=Retry(NoBackoff(), 0))
                   for h in ("a", "b", "c")]
        lock = QuorumLock("invoice:42")
        with lock.hold(servers, 10_000) as held:   # NotGranted when no attempt got it
            ...                     # work while held.validity() lasts; write with held.fence

    `retries` attempts follow a failed one, each after a random delay below `retry_delay`
    (ms); one acquisition may be extended at most `max_extensions` times, so a stuck
    holder cannot keep the lock for ever.
    """

    def __init__(
        self,
        name: str,
        *,
        retries: int = 3,
        retry_delay: Ms = 200,
        max_extensions: int = 10,
        functions: bool = False,
    ) -> None:
        self.family = _redlock.Redlock(name)
        self.key = _redlock.KEY_LOCK.build(name=name)
        self.fence_key = _redlock.KEY_FENCE.build(name=name)
        self.retries = retries
        self.retry_delay_ms = _ms(retry_delay)
        self.max_extensions = max_extensions
        self.functions = functions

    def __repr__(self) -> str:
        return f"<QuorumLock {self.key}>"

    def acquire(self, servers: Sequence[SyncClient], ttl: Ms) -> Optional[Held]:
        """Takes the lock for `ttl` (ms or a timedelta) on a majority of `servers`, asked
        at once (a thread each): what is held, or None when every attempt failed (held
        elsewhere, or the attempts took longer than the lease). Raises the first server's
        error when fewer than a majority answered at all, once the servers that granted
        are freed again."""
        self._check(servers, ttl)
        return drive_each(_Acquire(self, len(servers), _ms(ttl)), servers, self.functions)

    async def acquire_async(self, servers: Sequence[AsyncClient], ttl: Ms) -> Optional[Held]:
        """`acquire` on asyncio clients, asked at once (``asyncio.gather``)."""
        self._check(servers, ttl)
        return await drive_each_async(_Acquire(self, len(servers), _ms(ttl)), servers, self.functions)

    def extend(self, servers: Sequence[SyncClient], held: Held, ttl: Ms) -> bool:
        """Sets the lease to `ttl` from now on a majority of `servers`: True when it did
        (`held`'s validity is then `ttl` less the time it took and the drift), False when
        the lock was lost. More than `max_extensions` extensions is a `ValueError`."""
        self._check_extension(servers, held, ttl)
        start = time.monotonic()
        op = _identity_lock.extend(self.key, held.token, ttl)
        return self._extended(held, start, _ms(ttl), drive_each(_Once(op), servers, self.functions))

    async def extend_async(self, servers: Sequence[AsyncClient], held: Held, ttl: Ms) -> bool:
        """`extend` on asyncio clients."""
        self._check_extension(servers, held, ttl)
        start = time.monotonic()
        op = _identity_lock.extend(self.key, held.token, ttl)
        answers = await drive_each_async(_Once(op), servers, self.functions)
        return self._extended(held, start, _ms(ttl), answers)

    def release(self, servers: Sequence[SyncClient], held: Held) -> int:
        """Frees the lock on every server: on how many it was still held with `held`'s
        token. A server that does not answer keeps it until its lease runs out."""
        op = _identity_lock.release(self.key, held.token)
        return _released(drive_each(_Once(op), servers, self.functions))

    async def release_async(self, servers: Sequence[AsyncClient], held: Held) -> int:
        """`release` on asyncio clients."""
        op = _identity_lock.release(self.key, held.token)
        return _released(await drive_each_async(_Once(op), servers, self.functions))

    @contextmanager
    def hold(self, servers: Sequence[SyncClient], ttl: Ms) -> Iterator[Held]:
        """`acquire` as a ``with`` block, released when it ends (by an exception too);
        `NotGranted` when every attempt failed.

            with lock.hold(servers, 10_000) as held:
                ...                 # work while held.validity() lasts; write with held.fence
        """
        held = self.acquire(servers, ttl)
        if held is None:
            raise NotGranted(f"{self.key}: not held by a majority after {self.retries + 1} attempts")
        try:
            yield held
        finally:
            self.release(servers, held)

    @asynccontextmanager
    async def hold_async(self, servers: Sequence[AsyncClient], ttl: Ms) -> AsyncIterator[Held]:
        """`hold` on asyncio clients: ``async with lock.hold_async(servers, ttl) as held``."""
        held = await self.acquire_async(servers, ttl)
        if held is None:
            raise NotGranted(f"{self.key}: not held by a majority after {self.retries + 1} attempts")
        try:
            yield held
        finally:
            await self.release_async(servers, held)

    def _check(self, servers: Sequence[Any], ttl: Ms) -> None:
        if not servers:
            raise ValueError("a QuorumLock needs at least one server")
        self.family.acquire(secrets.token_hex(16), ttl)  # the header's rule for `ttl`

    def _check_extension(self, servers: Sequence[Any], held: Held, ttl: Ms) -> None:
        self._check(servers, ttl)
        if held.extensions >= self.max_extensions:
            raise ValueError(
                f"this acquisition was extended {held.extensions} times, the most this lock allows; "
                "release it and acquire again, or raise max_extensions"
            )

    def _granted(self, answers: List[Any]) -> List[Tuple[int, int]]:
        """The servers that granted, with their numbers (none unless a majority); the first
        error raised when fewer than a majority answered."""
        failures = [a.error for a in answers if isinstance(a, Failed)]
        if failures and len(answers) - len(failures) < quorum(len(answers)):
            raise failures[0]
        granted = [(i, n) for i, n in enumerate(answers) if isinstance(n, int)]
        return granted if len(granted) >= quorum(len(answers)) else []

    def _extended(self, held: Held, start: float, ttl_ms: int, answers: List[Any]) -> bool:
        renewed = sum(1 for a in answers if a is True)
        valid_until = start + max(ttl_ms - drift_ms(ttl_ms), 0) / 1000
        if renewed < quorum(len(answers)) or valid_until <= time.monotonic():
            return False
        held.valid_until = valid_until
        held.extensions += 1
        return True

    def _jitter(self) -> float:
        return random.randrange(self.retry_delay_ms) / 1000 if self.retry_delay_ms > 0 else 0.0


def _released(answers: List[Any]) -> int:
    return sum(1 for a in answers if a is True)


class _Once:
    """One operation on every server: each server's answer."""

    def __init__(self, op: Op) -> None:
        self.op: Optional[Op] = op
        self.answers: List[Any] = []

    def step(self) -> Union[Run, Done[List[Any]]]:
        if self.op is None:
            return Done(self.answers)
        op, self.op = self.op, None
        return Run(op)

    def feed(self, answers: List[Any]) -> None:
        self.answers = answers


class _Acquire:
    """Redlock's attempts: take the lock on every server with a new token; where a
    majority granted, raise the fencing counters to the highest number answered; held
    when a majority raised within the lease, else released everywhere and tried again
    after a random pause, up to `retries` more times."""

    def __init__(self, lock: QuorumLock, servers: int, ttl_ms: int) -> None:
        self.lock = lock
        self.servers = servers
        self.ttl_ms = ttl_ms
        self.attempts_left = lock.retries + 1
        self.at = "ask"
        self.token = ""
        self.start = 0.0
        self.granted: List[Tuple[int, int]] = []
        self.fence = 0
        self.held: Optional[Held] = None
        self.over = False
        # Why the acquisition fails, raised once the servers that granted are freed.
        self.failure: Optional[BaseException] = None

    def step(self) -> Union[Run, Pause, Done[Optional[Held]]]:
        if self.over:
            return Done(self.held)
        if self.at == "pause":
            self.at = "ask"
            return Pause(self.lock._jitter())
        if self.at == "ask":
            self.attempts_left -= 1
            self.token = secrets.token_hex(16)
            self.start = time.monotonic()
            self.at = "asked"
            return Run(self.lock.family.acquire(self.token, self.ttl_ms))
        if self.at == "raise":
            return Run(self.lock.family.raise_(self.token, self.fence))
        # The attempt failed. The release's answers do not matter: a server that kept the
        # lock frees it when its lease runs out.
        self.at = "releasing"
        return Run(_identity_lock.release(self.lock.key, self.token))

    def feed(self, answers: List[Any]) -> None:
        if self.at == "asked":
            try:
                self.granted = self.lock._granted(answers)
            except Exception as err:  # too few answered: release, then raise this
                self.failure = err
                self.granted = []
            if self.granted:
                self.fence = max(n for _, n in self.granted)
                self.at = "raise"
            else:
                self.at = "release"
        elif self.at == "raise":
            granting = {i for i, _ in self.granted}
            raised = sum(1 for i, a in enumerate(answers) if i in granting and isinstance(a, int))
            valid_until = self.start + max(self.ttl_ms - drift_ms(self.ttl_ms), 0) / 1000
            if raised >= quorum(self.servers) and valid_until > time.monotonic():
                self.held = Held(self.token, self.fence, valid_until)
                self.over = True
            else:
                self.at = "release"
        elif self.failure is not None:
            raise self.failure
        elif self.attempts_left == 0:
            self.over = True
        else:
            self.at = "pause"
