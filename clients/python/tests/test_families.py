"""Every family class, built from its instance's name, and every script called through
it on a real server, each reply asserted. The last test checks that the catalogue was
covered: a script added to `scripts/` needs a call here."""

from __future__ import annotations

import time
from typing import List, Set, Tuple, TypeVar, cast

import pytest
import redis

import redis_patterns as rp
from redis_patterns import Call

from .conftest import hex_token

T = TypeVar("T")

CALLED: Set[str] = set()
"""The scripts the tests of this module ran."""


class Runner:
    """Runs a call on the test's connection, and notes its script."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def __call__(self, call: Call[T]) -> T:
        CALLED.add(call.script.name)
        return call.run(self.client)


@pytest.fixture
def run(r: redis.Redis) -> Runner:
    return Runner(r)


def now_ms() -> int:
    return int(time.time() * 1000)


def test_app_log(run: Runner, r: redis.Redis) -> None:
    log = rp.AppLog("app", "info")
    assert run(log.common("boot", 100)) == 1
    assert run(log.common("boot", 100)) == 2
    assert r.zscore("common:{app:info}", "boot") == 2.0
    at = run(log.recent("hello", 2))
    assert abs(at - now_ms()) < 60_000
    assert r.lrange("recent:{app:info}", 0, -1)[0] == f"{at} hello".encode()
    run(log.recent("again", 2))
    run(log.recent("and again", 2))
    assert r.llen("recent:{app:info}") == 2


def test_autocomplete(run: Runner, r: redis.Redis) -> None:
    names = rp.Autocomplete("names")
    prefixes = ["a", "ab", "abc"]
    assert run(names.feed(prefixes, "abc", 1.5, "incr")) is None
    assert run(names.feed(prefixes, "abc", 1.5, "incr")) is None
    assert r.zscore("{names}:ab", "abc") == 3.0
    assert run(names.feed(prefixes, "abc", 7, "set", ttl=60_000, cap=10)) is None
    assert r.zscore("{names}:a", "abc") == 7.0
    assert 0 < r.pttl("{names}:a") <= 60_000
    assert run(names.remove(prefixes, "abc")) == 3
    assert run(names.remove(prefixes, "abc")) == 0


def test_barrier(run: Runner) -> None:
    barrier = rp.Barrier("step")
    a, b = hex_token(1), hex_token(2)
    assert run(barrier.state()) is None
    status, generation, wake, block = run(barrier.arrive(a, 2, 60_000))
    assert (status, generation) == ("waiting", 1)
    assert wake is not None and block is not None and 0 < block <= 30_000
    assert run(barrier.state()) == (2, 1, 1, 0)
    assert run(barrier.arrive(b, 2, 60_000)) == ("released", 1, None, None)
    assert run(barrier.arrive(a, 2, 60_000, generation=1)) == ("released", 1, None, None)
    assert run(barrier.arrive(a, 2, 60_000))[:2] == ("waiting", 2)
    assert run(barrier.leave(a)) == 2
    assert run(barrier.leave(a)) is None
    assert run(barrier.arrive(b, 2, 60_000))[:2] == ("waiting", 3)
    assert run(barrier.reset()) == 3
    assert run(barrier.reset()) is None
    with pytest.raises(rp.ScriptError) as refused:
        run(barrier.arrive(a, 3, 60_000))
    assert refused.value.code == "BAD_PARTIES"


def test_bloom(run: Runner) -> None:
    seen = rp.Bloom("seen")
    assert run(seen.info()) is None
    assert run(seen.add(1000, 100, 1, 0, [b"a", b"b"])) == [1, 1]
    assert run(seen.add(1000, 100, 1, 0, [b"a"])) == [0]
    assert run(seen.check(1000, 100, 1, 0, [b"a", b"b"])) == [1, 1]
    info = run(seen.info())
    assert info is not None
    capacity, one_in, partitions, partition, bits, hashes, added = info
    assert (capacity, one_in, partitions, partition, added) == (1000, 100, 1, 0, 2)
    assert bits > 1000 and hashes >= 1
    with pytest.raises(rp.ScriptError):
        run(seen.check(2000, 100, 1, 0, [b"a"]))  # the filter was made for 1000


def test_cache(run: Runner, r: redis.Redis) -> None:
    page = rp.Cache("page:1")
    assert run(page.claim("t1", 60_000)) == ("compute", None)
    assert run(page.claim("t2", 60_000)) == ("wait", None)
    assert run(page.fill("t1", b"<html>", ttl=60_000)) is True
    assert run(page.claim("t3", 60_000)) == ("hit", b"<html>")
    assert 0 < r.pttl("page:1") <= 60_000
    # A late fill still stores its (fresh) value, but drops no marker.
    assert run(page.fill("t1", b"late")) is False
    assert r.get("page:1") == b"late"
    entries = rp.Cache("entries")
    assert run(entries.hash_set([b"a", b"1", "b", "2"], ttl=60_000)) is None
    assert r.hgetall("entries") == {b"a": b"1", b"b": b"2"}


def test_circular_queue(run: Runner, r: redis.Redis) -> None:
    queue = rp.CircularQueue("cq")
    assert run(queue.unique_insert([b"a", b"b"])) == 2
    assert run(queue.unique_insert([b"c"])) == 3
    assert r.lrange("cq", 0, -1) == [b"a", b"b", b"c"]


def test_counter(run: Runner, r: redis.Redis) -> None:
    stats = rp.Counter("page:stats")
    assert run(stats.hash_reset("likes", 2**62)) == 0
    assert run(stats.hash_reset("likes", -5)) == 2**62
    assert r.hget("page:stats", "likes") == b"-5"


def test_fair_lock(run: Runner) -> None:
    lock = rp.FairLock("printer")
    a, b = hex_token(1), hex_token(2)
    fence, _, _ = run(lock.acquire(a, 60_000, 60_000, 10))
    assert fence >= 1
    waiting, ahead, block = run(lock.acquire(b, 60_000, 60_000, 10))
    assert waiting == 0 and ahead == a and block > 0
    assert run(lock.extend(a, 60_000)) is True
    assert run(lock.extend(b, 60_000)) is False
    assert run(lock.release(a)) is True
    assert run(lock.release(a)) is False
    assert run(lock.acquire(b, 60_000, 60_000, 10))[0] == fence + 1
    assert run(lock.acquire(a, 60_000, 60_000, 10))[0] == 0
    assert run(lock.cancel(a)) is True
    assert run(lock.cancel(a)) is False
    # Barging: c takes the free lock though b was rung for it, as nobody waits in line.
    c = hex_token(3)
    assert run(lock.acquire(c, 60_000, 60_000, 10, order="any"))[0] == 0
    assert run(lock.release(b)) is True
    assert run(lock.acquire(a, 60_000, 60_000, 10, order="any"))[0] == fence + 2
    assert run(lock.release(a)) is True
    assert run(lock.acquire(c, 60_000, 60_000, 10, order="any"))[0] == fence + 3


def test_fenced_lock(run: Runner) -> None:
    lock = rp.FencedLock("job:lock")
    first = run(lock.acquire(60_000))
    assert first is not None and first >= 1
    assert run(lock.acquire(60_000)) is None


def test_fenced_write(run: Runner, r: redis.Redis) -> None:
    doc = rp.FencedWrite("doc")
    assert run(doc.set(3, b"v3", ttl=60_000)) == 0
    with pytest.raises(rp.ScriptError) as stale:
        run(doc.set(2, b"stale"))
    assert stale.value.code == "STALE_TOKEN"
    assert r.get("doc") == b"v3"
    assert run(doc.fence(5)) == 3
    assert run(doc.delete(5)) == 5
    assert r.exists("doc") == 0
    table = rp.FencedWrite("table")
    assert run(table.hset(1, [b"f", b"v"])) == 0
    assert r.hget("table", "f") == b"v"


def test_fixed_length_queue(run: Runner, r: redis.Redis) -> None:
    queue = rp.FixedLengthQueue("flq")
    assert run(queue.enqueue(3, [b"1", b"2"])) == (2, 0)
    assert run(queue.enqueue(3, [b"3", b"4"])) == (1, 0)
    assert r.lrange("flq", 0, -1) == [b"1", b"2", b"3"]
    faded = rp.FixedLengthQueue("faded")
    assert run(faded.faded_enqueue(3, [b"1", b"2", b"3"])) == (3, 0)
    assert run(faded.faded_enqueue(3, [b"4"])) == (1, 1)
    assert r.lrange("faded", 0, -1) == [b"2", b"3", b"4"]


def test_geo(run: Runner, r: redis.Redis) -> None:
    places = rp.Geo("places")
    assert run(places.pin("paris", 2.3522, 48.8566)) is None
    assert run(places.pin("london", -0.1276, 51.5072, ttl=60_000)) is None
    assert run(places.size()) == 2
    km = run(places.distance("paris", "london"))
    assert km is not None and 340 < km < 345
    assert run(places.distance("paris", "nowhere")) is None
    longitude, latitude = run(places.locate("paris"))
    assert longitude is not None and latitude is not None
    assert abs(longitude - 2.3522) < 1e-3 and abs(latitude - 48.8566) < 1e-3
    assert run(places.locate("nowhere")) == (None, None)
    near = run(places.search("paris", 500, 10))
    assert [member for member, _ in near] == ["london"] and 340 < near[0][1] < 345
    assert run(places.search("paris", 100, 10)) == []
    assert run(places.neighbours("paris", 10, 60_000)) is None  # none within 1 km, cached so
    assert run(places.pin("notre-dame", 2.3499, 48.8530)) is None
    assert run(places.neighbours("london", 10, 60_000)) is None
    assert run(places.neighbours("notre-dame", 10, 60_000)) == "paris"
    assert run(places.purge(10)) == 0
    r.zadd("{places}:deadlines", {"london": 1})  # its pin ran out
    assert run(places.purge(10)) == 1
    assert run(places.size()) == 2


def test_identity_lock(run: Runner, r: redis.Redis) -> None:
    lock = rp.IdentityLock("report:lock")
    r.set("report:lock", "secret")
    assert run(lock.lease("secret")) == -1
    assert run(lock.extend("secret", 60_000)) is True
    lease = run(lock.lease("secret"))
    assert lease is not None and 0 < lease <= 60_000
    assert run(lock.lease("other")) is None
    assert run(lock.release("other")) is False
    assert run(lock.release("secret")) is True


def test_ip_city(run: Runner, r: redis.Redis) -> None:
    cities = rp.IpCity("geoip")
    r.zadd("{geoip}:ip2cityid", {"7_0": 16_777_216})  # 1.0.0.0
    r.hset("{geoip}:cityid2city", "7", '["Brisbane", "AU"]')
    assert run(cities.find(16_777_217)) == ("7", '["Brisbane", "AU"]')
    assert run(cities.find(5)) == (None, None)


def test_latch(run: Runner) -> None:
    latch = rp.Latch("ready")
    assert run(latch.state()) is None
    assert run(latch.count_down("w1")) is None
    assert run(latch.arm(2, ttl=60_000)) == (True, 1)
    opened, generation, wake, block = run(latch.wait())
    assert (opened, generation) == (False, 1) and wake is not None and block is not None
    assert run(latch.count_down("w1")) == (1, 1, True)
    assert run(latch.count_down("w1")) == (1, 1, False)  # one count-down per id
    assert run(latch.count_down("w2", generation=1)) == (1, 0, True)
    assert run(latch.wait(generation=1)) == (True, 1, None, None)
    assert run(latch.state()) == (1, 2, 0, 1)


def test_leaderboard(run: Runner, r: redis.Redis) -> None:
    daily, weekly = rp.Leaderboard("{game}:daily"), rp.Leaderboard("{game}:weekly")
    assert run(daily.set("alice", 100)) is True
    assert run(daily.set("bob", 90)) is True
    assert run(daily.set("carol", 90)) is True
    assert run(daily.set("alice", 100)) is False
    assert run(daily.update("dave", 80)) == 80.0
    assert run(weekly.set("alice", 5)) is True
    rows = run(daily.around("bob", 1, "dense"))
    # Ties in reverse byte order, as ZREVRANGE has them.
    assert rows == [(b"carol", 90.0, 2), (b"bob", 90.0, 2), (b"dave", 80.0, 3)]
    standing = run(daily.standing(["{game}:daily", "{game}:weekly"], "carol"))
    assert standing[0][:5] == (90.0, 2, 2, 3, 2)
    assert standing[1] == (None, None, None, None, None, None, 1)
    assert run(daily.remove("dave")) is True
    assert run(daily.remove("dave")) is False
    assert run(daily.adopt("", 100)) == (None, 0)
    r.zadd("{game}:monthly", {"x": 1, "y": 2, "z": 2})  # written by another client
    assert run(rp.Leaderboard("{game}:monthly").adopt("", 100)) == (None, 2)


def test_logical_matrix(run: Runner) -> None:
    matrix = rp.LogicalMatrix("m")
    rows = ["{m}:row:0", "{m}:row:1"]
    assert run(matrix.init(rows, 8, [b"\x80", b""])) is None
    assert run(matrix.get_all(["0", "1", "2"])) == [b"\x80", b"\x00", b""]


def test_matrix(run: Runner, r: redis.Redis) -> None:
    matrix = rp.Matrix("grid")
    assert run(matrix.list_init(["0", "1"], 2, [1, 2, -3, 2**62])) is None
    assert run(matrix.list_get_all(["0", "1", "2"])) == [[1, 2], [-3, 2**62], []]
    bits = rp.Matrix("bits")
    assert run(bits.bitfield_init(["{bits}:row:0"], "u8", 2, [b"\x01\x02"])) is None
    assert run(bits.bitmap_get_all(["0", "1"])) == [b"\x01\x02", b""]
    assert r.bitfield("{bits}:row:0").get("u8", 8).execute() == [2]


def test_online_friends(run: Runner, r: redis.Redis) -> None:
    site = rp.OnlineFriends("site")
    r.sadd("{site}:friends:ann", "bob", "cid", "dan")
    assert run(site.minute_visit("12", "bob", 600_000)) is True
    assert run(site.minute_visit("12", "bob", 600_000)) is False
    assert run(site.minute_visit("11", "cid", 600_000)) is True
    assert sorted(run(site.minute_friends("ann", ["12", "11"]))) == ["bob", "cid"]
    now = now_ms()
    assert run(site.seen_visit("dan", now, 600_000)) is None
    assert run(site.seen_visit("bob", now - 120_000, 600_000)) is None
    assert run(site.seen_friends("ann", now, 60_000)) == ["dan"]


def test_pagination(run: Runner) -> None:
    posts = rp.Pagination("posts")
    assert run(posts.add([b"p1", b"p2", b"p3"])) == 3
    cursor, page = run(posts.page(2))
    assert page == [b"p3", b"p2"] and cursor == 1
    assert run(posts.page(2, cursor=cursor)) == (0, [b"p1"])


def test_rate_limiter(run: Runner, r: redis.Redis) -> None:
    login = rp.RateLimiter("u1", "login")
    allowed, remaining, retry, reset = run(login.is_permitted(2, 60_000, 1))
    assert (allowed, remaining, retry) == (True, 1, -1) and reset > 0
    assert run(login.is_permitted(2, 60_000, 1))[:3] == (True, 0, -1)
    denied = run(login.is_permitted(2, 60_000, 1))
    assert denied[0] is False and denied[2] > 0
    left = run(login.duration(2))
    assert left is not None and 0 < left <= 60_000
    assert run(rp.RateLimiter("u2", "login").duration(2)) is None
    assert r.exists("RateLimiter:u1:login") == 1  # the Rust RateLimiter's key
    assert run(login.gcra(2, 60_000, 1))[:3] == (True, 1, -1)
    assert run(login.gcra(2, 60_000, 1, burst=1))[0] is False
    assert r.exists("GcraLimiter:u1:login") == 1
    assert run(login.sliding_window(1, 60_000, 1))[:3] == (True, 0, -1)
    assert run(login.sliding_window(1, 60_000, 1))[0] is False
    assert r.exists("SlidingWindowLimiter:u1:login") == 1


def test_redlock(run: Runner) -> None:
    lock = rp.Redlock("res")
    a, b = hex_token(1), hex_token(2)
    fence = run(lock.acquire(a, 60_000))
    assert fence is not None and fence >= 1
    assert run(lock.acquire(b, 60_000)) is None
    assert run(lock.raise_(a, fence + 10)) == fence + 10
    assert run(lock.raise_(b, 1)) is None


def test_relation(run: Runner) -> None:
    social = rp.Relation("social")
    assert run(social.follow("ann", "bob")) is True
    assert run(social.follow("ann", "bob")) is False
    assert run(social.mutual("ann", "bob")) is False
    assert run(social.follow("bob", "ann")) is True
    assert run(social.mutual("ann", "bob")) is True
    assert run(social.unfollow("ann", "bob")) is True
    assert run(social.unfollow("ann", "bob")) is False


def test_reliable_topic(run: Runner) -> None:
    topic = rp.ReliableTopic("news")
    assert run(topic.subscribe("app", 60_000, "new")) == (True, "0-0", 0)
    first_id, number = run(topic.publish(100, b"hello"))
    assert number == 1
    lost, newest, messages = run(topic.poll("app", 60_000, 10))
    assert (lost, newest, messages) == (0, first_id, [(first_id, 1, b"hello")])
    assert run(topic.ack("app", 60_000, first_id, 1)) is True
    assert run(topic.ack("app", 60_000, first_id, 1)) is False
    assert run(topic.poll("app", 60_000, 10))[2] == []
    assert run(topic.unsubscribe("app")) is True
    assert run(topic.unsubscribe("app")) is False


def test_resource_pool(run: Runner, r: redis.Redis) -> None:
    pool = rp.ResourcePool("db")
    assert run(pool.associate("c1")) is True
    assert run(pool.associate("c1")) is False
    assert run(pool.associate("c2")) is True
    assert run(pool.total_count()) == 2
    assert run(pool.has("c1")) is True
    held = run(pool.acquire(10))
    assert held in ("c1", "c2")
    leased = run(pool.acquire_lease(60_000, "t", 10))
    assert leased in ("c1", "c2") and leased != held
    assert run(pool.acquire(10)) is None
    assert run(pool.extend_lease(leased, "t", 60_000)) is True
    assert run(pool.extend_lease(leased, "other", 60_000)) is False
    assert run(pool.release(held)) is True
    assert run(pool.release_lease(leased, "t")) is True
    assert run(pool.reclaim(10)) == 0
    again = run(pool.acquire_lease(60_000, "t2", 10))
    assert again is not None
    r.zadd("{db}:leases", {again: 1})  # its lease ran out
    assert run(pool.reclaim(10)) == 1
    assert run(pool.disassociate("c1")) is True
    assert run(pool.has("c1")) is False


def test_row_cache(run: Runner, r: redis.Redis) -> None:
    rows = rp.RowCache("inv")
    due = run(rows.schedule("row:1", 0))
    assert due == 0
    due = run(rows.schedule("row:1", 5_000))
    assert abs(due - now_ms()) < 60_000
    r.zadd("{inv}:schedule", {"row:1": 0})  # due now
    claimed, dropped = run(rows.claim(10))
    assert [row for row, _ in claimed] == ["row:1"] and dropped == []
    assert run(rows.store("row:1", b'{"qty": 1}')) is True
    assert r.get("{inv}:inv:row:1") == b'{"qty": 1}'
    assert run(rows.store("row:2", b"{}")) is False


def test_rw_lock(run: Runner) -> None:
    lock = rp.RwLock("doc")
    reader, writer = hex_token(1), hex_token(2)
    assert run(lock.acquire_read(reader, 60_000, False, 10))[0] == 1
    assert run(lock.acquire_read(reader, 60_000, False, 10))[0] == 2
    waiting = run(lock.acquire_write(writer, 60_000, 10, place_lease=60_000))
    assert waiting[0] == 0 and waiting[2] > 0
    assert run(lock.withdraw(writer)) is True
    assert run(lock.extend(reader, 60_000)) == (False, True)
    assert run(lock.release_read(reader)) == 1
    assert run(lock.release_read(reader)) == 0
    assert run(lock.release_read(reader)) is None
    fence = run(lock.acquire_write(writer, 60_000, 10))[0]
    assert fence >= 1
    assert run(lock.downgrade(writer, 60_000)) == 1
    assert run(lock.release_write(writer)) is None
    with pytest.raises(rp.ScriptError) as holds:
        run(lock.acquire_write(writer, 60_000, 10))
    assert holds.value.code == "HOLDS_READ"
    assert run(lock.release_read(writer)) == 0
    assert run(lock.acquire_write(writer, 60_000, 10))[0] > fence
    assert run(lock.release_write(writer)) == 0


def test_semaphore(run: Runner) -> None:
    permits = rp.Semaphore("slots")
    a, b = hex_token(1), hex_token(2)
    assert run(permits.set_capacity(2)) is None
    deadline, _, block = run(permits.acquire(a, 2, 60_000, 10))
    assert deadline is not None and block == 0
    refused, ahead, block = run(permits.acquire(b, 1, 60_000, 10, place=60_000))
    assert refused is None and ahead == "" and block > 0  # first in line: the bell
    assert run(permits.state()) == (2, 2, 2, 2, 1, 1)
    extended = run(permits.extend(a, 120_000))
    assert extended is not None and extended > deadline
    assert run(permits.extend(b, 60_000)) is None
    assert run(permits.release(a)) == 2
    assert run(permits.release(a)) == 0
    assert run(permits.set_capacity(3)) == 2


def test_session(run: Runner) -> None:
    sessions = rp.Session("site", "u1")
    token = "t" * 16
    assert run(sessions.create(token)) == []
    listed = run(sessions.list())
    assert len(listed) == 1 and 0 < listed[0][1] <= 2_592_000_000
    session_id = listed[0][0]
    assert run(sessions.set(token, [b"cart", b"3 items"])) == "TOKEN_CORRECT"
    assert run(sessions.set("x" * 16, [b"cart", b"none"])) == "TOKEN_INCORRECT"
    assert run(rp.Session("site", "u2").set(token, [b"cart", b"none"])) == "TOKEN_NOT_EXISTS"
    answer, left, data = run(sessions.validate(token, True, True))
    assert (answer, data) == ("TOKEN_CORRECT", [("cart", b"3 items")]) and left > 0
    assert run(sessions.unset(token, [b"cart"])) == "TOKEN_CORRECT"
    assert run(sessions.validate(token, False, True))[2] == []
    assert run(sessions.end([session_id])) == 1
    assert run(sessions.end([session_id])) == 0
    assert run(sessions.create("a" * 16, ttl=60_000, cap=1)) == []
    assert len(run(sessions.create("b" * 16, ttl=60_000, cap=1))) == 1


def test_short_url(run: Runner, r: redis.Redis) -> None:
    links = rp.ShortUrl("links")
    short = run(links.shorten("https://example.com/a"))
    assert run(links.visit(short)) == "https://example.com/a"
    assert run(links.restore(short)) == "https://example.com/a"
    cached = run(links.shorten_cached("https://example.com/b"))
    assert run(links.shorten_cached("https://example.com/b")) == cached
    assert run(links.claim("docs", "https://example.com/docs", max_visits=1)) is True
    assert run(links.claim("docs", "https://example.com/other")) is False
    assert run(links.visit("docs")) == "https://example.com/docs"
    assert run(links.visit("docs")) is None  # used up
    limited = run(links.shorten("https://example.com/c", ttl=60_000, max_visits=5))
    assert run(links.visit(limited)) == "https://example.com/c"
    assert run(links.purge(10)) == 0
    r.zadd("{links}:expiries", {limited: 1})  # its deadline passed
    assert run(links.purge(10)) == 1
    assert run(links.restore(limited)) is None


def test_stats(run: Runner, r: redis.Redis) -> None:
    stats = rp.Stats("stats", "home", "AccessTime")
    now = now_ms()
    assert run(stats.update(2.0, now)) == (1.0, 2.0, 4.0)
    assert run(stats.update(4.0, now)) == (2.0, 6.0, 20.0)
    assert r.zscore("{stats:home:AccessTime}", "max") == 4.0
    assert run(stats.slowest("slowest:AccessTime", "home", 3.0, 100)) == 1
    assert run(stats.slowest("slowest:AccessTime", "search", 1.0, 1)) == 1
    assert r.zrange("slowest:AccessTime", 0, -1) == [b"home"]


def test_tag(run: Runner, r: redis.Redis) -> None:
    blog = rp.Tag("blog")
    assert run(blog.add("post:1", ["redis", "lua"])) == 2
    assert run(blog.add("post:2", ["redis"])) == 1
    assert run(blog.add("post:1", ["redis"])) == 0
    computed, targets = run(blog.cached("lua,redis", ["redis", "lua"], 60_000))
    assert (computed, targets) == (True, ["post:1"])
    assert run(blog.cached("lua,redis", ["redis", "lua"], 60_000)) == (False, ["post:1"])
    assert run(blog.remove("post:1", ["lua", "go"])) == 1
    assert r.smembers("{blog}:target:post:1") == {b"redis"}


def test_time_series(run: Runner, r: redis.Redis) -> None:
    series = rp.TimeSeries("hits")
    now = 3_600_000 * 1000
    assert run(series.update("page", 3, now, [1, 60])) == 3
    assert run(series.update("page", 2, now, [1, 60])) == 5
    assert r.hget("{hits}:count:60:page", str(now // 1000 // 60 * 60)) == b"5"
    later = now + 10_000_000
    cursor, deleted, forgotten = run(series.clean("page", 1, later, 5, "0", 100))
    assert (cursor, deleted, forgotten) == ("0", 1, True)
    assert r.exists("{hits}:count:1:page") == 0


def test_timeline(run: Runner, r: redis.Redis) -> None:
    feed = rp.Timeline("feed")
    assert run(feed.add([b"100", b"a", b"200", b"b", b"300", b"c"], max_length=2)) == (2, 1)
    assert r.zrange("feed", 0, -1) == [b"b", b"c"]
    assert run(feed.delete_range(0, 250, 10)) == (1, False)
    assert run(feed.delete_range(0, 1000, 10)) == (1, False)


def test_unique_counter(run: Runner, r: redis.Redis) -> None:
    visits = rp.UniqueCounter("visits")
    r.sadd("{visits}:mon", "a", "b")
    r.sadd("{visits}:tue", "b", "c")
    assert run(visits.union_count(["{visits}:mon", "{visits}:tue"])) == 3
    assert run(visits.diff_count("{visits}:mon", "{visits}:tue")) == 1
    assert r.exists("{visits}:union_scratch") == 0


def test_user_login(run: Runner, r: redis.Redis) -> None:
    logins = rp.UserLogin("site")
    assert run(logins.login(b"ann", 10)) == (None, 0)
    r.hsetnx("{site}:ids", "ann", "1")
    assert run(logins.login(b"ann", 10)) == (b"1", 1)
    assert run(logins.login(b"ann", 10)) == (b"1", 2)
    assert r.lrange("{site}:recent", 0, -1) == [b"1", b"1"]


def test_vote(run: Runner) -> None:
    votes = rp.Vote("news")
    assert run(votes.post("story:1", at=now_ms())) is None
    assert run(votes.cast("story:1", b"ann", "up")) is True
    assert run(votes.cast("story:1", b"ann", "up")) is False
    assert run(votes.cast("story:1", b"bob", "down")) is True
    assert run(votes.tally("story:1", b"ann")) == (1, 1, 1)
    assert run(votes.tally("story:1", b"")) == (1, 1, 0)
    assert run(votes.cast("story:1", b"bob", "none")) is True
    assert run(votes.tally("story:1", b"bob")) == (1, 0, 0)
    assert run(votes.forget("story:1")) is True
    assert run(votes.forget("story:1")) is False


def test_web_session(run: Runner, r: redis.Redis) -> None:
    web = rp.WebSession("shop")
    seen = run(web.update("tok1", b"ann", b"item:1", 25))
    assert abs(seen - now_ms()) < 60_000
    run(web.update("tok1", b"ann", b"item:2", 25))
    run(web.update("tok2", b"bob", b"item:1", 25))
    assert r.zrange("{shop}:viewed:tok1", 0, -1) == [b"item:1", b"item:2"]
    assert r.zscore("{shop}:viewed", "item:1") == -2.0
    # The oldest token and its last-seen time, as a cleaner reads them.
    (member, seen_at), = cast(List[Tuple[bytes, float]], r.zrange("{shop}:recent", 0, 0, withscores=True))
    token = member.decode()
    ended = run(web.clean([token], 1, True, [token, str(int(seen_at))]))
    assert ended == [token]
    assert r.exists(f"{{shop}}:viewed:{token}") == 0
    assert run(web.rescale(1)) == (1, True)
    assert r.zrange("{shop}:viewed", 0, -1, withscores=True) == [(b"item:1", -1.0)]


def test_work_queue(run: Runner) -> None:
    queue = rp.WorkQueue("emails")
    assert run(queue.configure(metrics_minutes=60, events_max=100, completed_max=10)) == (True, 0)
    assert run(queue.settings())[8:10] == [60, 100]
    assert run(queue.settings())[13:] == [10, 7 * 86_400_000]
    assert run(queue.add("j1", b"hi", 0, 0, "")) == (True, "waiting")
    assert run(queue.add("j1", b"hi", 0, 0, "")) == (False, "waiting")
    before_j2 = now_ms()
    assert run(queue.add("j2", b"later", 0, 60_000, "")) == (True, "delayed")
    assert run(queue.counts()) == (1, 0, 1, 0, 0, 0, 0)
    assert run(queue.set_priority("j1", 5)) == "waiting"
    assert run(queue.set_delay("j2", 0)) == (True, "waiting")
    job = run(queue.job("j1"))
    assert job is not None and job[:6] == ("waiting", 0, 5, None, None, b"hi")
    assert run(queue.job("nope")) is None
    assert [row[0] for row in run(queue.list("waiting", 0, 10))] == ["j1", "j2"]
    taken = run(queue.take(2, hex_token(), []))
    assert [(job[0], job[2], job[5]) for job in taken] == [("j1", 1, b"hi"), ("j2", 1, b"later")]
    (j1, token1, *_), (j2, token2, *_) = taken
    assert run(queue.extend(j1, token1)) > now_ms()
    event = run(queue.progress(j1, token1, b"50%"))
    assert event is not None
    assert run(queue.ack(j1, token1, b"sent")) > 0
    assert run(queue.result(j1)) == b"sent"
    completed = run(queue.job(j1))
    assert completed is not None and completed[0] == "completed" and completed[11] == b"sent"
    started, finished = completed[10], completed[6]
    assert started is not None and finished is not None and started <= finished
    assert [row[0] for row in run(queue.list("completed", 0, 10))] == [j1]
    assert run(queue.clean("completed", 10, grace=3_600_000)) == 0
    assert run(queue.nack(j2, token2, 0, b"smtp down", max_deliveries=1))[0] == "dead"
    assert run(queue.requeue(j2)) is True
    assert run(queue.remove(j2)) == (True, "waiting")
    after, newest, entries = run(queue.events("0-0", 100))
    assert after is False and newest == entries[-1][0]
    ends = [e for e in entries if e[1] not in ("added", "active", "delayed")]
    delayed = [e for e in entries if e[1] == "delayed"]
    assert [e[2] for e in delayed] == ["j2"] and int(delayed[0][3]) >= before_j2 + 60_000
    assert [e[1:3] for e in ends] == [("progress", "j1"), ("completed", "j1"), ("dead", "j2"), ("retried", "j2")]
    assert ends[0][3] == b"50%" and ends[2][3] == b"smtp down"
    assert [e[1:4] for e in entries[:2]] == [("added", "j1", b"waiting"), ("added", "j2", b"delayed")]
    minutes = run(queue.metrics(60))
    assert minutes[0][5] == 1 and minutes[1] == 1 and minutes[5] == 60
    assert run(queue.pause()) is True
    assert run(queue.paused()) is True
    assert run(queue.resume()) is True
    assert run(queue.add("j3", b"x", 0, 0, "team")) == (True, "waiting")
    taken = run(queue.take(1, hex_token(2), []))
    assert run(queue.rate_limit_group(taken[0][0], taken[0][1], 60_000)) > now_ms()
    assert run(queue.add("j4", b"x", 0, 0, "")) == (True, "waiting")
    (j4, token4, *_), = run(queue.take(1, hex_token(3), []))
    assert run(queue.nack(j4, token4, 0, b"bad", max_deliveries=1))[0] == "dead"
    assert run(queue.retry_dead(10)) == 1
    assert run(queue.clean("waiting", 10)) == 1
    assert run(queue.add_flow("parent", b"p", 0, "", [b"c1", b"x", b"fail"])) == (True, "blocked")
    assert [row[0] for row in run(queue.list("blocked", 0, 10))] == ["parent"] and run(queue.counts())[6] == 1
    new, next_run = run(queue.set_schedule("hourly", 0, "", "", 0, 0, "", b"tick", False, every=3_600_000))
    assert new is True and next_run > now_ms()
    schedule = run(queue.schedule("hourly"))
    assert schedule is not None and schedule[:3] == ("hourly", next_run, 3_600_000)
    assert [row[0] for row in run(queue.schedules(0, 10))] == ["hourly"]
    now, earliest, due, _ = run(queue.due(10))
    assert due == [] and earliest == next_run
    assert run(queue.fire("hourly", next_run, 1, []))[0] == "not_due"
    assert run(queue.remove_schedule("hourly")) is True
    window = ("user:7", 60_000)
    assert run(queue.add_deduplicated("d1", b"v1", 0, 0, "", *window, replace=True)) == ("added", "d1", "waiting")
    assert run(queue.add_deduplicated("d2", b"v2", 0, 0, "", *window, replace=True)) == ("replaced", "d1", "waiting")
    assert run(queue.add("r1", b"x", 9, 0, "", attempts=1, backoff="none", lifo=True)) == (True, "waiting")
    (r1, token_r1, *_), = run(queue.take(1, hex_token(4), []))
    assert r1 == "r1"
    assert run(queue.nack(r1, token_r1, 0, b"once is enough"))[0] == "dead"
    assert run(queue.add("l1", b"x", 0, 0, "")) == (True, "waiting")
    (l1, token_l1, *_), = run(queue.take(1, hex_token(5), []))
    assert [run(queue.log(l1, token_l1, line, 2)) for line in (b"one", b"two", b"three")] == [1, 2, 2]
    assert run(queue.logs(l1, 0, 10)) == (2, [b"two", b"three"])
    with pytest.raises(rp.ScriptError) as running:
        run(queue.delete_queue(100, True))
    assert running.value.code == "NOT_PAUSED"
    assert run(queue.pause()) is True
    assert run(queue.delete_queue(100, True)) == 0
    assert run(queue.counts()) == (0, 0, 0, 0, 0, 0, 0)


def test_every_script_was_called(request: pytest.FixtureRequest) -> None:
    if request.config.option.keyword or request.config.option.markexpr:
        pytest.skip("only some tests ran")
    assert {s.name for s in rp.SCRIPTS} - CALLED == set()
