"""The loop that fires a work queue's schedules, as the Rust crate's ``Scheduler`` does:
one state machine (`_Firing`), a sync driver and an asyncio one.

It reads the due schedules (``work_queue/due``), fires each (``work_queue/fire``: a
compare-and-set of the schedule's next run time, so of any number of schedulers one adds
each run), reads again at once after a fire, and with nothing due blocks on the
schedules' wake stream (``{name}:schedules_wake``, which ``work_queue/set_schedule``
appends to) until the next run time, at most `max_wait`, a step of 200 ms at a time to
see its stop flag. After an error that passes it pauses and reads again: a fire is
added once however often it is sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, List, NamedTuple, Optional, Protocol, Sequence, Tuple, Union

from ._errors import InvalidInput, UnexpectedReply
from ._generated import work_queue as _wq
from ._machine import (
    AsyncLink,
    Connect,
    ConnectAsync,
    Done,
    Failed,
    Link,
    Pause,
    Retries,
    Run,
    command,
    drive,
    drive_async,
    lazy,
)
from ._runtime import Call, Ms
from ._wait import entry_of
from ._worker import _Flag, _ms, _Never, _param

MAX_SCHEDULES_PAGE: int = _param(_wq.DUE, "limit").high or 1
"""The most due schedules one read answers: ``work_queue/due``'s bound."""

BLOCK_STEP = 0.2
"""The longest one blocking read of a sleeping scheduler (seconds): how soon it sees its
stop flag."""

_Due = Tuple[int, Optional[int], List[Tuple[str, int, int, int, str, str, int]], str]

MAX_CRON_TIMES: int = _param(_wq.FIRE, "times").most or 1
"""The most times one fire of a cron schedule takes: ``work_queue/fire``'s bound."""


class CronTimes(Protocol):
    """What computes a cron expression's times for a `Scheduler`: the package reads no
    cron expression itself (it depends on redis-py alone), so an app that has cron
    schedules gives one, built on the cron library it likes. Times are Unix ms; `tz` is
    the schedule's IANA time zone. The Rust crate's scheduler reads the expressions with
    croner (five fields, or six with seconds first, and its extensions), so give one that
    reads them alike when both fire the same queue.

        from croniter import croniter
        from datetime import datetime
        from zoneinfo import ZoneInfo

        class Croniter:
            def next(self, expr: str, tz: str, after_ms: int) -> int:
                at = datetime.fromtimestamp(after_ms / 1000, ZoneInfo(tz))
                return int(croniter(expr, at).get_next(float) * 1000)

            def previous(self, expr: str, tz: str, before_ms: int) -> Optional[int]:
                at = datetime.fromtimestamp(before_ms / 1000, ZoneInfo(tz))
                return int(croniter(expr, at).get_prev(float) * 1000)
    """

    def next(self, expr: str, tz: str, after_ms: int) -> int:
        """The expression's first time strictly after `after_ms`."""

    def previous(self, expr: str, tz: str, before_ms: int) -> Optional[int]:
        """The expression's last time strictly before `before_ms`; None when none is."""


def cron_times(cron: CronTimes, expr: str, tz: str, run: int, now: int, n: int) -> List[int]:
    """The times ``work_queue/fire`` takes for a cron schedule whose run `run` came due by
    `now`: the latest `n` times after `run` up to `now`, then times after `now`, in order,
    at most `MAX_CRON_TIMES` in all (the Rust scheduler's ``cron_times``)."""
    back: List[int] = []
    before = now + 1
    while len(back) < n:
        t = cron.previous(expr, tz, before)
        if t is None or not run < t <= now:
            break
        back.append(t)
        before = t
    times = back[::-1]
    at = now
    for _ in range(min(MAX_CRON_TIMES - len(times), 3)):
        t = cron.next(expr, tz, at)
        if (not times or t > times[-1]) and t > run:
            times.append(t)
        at = t
    return times


@dataclass
class ScheduleReport:
    """What a `Scheduler` did before it stopped."""

    added: int = 0
    """Runs whose jobs it added."""
    skipped: int = 0
    """Missed runs it skipped by their schedule's catch-up policy."""
    already_fired: int = 0
    """Fires another scheduler won (or a changed schedule made moot)."""
    reconnects: int = 0
    """Failed connections it met and replaced."""
    server_retries: int = 0
    """Calls sent again after a server error that passes."""


class _Read(NamedTuple):
    pass


class _Fire(NamedTuple):
    due: _Due
    next: int


class _Sleep(NamedTuple):
    """Blocking on the wake stream after `after` for `left` more seconds, `step` of it in
    the read sent."""

    key: str
    after: str
    left: float
    step: float


class _Retry(NamedTuple):
    pause: float


