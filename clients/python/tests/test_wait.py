"""Waits on a coordination primitive's wake stream or bell: a semaphore, a fair lock, a
read-write lock, a latch and a barrier, each waiter blocked (XREAD, or BLPOP on a bell)
until another client frees what it waits for, sync and asyncio; and a wait that times
out."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Callable, List, Optional, Tuple, TypeVar

import pytest
import redis
import redis.asyncio

import redis_patterns as rp
from redis_patterns import Call, wait, wait_async
from redis_patterns._generated import fair_lock, semaphore
from redis_patterns._wait import bell_of, entry_of, is_stream_id

from .conftest import Cluster, Server, hex_token, poll

T = TypeVar("T")


def blocked_on_xread(r: redis.Redis, clients: int = 1, command: str = "xread") -> bool:
    """Whether `clients` connections are blocked in XREAD (or `command`) right now."""
    listed: List[Any] = r.client_list()
    return sum(1 for c in listed if c.get("cmd") == command and "b" in c.get("flags", "")) >= clients


class Waiter(threading.Thread):
    """A `wait` on a connection of its own, in a thread."""

    def __init__(self, server: Server, attempt: Callable[[Any], Call[Any]], ready: Callable[[Any], bool],
                 timeout: float = 30.0) -> None:
        super().__init__(daemon=True)
        self.client = server.client()
        self.args = (attempt, ready, timeout)
        self.reply: Any = None
        self.error: Optional[BaseException] = None

    def run(self) -> None:
        attempt, ready, timeout = self.args
        try:
            self.reply = wait(self.client, attempt, ready, timeout)
        except BaseException as err:  # reported by result()
            self.error = err
        finally:
            self.client.close()

    def result(self) -> Any:
        self.join(30)
        assert not self.is_alive(), "the waiter did not wake"
        if self.error is not None:
            raise self.error
        return self.reply


def test_a_semaphore_waiter_wakes_when_a_permit_frees(server: Server, r: redis.Redis) -> None:
    permits = rp.Semaphore("slots")
    a, b = hex_token(1), hex_token(2)

    def run(call: Call[T]) -> T:
        return call.run(r)

    run(permits.set_capacity(1))
    assert run(permits.acquire(a, 1, 60_000, 10))[0] is not None
    waiter = Waiter(server, lambda _: permits.acquire(b, 1, 60_000, 10, place=60_000),
                    lambda reply: reply[0] is not None)
    waiter.start()
    poll(lambda: blocked_on_xread(r, 1, "blpop"), "the waiter blocking on the bell")
    assert run(permits.release(a)) == 1
    deadline, _, block = waiter.result()
    assert deadline is not None and block == 0
    assert run(permits.state())[1] == 1  # b holds the permit


@pytest.mark.parametrize("order", ["fifo", "any"])
def test_a_fair_lock_wakes_one_waiter_at_a_time(server: Server, r: redis.Redis, order: str) -> None:
    lock = rp.FairLock("printer:" + order)
    a, b, c = hex_token(1), hex_token(2), hex_token(3)
    first = lock.acquire(a, 60_000, 60_000, 10, order=order).run(r)[0]
    assert first >= 1
    ready: Callable[[Tuple[int, str, int]], bool] = lambda reply: reply[0] != 0  # noqa: E731
    second = Waiter(server, lambda _: lock.acquire(b, 60_000, 60_000, 10, order=order), ready)
    second.start()
    poll(lambda: blocked_on_xread(r, 1, "blpop"), "b blocking")
    third = Waiter(server, lambda _: lock.acquire(c, 60_000, 60_000, 10, order=order), ready)
    third.start()
    poll(lambda: blocked_on_xread(r, 2, "blpop"), "b and c blocking")
    # b blocks on a's turn key, c on b's: the release wakes b alone, and c sleeps on.
    assert lock.release(a).run(r) is True
    assert second.result()[0] == first + 1
    assert third.is_alive()
    assert lock.release(b).run(r) is True
    assert third.result()[0] == first + 2


def test_a_writer_waits_for_the_readers(server: Server, r: redis.Redis) -> None:
    lock = rp.RwLock("doc")
    reader, writer = hex_token(1), hex_token(2)
    assert lock.acquire_read(reader, 60_000, False, 10).run(r)[0] == 1
    waiter = Waiter(server, lambda _: lock.acquire_write(writer, 60_000, 10, place_lease=60_000),
                    lambda reply: reply[0] != 0)
    waiter.start()
    poll(lambda: blocked_on_xread(r), "the writer blocking")
    assert lock.release_read(reader).run(r) == 0
    assert waiter.result()[0] >= 1


def test_a_barrier_releases_its_waiting_party(server: Server, r: redis.Redis) -> None:
    barrier = rp.Barrier("step")
    a, b = hex_token(1), hex_token(2)

    def arrive(last: Optional[Tuple[str, int, Optional[str], Optional[int]]]) -> Call[Any]:
        # After the first arrival, the party renews its place in the generation it joined.
        return barrier.arrive(a, 2, 60_000, generation=None if last is None else last[1])

    waiter = Waiter(server, arrive, lambda reply: reply[0] != "waiting")
    waiter.start()
    poll(lambda: blocked_on_xread(r), "a blocking")
    assert barrier.arrive(b, 2, 60_000).run(r) == ("released", 1, None, None)
    assert waiter.result() == ("released", 1, None, None)


def test_asyncio_latch_waiters_wake_when_it_opens(server: Server, r: redis.Redis) -> None:
    latch = rp.Latch("ready")
    assert latch.arm(2).run(r) == (True, 1)

    async def main() -> List[Any]:
        clients = [redis.asyncio.Redis(host="127.0.0.1", port=server.port) for _ in range(3)]
        try:
            def attempt(last: Any) -> Call[Any]:
                return latch.wait(generation=None if last is None else last[1])

            def opened(reply: Any) -> bool:
                return bool(reply[0])

            waiters = [asyncio.ensure_future(wait_async(c, attempt, opened, 30.0)) for c in clients[:2]]
            while not blocked_on_xread(r, 2):
                await asyncio.sleep(0.01)
            assert await latch.count_down("w1").run_async(clients[2]) == (1, 1, True)
            assert not any(w.done() for w in waiters)
            assert await latch.count_down("w2").run_async(clients[2]) == (1, 0, True)
            return list(await asyncio.gather(*waiters))
        finally:
            for c in clients:
                await c.aclose()

    assert asyncio.run(main()) == [(True, 1, None, None)] * 2


def test_a_wait_gives_up_after_its_timeout(r: redis.Redis) -> None:
    permits = rp.Semaphore("full")
    holder, token = hex_token(1), hex_token(2)
    permits.set_capacity(1).run(r)
    assert permits.acquire(holder, 1, 60_000, 10).run(r)[0] is not None
    granted: Callable[[Any], bool] = lambda reply: reply[0] is not None  # noqa: E731
    assert wait(r, lambda _: permits.acquire(token, 1, 60_000, 10), granted, 0.2) is None
    # A declared error ends the wait at once: two permits of a capacity of one.
    with pytest.raises(rp.ScriptError) as refused:
        wait(r, lambda _: permits.acquire(token, 2, 60_000, 10), granted, 30.0)
    assert refused.value.code == "BAD_N"


def test_a_wake_entry_is_read_in_either_protocol() -> None:
    assert entry_of([[b"{x}:wake", [[b"1-0", [b"w", b"*"]]]]]) == "1-0"
    assert entry_of({b"{x}:wake": [[b"3-1", {b"w": b"*"}]]}) == "3-1"
    assert entry_of(None) is None
    assert is_stream_id("0-0") and is_stream_id("1700000000000-12")
    for bad in ["", "0", "-0", "0-", "1-x", "+1-0", "1-0-0", " 1-0"]:
        assert not is_stream_id(bad), bad


def test_a_wait_on_a_cluster_blocks_on_the_wake_streams_node(cluster: Cluster) -> None:
    rc = cluster.client()
    try:
        latch = rp.Latch("cluster-ready")
        assert latch.arm(1).run(rc)[0] is True

        def opened(reply: Any) -> bool:
            return bool(reply[0])

        # Closed: the wait blocks on the latch's wake stream, then gives up.
        assert wait(rc, lambda _: latch.wait(), opened, 0.2) is None
        assert latch.count_down("w").run(rc) == (1, 0, True)
        assert wait(rc, lambda _: latch.wait(), opened, 5.0) == (True, 1, None, None)
    finally:
        rc.close()


def test_a_with_block_holds_a_permit_and_frees_it_however_it_ends(r: redis.Redis) -> None:
    permits = rp.Semaphore("hold")
    permits.set_capacity(1).run(r)
    a, b = hex_token(1), hex_token(2)

    def granted(reply: Any) -> bool:
        return reply[0] is not None

    def acquire(token: str) -> Callable[[Any], Call[Any]]:
        return lambda _: permits.acquire(token, 1, 60_000, 10, place=60_000)

    with rp.hold(r, acquire(a), granted, permits.release(a), 5.0) as reply:
        assert reply[0] is not None and permits.state().run(r)[1] == 1
        with pytest.raises(rp.NotGranted):
            with rp.hold(r, acquire(b), granted, permits.release(b), 0.1):
                pass
        assert permits.state().run(r)[1] == 1, "a refused block frees nothing of another's"
    assert permits.state().run(r)[1] == 0
    with pytest.raises(ZeroDivisionError):
        with rp.hold(r, acquire(b), granted, permits.release(b), 5.0):
            1 / 0
    assert permits.state().run(r)[1] == 0, "freed by the exception"


def test_an_async_with_block_holds_a_fair_lock(server: Server, r: redis.Redis) -> None:
    lock = rp.FairLock("hold-async")
    token, owner = hex_token(1), rp.fair_lock.KEY_OWNER.build(name="hold-async")

    async def main() -> None:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        try:
            async with rp.hold_async(client, lambda _: lock.acquire(token, 60_000, 60_000, 10),
                                     lambda reply: reply[0] > 0, lock.release(token), 5.0) as reply:
                assert reply[0] > 0
                assert r.hget(owner, "t") == token.encode()
        finally:
            await client.aclose()

    asyncio.run(main())
    assert r.exists(owner) == 0


def test_a_waiter_blocks_behind_the_one_ahead_or_on_the_bell() -> None:
    holder = hex_token(1)
    assert bell_of(fair_lock, "{printer}:owner", holder) == f"{{printer}}:turn:{holder}"
    assert bell_of(fair_lock, "{printer}:owner", "") == "{printer}:bell"
    assert bell_of(fair_lock, "pre{t}x:owner", holder) == f"pre{{t}}x:turn:{holder}"
    assert bell_of(semaphore, "{slots}:state", holder) == f"{{slots}}:turn:{holder}"
    assert bell_of(semaphore, "{slots}:state", "") == "{slots}:bell"
