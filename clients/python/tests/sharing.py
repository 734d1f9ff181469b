"""The Python half of the tests that share data with the Rust crate.

Run as a program by the Rust integration tests (``tests/it/sharing.rs``), it answers
requests on stdin, one JSON object a line, with one JSON object a line on stdout, each a
call of this package on the server (or cluster) named on its command line:

    python sharing.py redis://127.0.0.1:6379/3            # a standalone server's database
    python sharing.py cluster:redis://127.0.0.1:7000      # a cluster, by one of its nodes

A request names what to do (``{"do": "leaderboard_set", "key": ..., "weights": ...}``,
see `HANDLERS`); every answer holds the keys the call named, for the Rust side to compare
with its own, and what the call answered. An error is answered as ``{"error": ...}``.
`tests/test_sharing.py` runs the same requests in-process, Python on both sides.
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Tuple, Union

import redis
import redis.cluster

from redis_patterns import Bloom, Job, Leaderboard, RateLimiter, Semaphore, Session, Worker, WorkQueue

Answer = Dict[str, Any]

SyncClient = Union[redis.Redis, redis.cluster.RedisCluster]


def connect(target: str) -> SyncClient:
    """A client of `target`: a URL, or ``cluster:`` and a URL of one of its nodes."""
    if target.startswith("cluster:"):
        return redis.cluster.RedisCluster.from_url(target[len("cluster:") :])
    return redis.Redis.from_url(target)


def semaphore_acquire(client: SyncClient, name: str, n: int, lease_ms: int) -> Answer:
    """Takes `n` permits under a fresh token, once: the holding's deadline, or None."""
    token = secrets.token_hex(16)
    call = Semaphore(name).acquire(token, n, lease_ms, 10)
    deadline, _wake, _block = call.run(client)
    return {"keys": call.keys, "token": token, "deadline": deadline}


def semaphore_release(client: SyncClient, name: str, token: str) -> Answer:
    call = Semaphore(name).release(token)
    return {"keys": call.keys, "released": call.run(client)}


def leaderboard_set(client: SyncClient, key: str, weights: Dict[str, float]) -> Answer:
    board = Leaderboard(key)
    calls = [board.set(item, weight) for item, weight in weights.items()]
    return {"keys": calls[0].keys, "new": [call.run(client) for call in calls]}


def leaderboard_around(client: SyncClient, key: str, item: str, n: int, policy: str) -> Answer:
    """The rows around `item`: each item's text, score and rank."""
    call = Leaderboard(key).around(item, n, policy)
    rows = [[item.decode(), score, rank] for item, score, rank in call.run(client)]
    return {"keys": call.keys, "rows": rows}


def gcra(client: SyncClient, uid: str, action: str, count: int, period_ms: int, cost: int) -> Answer:
    """A GCRA attempt with the defaults: the prefix and a bucket of `count`, as the Rust
    `GcraLimiter::new(action, count, period)` has them."""
    call = RateLimiter(uid, action).gcra(count, period_ms, cost)
    return {"keys": call.keys, "decision": list(call.run(client))}


def fixed_window(client: SyncClient, uid: str, action: str, maximum: int, interval_ms: int, cost: int) -> Answer:
    """A fixed-window attempt with the default prefix, as the Rust
    `RateLimiter::new(action, maximum, interval)` names its keys."""
    call = RateLimiter(uid, action).is_permitted(maximum, interval_ms, cost)
    return {"keys": call.keys, "decision": list(call.run(client))}


def bloom_add(client: SyncClient, filter: str, capacity: int, one_in: int, items: List[str]) -> Answer:
    """Adds to a filter of one partition, as the Rust `BloomFilter::new` makes one."""
    call = Bloom(filter).add(capacity, one_in, 1, 0, items)
    return {"keys": call.keys, "new": call.run(client)}


def bloom_check(client: SyncClient, filter: str, capacity: int, one_in: int, items: List[str]) -> Answer:
    call = Bloom(filter).check(capacity, one_in, 1, 0, items)
    return {"keys": call.keys, "found": call.run(client)}


