"""Waiting on a coordination primitive without missing a wake-up, as the Rust crate's
`runtime::wait` does.

A script that answers "not yet" (a full semaphore, a held fair lock or read-write lock, a
closed latch, a barrier still waiting) answers, as the last item of its reply, the most
milliseconds to block before running again, and what to block on is one of two things:

- a list the fair lock's and the semaphore's scripts ring: a waiter in line blocks with
  ``BLPOP`` on the turn key of the one just ahead of it (``{name}:turn:<token>``, the
  token the reply names), which that one rings when it leaves the line, so a release
  wakes one waiter; one the reply names no token for blocks on the bell
  (``{name}:bell``), and Redis hands each ring to the one blocked longest. A ring nobody
  was blocked for waits in the list;
- a wake stream (the ``wake`` key of the others), whose last id is the reply's item
  before: every script that frees something appends to it, so a waiter blocked on
  ``XREAD BLOCK … STREAMS <wake> <id>`` wakes at once, and one that blocks after the
  append returns at once too.

Every block lasts at most `MAX_BLOCK_MS`, then the script runs again; pub/sub is never
involved.
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Callable, Iterator, List, NamedTuple, Optional, Tuple, TypeVar

import redis.exceptions

from ._errors import NotGranted, UnexpectedReply
from ._generated import fair_lock, semaphore
from ._runtime import AsyncClient, Call, Execute, Plan, SyncClient, Text, drive, drive_async

R = TypeVar("R")

MAX_BLOCK_MS = 1000
"""The longest one blocking read lasts before the script runs again, whatever it said:
a wake-up lost to a failover or a deleted stream costs at most this."""


class Wake(NamedTuple):
    """What a "not yet" reply says to block on: the wake stream `key` after id `after`,
    or the list `key` (`after` None), for at most `within_ms`."""

    key: str
    after: Optional[str]
    within_ms: int


def wake_of(call: Call[Any], reply: Any) -> Wake:
    """The wake of `call`'s "not yet" `reply`: for a fair lock or a semaphore, the list its
    reply names (`bell_of`); otherwise its wake stream and the reply's last two items (the
    stream id, the ms to block at most); the ms capped at `MAX_BLOCK_MS`."""
    family = _RINGING.get(call.script.name)
    if family is not None:
        ahead, within = reply[-2], reply[-1]
        if not isinstance(ahead, str) or not isinstance(within, int):
            raise UnexpectedReply(f"{call.script.name}: not a waiter and a time: {reply!r}")
        first = call.script.key_names[0]
        return Wake(bell_of(family, call.key(first), ahead), None, min(within, MAX_BLOCK_MS))
    after, within = reply[-2], reply[-1]
    if not isinstance(after, str) or not is_stream_id(after) or not isinstance(within, int):
        raise UnexpectedReply(f"{call.script.name}: not a wake id and a time: {reply!r}")
    return Wake(call.key("wake"), after, min(within, MAX_BLOCK_MS))


_RINGING = {fair_lock.ACQUIRE.name: fair_lock, semaphore.ACQUIRE.name: semaphore}
"""The scripts whose "not yet" names the waiter to block behind, by family."""


def bell_of(family: Any, first_key: str, ahead: str) -> str:
    """What a waiter of `family` (a fair lock or a semaphore) blocks on, from the first
    key of its acquire (``{name}:owner``, ``{name}:state``) and the token its reply named:
    that token's turn key, or the bell when it named none."""
    form = getattr(family, "KEY_" + family.ACQUIRE.key_names[0].upper())
    suffix = form.parts[-1]
    assert isinstance(suffix, Text) and first_key.endswith(suffix.text)
    # The key's hash tag, which the templates keep as it is.
    name = first_key[: -len(suffix.text)]
    turn, bell = family.KEY_TURN, family.KEY_BELL
    return str(turn.build(name=name, token=ahead) if ahead else bell.build(name=name))


def is_stream_id(text: str) -> bool:
    """``<ms>-<seq>``, as Redis prints a stream id."""
    ms, dash, seq = text.partition("-")
    return bool(dash) and all(p.isascii() and p.isdigit() and len(p) <= 20 for p in (ms, seq))


