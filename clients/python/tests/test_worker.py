"""The work queue's Worker, sync and asyncio: it drains a queue and reports what it did,
renews a long job's lease (even while its handler blocks its thread), retries then kills
a failing job, fails an unrecoverable one at once, holds a group back, runs N jobs at
once, stops after the jobs in hand, and raises an error that cannot pass; and its loop,
stepped without I/O."""

from __future__ import annotations

import asyncio
import doctest
import threading
import time
from collections import Counter
from typing import Any, Callable, List, Optional, Tuple

import pytest
import redis
import redis.asyncio
import redis.exceptions

import redis_patterns as rp
from redis_patterns import Backoff, Job, JobError, MemoryPolicy, Worker, WorkReport
from redis_patterns import _machine, _worker
from redis_patterns._machine import Failed, Pause, Run
from redis_patterns._worker import _AwaitEnd, _Hold, _Release, _Renewals, _Start, _Working

from ._loops import Running, blocked_in, counts, drained
from .conftest import Cluster, Server, poll

LEASE = 1_500
"""The loop tests' lease (ms): renewed every 500 ms, so a renewal thread kept from
running for up to a second on a loaded machine still renews in time."""
SLOW = 1.6
"""How long the job "slow" runs (s): past its first lease, which only renewals let it outlive."""


def add(r: redis.Redis, name: str, *ids: str, group: str = "") -> None:
    for id in ids:
        rp.WorkQueue(name).add(id, id, 0, 0, group).run(r)


def deadline(r: redis.Redis, name: str, id: str) -> int:
    """The lease deadline of a held job, read on the server."""
    score = r.zscore(rp.work_queue.KEY_LEASED.build(name=name), id)
    assert score is not None, f"{id} is not held"
    return int(score)


def loop_queue(r: redis.Redis, name: str) -> Worker:
    """A worker of the loop tests: "slow" outlives its first lease, "fail" always fails
    (two deliveries, a 10 ms backoff), the "ok-" jobs work."""
    add(r, name, "slow", "fail", "ok-1", "ok-2", "ok-3", "ok-4", "ok-5")
    return Worker(name, lease=LEASE, max_deliveries=2, backoff=Backoff.fixed(10), poll=10)


