"""The queues section: the crate's Python `Worker` against bullmq (BullMQ's Python port)
and rq, with the same 100-byte jobs: jobs per second, the server's CPU per job, and the
client processes' CPU per job.

**The flow**, as `benches/bullmq.rs` runs it: every job goes add -> take -> ack. W
producer processes add JOBS jobs between them, one per call (a batch per call in the
batch cells), while W worker processes take and handle them, a connection each (the
crate's `Worker` adds one for its lease renewals, bullmq's a blocking one, rq's one for
its commands' pub/sub). The workers are started first and
the clock starts once the server shows every one of them blocked, waiting for work
(`INFO clients`: blocked_clients); then the producers get the go. Timed from the go to
the handler of the last job (every handler counts its job in a counter the processes
share); the server's CPU (`INFO cpu`) and the processes' CPU (producers and workers,
`/proc/<pid>/stat`) read around the same span, with when the last add returned: near
100% of the cell, the producers set the pace; well below, the workers did.

**The cells**: 1 and 8 workers, one job per call and in batches of 10 (the most one take
of the crate hands out). One job per call: the crate's `Worker` takes one job per call
and acks it in the call that takes the next; bullmq's `Worker` with `concurrency: 1`
(its `moveToFinished` acks a job and fetches the next in one script); rq's
`SimpleWorker` (it runs the job in its own process: rq's default `Worker` forks a child
per job, which no fast setup keeps). Batches: the producers add a batch per round trip
(the crate's `Batch` pipeline, bullmq's `addBulk`, rq's `enqueue_many` in one
pipeline); the crate's `Worker` runs with `concurrency=10` (its handlers on 10 threads;
it acks the jobs that ended and takes as many as are free, up to 10, in one call),
bullmq's with `concurrency: 10` (it has no batched take in its open-source package, so
it holds as many jobs at once as the crate's); rq has no batched take nor concurrency in
one worker, so its workers are those of the one-job cells.

**The settings**, every side at its defaults (the crate's: a 30 s lease, a wait for
work of up to 200 ms) but for these: bullmq's jobs with a custom
`jobId` and `removeOnComplete` (the crate's ack deletes the job, and its add takes an
id); rq's with a custom `job_id` and `result_ttl=0` (nothing kept once done), its worker
logging at WARNING (INFO prints a line per job). Every cell runs on a fresh keyspace
(`FLUSHALL` between cells, untimed).
"""

from __future__ import annotations

import asyncio
import secrets
import signal
import threading
import time
from typing import Any, Dict, List, Tuple

import redis

import harness

PAYLOAD = b"x" * 100
"""Every job's payload on the crate's and rq's sides."""
PAYLOAD_TEXT = "x" * 98
"""bullmq's job data: its JSON is 100 bytes, as the others' payload."""
BATCH = 10
"""Jobs per call in the batch cells: the most one take of the crate hands out."""
CELLS: List[Tuple[int, int]] = [(1, 1), (8, 1), (1, BATCH), (8, BATCH)]
"""The cells, in the table's order: (workers, jobs per call)."""


def mine(p: int, workers: int, jobs: int) -> List[int]:
    """The job numbers producer `p` of `workers` adds: p, p + workers, ..."""
    return list(range(p, jobs, workers))


def chunks(items: List[int], per: int) -> List[List[int]]:
    return [items[i:i + per] for i in range(0, len(items), per)]


# ---------------------------------------------------------------------------------------
# The crate.


def crate_producer(url: str, queue: str, p: int, workers: int, jobs: int, per: int) -> Dict[str, Any]:
    from redis_patterns import WorkQueue, pipeline

    r = redis.Redis.from_url(url)
    q = WorkQueue(queue)
    r.ping()
    harness.ready()
    for chunk in chunks(mine(p, workers, jobs), per):
        if per == 1:
            q.add(f"j-{chunk[0]}", PAYLOAD, 0, 0, "").run(r)
        else:
            with pipeline(r) as batch:
                for n in chunk:
                    batch.add(q.add(f"j-{n}", PAYLOAD, 0, 0, ""))
    last = time.perf_counter_ns()
    r.close()
    return {"last_add_ns": last}


