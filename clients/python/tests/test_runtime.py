"""The runtime: the number rule, key names from templates, errors, EVALSHA with NOSCRIPT
recovery alone and in pipelines and transactions (one round trip, nothing applied twice),
FCALL through the Functions library, asyncio, and a cluster."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import math
import os
from datetime import timedelta
from typing import Any, Dict, List, cast

import pytest
import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.connection
from redis.crc import key_slot

import redis_patterns as rp
from redis_patterns import (
    Batch,
    FixedLengthQueue,
    IdentityLock,
    InvalidInput,
    RanOutsideTransaction,
    ScriptError,
    fixed_length_queue,
    identity_lock,
)

from .conftest import Cluster, Server, dump, hex_token

REPOSITORY = os.path.join(os.path.dirname(__file__), "..", "..", "..")


class Counting(redis.connection.Connection):
    """A connection that counts the round trips it starts (each packed send)."""

    sends = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        Counting.sends += 1
        cast(Any, super()).send_packed_command(command, check_health)


def counting_client(server: Server) -> redis.Redis:
    pool = redis.ConnectionPool(connection_class=Counting, host="127.0.0.1", port=server.port)
    client = redis.Redis(connection_pool=pool)
    client.ping()  # connected: the handshake is not counted below
    Counting.sends = 0
    return client


def commandstats(client: redis.Redis) -> Dict[str, Dict[str, int]]:
    stats: Dict[str, Dict[str, int]] = client.info("commandstats")
    return stats


def calls(client: redis.Redis, command: str) -> int:
    return commandstats(client).get(f"cmdstat_{command}", {}).get("calls", 0)


# The number rule.


def test_integers_follow_the_scripts_rule() -> None:
    assert rp.integer_from_text("-42") == -42
    assert rp.integer_from_text("0") == 0
    assert rp.integer_from_text(str(2**63 - 1)) == 2**63 - 1
    for refused in ["007", "+5", " 5", "5 ", "1e3", "0x10", "1.5", "-0", "", "-", "1_000", str(2**63)]:
        assert rp.integer_from_text(refused) is None, refused


def test_floats_follow_the_scripts_rule_and_round_trip() -> None:
    for text, value in [("1e+20", 1e20), ("1.0E16", 1e16), ("1e-07", 1e-7), ("-0.5", -0.5), ("0", 0.0)]:
        assert rp.float_from_text(text) == value
    for refused in ["NaN", "inf", "0x10", " 5", "+5", ".5", "5.", "007", "1e", "1e+", "1e400", "1_0", ""]:
        assert rp.float_from_text(refused) is None, refused
    # What the package sends for a float is what the rule reads back, exactly.
    param = rp.Param("x", "float", "BAD_X")
    for value in [0.0, -0.0, 0.1, 1.5, -2.0, 1e20, 1e21, 1e-7, 5e-324, 1.7976931348623157e308, 123456789.12345679]:
        text = param.encode(value).decode()
        read = rp.float_from_text(text)
        assert read is not None and read == value, text
        assert math.copysign(1, read) == math.copysign(1, value)


def test_the_runtimes_examples_hold() -> None:
    import doctest

    from redis_patterns import _runtime

    assert doctest.testmod(_runtime).failed == 0


def test_durations_are_whole_milliseconds_rounded_down() -> None:
    param = rp.Param("ttl", "ms", "BAD_TTL", low=1, high=10)
    assert param.encode(timedelta(microseconds=1500)) == b"1"
    assert param.encode(10) == b"10"
    for refused in [timedelta(microseconds=999), 11, 0, 1.5, True]:
        with pytest.raises(ValueError):
            param.encode(refused)


# Key names.


def test_keys_are_named_from_their_templates() -> None:
    from redis_patterns import app_log, work_queue

    assert work_queue.KEY_WAITING.build(name="emails") == "{emails}:waiting"
    # A name that holds a hash tag keeps it, so the keys stay in its slot.
    assert work_queue.KEY_WAITING.build(name="{tenant:7}:emails") == "{tenant:7}:emails:waiting"
    assert app_log.KEY_COMMON.build(name="app", severity="info") == "common:{app:info}"
    for name in ["", "a}b"]:
        with pytest.raises(InvalidInput) as refused:
            work_queue.KEY_WAITING.build(name=name)
        assert (refused.value.code, refused.value.what) == ("BAD_KEYS", "name")
    # A hash tag across two values would hash by text neither holds.
    with pytest.raises(InvalidInput) as refused:
        app_log.KEY_COMMON.build(name="a{b", severity="c}d")
    assert refused.value.what == "name"
    # An instance is checked when it is built.
    with pytest.raises(InvalidInput):
        rp.WorkQueue("")
    with pytest.raises(InvalidInput):
        rp.WorkQueue("a}b")


def test_a_family_names_its_keys_as_the_rust_crate_does() -> None:
    assert rp.WorkQueue("emails").counts().keys == [
        "{emails}:waiting", "{emails}:delayed", "{emails}:leased", "{emails}:dead", "{emails}:parked",
        "{emails}:completed", "{emails}:blocked",
    ]
    assert rp.Tag("blog").add("post:1", ["redis", "lua"]).keys == [
        "{blog}:target:post:1", "{blog}:tag:redis", "{blog}:tag:lua",
    ]
    # @default: GcraLimiter::new names its keys GcraLimiter:<uid>:<action>, with a bucket of `count`.
    gcra = rp.RateLimiter("u1", "login").gcra(10, 1000, 1)
    assert gcra.keys == ["GcraLimiter:u1:login"]
    assert gcra.args[:2] == [b"10", b"10"]
    assert rp.RateLimiter("u1", "login", prefix="mine").gcra(10, 1000, 1, burst=3).keys == ["mine:u1:login"]
    assert rp.RateLimiter("u1", "login").is_permitted(5, 1000, 1).keys == ["RateLimiter:u1:login"]
    board = rp.Leaderboard("{game}:daily").standing(["{game}:daily", "{game}:weekly"], "alice")
    assert board.keys == ["{game}:daily", "{game}:daily:levels", "{game}:weekly", "{game}:weekly:levels"]
    assert rp.WorkQueue("q").take(10, hex_token(), []).args[:3] == [b"30000", b"10", b"5"]


def test_a_variadic_given_as_text_is_refused() -> None:
    with pytest.raises(InvalidInput) as refused:
        rp.Tag("blog").add("post:1", "redis")
    assert refused.value.code == "BAD_ARGS"
    with pytest.raises(InvalidInput) as refused:
        rp.Leaderboard("b").standing("b", "alice")
    assert refused.value.code == "BAD_KEYS"


# Errors.


def test_a_declared_code_is_a_script_error_and_others_stay_redis_errors(r: redis.Redis) -> None:
    counters = rp.Counter("c")
    r.hset("c", "views", "many")
    with pytest.raises(ScriptError) as refused:
        counters.hash_reset("views", 0).run(r)
    assert (refused.value.code, refused.value.script) == ("NOT_INTEGER", "counter/hash_reset")
    assert not isinstance(refused.value, InvalidInput)
    assert r.hget("c", "views") == b"many"
    r.set("list", "x")
    with pytest.raises(redis.exceptions.ResponseError) as other:
        FixedLengthQueue("list").enqueue(10, [b"a"]).run(r)
    assert str(other.value).startswith("WRONGTYPE")
    assert not isinstance(other.value, ScriptError)


def test_replies_decode_as_their_headers_say_whatever_the_clients_decoding(server: Server) -> None:
    for decode in (False, True):
        with server.client(decode_responses=decode) as r:
            r.flushdb()
            r.set("lock", "secret", px=60_000)
            left = IdentityLock("lock").lease("secret").run(r)
            assert isinstance(left, int) and 0 < left <= 60_000
            assert IdentityLock("lock").lease("other").run(r) is None
            r.hset("{site}:ids", "bob", b"\xff\x00")
            # bytes, as the header says, even where the client decodes replies
            assert rp.UserLogin("site").login(b"bob", 10).run(r) == (b"\xff\x00", 1)
            assert rp.UserLogin("site").login("nobody", 10).run(r) == (None, 0)


# EVALSHA with NOSCRIPT recovery.


def test_a_call_loads_its_script_after_a_flush_and_runs_once(own_server: Server) -> None:
    r = counting_client(own_server)
    queue = FixedLengthQueue("q")
    r.script_flush()
    Counting.sends = 0
    assert queue.enqueue(10, [b"a"]).run(r) == (1, 0)
    # EVALSHA (NOSCRIPT), SCRIPT LOAD, EVALSHA.
    assert Counting.sends == 3
    assert r.lrange("q", 0, -1) == [b"a"]
    Counting.sends = 0
    assert queue.enqueue(10, [b"b"]).run(r) == (1, 0)
    assert Counting.sends == 1
    assert r.lrange("q", 0, -1) == [b"a", b"b"]


def test_a_transaction_after_a_flush_is_one_round_trip_applied_once(own_server: Server) -> None:
    r = counting_client(own_server)
    r.script_flush()
    Counting.sends = 0
    batch = Batch(transaction=True)
    pushed = batch.add(FixedLengthQueue("{q}:a").enqueue(10, [b"1"]))
    again = batch.add(FixedLengthQueue("{q}:a").enqueue(10, [b"2"]))
    reset = batch.add(rp.Counter("{q}:c").hash_reset("n", 5))
    batch.run(r)
    assert Counting.sends == 1
    assert (pushed.result(), again.result(), reset.result()) == ((1, 0), (1, 0), 0)
    assert r.lrange("{q}:a", 0, -1) == [b"1", b"2"]
    assert r.hget("{q}:c", "n") == b"5"
    assert calls(r, "multi") == 1 and calls(r, "exec") == 1


def test_a_pipeline_of_several_scripts_loads_them_in_band(own_server: Server) -> None:
    r = counting_client(own_server)
    r.script_flush()
    Counting.sends = 0
    batch = Batch()
    pushed = batch.add(FixedLengthQueue("q").enqueue(10, [b"1"]))
    reset = batch.add(rp.Counter("c").hash_reset("n", 5))
    batch.run(r)
    assert Counting.sends == 1
    assert (pushed.result(), reset.result()) == ((1, 0), 0)
    assert r.lrange("q", 0, -1) == [b"1"]


def test_a_pipeline_of_one_script_sends_its_calls_alone_then_again_behind_the_load(own_server: Server) -> None:
    r = counting_client(own_server)
    queue = FixedLengthQueue("q")
    r.script_flush()
    Counting.sends = 0
    batch = Batch()
    slots = [batch.add(queue.enqueue(10, [str(i).encode()])) for i in range(5)]
    batch.run(r)
    assert Counting.sends == 2
    assert [s.result() for s in slots] == [(1, 0)] * 5
    assert r.lrange("q", 0, -1) == [b"0", b"1", b"2", b"3", b"4"]
    # Loaded now: one round trip, with no load in it.
    loads = calls(r, "script|load")
    Counting.sends = 0
    batch = Batch()
    slots = [batch.add(queue.enqueue(10, [b"5"])) for _ in range(2)]
    batch.run(r)
    assert Counting.sends == 1 and calls(r, "script|load") == loads
    assert r.llen("q") == 7


def test_a_failed_call_in_a_transaction_is_its_slots_error_alone(r: redis.Redis) -> None:
    r.hset("c", "n", "many")
    batch = Batch(transaction=True)
    pushed = batch.add(FixedLengthQueue("q").enqueue(10, [b"1"]))
    refused = batch.add(rp.Counter("c").hash_reset("n", 1))
    batch.run(r)
    assert pushed.result() == (1, 0)
    with pytest.raises(ScriptError) as err:
        refused.result()
    assert err.value.code == "NOT_INTEGER"


def test_a_batch_runs_once_and_its_slots_wait_for_it(r: redis.Redis) -> None:
    batch = Batch()
    slot = batch.add(FixedLengthQueue("q").enqueue(10, [b"1"]))
    with pytest.raises(RuntimeError):
        slot.result()
    batch.run(r)
    with pytest.raises(RuntimeError):
        batch.run(r)
    with pytest.raises(RuntimeError):
        batch.add(FixedLengthQueue("q").enqueue(10, [b"1"]))
    assert slot.result() == (1, 0)
    assert len(batch) == 1


def test_a_block_that_raises_sends_nothing(r: redis.Redis) -> None:
    with pytest.raises(KeyError):
        with rp.transaction(r) as batch:
            batch.add(FixedLengthQueue("q").enqueue(10, [b"1"]))
            raise KeyError("stop")
    assert r.exists("q") == 0
    with rp.pipeline(r) as batch:
        slot = batch.add(FixedLengthQueue("q").enqueue(10, [b"1"]))
    assert slot.result() == (1, 0)


def test_a_refused_multi_says_the_commands_ran_outside_a_transaction(own_server: Server) -> None:
    admin = own_server.client()
    admin.acl_setuser("nomulti", enabled=True, passwords=["+pw"], keys=["*"], commands=["+@all", "-multi"])
    r = redis.Redis(host="127.0.0.1", port=own_server.port, username="nomulti", password="pw")
    batch = Batch(transaction=True)
    batch.add(FixedLengthQueue("q").enqueue(10, [b"1"]))
    with pytest.raises(RanOutsideTransaction) as err:
        batch.run(r)
    assert err.value.commands == 2  # the load and the call
    assert admin.lrange("q", 0, -1) == [b"1"]


# Read-only scripts and FCALL.


def test_read_only_scripts_run_with_evalsha_ro(own_server: Server) -> None:
    r = own_server.client()
    r.script_load(identity_lock.LEASE.source)
    IdentityLock("lock").lease("x").run(r)
    assert calls(r, "evalsha_ro") == 1 and calls(r, "evalsha") == 0


def test_fcall_loads_the_library_where_it_is_missing(own_server: Server) -> None:
    r = counting_client(own_server)
    assert FixedLengthQueue("q").enqueue(10, [b"a"]).run(r, functions=True) == (1, 0)
    assert Counting.sends == 3  # FCALL (no function), FUNCTION LOAD, FCALL
    libraries = r.function_list(library=rp.LIBRARY)
    assert len(libraries) == 1
    Counting.sends = 0
    assert IdentityLock("lock").lease("x").run(r, functions=True) is None
    assert Counting.sends == 1
    assert calls(r, "fcall") == 2 and calls(r, "fcall_ro") == 1 and calls(r, "evalsha") == 0
    assert r.lrange("q", 0, -1) == [b"a"]


def test_fcall_after_function_load(own_server: Server) -> None:
    r = own_server.client()
    r.function_load(rp.functions_library())
    r.set("lock", "secret")
    assert IdentityLock("lock").release("secret").run(r, functions=True) is True
    version = rp.LIBRARY.replace("redis_patterns_v", "rp_v", 1) + "__version"
    assert r.fcall_ro(version, 0) == rp.VERSION.encode()


def test_the_package_is_the_crates_scripts_and_manifest() -> None:
    with open(os.path.join(REPOSITORY, "generated", "manifest.json"), "rb") as f:
        assert hashlib.sha1(f.read()).hexdigest() == rp.MANIFEST_SHA1
    assert rp.functions_library().startswith(f"#!lua name={rp.LIBRARY}\n")
    with open(os.path.join(REPOSITORY, "generated", "functions.lua")) as f:
        assert f.read() == rp.functions_library()
    for script in rp.SCRIPTS:
        with open(os.path.join(REPOSITORY, script.path)) as f:
            assert f.read() == script.source, script.path


# asyncio.


def test_asyncio_calls_batches_and_recovery(own_server: Server) -> None:
    async def main() -> List[Any]:
        client = redis.asyncio.Redis(host="127.0.0.1", port=own_server.port)
        try:
            await client.script_flush()
            queue = FixedLengthQueue("q")
            first = await queue.enqueue(10, [b"a"]).run_async(client)
            await client.script_flush()
            async with rp.transaction_async(client) as batch:
                second = batch.add(queue.enqueue(10, [b"b"]))
            await client.script_flush()
            async with rp.pipeline_async(client) as batch:
                third = [batch.add(queue.enqueue(10, [b"c"])) for _ in range(2)]
            await client.function_flush("SYNC")
            fourth = await queue.enqueue(10, [b"d"]).run_async(client, functions=True)
            items = await client.lrange("q", 0, -1)
            return [first, second.result(), [s.result() for s in third], fourth, items]
        finally:
            await client.aclose()

    first, second, third, fourth, items = asyncio.run(main())
    assert (first, second, third, fourth) == ((1, 0), (1, 0), [(1, 0), (1, 0)], (1, 0))
    assert items == [b"a", b"b", b"c", b"c", b"d"]


# A cluster.


def flush_scripts(cluster: Cluster) -> None:
    # SYNC: on Valkey 8.0 a FUNCTION LOAD after an asynchronous flush can crash the server.
    for node in cluster.nodes:
        with node.client() as c:
            c.script_flush()
            c.function_flush("SYNC")


def test_cluster_calls_batches_and_recovery(cluster: Cluster) -> None:
    rc = cluster.client()
    try:
        names = [f"q{i}" for i in range(12)]  # over every node
        assert {cast(Any, rc).keyslot(n) // 5461 for n in names} == {0, 1, 2}
        flush_scripts(cluster)
        for name in names:
            assert FixedLengthQueue(name).enqueue(10, [b"a"]).run(rc) == (1, 0)
            assert FixedLengthQueue(name).enqueue(10, [b"b"]).run(rc, functions=True) == (1, 0)
        flush_scripts(cluster)
        batch = Batch(transaction=True)
        a = batch.add(FixedLengthQueue("{q}:a").enqueue(10, [b"1"]))
        b = batch.add(rp.Counter("{q}:c").hash_reset("n", 1))
        batch.run(rc)
        assert (a.result(), b.result()) == ((1, 0), 0)
        flush_scripts(cluster)
        batch = Batch()
        slots = [batch.add(FixedLengthQueue("{q}:a").enqueue(10, [b"2"])) for _ in range(3)]
        batch.run(rc)
        assert [s.result() for s in slots] == [(1, 0)] * 3
        assert rc.lrange("{q}:a", 0, -1) == [b"1", b"2", b"2", b"2"]
        assert all(rc.lrange(n, 0, -1) == [b"a", b"b"] for n in names)
    finally:
        rc.close()


def test_a_cluster_batch_over_several_slots_is_refused_before_any_io(cluster: Cluster) -> None:
    rc = cluster.client()
    try:
        before = {node.port: dump(node.client()) for node in cluster.nodes}
        batch = Batch()
        batch.add(FixedLengthQueue("{a}:q").enqueue(10, [b"1"]))
        batch.add(FixedLengthQueue("{b}:q").enqueue(10, [b"1"]))
        with pytest.raises(InvalidInput) as refused:
            batch.run(rc)
        assert refused.value.code == "CROSSSLOT"
        assert {node.port: dump(node.client()) for node in cluster.nodes} == before
    finally:
        rc.close()


def test_asyncio_cluster_calls_and_batches(cluster: Cluster) -> None:
    async def main() -> List[Any]:
        client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
        try:
            flush_scripts(cluster)
            replies = [await FixedLengthQueue(f"aq{i}").enqueue(10, [b"a"]).run_async(client) for i in range(6)]
            flush_scripts(cluster)
            async with rp.transaction_async(client) as batch:
                slots = [batch.add(FixedLengthQueue("{aq}:x").enqueue(10, [b"1"])) for _ in range(2)]
            flush_scripts(cluster)
            async with rp.pipeline_async(client) as batch:
                slots += [batch.add(FixedLengthQueue("{aq}:x").enqueue(10, [b"2"])) for _ in range(2)]
            items = await client.lrange("{aq}:x", 0, -1)
            return [replies, [s.result() for s in slots], items]
        finally:
            await client.aclose()

    replies, results, items = asyncio.run(main())
    assert replies == [(1, 0)] * 6
    assert results == [(1, 0)] * 4
    assert items == [b"1", b"1", b"2", b"2"]


def test_a_lock_is_shared_with_a_token_any_client_sees(r: redis.Redis) -> None:
    lock = IdentityLock("report:lock")
    r.set("report:lock", "secret", px=30_000)
    assert identity_lock.release("report:lock", "guess").run(r) is False
    assert lock.release("secret").run(r) is True
    assert fixed_length_queue.enqueue("q", 2, [b"a", b"b", b"c"]).run(r) == (2, 0)


def move_slot(cluster: Cluster, slot: int, to: Server) -> None:
    """Gives the empty `slot` to the master `to`, telling every master (the target
    first), as a resharding ends; the clients' slot maps go stale."""
    with to.client() as c:
        target = c.execute_command("CLUSTER", "MYID").decode()
    for node in [to] + [n for n in cluster.nodes if n is not to]:
        with node.client() as c:
            c.execute_command("CLUSTER", "SETSLOT", slot, "NODE", target)


