"""The Worker under the faults a deployment meets, from Python processes and servers the
tests start: worker processes SIGKILLed mid-job and started again (every job acked
exactly once, none lost), and a primary demoted and its replica promoted under waiting
workers that find the primary by ``ROLE`` (every worker goes on, and every job whose
add the replica acknowledged runs).

Run as ``python -m tests.test_faults worker <port> <queue>``, this module is the worker
process the first test starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict
from typing import Any, Callable, Iterator, List, Optional, Tuple

import pytest
import redis
import redis.asyncio
from redis.backoff import NoBackoff
from redis.asyncio.retry import Retry as AsyncRetry
from redis.retry import Retry

import redis_patterns as rp
from redis_patterns import Job, Worker, WorkReport

from ._loops import blocked_in, counts, drained
from .conftest import Server, poll

LEASE = 1_500
"""The killed workers' jobs go back to the queue this long (ms) after their last renewal."""


# Worker processes killed mid-job.


def running_key(name: str) -> str:
    """Per worker process (pid): the job its handler runs now."""
    return f"{{{name}}}:test:running"


def runs_key(name: str) -> str:
    """Every run of a handler, as the job's id."""
    return f"{{{name}}}:test:runs"


def ready_key(name: str) -> str:
    """The worker processes (pids) that stop on SIGTERM: their handler of it is set."""
    return f"{{{name}}}:test:ready"


def worker_process(port: int, name: str) -> None:
    """A worker process of concurrency 2 until SIGTERM; prints its report. Each handler
    notes the job it runs, in Redis, and takes a moment."""
    r = redis.Redis(host="127.0.0.1", port=port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    pid = str(os.getpid())
    r.sadd(ready_key(name), pid)

    def handler(job: Job) -> None:
        r.rpush(runs_key(name), job.id)
        r.hset(running_key(name), pid, job.id)
        time.sleep(0.1)
        r.hdel(running_key(name), pid)

    report = Worker(name, lease=LEASE, concurrency=2, poll=50).run(r, handler, stop)
    print(json.dumps(asdict(report), default=str), flush=True)


class Processes:
    """The worker processes of one test, killed or stopped by it."""

    def __init__(self, server: Server, name: str) -> None:
        self.server, self.name = server, name
        self.live: List[subprocess.Popen[str]] = []
        self.killed: List[subprocess.Popen[str]] = []
        package = os.path.dirname(os.path.dirname(os.path.abspath(rp.__file__)))
        self.env = dict(os.environ, PYTHONPATH=os.pathsep.join([package, os.environ.get("PYTHONPATH", "")]))
        self.cwd = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    def start(self) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.test_faults", "worker", str(self.server.port), self.name],
            cwd=self.cwd, env=self.env, stdout=subprocess.PIPE, text=True,
        )
        self.live.append(child)
        return child

    def kill(self, child: subprocess.Popen[str]) -> None:
        child.send_signal(signal.SIGKILL)
        child.wait()
        self.live.remove(child)
        self.killed.append(child)

    def stop(self) -> List[WorkReport]:
        """SIGTERM to every live process: each finishes its jobs in hand and reports."""
        with self.server.client() as r:
            for child in self.live:
                poll(lambda: bool(r.sismember(ready_key(self.name), str(child.pid))), "a worker process to start")
        for child in self.live:
            child.send_signal(signal.SIGTERM)
        reports = []
        for child in self.live:
            out, _ = child.communicate(timeout=30)
            assert child.returncode == 0, out
            fields = json.loads(out.strip().splitlines()[-1])
            fields["memory_policy"] = rp.MemoryPolicy.NO_EVICTION
            reports.append(WorkReport(**fields))
        self.live = []
        return reports

    def close(self) -> None:
        for child in self.live + self.killed:
            if child.poll() is None:
                child.kill()
            child.communicate()


@pytest.fixture
def processes(own_server: Server) -> Iterator[Processes]:
    p = Processes(own_server, "killed")
    yield p
    p.close()


def test_worker_processes_killed_mid_job_lose_no_job_and_ack_none_twice(own_server: Server, processes: Processes) -> None:
    r, name, jobs = own_server.client(), processes.name, 60
    family = rp.WorkQueue(name)
    family.configure(events_max=10_000).run(r)
    for n in range(jobs):
        family.add(f"job-{n}", "x", 0, 0, "").run(r)
    victims = [processes.start() for _ in range(4)]
    mid_job: List[str] = []
    for victim in victims[:2]:
        # SIGKILL once its handler runs a job; what it held comes back after the lease.
        poll(lambda: r.hget(running_key(name), str(victim.pid)) is not None, "the victim to run a job")
        processes.kill(victim)
        held: Any = r.hget(running_key(name), str(victim.pid))
        if held is not None:  # the handler never cleared it: killed mid-job
            mid_job.append(held.decode())
        processes.start()
    poll(lambda: drained(r, name), "the queue to drain", seconds=60)
    reports = processes.stop()

    lost, newest, events = family.events("0-0", 1000).run(r)
    acks = Counter(job for _, kind, job, _ in events if kind == "completed")
    assert not lost and sorted(acks) == sorted(f"job-{n}" for n in range(jobs)), "a job never acked"
    # Else only the leases of the killed workers' jobs ran out: at most two jobs each.
    ends = [(kind, job, detail) for _, kind, job, detail in events if kind not in ("added", "active")]
    lapsed = [job for kind, job, detail in ends if (kind, detail) == ("stalled", b"lease ran out")]
    assert len(lapsed) == len(ends) - jobs and set(mid_job) <= set(lapsed) and len(lapsed) <= 4, events
    assert set(acks.values()) == {1}, f"acked twice: {[j for j, n in acks.items() if n > 1]}"
    assert counts(r, name)["dead"] == 0
    assert [rep.lost for rep in reports] == [0] * 4, reports
    every_run: List[Any] = r.lrange(runs_key(name), 0, -1)
    runs = Counter(m.decode() for m in every_run)
    assert mid_job and all(runs[job] >= 2 for job in mid_job), (mid_job, runs)
    print(f"{len(mid_job)} killed mid-job, {sum(runs.values()) - jobs} runs again, reports {reports}")