def crate_worker(url: str, queue: str, per: int) -> Dict[str, Any]:
    from redis_patterns import Worker

    def handle(job: Any) -> None:
        harness.SHARED.job_done()

    r = redis.Redis.from_url(url)
    r.ping()
    harness.ready(wait_for_go=False)
    report = Worker(queue, concurrency=per).run(r, handle, harness.SHARED.stop)
    r.close()
    return {"acked": report.acked, "lost": report.lost}


# ---------------------------------------------------------------------------------------
# bullmq.


def bullmq_producer(url: str, queue: str, p: int, workers: int, jobs: int, per: int) -> Dict[str, Any]:
    from bullmq import Queue

    async def main() -> int:
        q = Queue(queue, {"connection": url})
        await q.backend.waitUntilReady()
        await asyncio.get_running_loop().run_in_executor(None, harness.ready)
        for chunk in chunks(mine(p, workers, jobs), per):
            opts = [{"jobId": f"j-{n}", "removeOnComplete": True} for n in chunk]
            if per == 1:
                await q.add("job", PAYLOAD_TEXT, opts[0])
            else:
                await q.addBulk([{"name": "job", "data": PAYLOAD_TEXT, "opts": o} for o in opts])
        last = time.perf_counter_ns()
        await q.close()
        return last

    return {"last_add_ns": asyncio.run(main())}


def bullmq_worker(url: str, queue: str, per: int) -> Dict[str, Any]:
    from bullmq import Worker

    async def handle(job: Any, token: Any) -> None:
        harness.SHARED.job_done()

    async def main() -> None:
        worker = Worker(queue, handle, {"connection": url, "concurrency": per})
        harness.ready(wait_for_go=False)
        await asyncio.get_running_loop().run_in_executor(None, harness.SHARED.stop.wait)
        await worker.close()

    asyncio.run(main())
    return {}


# ---------------------------------------------------------------------------------------
# rq.


def rq_handle(payload: bytes) -> None:
    """rq's job: the worker imports it by name (`queues.rq_handle`)."""
    harness.SHARED.job_done()


def rq_producer(url: str, queue: str, p: int, workers: int, jobs: int, per: int) -> Dict[str, Any]:
    from rq import Queue

    r = redis.Redis.from_url(url)
    q = Queue(queue, connection=r)
    r.ping()
    harness.ready()
    for chunk in chunks(mine(p, workers, jobs), per):
        if per == 1:
            q.enqueue(rq_handle, PAYLOAD, job_id=f"j-{chunk[0]}", result_ttl=0)
        else:
            q.enqueue_many([Queue.prepare_data(rq_handle, (PAYLOAD,), job_id=f"j-{n}", result_ttl=0)
                            for n in chunk])
    last = time.perf_counter_ns()
    r.close()
    return {"last_add_ns": last}


def rq_worker(url: str, queue: str, per: int) -> Dict[str, Any]:
    from rq import Queue, SimpleWorker

    r = redis.Redis.from_url(url)
    worker = SimpleWorker([Queue(queue, connection=r)], connection=r)

    # rq stops on SIGTERM (a warm shutdown: the job in hand finishes), sent to the main
    # thread, whose blocking read it interrupts.
    main = threading.main_thread().ident
    assert main is not None  # this code runs on it

    def stop() -> None:
        harness.SHARED.stop.wait()
        signal.pthread_kill(main, signal.SIGTERM)

    threading.Thread(target=stop, daemon=True).start()
    harness.ready(wait_for_go=False)
    try:
        worker.work(logging_level="WARNING")
    finally:
        # The pool process goes on with other tasks: rq's handlers go.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    r.close()
    return {}


# ---------------------------------------------------------------------------------------
# The driver.

SIDES: Dict[str, Tuple[str, str]] = {
    "crate": ("crate_producer", "crate_worker"),
    "bullmq": ("bullmq_producer", "bullmq_worker"),
    "rq": ("rq_producer", "rq_worker"),
}
"""Each side's producer and worker tasks, in the table's order."""