def owner_of(cluster: Cluster, slot: int) -> Server:
    with cluster.nodes[0].client() as c:
        ranges = c.execute_command("CLUSTER", "SLOTS")
    port = next(master[1] for first, last, master, *_ in ranges if first <= slot <= last)
    return next(n for n in cluster.nodes if n.port == port)


def test_a_cluster_batch_follows_a_moved_slot(cluster: Cluster) -> None:
    """A batch sent with a slot map from before a resharding gets MOVED, which ran
    nothing: it reads the new map and goes to the slot's new node, each call once, as a
    pipeline and as a transaction."""
    rc = cluster.client()
    key = "{resharded}:q"
    slot = cast(Any, rc).keyslot(key)
    home = owner_of(cluster, slot)
    away = next(n for n in cluster.nodes if n is not home)
    try:
        assert FixedLengthQueue(key).enqueue(10, [b"0"]).run(rc) == (1, 0)  # the map is warm
        rc.delete(key)
        for transaction, to in ((False, away), (True, home)):
            move_slot(cluster, slot, to)
            batch = Batch(transaction=transaction)
            slots = [batch.add(FixedLengthQueue(key).enqueue(10, [b"1"])) for _ in range(2)]
            batch.run(rc)
            assert [s.result() for s in slots] == [(1, 0)] * 2
            with to.client() as c:
                assert c.lrange(key, 0, -1) == [b"1", b"1"], "each call ran once, on the new node"
                c.delete(key)
    finally:
        for node in cluster.nodes:  # the slot's keys go, wherever it ended, so it can move back
            with node.client() as c, contextlib.suppress(redis.exceptions.ResponseError):
                c.delete(key)
        move_slot(cluster, slot, home)
        rc.close()


def test_an_asyncio_cluster_batch_follows_a_moved_slot(cluster: Cluster) -> None:
    key = "{resharded-async}:q"
    slot = key_slot(key.encode())
    home = owner_of(cluster, slot)
    away = next(n for n in cluster.nodes if n is not home)

    async def main() -> List[Any]:
        client = redis.asyncio.cluster.RedisCluster(host="127.0.0.1", port=cluster.nodes[0].port)
        try:
            await client.initialize()  # the map of before the move
            move_slot(cluster, slot, away)
            async with rp.transaction_async(client) as batch:
                slots = [batch.add(FixedLengthQueue(key).enqueue(10, [b"1"])) for _ in range(2)]
            return [s.result() for s in slots]
        finally:
            await client.aclose()

    try:
        assert asyncio.run(main()) == [(1, 0)] * 2
        with away.client() as c:
            assert c.lrange(key, 0, -1) == [b"1", b"1"]
    finally:
        for node in cluster.nodes:
            with node.client() as c, contextlib.suppress(redis.exceptions.ResponseError):
                c.delete(key)
        move_slot(cluster, slot, home)
