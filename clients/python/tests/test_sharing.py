"""The Python half of the tests that share data with the Rust crate (`sharing.py`, which
``tests/it/sharing.rs`` runs against the Rust API), here with Python on both sides, on a
server and on a cluster: what one request writes, another reads, with the same keys."""

from __future__ import annotations

import secrets
import threading
from typing import Any, Dict, Iterator, List, Optional, Union

import pytest
import redis
import redis.cluster

from redis_patterns import Semaphore, WorkQueue, wait

from . import sharing
from .conftest import Cluster, poll

Client = Union[redis.Redis, redis.cluster.RedisCluster]


@pytest.fixture(params=["server", "cluster"])
def client(request: pytest.FixtureRequest, r: redis.Redis) -> Iterator[Client]:
    if request.param == "server":
        yield r
        return
    cluster: Cluster = request.getfixturevalue("cluster")
    c = cluster.client()
    yield c
    c.close()


def ask(client: Client, request: Dict[str, Any]) -> Dict[str, Any]:
    answer = sharing.answer(client, request)
    assert "error" not in answer, answer
    return answer


def name(stem: str) -> str:
    """A name no other test uses: the cluster is shared by the session."""
    return f"sharing:{stem}:{secrets.token_hex(4)}"


def test_a_holder_keeps_a_waiter_waiting_until_it_releases(client: Client) -> None:
    permits = name("permits")
    Semaphore(permits).set_capacity(1).run(client)
    held = ask(client, {"do": "semaphore_acquire", "name": permits, "n": 1, "lease_ms": 60_000})
    assert held["deadline"] is not None
    token = secrets.token_hex(16)
    granted: List[Optional[Any]] = []

    def waiter() -> None:
        # Its own connection from the client's pool, blocking while the test goes on.
        granted.append(
            wait(
                client,
                lambda _: Semaphore(permits).acquire(token, 1, 60_000, 10, place=30_000),
                lambda reply: reply[0] is not None,
                timeout=60.0,
            )
        )

    thread = threading.Thread(target=waiter)
    thread.start()
    poll(lambda: Semaphore(permits).state().run(client)[5] == 1, "the waiter in line")
    assert ask(client, {"do": "semaphore_release", "name": permits, "token": held["token"]})["released"] == 1
    thread.join(60)
    assert granted and granted[0] is not None and granted[0][0] is not None
    assert Semaphore(permits).release(token).run(client) == 1


def test_a_leaderboard_written_by_one_read_by_another(client: Client) -> None:
    board = name("board")
    weights = {"ann": 100.0, "bob": 90.5, "carol": 90.5, "dan": 80.0, "eve": -1.25}
    written = ask(client, {"do": "leaderboard_set", "key": board, "weights": weights})
    assert written["new"] == [True] * 5
    read = ask(client, {"do": "leaderboard_around", "key": board, "item": "carol", "n": 2, "policy": "dense"})
    assert read["keys"][0] == written["keys"][0] == board
    assert read["rows"] == [["ann", 100.0, 1], ["carol", 90.5, 2], ["bob", 90.5, 2], ["dan", 80.0, 3]]


def test_rate_limiters_with_default_settings(client: Client) -> None:
    uid = name("uid")
    gcra = {"do": "gcra", "uid": uid, "action": "api", "count": 2, "period_ms": 60_000}
    first = ask(client, {**gcra, "cost": 1})
    assert first["keys"] == [f"GcraLimiter:{uid}:api"]
    assert first["decision"][:2] == [True, 1]
    assert ask(client, {**gcra, "cost": 1})["decision"][:2] == [True, 0]
    assert ask(client, {**gcra, "cost": 1})["decision"][0] is False
    fixed = {"do": "fixed_window", "uid": uid, "action": "login", "maximum": 3, "interval_ms": 3_600_000}
    spent = ask(client, {**fixed, "cost": 3})
    assert spent["keys"] == [f"RateLimiter:{uid}:login"]
    assert spent["decision"][:2] == [True, 0]
    assert ask(client, {**fixed, "cost": 1})["decision"][0] is False


def test_a_bloom_filter_filled_by_one_read_by_another(client: Client) -> None:
    seen = name("seen")
    bloom = {"filter": seen, "capacity": 1000, "one_in": 100}
    added = ask(client, {"do": "bloom_add", **bloom, "items": ["a", "b"]})
    assert added["keys"] == [f"{{{seen}}}:bloom", f"{{{seen}}}:bits"]
    assert added["new"] == [1, 1]
    assert ask(client, {"do": "bloom_check", **bloom, "items": ["a", "b", "c"]})["found"] == [1, 1, 0]


def test_a_session_opened_by_one_used_by_another(client: Client) -> None:
    namespace = name("sessions")
    opened = ask(client, {"do": "session_create", "namespace": namespace, "uid": "ann"})
    assert opened["keys"] == [f"{{{namespace}:ann}}:sessions", f"{{{namespace}:ann}}:records"]
    session = {"namespace": namespace, "uid": "ann", "token": opened["token"]}
    assert ask(client, {"do": "session_set", **session, "fields": {"theme": "dark"}})["status"] == "TOKEN_CORRECT"
    read = ask(client, {"do": "session_read", **session})
    assert (read["status"], read["data"]) == ("TOKEN_CORRECT", {"theme": "dark"})
    assert 0 < read["left_ms"] <= 30 * 86_400_000


def test_a_work_queue_filled_by_one_drained_by_another(client: Client) -> None:
    queue = name("emails")
    jobs = {f"job-{i:02}": f"email {i}" for i in range(10)}
    added = ask(client, {"do": "work_queue_add", "name": queue, "jobs": jobs})
    assert added["added"] == [True] * 10
    ask(client, {"do": "work_queue_work", "name": queue, "together": 1, "first": f"{{{queue}}}:first jobs"})
    poll(lambda: WorkQueue(queue).counts().run(client)[:4] == (0, 0, 0, 0), "the queue drained")
    done = ask(client, {"do": "work_queue_stop", "name": queue})
    assert sorted(done["handled"]) == sorted(jobs)
    assert done["acked"] == 10