def session_create(client: SyncClient, namespace: str, uid: str) -> Answer:
    """A session with the defaults of the Rust `SessionStore::new`: 30 days, 10 a user."""
    token = secrets.token_hex(32)
    call = Session(namespace, uid).create(token)
    return {"keys": call.keys, "token": token, "ended": call.run(client)}


def session_set(client: SyncClient, namespace: str, uid: str, token: str, fields: Dict[str, str]) -> Answer:
    flat = [part for pair in fields.items() for part in pair]
    call = Session(namespace, uid).set(token, flat)
    return {"keys": call.keys, "status": call.run(client)}


def session_read(client: SyncClient, namespace: str, uid: str, token: str) -> Answer:
    """Validates `token` (sliding its expiry) and reads the session's data."""
    call = Session(namespace, uid).validate(token, True, True)
    status, left_ms, fields = call.run(client)
    data = {name: value.decode() for name, value in fields}
    return {"keys": call.keys, "status": status, "left_ms": left_ms, "data": data}


def work_queue_add(client: SyncClient, name: str, jobs: Dict[str, str]) -> Answer:
    """Adds jobs (id: payload), each ready at once, with no group."""
    calls = [WorkQueue(name).add(id, payload, 0, 0, "") for id, payload in jobs.items()]
    return {"keys": calls[0].keys, "added": [call.run(client)[0] for call in calls]}


WORKERS: Dict[str, Tuple[threading.Thread, threading.Event, List[str], List[Any]]] = {}
"""The workers `work_queue_work` started, by queue: the thread, its stop, the ids its
handler got, and how its loop ended (its report, or the error it raised)."""


def work_queue_work(client: SyncClient, name: str, together: int, first: str) -> Answer:
    """Starts a worker on a thread. At its first job it counts itself in at key `first`,
    and holds that job until `together` workers have, so that every worker gets one."""
    handled: List[str] = []
    ended: List[Any] = []
    stop = threading.Event()

    def handle(job: Job) -> str:
        if not handled:
            client.incr(first)
            deadline = time.monotonic() + 60
            while int(client.get(first) or 0) < together and time.monotonic() < deadline:
                time.sleep(0.005)
        handled.append(job.id)
        return f"done by Python: {job.payload.decode()}"

    def work() -> None:
        try:
            ended.append(Worker(name, poll=50).run(client, handle, stop))
        except Exception as err:
            ended.append(err)

    thread = threading.Thread(target=work, name=f"worker {name}")
    thread.start()
    WORKERS[name] = (thread, stop, handled, ended)
    return {"started": name}


def work_queue_stop(client: SyncClient, name: str) -> Answer:
    """Stops the worker `work_queue_work` started: the ids its handler got, and how many
    it acked."""
    thread, stop, handled, ended = WORKERS.pop(name)
    stop.set()
    thread.join(60)
    if not ended or isinstance(ended[0], Exception):
        raise RuntimeError(f"the worker of {name} did not end well: {ended}")
    return {"handled": handled, "acked": ended[0].acked}


HANDLERS: Dict[str, Callable[..., Answer]] = {
    handler.__name__: handler
    for handler in (
        semaphore_acquire,
        semaphore_release,
        leaderboard_set,
        leaderboard_around,
        gcra,
        fixed_window,
        bloom_add,
        bloom_check,
        session_create,
        session_set,
        session_read,
        work_queue_add,
        work_queue_work,
        work_queue_stop,
    )
}


def answer(client: SyncClient, request: Dict[str, Any]) -> Answer:
    """What `request` asks, done; an error as ``{"error": ...}``."""
    params = dict(request)
    try:
        return HANDLERS[params.pop("do")](client, **params)
    except Exception as err:  # the Rust side shows it
        return {"error": f"{type(err).__name__}: {err}"}


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    client = connect(sys.argv[1])
    for line in sys.stdin:
        print(json.dumps(answer(client, json.loads(line))), flush=True)


if __name__ == "__main__":
    main()