class _Firing:
    """The loop of `Scheduler.run` and `Scheduler.run_async` (see the module's docs)."""

    def __init__(self, scheduler: Scheduler, stop: _Flag) -> None:
        self.scheduler = scheduler
        self.stop = stop
        self.read: Call[_Due] = scheduler.family.due(scheduler.batch)
        self.at: Union[_Read, _Fire, _Sleep, _Retry] = _Read()
        self.retries = Retries()
        self.report = ScheduleReport()
        self.failure: Optional[Exception] = None

    def step(self) -> Union[Run, Pause, Done[ScheduleReport]]:
        if self.failure is not None:
            raise self.failure
        if self.stop.is_set():
            self.report.reconnects = self.retries.reconnects
            self.report.server_retries = self.retries.server_retries
            return Done(self.report)
        at = self.at
        if isinstance(at, _Read):
            return Run(self.read)
        if isinstance(at, _Fire):
            now_ms, _, rows, _ = at.due
            if at.next < len(rows):
                return Run(lazy(lambda: self._fire(rows[at.next], now_ms)))
            # After a fire, the next read answers the moved run times.
            self.at = _Read() if rows else self._sleep(at.due)
            return self.step()
        if isinstance(at, _Sleep):
            if at.left <= 0:
                self.at = _Read()
                return self.step()
            step = min(at.left, BLOCK_STEP)
            self.at = at._replace(step=step)
            block = max(1, int(step * 1000))  # BLOCK 0 would wait for ever
            return Run(command("XREAD", "COUNT", 1, "BLOCK", block, "STREAMS", at.key, at.after))
        self.at = _Read()
        return Pause(at.pause)

    def _fire(self, row: Tuple[str, int, int, int, str, str, int], now_ms: int) -> Call[Any]:
        name, run, revision, every, expr, tz, catch_up = row
        times: Sequence[int] = []
        if every == 0:
            cron = self.scheduler.cron
            if cron is None:
                why = (
                    f"schedule `{name}` runs at the times of the cron expression `{expr}`, which only "
                    "a caller can compute: give the Scheduler `cron` (see CronTimes), or fire it from "
                    "the Rust crate's Scheduler (feature `cron`)"
                )
                raise InvalidInput(_wq.FIRE.name, "BAD_TIMES", "times", why)
            times = cron_times(cron, expr, tz, run, now_ms, max(catch_up, 1))
        return self.scheduler.family.fire(name, run, revision, times)

    def _sleep(self, due: _Due) -> _Sleep:
        """After a read that found nothing due: block until the next run time, at most
        `max_wait`."""
        now_ms, next_ms, _, last_wake = due
        max_wait = self.scheduler.max_wait_ms
        until_next = max_wait if next_ms is None else max(next_ms - now_ms, 0)
        key = _wq.KEY_SCHEDULES_WAKE.build(name=self.scheduler.family.name)
        return _Sleep(key, last_wake, min(until_next, max_wait) / 1000, 0.0)

    def feed(self, answer: Any) -> None:
        if isinstance(answer, Failed):
            pause = self.retries.after(answer.error)
            if pause is None:
                self.failure = answer.error
            else:
                self.at = _Retry(pause)
            return
        self.retries.passed()
        at = self.at
        if isinstance(at, _Read):
            self.at = _Fire(answer, 0)
        elif isinstance(at, _Fire):
            self._count(answer)
            self.at = at._replace(next=at.next + 1)
        elif isinstance(at, _Sleep):
            woke = entry_of(answer) is not None
            self.at = _Read() if woke else at._replace(left=at.left - at.step)

    def _count(self, fired: Tuple[str, List[int], int, int, int]) -> None:
        outcome, added, _, skipped, _ = fired
        if outcome == "fired":
            self.report.added += len(added)
            self.report.skipped += skipped
        elif outcome == "already_fired":
            self.report.already_fired += 1
        elif outcome not in ("not_due", "more_times"):
            self.failure = UnexpectedReply(f"{_wq.FIRE.name}: {outcome!r} is no outcome of a fire")


class Scheduler:
    """The loop that fires a work queue's schedules (set with
    ``WorkQueue.set_schedule``): each run is added once, by one of any number of
    schedulers, so run one in every process that likes. It reads up to `batch` due
    schedules, fires each and reads again; with nothing due it blocks until the earliest
    next run time, at most `max_wait` (ms), on the schedules' wake stream, so a schedule
    set meanwhile wakes it at once. A cron schedule's times are the caller's to compute:
    give `cron` (see `CronTimes`), or it raises `InvalidInput` (``BAD_TIMES``) at one.

        from threading import Event
        from redis_patterns import Scheduler, WorkQueue

        WorkQueue("reports").set_schedule("rollup", 0, "", "", 0, 5, "", b"rollup", True,
                                          every=300_000).run(r)
        report = Scheduler("reports").run(r, stop=Event())
    """

    def __init__(
        self,
        queue: Union[_wq.WorkQueue, str],
        *,
        batch: int = MAX_SCHEDULES_PAGE,
        max_wait: Ms = 1000,
        cron: Optional[CronTimes] = None,
        functions: bool = False,
    ) -> None:
        self.family = queue if isinstance(queue, _wq.WorkQueue) else _wq.WorkQueue(queue)
        self.cron = cron
        self.family.due(batch)  # the header's rule for `batch`, checked now
        self.batch = batch
        self.max_wait_ms = max(_ms(max_wait), 1)
        self.functions = functions

    def __repr__(self) -> str:
        return f"<Scheduler {self.family.name}>"

    def run(self, client: Connect, stop: Optional[_Flag] = None) -> ScheduleReport:
        """Fires due schedules until `stop` (a `threading.Event`) is set, on `client` (or
        a function that answers a new client, called again after an error that passes);
        returns what it did, or raises the first error that does not pass."""
        firing = _Firing(self, stop if stop is not None else _Never())
        return drive(firing, Link(client, self.functions))

    async def run_async(self, client: ConnectAsync, stop: Optional[_Flag] = None) -> ScheduleReport:
        """`run`, on an asyncio client (or a function that answers one)."""
        firing = _Firing(self, stop if stop is not None else _Never())
        return await drive_async(firing, AsyncLink(client, self.functions))