# A primary demoted and its replica promoted under waiting workers.


def role(port: int) -> Optional[str]:
    try:
        with redis.Redis(host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 0)) as c:
            answer: List[Any] = c.execute_command("ROLE")
            return str(answer[0].decode())
    except redis.exceptions.ConnectionError:
        return None


def the_primary(ports: List[int]) -> Callable[[], redis.Redis]:
    """A connect function that answers a client of whichever server is the primary now,
    as one that asks Sentinel would; none is a refused connection, which the worker
    retries after a pause."""

    def connect() -> redis.Redis:
        for port in ports:
            if role(port) == "master":
                return redis.Redis(host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 0))
        raise redis.exceptions.ConnectionError("no primary now")

    return connect


def the_primary_async(ports: List[int]) -> Callable[[], Any]:
    async def connect() -> redis.asyncio.Redis:
        for port in ports:
            client = redis.asyncio.Redis(host="127.0.0.1", port=port, retry=AsyncRetry(NoBackoff(), 0))
            try:
                answer: List[Any] = await client.execute_command("ROLE")  # type: ignore[no-untyped-call]
                if answer[0] == b"master":
                    return client
            except redis.exceptions.ConnectionError:
                pass
            await client.aclose()
        raise redis.exceptions.ConnectionError("no primary now")

    return connect


def blocked_workers(port: int) -> int:
    with redis.Redis(host="127.0.0.1", port=port) as c:
        return blocked_in(c, "bzpopmin")


@pytest.fixture
def primary_and_replica() -> Iterator[Tuple[Server, Server]]:
    primary = Server("--repl-diskless-sync-delay", "0")
    replica = Server("--replicaof", "127.0.0.1", str(primary.port))

    def in_sync() -> bool:
        with replica.client() as c:
            return bool(c.info("replication").get("master_link_status") == "up")

    poll(in_sync, "the replica to be in sync")
    yield primary, replica
    primary.stop()
    replica.stop()


def test_workers_go_on_through_a_demotion_and_a_promotion(primary_and_replica: Tuple[Server, Server]) -> None:
    primary, replica = primary_and_replica
    ports, name = [primary.port, replica.port], "demoted"
    stop, lock = threading.Event(), threading.Lock()
    ran, gates = Counter[str](), [0]
    durable: List[str] = []
    workers = 4  # three threads and an asyncio one

    def seen(job: Job) -> bool:
        """Notes a run; True for a gate, which runs only while every worker runs one."""
        with lock:
            ran[job.id] += 1
            if job.id.startswith("gate"):
                gates[0] += 1
        return job.id.startswith("gate")

    def handler(job: Job) -> None:
        if seen(job):
            poll(lambda: gates[0] >= workers, "a gate on every worker", seconds=10)

    async def handler_async(job: Job) -> None:
        if seen(job):
            while gates[0] < workers:
                await asyncio.sleep(0.005)

    def add(id: str) -> None:
        """Adds a job on whichever server is the primary, waiting for the replica."""
        while True:
            try:
                client = the_primary(ports)()
            except redis.exceptions.ConnectionError:
                time.sleep(0.01)
                continue
            one = redis.Redis(connection_pool=client.connection_pool, single_connection_client=True)
            with client, one:  # the add and its WAIT on one connection
                try:
                    rp.WorkQueue(name).add(id, "x", 0, 0, "").run(one)
                    if one.wait(1, 200) >= 1:
                        durable.append(id)
                    return
                except redis.exceptions.RedisError:
                    time.sleep(0.01)

    reports: List[WorkReport] = []

    def work(run: Callable[[], WorkReport]) -> threading.Thread:
        thread = threading.Thread(target=lambda: reports.append(run()), daemon=True)
        thread.start()
        return thread

    worker = Worker(name, poll=200)
    threads = [work(lambda: worker.run(the_primary(ports), handler, stop)) for _ in range(workers - 1)]
    threads.append(work(lambda: asyncio.run(worker.run_async(the_primary_async(ports), handler_async, stop))))
    for n in range(30):
        add(f"before-{n}")
    poll(lambda: blocked_workers(primary.port) >= 1, "a worker blocked in BZPOPMIN")
    # Under load: a producer goes on adding while the primary is demoted.
    def produce() -> None:
        for n in range(40):
            add(f"during-{n}")

    producer = threading.Thread(target=produce)
    producer.start()
    with primary.client() as old:
        old.execute_command("REPLICAOF", "127.0.0.1", replica.port)
    poll(lambda: blocked_workers(primary.port) == 0, "no worker blocked on the demoted server")
    with replica.client() as new:
        new.execute_command("REPLICAOF", "NO", "ONE")
    producer.join(30)
    for n in range(workers):
        add(f"gate-{n}")
    with replica.client() as new:
        poll(lambda: drained(new, name) and gates[0] >= workers, "every job to run", seconds=30)
    stop.set()
    for thread in threads:
        thread.join(30)
    assert len(reports) == workers, "a worker ended with an error"
    never_ran = [id for id in durable if id not in ran]
    assert never_ran == [], "durable adds that never ran"
    assert all(ran[f"gate-{n}"] == 1 for n in range(workers))
    assert all(rep.server_retries + rep.reconnects >= 1 for rep in reports), f"a worker met no fault: {reports}"
    print(reports)


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    worker_process(int(sys.argv[2]), sys.argv[3])
