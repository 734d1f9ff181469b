"""The Scheduler, sync and asyncio: several schedulers add each run of a schedule once, a
sleeping scheduler wakes when a schedule is set, and a cron schedule fires at the times
the app's `CronTimes` computes, or is refused without one."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, List, Optional

import pytest
import redis
import redis.asyncio

import redis_patterns as rp
from redis_patterns import ScheduleReport, Scheduler

from ._loops import Running, blocked_in
from .conftest import Server, poll


def server_ms(r: redis.Redis) -> int:
    seconds, micros = r.time()
    return int(seconds) * 1000 + int(micros) // 1000


def every(r: redis.Redis, queue: str, name: str, every_ms: int, first: Optional[int] = None) -> None:
    rp.WorkQueue(queue).set_schedule(name, 0, "", "", 0, 0, "", b"tick", first is None,
                                     every=every_ms, first=first).run(r)


def job_ids(r: redis.Redis, queue: str) -> List[str]:
    """The ids of the jobs waiting in `queue`."""
    members: List[Any] = r.zrange(rp.work_queue.KEY_WAITING.build(name=queue), 0, -1)
    return sorted(m.decode() for m in members)


def test_three_schedulers_add_each_run_once(server: Server, r: redis.Redis) -> None:
    every(r, "ticks", "tick", 50)
    stop = threading.Event()
    runs = [Running(lambda: Scheduler("ticks").run(server.client(), stop)) for _ in range(3)]
    poll(lambda: len(job_ids(r, "ticks")) >= 8, "eight runs")
    stop.set()
    reports: List[ScheduleReport] = [run.result() for run in runs]
    ids = job_ids(r, "ticks")
    times = sorted(int(i.split(":")[1]) for i in ids)
    assert all(t % 50 == 0 for t in times), ids
    # Each run once: one job per run time, and the schedulers added exactly those.
    assert len(set(times)) == len(times) == sum(rep.added for rep in reports), (ids, reports)
    # And none missed: every run time from the first to the last was added or skipped
    # (a first fire late on a busy machine skips runs before the first too).
    skipped = sum(rep.skipped for rep in reports)
    assert len(times) + skipped >= (times[-1] - times[0]) // 50 + 1, (ids, reports)
    assert all(rep.reconnects == rep.server_retries == 0 for rep in reports)


def test_a_sleeping_scheduler_wakes_when_a_schedule_is_set(server: Server, r: redis.Redis) -> None:
    stop = threading.Event()
    # Nothing due and nothing scheduled: it sleeps a minute, a step at a time.
    run = Running(lambda: Scheduler("wake", max_wait=60_000).run(server.client(), stop))
    poll(lambda: blocked_in(r, "xread") == 1, "the scheduler to sleep")
    every(r, "wake", "hourly", 3_600_000, first=server_ms(r))
    poll(lambda: job_ids(r, "wake") != [], "the first run, well before the minute", seconds=5)
    stop.set()
    assert run.result().added == 1


def test_an_asyncio_scheduler_fires_and_stops(server: Server, r: redis.Redis) -> None:
    every(r, "ticks-async", "tick", 50)
    stop = threading.Event()

    def stop_after_three_runs() -> None:
        poll(lambda: len(job_ids(r, "ticks-async")) >= 3, "three runs")
        stop.set()

    async def main() -> ScheduleReport:
        client = redis.asyncio.Redis(host="127.0.0.1", port=server.port)
        try:
            waited = asyncio.get_running_loop().run_in_executor(None, stop_after_three_runs)
            report = await Scheduler("ticks-async", max_wait=100).run_async(client, stop)
            await waited
            return report
        finally:
            await client.aclose()

    report = asyncio.run(main())
    assert report.added == len(job_ids(r, "ticks-async")) >= 3


class EverySeconds:
    """A `CronTimes` for expressions ``*/<n> * * * * *`` alone: every n seconds, from the
    epoch on, in any time zone."""

    def step(self, expr: str) -> int:
        head, _, rest = expr.partition(" ")
        assert head.startswith("*/") and rest == "* * * * *", expr
        return int(head[2:]) * 1000

    def next(self, expr: str, tz: str, after_ms: int) -> int:
        step = self.step(expr)
        return (after_ms // step + 1) * step

    def previous(self, expr: str, tz: str, before_ms: int) -> Optional[int]:
        step = self.step(expr)
        return (before_ms - 1) // step * step


def test_cron_times_are_the_latest_missed_then_the_next_ones() -> None:
    cron = EverySeconds()
    assert rp.cron_times(cron, "*/1 * * * * *", "UTC", 1000, 5500, 2) == [4000, 5000, 6000, 7000, 8000]
    assert rp.cron_times(cron, "*/1 * * * * *", "UTC", 1000, 5500, 1) == [5000, 6000, 7000, 8000]
    # None missed after the run: the next times only, after it.
    assert rp.cron_times(cron, "*/1 * * * * *", "UTC", 5000, 5500, 3) == [6000, 7000, 8000]
    # Never more than fire takes.
    assert len(rp.cron_times(cron, "*/1 * * * * *", "UTC", 0, 500_000, 100)) == rp._scheduler.MAX_CRON_TIMES


def test_a_cron_schedule_fires_at_the_times_the_app_computes(server: Server, r: redis.Redis) -> None:
    rp.WorkQueue("cron-app").set_schedule("each-second", 0, "*/1 * * * * *", "Europe/Paris", 0, 0, "", b"x",
                                          False, first=server_ms(r) - 1).run(r)
    stop = threading.Event()
    run = Running(lambda: Scheduler("cron-app", cron=EverySeconds()).run(server.client(), stop))
    poll(lambda: len(job_ids(r, "cron-app")) >= 3, "three runs")
    stop.set()
    report = run.result()
    times = [int(i.split(":")[1]) for i in job_ids(r, "cron-app")]
    # The first run is where it was set; each later one on a whole second.
    assert all(t % 1000 == 0 for t in sorted(times)[1:]), times
    assert report.added == len(times) == len(set(times)) >= 3, (times, report)


def test_a_cron_schedule_is_refused(server: Server, r: redis.Redis) -> None:
    rp.WorkQueue("cron").set_schedule("nightly", 0, "0 30 2 * * *", "UTC", 0, 0, "", b"x", False,
                                      first=server_ms(r) - 1).run(r)
    with pytest.raises(rp.InvalidInput, match="cron"):
        Scheduler("cron").run(server.client(), threading.Event())
    assert job_ids(r, "cron") == []


def test_bad_settings_are_refused_before_any_io() -> None:
    with pytest.raises(rp.InvalidInput):
        Scheduler("q", batch=rp._scheduler.MAX_SCHEDULES_PAGE + 1)
    with pytest.raises(rp.InvalidInput):
        Scheduler("")