def entry_of(reply: Any) -> Optional[str]:
    """The id of the entry an ``XREAD COUNT 1`` answered, from RESP2's
    ``[[key, [[id, fields]]]]`` or RESP3's map; None on a timeout."""
    if isinstance(reply, dict):
        streams: List[Any] = list(reply.values())
    elif isinstance(reply, list):
        streams = [s[1] for s in reply if isinstance(s, list) and len(s) == 2]
    else:
        return None
    if not streams or not streams[0]:
        return None
    entry_id: bytes = streams[0][0][0]
    return entry_id.decode()


def until(
    attempt: Callable[[Any], Call[R]],
    ready: Callable[[R], bool],
    timeout: float,
    functions: bool = False,
) -> Plan[Optional[R]]:
    """The wait, without its I/O: runs the call `attempt` builds (from the last reply,
    None at first) until its reply is `ready`, or `timeout` seconds passed (this process's
    monotonic clock; every lease is the server's): the ready reply, or None. Between tries
    it blocks on the wake the reply answered."""
    deadline = time.monotonic() + timeout
    reply: Optional[R] = None
    while True:
        call = attempt(reply)
        reply = yield from call.plan(functions)
        if ready(reply):
            return reply
        if time.monotonic() >= deadline:
            return None
        wake = wake_of(call, reply)
        # Block until woken, or until it is time to try again.
        left = min(deadline, time.monotonic() + wake.within_ms / 1000) - time.monotonic()
        if left > 0:
            block = max(1, int(left * 1000))  # BLOCK 0 would wait for ever
            if wake.after is None:
                read = yield Execute(("BLPOP", wake.key, f"{block // 1000}.{block % 1000:03d}"))
            else:
                read = yield Execute(("XREAD", "COUNT", 1, "BLOCK", block, "STREAMS", wake.key, wake.after))
            if isinstance(read, redis.exceptions.ResponseError):
                raise read


def wait(
    client: SyncClient,
    attempt: Callable[[Any], Call[R]],
    ready: Callable[[R], bool],
    timeout: float,
    *,
    functions: bool = False,
) -> Optional[R]:
    """Runs the call `attempt` builds until its reply is `ready` or `timeout` seconds
    passed (then None), blocking between tries on what each reply said (a bell or a wake
    stream). The connection is busy while it blocks.

        permits = Semaphore("slots")
        granted = wait(r, lambda _: permits.acquire(token, 1, 30_000, 10, place=5_000),
                       lambda reply: reply[0] is not None, timeout=5.0)
    """
    plan = until(attempt, ready, timeout, functions)
    return drive(plan, client)


async def wait_async(
    client: AsyncClient,
    attempt: Callable[[Any], Call[R]],
    ready: Callable[[R], bool],
    timeout: float,
    *,
    functions: bool = False,
) -> Optional[R]:
    """`wait`, on an asyncio connection."""
    plan = until(attempt, ready, timeout, functions)
    return await drive_async(plan, client)


@contextmanager
def hold(
    client: SyncClient,
    attempt: Callable[[Any], Call[R]],
    ready: Callable[[R], bool],
    release: Call[Any],
    timeout: float,
    *,
    functions: bool = False,
) -> Iterator[R]:
    """`wait` as a ``with`` block: enters with the ready reply, and runs `release` when the
    block ends, by an exception too; raises `NotGranted` when `timeout` passed first.

        permits = Semaphore("slots")
        with hold(r, lambda _: permits.acquire(token, 1, 30_000, 10, place=5_000),
                  lambda reply: reply[0] is not None, permits.release(token),
                  timeout=5.0):
            ...                     # one of the permits is this block's

    The lease still runs on the server: a block that outlives it loses what it held
    (extend it from the block, or take a lease longer than the work).
    """
    granted = wait(client, attempt, ready, timeout, functions=functions)
    if granted is None:
        raise _not_granted(release, timeout)
    try:
        yield granted
    finally:
        release.run(client, functions=functions)


@asynccontextmanager
async def hold_async(
    client: AsyncClient,
    attempt: Callable[[Any], Call[R]],
    ready: Callable[[R], bool],
    release: Call[Any],
    timeout: float,
    *,
    functions: bool = False,
) -> AsyncIterator[R]:
    """`hold` on an asyncio connection: ``async with hold_async(...) as granted``."""
    granted = await wait_async(client, attempt, ready, timeout, functions=functions)
    if granted is None:
        raise _not_granted(release, timeout)
    try:
        yield granted
    finally:
        await release.run_async(client, functions=functions)


def _not_granted(release: Call[Any], timeout: float) -> NotGranted:
    return NotGranted(f"{release.script.name.split('/')[0]}: not granted within {timeout} s")