def run_side(server: harness.Server, pool: harness.Pool, side: str, workers: int, per: int,
             jobs: int, max_s: float) -> Dict[str, Any]:
    """One side of one cell: jobs/s, server and client µs per job, the last add's time."""
    probe = server.client()
    probe.flushall()
    queue = f"bench-{secrets.token_hex(4)}"
    producer, worker = SIDES[side]
    tasks: List[harness.Task] = [("queues", worker, {"url": server.url, "queue": queue, "per": per})
                                 for _ in range(workers)]
    tasks += [("queues", producer, {"url": server.url, "queue": queue, "p": p, "workers": workers,
                                    "jobs": jobs, "per": per}) for p in range(workers)]
    cell = pool.cell(tasks, jobs)
    if not harness.poll(lambda: harness.blocked_clients(probe) >= workers, 30.0):
        why = f"its {workers} workers did not block waiting for work within 30 s"
        try:
            cell.finish()
        except harness.TaskFailed as err:
            why += f"; {err}"
        raise harness.TaskFailed(why)
    server_before = harness.server_cpu_us(probe)
    cell.start()
    finished = cell.wait_done(max_s)
    server_us = harness.server_cpu_us(probe) - server_before
    client_s = cell.client_cpu_s()
    end_ns = cell.shared.done_ns.value if finished else time.perf_counter_ns()
    done = jobs if finished else cell.shared.count.value
    results = cell.finish()
    probe.close()
    secs = (end_ns - cell.start_ns) / 1e9
    last_add = max(r["last_add_ns"] for r in results if "last_add_ns" in r)
    acked, lost = (sum(r.get(k, 0) for r in results) for k in ("acked", "lost"))
    if side == "crate" and finished and (acked != jobs or lost):
        raise RuntimeError(f"the crate's workers acked {acked} of {jobs} jobs, and lost {lost}")
    return {
        "rate": done / secs,
        "server_us": server_us / max(1, done),
        "client_us": client_s * 1e6 / max(1, done),
        "adds": min(1.0, (last_add - cell.start_ns) / 1e9 / secs),
        "finished": finished,
    }


FAILED: Dict[str, Any] = {k: float("nan") for k in ("rate", "server_us", "client_us", "adds")}
"""A peer's round that failed: no numbers (the medians leave it out)."""


def run(server: harness.Server, pool: harness.Pool) -> str:
    """Every cell of the section, ROUNDS rounds; the table."""
    rounds = harness.env_int("ROUNDS", 3)
    jobs = harness.env_int("JOBS", 2000)
    max_s = float(harness.env_int("MAX_SECS", 10))
    sides = [s for s in SIDES if s in harness.env_list("QUEUE_SIDES", ",".join(SIDES))]
    tallies: Dict[Tuple[int, int, str], List[Dict[str, Any]]] = {}
    for workers, per in CELLS:
        for round_no in range(rounds):
            for side in harness.turns(sides, round_no):
                try:
                    result = run_side(server, pool, side, workers, per, jobs, max_s)
                except harness.TaskFailed as err:
                    if side == "crate":
                        raise
                    harness.peer_failure("queues", side, label(workers, per), err)
                    result = FAILED
                tallies.setdefault((workers, per, side), []).append(result)
        print(f"  queues: {label(workers, per)} done", flush=True)
    header = ["cell, side", "jobs/s", "server µs/job", "client µs/job", "last add"]
    peers = [s for s in sides if s != "crate"]
    if "crate" in sides:
        header += [f"÷ {p}, jobs/s" for p in peers] + [f"÷ {p}, server µs" for p in peers]
    rows = []
    for workers, per in CELLS:
        med = {side: {k: harness.median(r[k] for r in tallies[(workers, per, side)])
                      for k in ("rate", "server_us", "client_us", "adds")} for side in sides}
        for side in sides:
            runs = tallies[(workers, per, side)]
            capped = "" if all(r["finished"] for r in runs if r is not FAILED) else " (capped)"
            failed = sum(r is FAILED for r in runs)
            capped += f" (failed {failed}×)" if failed else ""
            m = med[side]
            row = [f"{label(workers, per)}: {side}{capped}" if side == sides[0] else f"    {side}{capped}",
                   harness.shown(m["rate"]), harness.shown(m["server_us"], 1),
                   harness.shown(m["client_us"], 1), harness.percent(m["adds"])]
            if "crate" in sides:
                is_crate = side == "crate"
                row += [harness.ratio(m["rate"], med[p]["rate"]) if is_crate else "" for p in peers]
                row += [harness.ratio(m["server_us"], med[p]["server_us"]) if is_crate else "" for p in peers]
            rows.append(row)
    return harness.table(header, rows)


def label(workers: int, per: int) -> str:
    who = f"{workers} worker{'s' if workers > 1 else ''}"
    return f"{who}, one job per call" if per == 1 else f"{who}, batches of {per}"
