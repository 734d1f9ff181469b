"""The calls section: what a generated call costs the client against a bare redis-py
`evalsha` of the same script, in this one process: the CPU time per call
(`time.process_time_ns`, which counts this process alone) and the wall time per call.

The generated side is what an app writes: the family instance built once, then per call
its method (which checks every argument and names the keys from their templates) and
`.run(r)` (`EVALSHA`, the reply decoded as the header says). The bare side is what an app
writes without the package: the script loaded once (`SCRIPT LOAD` of the file), then per
call the key names formatted by hand and `r.evalsha(sha, numkeys, *keys, *args)`, the
reply as redis-py parses it. Both on one connection to the bench's server, taking turns
round after round (CALL_ROUNDS rounds of CALLS calls each), each round on a fresh
keyspace. A third row, *build only*, is the generated method without the run: the part
of the cost that is the checks and the key names.

The table gives each side's best round, as `timeit` advises: on a machine shared with
other work, a slower round measures the interference (another process evicting this
one's caches, its core's other thread busy), not the code; the medians are printed too.
"""

from __future__ import annotations

import secrets
import time
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

import redis

import harness



class Case(NamedTuple):
    """A script: its generated call, the same call built only, and its bare `evalsha`,
    each taking the call's number; `setup` prepares a fresh keyspace for it."""

    label: str
    generated: Callable[[int], Any]
    build_only: Callable[[int], Any]
    bare: Callable[[int], Any]
    setup: Callable[[], Any] = lambda: None


def cases(r: redis.Redis) -> List[Case]:
    from redis_patterns import RateLimiter, Semaphore, WorkQueue

    def load(path: str) -> str:
        return str(r.script_load((harness.ROOT / "scripts" / path).read_text()))

    limiter = RateLimiter("u1", "login")
    gcra_sha = load("rate_limiter/gcra.lua")

    permits, token = Semaphore("bench-permits"), secrets.token_hex(16)
    acquire_sha = load("semaphore/acquire.lua")
    sem_keys = [f"{{bench-permits}}:{k}" for k in ("state", "leases", "held", "queue", "places", "wake")]

    queue, payload = WorkQueue("bench-calls"), b"x" * 100
    add_sha = load("work_queue/add.lua")

    def gcra_bare(_: int) -> Any:
        return r.evalsha(gcra_sha, 1, "RateLimiter:u1:login", 1_000_000, 1_000_000, 1000, 1)

    def acquire_bare(_: int) -> Any:
        return r.evalsha(acquire_sha, 6, *sem_keys, token, 1, 10_000, "", 100)

    def add_bare(i: int) -> Any:
        name = "bench-calls"
        keys = [f"{{{name}}}:{k}" for k in ("waiting", "delayed", "parked", "jobs", "signal", "turns")]
        return r.evalsha(add_sha, 6, *keys, f"j{i}", payload, 0, 0, "")

    return [
        Case("rate_limiter/gcra (1 key, 4 args)",
             lambda _: limiter.gcra(1_000_000, 1000, 1).run(r),
             lambda _: limiter.gcra(1_000_000, 1000, 1),
             gcra_bare),
        Case("semaphore/acquire (6 keys, 5 args)",
             lambda _: permits.acquire(token, 1, 10_000, 100).run(r),
             lambda _: permits.acquire(token, 1, 10_000, 100),
             acquire_bare,
             lambda: permits.set_capacity(1000).run(r)),
        Case("work_queue/add (6 keys, 5 args)",
             lambda i: queue.add(f"j{i}", payload, 0, 0, "").run(r),
             lambda i: queue.add(f"j{i}", payload, 0, 0, ""),
             add_bare),
    ]


def measure(call: Callable[[int], Any], calls: int) -> Tuple[float, float]:
    """CPU µs and wall µs per call, over `calls` calls."""
    cpu, wall = time.process_time_ns(), time.perf_counter_ns()
    for i in range(calls):
        call(i)
    return (time.process_time_ns() - cpu) / calls / 1000, (time.perf_counter_ns() - wall) / calls / 1000


def run(server: harness.Server, pool: harness.Pool) -> str:
    rounds = harness.env_int("CALL_ROUNDS", 15)
    calls = harness.env_int("CALLS", 1000)
    r = server.client()
    r.flushall()
    rows = []
    worst = 0.0
    for case in cases(r):
        got: Dict[str, List[Tuple[float, float]]] = {"generated": [], "build": [], "bare": []}
        sides = [("generated", case.generated), ("bare", case.bare), ("build", case.build_only)]
        case.setup()
        # Each side once untimed: the script cached, the connection warm.
        for _, call in sides:
            call(-1)
        for round_no in range(rounds):
            for side, call in harness.turns(sides, round_no):
                r.flushall()  # every side finds the same keyspace; the scripts stay
                case.setup()
                got[side].append(measure(call, calls))
        best = {side: min(c for c, _ in runs) for side, runs in got.items()}
        middle = {side: harness.median(c for c, _ in runs) for side, runs in got.items()}
        wall = {side: min(w for _, w in runs) for side, runs in got.items()}
        worst = max(worst, best["generated"] / best["bare"])
        for side, label in (("generated", case.label), ("bare", ""), ("build", "")):
            versus = "" if side == "bare" else harness.ratio(best[side], best["bare"])
            rows.append([label, NAMES[side], harness.shown(best[side], 1), harness.shown(middle[side], 1),
                         harness.shown(wall[side], 1), versus,
                         "" if side == "bare" else harness.ratio(middle[side], middle["bare"])])
    r.close()
    header = ["script", "side", "CPU µs/call", "median", "wall µs/call", "÷ bare, CPU", "medians"]
    out = harness.table(header, rows)
    return out + f"\n\nthe largest ratio, generated ÷ bare (client CPU, best rounds): {worst:.2f}× (the goal: at most 1.15×)"


NAMES = {"generated": "generated", "bare": "bare evalsha", "build": "build only"}
