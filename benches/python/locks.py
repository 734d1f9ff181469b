"""The locks section: the crate's `FairLock` and `Semaphore` (capacity 1: a mutex), their
generated family classes waiting with the package's `wait`, against pottery's `Redlock`
on one master and redis-py's `Lock`: C contenders (1, 8, 32), a process each with a
connection of its own, each looping acquire -> release until OPS acquisitions were
claimed between them (or MAX_SECS passed).

Every side holds for a 10 s lease and waits as its library does by default: the crate's
contenders block on the lock's wake stream (`XREAD BLOCK`) between tries, the fair lock
waking the next in line only; pottery's `acquire()` retries `SET NX` after a random sleep
of 0-200 ms; redis-py's `acquire()` after 100 ms. Measured around the timed holds:
operations per second, the server's CPU per operation (`INFO cpu`), the contenders' CPU
per operation, and the wake-up latency from a release to the next holder's grant, as
`benches/coordination.rs` derives it (`wake_ups`): each hold's start of acquire, acquire
returning and release returning, read from one monotonic clock (perf_counter_ns, which
every process on the machine shares).
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Callable, Dict, List, Sequence, Tuple

import redis

import harness

LEASE_MS = 10_000
"""Every hold's lease, on every side."""
PLACE_MS = 5_000
"""The crate's place in line: as the Rust `FairLock` and `Semaphore` keep one."""
LIMIT = 100
"""The most lapsed holdings or places one crate acquire reclaims (the Rust default)."""
ACQUIRE_TIMEOUT_S = 60.0
"""How long a crate contender waits at most for one acquire (it is an error then)."""

Hold = Callable[[], int]
"""One acquire -> release on a connection: when the acquire returned (perf_counter_ns)."""


def fair_lock(r: redis.Redis, name: str) -> Hold:
    from redis_patterns import FairLock, wait

    lock = FairLock(name)

    def hold() -> int:
        token = secrets.token_hex(16)
        granted = wait(r, lambda _: lock.acquire(token, LEASE_MS, PLACE_MS, LIMIT),
                       lambda reply: reply[0] != 0, ACQUIRE_TIMEOUT_S)
        acquired = time.perf_counter_ns()
        if granted is None:
            raise RuntimeError("the FairLock was not granted within a minute")
        if not lock.release(token).run(r):
            raise RuntimeError("the FairLock's holder did not hold it at its release")
        return acquired

    return hold


def semaphore(place: Any) -> Callable[[redis.Redis, str], Hold]:
    """The crate's `Semaphore` of capacity 1 (set by the driver), one permit per hold,
    waiting in line (`place` ms) or without a place (None)."""

    def build(r: redis.Redis, name: str) -> Hold:
        from redis_patterns import Semaphore, wait

        permits = Semaphore(name)

        def hold() -> int:
            token = secrets.token_hex(16)
            granted = wait(r, lambda _: permits.acquire(token, 1, LEASE_MS, LIMIT, place=place),
                           lambda reply: reply[0] is not None, ACQUIRE_TIMEOUT_S)
            acquired = time.perf_counter_ns()
            if granted is None:
                raise RuntimeError("the Semaphore granted no permit within a minute")
            if permits.release(token).run(r) != 1:
                raise RuntimeError("the Semaphore's holder held no permit at its release")
            return acquired

        return hold

    return build


def pottery_redlock(r: redis.Redis, name: str) -> Hold:
    from pottery import Redlock

    lock = Redlock(key=name, masters={r}, auto_release_time=LEASE_MS / 1000)

    def hold() -> int:
        lock.acquire()  # blocking, no timeout: its defaults
        acquired = time.perf_counter_ns()
        lock.release()
        return acquired

    return hold


def redis_py_lock(r: redis.Redis, name: str) -> Hold:
    lock = r.lock(name, timeout=LEASE_MS / 1000)

    def hold() -> int:
        lock.acquire()  # blocking, no timeout, a try every 100 ms: its defaults
        acquired = time.perf_counter_ns()
        lock.release()
        return acquired

    return hold


SIDES: Dict[str, Callable[[redis.Redis, str], Hold]] = {
    "crate FairLock": fair_lock,
    "crate Semaphore(1), in line": semaphore(PLACE_MS),
    "crate Semaphore(1), no place": semaphore(None),
    "pottery Redlock": pottery_redlock,
    "redis-py Lock": redis_py_lock,
}
"""Every side of the mutex cells, in the table's order; the crate's first."""


def contend(side: str, url: str, name: str, max_ms: int) -> Dict[str, Any]:
    """One contender (a pool task): one untimed hold, then holds until the cell's
    operations are claimed or `max_ms` passed; every hold's three times (ns)."""
    r = redis.Redis.from_url(url)
    hold = SIDES[side](r, name)
    hold()  # untimed: connection made, scripts loaded
    harness.ready()
    deadline = time.perf_counter_ns() + max_ms * 1_000_000
    holds: List[Tuple[int, int, int]] = []
    while time.perf_counter_ns() < deadline and harness.SHARED.claim():
        start = time.perf_counter_ns()
        acquired = hold()
        holds.append((start, acquired, time.perf_counter_ns()))
    r.close()
    return {"holds": holds, "end_ns": time.perf_counter_ns()}


