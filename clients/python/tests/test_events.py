"""Waiting for a job's end from a work queue's events, sync and asyncio: a waiter blocked
on the stream sees a completion (with its result) and a death as they happen, an end
before the call from the job's state, an end the stream's cap trimmed from the job's
state too, and times out on a job that does not end; and a reader follows the events."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, List

import redis
import redis.asyncio

import redis_patterns as rp
from redis_patterns import Events, JobEnd, wait_for_job, wait_for_job_async

from ._loops import Running, blocked_in
from .conftest import Server, poll


def queue(r: redis.Redis, name: str, events: int = 1000) -> rp.WorkQueue:
    family = rp.WorkQueue(name)
    family.configure(events_max=events, result_ttl=60_000, result_max=1000).run(r)
    return family


def take(r: redis.Redis, family: rp.WorkQueue) -> rp.Job:
    [row] = family.take(1, "a" * 32, [], max_deliveries=1).run(r)
    return rp.Job(*row)


def test_a_waiter_sees_a_completion_and_a_death_as_they_happen(server: Server, r: redis.Redis) -> None:
    family = queue(r, "ends")
    family.add("done", b"x", 0, 0, "").run(r)
    waiter = Running(lambda: wait_for_job(server.client(), "ends", "done", 30.0))
    poll(lambda: blocked_in(r, "xread") == 1, "the waiter to block on the events")
    job = take(r, family)
    family.ack(job.id, job.token, b"the result").run(r)
    assert waiter.result() == JobEnd("completed", result=b"the result")

    family.add("doomed", b"x", 0, 0, "").run(r)
    waiter = Running(lambda: wait_for_job(server.client(), family, "doomed", 30.0))
    poll(lambda: blocked_in(r, "xread") == 1, "the waiter to block on the events")
    job = take(r, family)
    family.nack(job.id, job.token, 0, b"boom", max_deliveries=1).run(r)
    assert waiter.result() == JobEnd("dead", error=b"boom")


def test_an_end_before_the_call_is_read_from_the_jobs_state(r: redis.Redis) -> None:
    family = queue(r, "before")
    for id in ("kept", "plain", "dead"):
        family.add(id, b"x", 0, 0, "").run(r)
        job = take(r, family)
        if id == "dead":
            family.nack(job.id, job.token, 0, b"no", max_deliveries=1).run(r)
        else:
            family.ack(job.id, job.token, b"out" if id == "kept" else b"").run(r)
    assert wait_for_job(r, family, "kept", 5.0) == JobEnd("completed", result=b"out")
    assert wait_for_job(r, family, "plain", 5.0) == JobEnd("completed")  # events on: an ack is kept
    assert wait_for_job(r, family, "dead", 5.0) == JobEnd("dead", error=b"no")
    assert wait_for_job(r, family, "never-added", 5.0) == JobEnd("gone")


def test_a_job_that_does_not_end_times_out(r: redis.Redis) -> None:
    family = queue(r, "waiting")
    family.add("stuck", b"x", 0, 0, "").run(r)
    assert wait_for_job(r, family, "stuck", 0.2) is None


def test_an_end_the_cap_trimmed_is_read_from_the_jobs_state(r: redis.Redis) -> None:
    family = queue(r, "capped", events=2)
    events = Events(family)
    for n in range(4):  # "job-0" completes first; three later events push it out
        family.add(f"job-{n}", b"x", 0, 0, "").run(r)
        job = take(r, family)
        family.ack(job.id, job.token, f"out-{n}".encode()).run(r)
    assert events.wait_for(r, "job-0", 5.0) == JobEnd("completed", result=b"out-0")
    assert events.last_id != "0-0" and not events.lost()


def test_a_reader_follows_the_events_from_where_it_stopped(server: Server, r: redis.Redis) -> None:
    family = queue(r, "follow")
    events = Events(family)
    assert events.next(r, 0.05) == []
    family.add("one", b"x", 0, 0, "").run(r)
    job = take(r, family)
    assert [(e.kind, e.job) for e in events.next(r, 0.05)] == [("added", "one"), ("active", "one")]
    reader = threading.Thread(target=lambda: seen.extend(events.next(server.client(), 30.0)), daemon=True)
    seen: List[rp.Event] = []
    reader.start()
    poll(lambda: blocked_in(r, "xread") == 1, "the reader to block on the events")
    family.ack(job.id, job.token, b"").run(r)
    reader.join(30)
    assert [(e.kind, e.job) for e in seen] == [("completed", "one")]
    assert events.last_id == seen[0].id
    assert events.next(r, 0.05) == []  # nothing read twice


def test_asyncio_waits_and_reads(server: Server, r: redis.Redis) -> None:
    family = queue(r, "ends-async")
    family.add("done", b"x", 0, 0, "").run(r)

    def finish() -> None:
        poll(lambda: blocked_in(r, "xread") == 1, "the waiter to block on the events")
        job = take(r, family)
        family.ack(job.id, job.token, b"async result").run(r)

    async def main() -> Any:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        try:
            finished = asyncio.get_running_loop().run_in_executor(None, finish)
            end = await wait_for_job_async(client, family, "done", 30.0)
            await finished
            read = await Events(family).next_async(client, 1.0)
            again = await Events(family).wait_for_async(client, "done", 1.0)
            return end, [(e.kind, e.job) for e in read], again
        finally:
            await client.aclose()

    end, read, again = asyncio.run(main())
    assert end == JobEnd("completed", result=b"async result")
    assert read == [("added", "done"), ("active", "done"), ("completed", "done")]
    assert again == end