class Seen:
    """What the handlers saw: each job's deliveries, in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: List[Tuple[str, int]] = []

    def saw(self, job: Job) -> None:
        with self.lock:
            self.runs.append((job.id, job.delivery))

    def of(self, id: str) -> List[int]:
        with self.lock:
            return [n for i, n in self.runs if i == id]


def handle(seen: Seen) -> Callable[[Job], None]:
    def handler(job: Job) -> None:
        seen.saw(job)
        if job.id == "slow":
            time.sleep(SLOW)
        if job.id == "fail":
            raise JobError("boom")

    return handler


def stop_when_drained(r: redis.Redis, name: str, stop: threading.Event) -> None:
    """Raises `stop` once only dead letters are left."""
    poll(lambda: drained(r, name), "the queue to drain")
    stop.set()


def assert_loop_outcome(r: redis.Redis, name: str, reports: List[WorkReport], seen: Seen) -> None:
    """"slow" ran once (renewed while it ran, so the other worker never got it), "fail"
    ran twice and is dead with its error, the rest were acked."""
    total = tuple(sum(getattr(rep, f) for rep in reports) for f in ("acked", "retried", "dead", "lost"))
    assert total == (6, 1, 1, 0), reports
    assert seen.of("slow") == [1]
    assert seen.of("fail") == [1, 2]
    dead = rp.WorkQueue(name).job("fail").run(r)
    assert dead is not None and dead[0] == "dead" and dead[4] == b"boom"
    assert counts(r, name) == {"waiting": 0, "parked": 0, "delayed": 0, "leased": 0, "dead": 1, "completed": 0, "blocked": 0}


def test_two_workers_drain_the_queue_renew_a_long_job_and_kill_a_failing_one(server: Server, r: redis.Redis) -> None:
    worker, seen, stop = loop_queue(r, "loop"), Seen(), threading.Event()
    runs = [Running(lambda: worker.run(server.client(), handle(seen), stop)) for _ in range(2)]
    stop_when_drained(r, "loop", stop)
    assert_loop_outcome(r, "loop", [run.result() for run in runs], seen)


def test_two_asyncio_workers_drain_the_queue_on_one_client(server: Server, r: redis.Redis) -> None:
    worker, seen, stop = loop_queue(r, "loop"), Seen(), threading.Event()

    async def handler(job: Job) -> None:
        seen.saw(job)
        if job.id == "slow":
            await asyncio.sleep(SLOW)
        if job.id == "fail":
            raise JobError("boom")

    async def main() -> List[WorkReport]:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        try:
            drained = asyncio.get_running_loop().run_in_executor(None, stop_when_drained, r, "loop", stop)
            reports = await asyncio.gather(*(worker.run_async(client, handler, stop) for _ in range(2)))
            await drained
            return list(reports)
        finally:
            await client.aclose()

    assert_loop_outcome(r, "loop", asyncio.run(main()), seen)


def test_an_unrecoverable_job_dies_at_once_and_a_rate_limited_group_is_held_back(
    server: Server, r: redis.Redis
) -> None:
    add(r, "errors", "bad")
    add(r, "errors", "limited", group="tenant")
    stop, deliveries = threading.Event(), Counter[str]()

    def handler(job: Job) -> None:
        deliveries[job.id] += 1
        if job.id == "bad":
            raise rp.Unrecoverable("bad payload")
        if deliveries[job.id] == 1:
            raise rp.RateLimitGroup(60_000, "429 from the tenant")

    run = Running(lambda: Worker("errors", poll=10).run(server.client(), handler, stop))
    poll(lambda: counts(r, "errors")["dead"] == 1 and counts(r, "errors")["parked"] == 1, "the jobs to end")
    stop.set()
    report = run.result()
    assert (report.dead, report.held_back, report.retried, report.acked) == (1, 1, 0, 0), report
    bad = rp.WorkQueue("errors").job("bad").run(r)
    assert bad is not None and (bad[0], bad[1], bad[4]) == ("dead", 1, b"bad payload")
    held = rp.WorkQueue("errors").job("limited").run(r)
    assert held is not None and held[0] == "parked"


def test_a_handlers_exception_is_kept_with_its_type_and_its_result_is_kept(server: Server, r: redis.Redis) -> None:
    name = "results"
    rp.WorkQueue(name).configure(result_ttl=60_000, result_max=100).run(r)
    add(r, name, "oops", "fine")
    stop = threading.Event()

    def handler(job: Job) -> str:
        if job.id == "oops":
            raise KeyError("missing")
        return "made it"

    worker = Worker(name, max_deliveries=1, poll=10)
    run = Running(lambda: worker.run(server.client(), handler, stop))
    poll(lambda: counts(r, name)["dead"] == 1 and counts(r, name)["waiting"] == 0, "the jobs to end")
    poll(lambda: rp.WorkQueue(name).result("fine").run(r) is not None, "the ack")
    stop.set()
    assert (run.result().acked, run.result().dead) == (1, 1)
    oops = rp.WorkQueue(name).job("oops").run(r)
    assert oops is not None and oops[4] == b"KeyError: 'missing'"
    assert rp.WorkQueue(name).result("fine").run(r) == b"made it"


def test_concurrency_n_runs_n_jobs_at_once_each_once(server: Server, r: redis.Redis) -> None:
    n, jobs = rp.MAX_CONCURRENCY, 60
    assert n > rp.MAX_TAKE  # taken over several calls
    add(r, "wide", *(f"job-{i}" for i in range(jobs)))
    stop, lock = threading.Event(), threading.Lock()
    together = threading.Barrier(n, timeout=10)
    running, peak, runs = [0], [0], Counter[str]()

    def handler(job: Job) -> None:
        with lock:
            runs[job.id] += 1
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            first = sum(runs.values()) <= n
        if first:  # the first n jobs wait until all of them run at once
            together.wait()
        with lock:
            running[0] -= 1

    worker = Worker("wide", lease=LEASE, concurrency=n, poll=20)
    run = Running(lambda: worker.run(server.client(), handler, stop))
    poll(lambda: counts(r, "wide")["waiting"] + counts(r, "wide")["leased"] == 0, "the queue to drain")
    stop.set()
    report = run.result()
    assert (report.acked, report.lost) == (jobs, 0), report
    assert peak[0] == n
    assert set(runs.values()) == {1} and len(runs) == jobs


def test_an_asyncio_worker_runs_n_handlers_at_once(server: Server, r: redis.Redis) -> None:
    n = rp.MAX_CONCURRENCY
    add(r, "wide-async", *(f"job-{i}" for i in range(n)))
    stop = threading.Event()
    running, peak = [0], [0]

    async def handler(job: Job) -> None:
        running[0] += 1
        peak[0] = max(peak[0], running[0])
        while peak[0] < n:  # every job waits until all of them run at once
            await asyncio.sleep(0.001)
        running[0] -= 1

    async def main() -> WorkReport:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        try:
            drained = asyncio.get_running_loop().run_in_executor(None, stop_when_drained, r, "wide-async", stop)
            report = await Worker("wide-async", lease=LEASE, concurrency=n, poll=20).run_async(client, handler, stop)
            await drained
            return report
        finally:
            await client.aclose()

    report = asyncio.run(main())
    assert (report.acked, report.lost, peak[0]) == (n, 0, n), report


def test_an_added_job_wakes_an_idle_worker(server: Server, r: redis.Redis) -> None:
    stop, started = threading.Event(), threading.Event()
    # With the fallback poll a minute long, only the wake-up can start the job in time.
    run = Running(lambda: Worker("idle", poll=60_000).run(server.client(), lambda job: started.set(), stop))
    poll(lambda: blocked_in(r, "bzpopmin") == 1, "the worker to wait for work")
    add(r, "idle", "one")
    poll(started.is_set, "the job to start", seconds=5)
    poll(lambda: drained(r, "idle") and blocked_in(r, "bzpopmin") == 1, "the worker to wait again")
    stop.set()
    r.zadd(rp.work_queue.KEY_SIGNAL.build(name="idle"), {"ready": 0})  # to see the flag now
    assert run.result().acked == 1


def test_a_stopped_worker_finishes_and_acks_the_job_in_hand(server: Server, r: redis.Redis) -> None:
    add(r, "stopping", "in-hand", "next")
    stop, started = threading.Event(), threading.Event()

    def handler(job: Job) -> None:
        started.set()
        poll(stop.is_set, "the stop")

    run = Running(lambda: Worker("stopping", poll=10).run(server.client(), handler, stop))
    poll(started.is_set, "the job to start")
    stop.set()
    report = run.result()
    assert (report.acked, report.lost) == (1, 0), report
    assert counts(r, "stopping")["waiting"] == 1 and counts(r, "stopping")["leased"] == 0


@pytest.mark.parametrize("kind", ["sync", "asyncio"])
def test_renewals_keep_a_job_whose_handler_blocks_its_thread_past_the_lease(
    server: Server, r: redis.Redis, kind: str
) -> None:
    name, lease = f"blocking-{kind}", 900
    add(r, name, "long")
    stop, released = threading.Event(), threading.Event()
    # One delivery: a lease the renewals failed to keep would leave the job dead.
    worker = Worker(name, lease=lease, max_deliveries=1, poll=10)

    def block() -> None:
        while not released.is_set():
            time.sleep(0.02)  # holds this thread (the event loop, for asyncio)

    async def blocking(job: Job) -> None:
        block()

    def work() -> WorkReport:
        if kind == "sync":
            return worker.run(server.client(), lambda job: block(), stop)

        async def main() -> WorkReport:
            client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
            try:
                return await worker.run_async(client, blocking, stop, renew_from=server.client())
            finally:
                await client.aclose()

        return asyncio.run(main())

    run = Running(work)
    poll(lambda: counts(r, name)["leased"] == 1, "the job to start")
    first = deadline(r, name, "long")
    poll(lambda: deadline(r, name, "long") >= first + lease, "renewals past a whole lease")
    # Taken by another worker now, it would be dead: a take hands back lapsed leases.
    assert rp.WorkQueue(name).take(1, "1" * 32, [], max_deliveries=1).run(r) == []
    released.set()
    stop.set()
    report = run.result()
    assert (report.acked, report.lost, report.renewals_failed) == (1, 0, 0), report
    assert counts(r, name)["dead"] == 0


def test_an_error_that_cannot_pass_ends_the_loop(server: Server, r: redis.Redis) -> None:
    r.set(rp.work_queue.KEY_SIGNAL.build(name="broken"), "not a zset")
    with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
        Worker("broken", poll=10).run(server.client(), lambda job: None, threading.Event())


def test_an_evicting_server_is_refused_or_reported(own_server: Server) -> None:
    r = own_server.client()
    r.config_set("maxmemory-policy", "allkeys-lru")
    with pytest.raises(rp.EvictingServer, match="allkeys-lru"):
        Worker("evicted", on_eviction="refuse").run(r, lambda job: None)
    stop = threading.Event()
    stop.set()
    assert Worker("evicted").run(r, lambda job: None, stop).memory_policy == MemoryPolicy.ALL_KEYS
    r.config_set("maxmemory-policy", "noeviction")
    assert Worker("evicted").run(r, lambda job: None, stop).memory_policy == MemoryPolicy.NO_EVICTION
    assert Worker("evicted", on_eviction="ignore").run(r, lambda job: None, stop).memory_policy == (
        MemoryPolicy.NOT_CHECKED
    )


def test_workers_run_through_functions_and_on_a_cluster(server: Server, r: redis.Redis, cluster: Cluster) -> None:
    for client, functions in ((r, True), (cluster.client(), False)):
        client.delete(*(rp.WorkQueue("where").take(1, "0" * 32, []).keys))
        for n in range(5):
            rp.WorkQueue("where").add(f"job-{n}", "x", 0, 0, "").run(client)
        stop, ran = threading.Event(), Counter[str]()

        def handler(job: Job) -> None:
            ran[job.id] += 1
            if len(ran) == 5:
                stop.set()

        report = Worker("where", poll=10, functions=functions).run(client, handler, stop)
        assert report.acked == 5 and sorted(ran.values()) == [1] * 5, report


def test_bad_settings_are_refused_before_any_io() -> None:
    with pytest.raises(rp.InvalidInput) as refused:
        Worker("q", lease=0)
    assert refused.value.code == "BAD_LEASE"
    with pytest.raises(rp.InvalidInput):
        Worker("q", max_deliveries=1001)
    with pytest.raises(rp.InvalidInput):
        Worker("")
    with pytest.raises(ValueError):
        Worker("q", concurrency=rp.MAX_CONCURRENCY + 1)
    with pytest.raises(ValueError):
        Worker("q", on_eviction="sometimes")


# The loop, stepped without I/O.


def job(token: str, group: Optional[str] = None) -> Job:
    return Job(token, token, 1, 0, group, b"")


def shown(step: Any) -> str:
    """The script a step runs, or what else it asks for."""
    if isinstance(step, Run):
        call = step.op.build() if isinstance(step.op, _machine._Lazy) else step.op
        return call.script.name if isinstance(call, rp.Call) else "native"
    if isinstance(step, _worker._Wait):
        return "wait"
    if isinstance(step, _Start):
        return f"start {len(step.jobs)}"
    if isinstance(step, _AwaitEnd):
        return "await an end"
    if isinstance(step, Pause):
        return "pause"
    return f"done {step.value}"


def lease_lost() -> rp.ScriptError:
    return rp.ScriptError("work_queue/take", "LEASE_LOST", "lost")


def test_an_ack_that_lost_a_lease_is_told_apart_and_a_stop_settles_what_runs() -> None:
    worker = Worker("q", concurrency=2, on_eviction="ignore")
    stop = threading.Event()
    told: List[_worker._Renewal] = []
    working = _Working(worker, stop, told.append)
    assert shown(working.step()) == "work_queue/take"
    working.feed([("a", "a", 1, 0, None, b""), ("b", "b", 1, 0, None, b"")])
    assert shown(working.step()) == "start 2"
    assert shown(working.step()) == "await an end"
    working.ended(job("a"), b"")
    # The ack of `a` rides on the next take; the server says a lease was lost.
    assert shown(working.step()) == "work_queue/take"
    working.feed(Failed(lease_lost()))
    assert shown(working.step()) == "work_queue/ack", "acked alone to tell which"
    working.feed(1)
    stop.set()
    working.ended(job("b"), JobError("boom"))
    assert shown(working.step()) == "work_queue/nack"
    working.feed(("waiting", 0))
    done = working.step()
    assert shown(done) == "done " + str(WorkReport(acked=1, retried=1))
    assert told == [_Hold(job("a"), worker.renew_every), _Hold(job("b"), worker.renew_every),
                    _Release("a", "a"), _Release("b", "b")]


def test_an_error_that_passes_sends_the_call_again_after_a_pause_unless_stopped() -> None:
    worker = Worker("q", on_eviction="ignore")
    stop = threading.Event()
    working = _Working(worker, stop, lambda renewal: None)
    dropped = redis.exceptions.ConnectionError("Connection reset by peer")
    assert shown(working.step()) == "work_queue/take"
    working.feed(Failed(dropped))
    assert shown(working.step()) == "pause"
    assert shown(working.step()) == "work_queue/take"
    working.feed([("a", "a", 1, 0, None, b"")])
    assert shown(working.step()) == "start 1"
    working.ended(job("a"), b"")
    stop.set()
    assert shown(working.step()) == "work_queue/ack"
    working.feed(Failed(dropped))
    # Stopped while the server is away: the job's lease runs out.
    report = working.step()
    assert shown(report) == "done " + str(WorkReport(lost=1, reconnects=2))


def test_a_failed_renewal_is_sent_again_at_once_then_at_the_next_tick() -> None:
    renewals = _Renewals(rp.WorkQueue("q"), 30_000)
    assert renewals.step() == _worker._Idle(None)
    renewals.apply(_Hold(job("a"), 0.0))
    assert isinstance(renewals.step(), Run)
    renewals.feed(Failed(redis.exceptions.ConnectionError("reset")))
    assert isinstance(renewals.step(), Run), "sent again at once"
    renewals.held[0].every = 3600.0
    renewals.feed(Failed(redis.exceptions.ConnectionError("reset")))
    assert isinstance(renewals.step(), _worker._Idle), "then at the next tick"
    report = WorkReport()
    renewals.add_to(report)
    assert (report.renewals_failed, report.reconnects) == (2, 2)
    # A lost lease ends the job's renewals; so does a release while one is in flight.
    renewals.apply(_Hold(job("b"), 0.0))
    assert isinstance(renewals.step(), Run)
    renewals.feed(Failed(rp.ScriptError("work_queue/extend", "LEASE_LOST", "gone")))
    renewals.held[0].next = 0.0
    assert isinstance(renewals.step(), Run)
    renewals.apply(_Release("a", "a"))
    renewals.feed(1)
    assert renewals.step() == _worker._Idle(None)


def test_jobs_of_one_take_are_told_apart_by_their_ids() -> None:
    # Two jobs of one take, both on their first delivery, share the token `t:1`.
    renewals = _Renewals(rp.WorkQueue("q"), 30_000)
    renewals.apply(_Hold(Job("x", "t:1", 1, 0, None, b""), 0.0))
    renewals.apply(_Hold(Job("y", "t:1", 1, 0, None, b""), 3600.0))
    renewals.apply(_Release("x", "t:1"))
    assert [h.job.id for h in renewals.held] == ["y"]
    # An answer counts for the job it was sent for.
    renewals.apply(_Hold(Job("z", "t:1", 1, 0, None, b""), 3600.0))
    renewals.held[0].next = 0.0
    assert isinstance(renewals.step(), Run)
    renewals.feed(Failed(rp.ScriptError("work_queue/extend", "LEASE_LOST", "gone")))
    assert [h.job.id for h in renewals.held] == ["z"]


def test_errors_that_pass_are_the_rust_crates() -> None:
    passing = [
        redis.exceptions.ConnectionError("refused"),
        redis.exceptions.TimeoutError("timed out"),
        redis.exceptions.ReadOnlyError("You can't write against a read only replica."),
        redis.exceptions.BusyLoadingError("Redis is loading the dataset in memory"),
        redis.exceptions.ResponseError("UNBLOCKED force unblock from blocking operation"),
        redis.exceptions.ResponseError("BUSY Redis is busy running a script."),
        redis.exceptions.TryAgainError("Multiple keys request during rehashing of slot"),
        redis.exceptions.ClusterDownError("The cluster is down"),
        redis.exceptions.MasterDownError("Link with MASTER is down"),
        ConnectionRefusedError(),
    ]
    fatal = [
        redis.exceptions.ResponseError("WRONGTYPE Operation against a key"),
        redis.exceptions.NoPermissionError("this user has no permissions"),
        redis.exceptions.AuthenticationError("invalid password"),
        rp.ScriptError("work_queue/ack", "LEASE_LOST", "gone"),
        ValueError("a bug"),
    ]
    assert [rp.is_transient(e) for e in passing] == [True] * len(passing)
    assert [rp.is_transient(e) for e in fatal] == [False] * len(fatal)
    retries = _machine.Retries()
    pauses = [retries.after(redis.exceptions.ConnectionError("x")) or 0.0 for _ in range(9)]
    assert 0.005 <= pauses[0] <= 0.010 and 0.5 <= pauses[-1] <= 1.0
    assert retries.after(ValueError()) is None
    assert (retries.reconnects, retries.server_retries) == (9, 0)


def test_the_loops_examples_hold() -> None:
    for module in (_machine, _worker):
        assert doctest.testmod(module).failed == 0