def wake_ups(holds: Sequence[Tuple[int, int, int]], capacity: int) -> List[int]:
    """The wake-ups of a cell (µs), as benches/coordination.rs derives them: the i-th grant
    (in the order the acquires returned) could happen once the (i - capacity)-th release
    had returned and the (i - 1)-th grant had; when its acquire started before that
    moment, the sample is from that moment to its acquire returning (0 when it returned
    first). Times in µs from the cell's start."""
    grants = sorted(holds, key=lambda h: h[1])
    releases = sorted(h[2] for h in holds)
    samples = []
    for i in range(capacity, len(grants)):
        free = max(releases[i - capacity], grants[i - 1][1])
        start, acquired, _ = grants[i]
        if start < free:
            samples.append(max(0, acquired - free))
    return samples


def run_side(server: harness.Server, pool: harness.Pool, side: str, contenders: int,
             ops: int, max_ms: int) -> Dict[str, Any]:
    """One side of one cell: ops/s, server and client µs per op, wake-ups (µs), commands."""
    probe = server.client()
    probe.flushall()
    name = f"bench-lock-{secrets.token_hex(4)}"
    if side.startswith("crate Semaphore"):
        from redis_patterns import Semaphore

        Semaphore(name).set_capacity(1).run(probe)
    tasks = [("locks", "contend", {"side": side, "url": server.url, "name": name, "max_ms": max_ms})
             for _ in range(contenders)]
    cell = pool.cell(tasks, ops)
    probe.config_resetstat()
    server_before = harness.server_cpu_us(probe)
    cell.start()
    results = cell.finish()  # the contenders end by themselves
    client_s = cell.client_cpu_s()
    server_us = harness.server_cpu_us(probe) - server_before
    commands = harness.commandstats(probe)
    probe.close()
    base = cell.start_ns
    holds = [((start - base) // 1000, (acquired - base) // 1000, (released - base) // 1000)
             for res in results for start, acquired, released in res["holds"]]
    done = len(holds)
    secs = (max(res["end_ns"] for res in results) - base) / 1e9
    return {
        "rate": done / secs if secs > 0 else float("nan"),
        "server_us": server_us / done if done else float("nan"),
        "client_us": client_s * 1e6 / done if done else float("nan"),
        "wake_us": wake_ups(holds, 1),
        "ops": done,
        "commands": {k: v / done for k, v in commands.items() if k not in ("info", "config|resetstat")} if done else {},
    }


FAILED: Dict[str, Any] = {"rate": float("nan"), "server_us": float("nan"), "client_us": float("nan"),
                          "wake_us": [], "ops": 0, "commands": {}}
"""A peer's round that failed: no numbers (the medians leave it out)."""


def run(server: harness.Server, pool: harness.Pool) -> str:
    """Every cell of the section, ROUNDS rounds; the table."""
    rounds = harness.env_int("ROUNDS", 3)
    ops = harness.env_int("OPS", 1000)
    max_ms = harness.env_int("MAX_SECS", 10) * 1000
    counts = [int(c) for c in harness.env_list("CONTENDERS", "1,8,32")]
    sides = [s for s in SIDES if _wanted(s)]
    tallies: Dict[Tuple[int, str], List[Dict[str, Any]]] = {}
    for c in counts:
        for round_no in range(rounds):
            for side in harness.turns(sides, round_no):
                try:
                    result = run_side(server, pool, side, c, ops, max_ms)
                except harness.TaskFailed as err:
                    if side.startswith("crate"):
                        raise
                    harness.peer_failure("locks", side, f"{c} contenders", err)
                    result = FAILED
                tallies.setdefault((c, side), []).append(result)
        print(f"  locks: {c} contender{'s' if c > 1 else ''} done", flush=True)
    peers = [s for s in sides if not s.startswith("crate")]
    header = ["mutex, contenders, side", "ops/s", "server µs/op", "client µs/op", "waited",
              "wake p50 ms", "wake p99 ms", *(f"÷ {p}" for p in peers)]
    rows = []
    notes = []
    for c in counts:
        rates = {side: harness.median(r["rate"] for r in tallies[(c, side)]) for side in sides}
        for side in sides:
            runs = tallies[(c, side)]
            wakes = [w for r in runs for w in r["wake_us"]]
            waited = len(wakes) / max(1, sum(r["ops"] for r in runs))
            versus = [harness.ratio(rates[side], rates[p]) if side.startswith("crate") else ""
                      for p in peers]
            failed = sum(r is FAILED for r in runs)
            name = side + (f" (failed {failed}×)" if failed else "")
            label = f"×{c:<3} {name}" if side == sides[0] else f"     {name}"
            rows.append([label, harness.shown(rates[side]),
                         harness.shown(harness.median(r["server_us"] for r in runs), 1),
                         harness.shown(harness.median(r["client_us"] for r in runs), 1),
                         f"{waited:.0%}",
                         harness.shown(harness.quantile_ms(wakes, 0.5), 2),
                         harness.shown(harness.quantile_ms(wakes, 0.99), 2), *versus])
            if harness.env_int("COMMANDSTATS", 0):
                top = sorted(runs[0]["commands"].items(), key=lambda kv: -kv[1])[:4]
                notes.append(f"×{c} {side}: " + ", ".join(f"{k} {v:.1f}" for k, v in top) + " per op")
    out = harness.table(header, rows)
    if notes:
        out += "\n\ncommands per operation (first round):\n" + "\n".join(notes)
    return out


def _wanted(side: str) -> bool:
    """Whether LOCK_SIDES (a comma-separated list of words, e.g. `FairLock,pottery`)
    selects `side`; all when it is not set."""
    words = harness.env_list("LOCK_SIDES", "")
    return not words or any(word.lower() in side.lower() for word in words)
