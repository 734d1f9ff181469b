"""Redlock on three independent servers, sync (a thread per server) and asyncio (gather):
one holder at a time with a fencing token that grows, contenders that take turns, a lock
held by a majority with one server down and refused with two, extensions bounded."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Iterator, List, Optional, Tuple

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.retry import Retry

from redis_patterns import Held, NotGranted, QuorumLock
from redis_patterns import _redlock

from .conftest import Server


@pytest.fixture
def three() -> Iterator[List[Server]]:
    """Three independent servers of the test's own (it stops some)."""
    servers = [Server() for _ in range(3)]
    yield servers
    for s in servers:
        s.stop()


def clients(servers: List[Server]) -> List[redis.Redis]:
    """A client per server that fails at once when its server is gone (no retries of
    redis-py's own), as a Redlock's clients should."""
    return [s.client(socket_timeout=1, retry=Retry(NoBackoff(), 0)) for s in servers]


def test_one_holder_at_a_time_with_a_growing_fence(three: List[Server]) -> None:
    servers = clients(three)
    lock = QuorumLock("invoice:42", retries=0)
    held = lock.acquire(servers, 10_000)
    assert held is not None and 9.0 < held.validity() <= 10.0
    assert [s.get("invoice:42") for s in servers] == [held.token.encode()] * 3
    assert lock.acquire(servers, 10_000) is None, "a second holder"
    assert lock.release(servers, held) == 3
    again = lock.acquire(servers, 10_000)
    assert again is not None and again.fence > held.fence
    assert [int(s.get("{invoice:42}:fence") or 0) for s in servers] == [again.fence] * 3


def test_contenders_take_turns(three: List[Server]) -> None:
    lock = QuorumLock("turns", retries=200, retry_delay=5)
    inside, most = [0], [0]
    fences: List[int] = []
    released: List[int] = []
    guard = threading.Lock()

    def contend() -> None:
        servers = clients(three)
        for _ in range(5):
            held = lock.acquire(servers, 5_000)
            if held is None:
                released.append(-1)  # failed: every attempt found it held
                continue
            with guard:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
                fences.append(held.fence)
            with guard:
                inside[0] -= 1
            # Held on a majority: a contender's failed attempt may have held the third.
            released.append(lock.release(servers, held))

    threads = [threading.Thread(target=contend) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert most[0] == 1 and len(fences) == 20 and min(released) >= 2, released
    assert len(set(fences)) == 20, "each holder its own fencing token"


def test_a_majority_holds_the_lock_and_a_minority_cannot(three: List[Server]) -> None:
    servers = clients(three)
    lock = QuorumLock("quorum", retries=1, retry_delay=10)
    three[2].stop()
    held = lock.acquire(servers, 10_000)
    assert held is not None, "two of three"
    assert lock.release(servers, held) == 2
    three[1].stop()
    with pytest.raises(redis.exceptions.ConnectionError):
        lock.acquire(servers, 10_000)
    # As in the Rust crate, the server that granted is freed before the error.
    assert servers[0].exists("quorum") == 0


def test_a_lock_held_elsewhere_on_a_majority_is_not_taken(three: List[Server]) -> None:
    servers = clients(three)
    for s in servers[:2]:
        s.set("elsewhere", "another token", px=10_000)
    lock = QuorumLock("elsewhere", retries=2, retry_delay=5)
    assert lock.acquire(servers, 10_000) is None
    assert servers[2].get("elsewhere") is None, "the attempts released the third server"


def test_extensions_renew_the_lease_up_to_the_most_allowed(three: List[Server]) -> None:
    servers = clients(three)
    lock = QuorumLock("extended", max_extensions=1)
    held = lock.acquire(servers, 1_000)
    assert held is not None
    assert lock.extend(servers, held, 30_000)
    assert held.validity() > 29.0 and held.extensions == 1
    assert all(s.pttl("extended") > 29_000 for s in servers)
    with pytest.raises(ValueError, match="extended 1 times"):
        lock.extend(servers, held, 30_000)
    other = QuorumLock("extended", max_extensions=5)
    for s in servers[:2]:
        s.delete("extended")  # lost on a majority
    assert not other.extend(servers, held, 30_000)


def test_asyncio_redlock(three: List[Server]) -> None:
    lock = QuorumLock("async", retries=0)

    async def main() -> Tuple[Optional[Held], Optional[Held], bool, int]:
        servers = [redis.asyncio.Redis(host="127.0.0.1", port=s.port) for s in three]
        try:
            held = await lock.acquire_async(servers, 10_000)
            second = await lock.acquire_async(servers, 10_000)
            assert held is not None
            extended = await lock.extend_async(servers, held, 20_000)
            released = await lock.release_async(servers, held)
            return held, second, extended, released
        finally:
            for s in servers:
                await s.aclose()

    held, second, extended, released = asyncio.run(main())
    assert held is not None and second is None and extended and released == 3


def test_the_drift_and_quorum_are_the_rust_crates() -> None:
    import doctest

    assert doctest.testmod(_redlock).failed == 0
    with pytest.raises(ValueError):
        QuorumLock("x").acquire([], 1_000)
    servers: List[Any] = [object()]
    with pytest.raises(Exception, match="BAD_TTL"):
        QuorumLock("x").acquire(servers, 0)


def test_a_with_block_holds_the_lock_and_frees_it_however_it_ends(three: List[Server]) -> None:
    servers = clients(three)
    lock = QuorumLock("report", retries=0)
    with lock.hold(servers, 10_000) as held:
        assert [s.get("report") for s in servers] == [held.token.encode()] * 3
        with pytest.raises(NotGranted):
            with lock.hold(servers, 10_000):
                pass
        assert [s.get("report") for s in servers] == [held.token.encode()] * 3, "a refused block frees nothing"
    assert [s.get("report") for s in servers] == [None] * 3
    with pytest.raises(ZeroDivisionError):
        with lock.hold(servers, 10_000):
            1 / 0
    assert [s.get("report") for s in servers] == [None] * 3, "freed by the exception"


def test_an_async_with_block_holds_the_lock_and_frees_it(three: List[Server]) -> None:
    sync = clients(three)
    lock = QuorumLock("report", retries=0)

    async def main() -> None:
        servers = [redis.asyncio.Redis(host="127.0.0.1", port=s.port) for s in three]
        try:
            async with lock.hold_async(servers, 10_000) as held:
                assert [s.get("report") for s in sync] == [held.token.encode()] * 3
                with pytest.raises(NotGranted):
                    async with lock.hold_async(servers, 10_000):
                        pass
        finally:
            for s in servers:
                await s.aclose()

    asyncio.run(main())
    assert [s.get("report") for s in sync] == [None] * 3
