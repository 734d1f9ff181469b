"""A work queue's events, followed, and waiting for one job's end, as the Rust crate's
``Events`` and ``WorkQueue::wait_for_job`` do: one machine per loop (`_Follow` reads the
events, blocking on the stream while there are none; `_WaitFor` follows them until one
says the job ended), each run by a sync and an asyncio driver.

Events are off until the queue's ``events_max`` is set (``WorkQueue.configure``). The
stream's cap is exact, and every read says whether entries after the reader's last id
were trimmed before they were read; a waiter then reads the job's state, so it never
waits for an end it missed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, List, NamedTuple, Optional, Tuple, Union

from ._generated import work_queue as _wq
from ._machine import AsyncLink, Done, Failed, Link, Pause, Run, Step, command, drive, drive_async
from ._runtime import AsyncClient, SyncClient
from ._wait import MAX_BLOCK_MS
from ._worker import _param

MAX_EVENTS_READ: int = _param(_wq.EVENTS, "count").high or 1
"""The most events one read answers: ``work_queue/events``'s bound."""

_Page = Tuple[bool, str, List[Tuple[str, str, str, bytes]]]


@dataclass(frozen=True)
class Event:
    """One entry of a queue's events: its stream id, what happened (``completed``,
    ``failed``, ``dead``, ``retried``, ``progress``), the job's id, and the error of a
    ``failed`` or ``dead`` event or the report of a ``progress`` one."""

    id: str
    kind: str
    job: str
    detail: bytes


@dataclass(frozen=True)
class JobEnd:
    """How a job ended: ``completed`` (acked, with its `result` if one is kept), ``dead``
    (failed for good, with its last `error`), or ``gone`` (not in the queue and nothing
    kept of it: removed, never added, or acked longer ago than the queue keeps results, or
    with events off without a result)."""

    kind: str
    result: Optional[bytes] = None
    error: bytes = b""


class Events:
    """A reader of a queue's events after the stream id `after` (``0-0`` for the oldest
    kept, or the `last_id` of an earlier reader, to go on where it stopped): nothing is
    read twice, and nothing is missed unless the cap trimmed it first, which `lost` says.

        events = Events("reports")
        for event in events.next(r, timeout=5.0):
            print(event.kind, event.job)
    """

    def __init__(self, queue: Union[_wq.WorkQueue, str], after: str = "0-0", *, functions: bool = False) -> None:
        self.family = queue if isinstance(queue, _wq.WorkQueue) else _wq.WorkQueue(queue)
        self.after = after
        self.functions = functions
        self._lost = False

    @property
    def last_id(self) -> str:
        """The id of the last event handed out (or the one it started after)."""
        return self.after

    def lost(self) -> bool:
        """Whether events went unread since the last call that answered this (the cap
        trimmed them first); clears it."""
        lost, self._lost = self._lost, False
        return lost

    def _handed(self, page: Optional[_Page]) -> List[Event]:
        """Takes in a page: its events, with the last id and the lost flag moved on."""
        if page is None:
            return []
        lost, _, rows = page
        self._lost |= lost
        events = [Event(*row) for row in rows]
        if events:
            self.after = events[-1].id
        return events

    def next(self, client: SyncClient, timeout: float) -> List[Event]:
        """The next events (up to `MAX_EVENTS_READ`), waiting up to `timeout` seconds for
        one; empty on timeout. Blocks on the stream (``XREAD BLOCK``), never polls."""
        return self._handed(drive(_Follow(self, time.monotonic() + timeout), Link(client, self.functions)))

    async def next_async(self, client: AsyncClient, timeout: float) -> List[Event]:
        """`next`, on an asyncio client."""
        follow = _Follow(self, time.monotonic() + timeout)
        return self._handed(await drive_async(follow, AsyncLink(client, self.functions)))

    def wait_for(self, client: SyncClient, id: str, timeout: float) -> Optional[JobEnd]:
        """Follows the events until job `id` completes or dies, or `timeout` seconds passed
        (None). Where events went unread, it reads the job's state to learn an end it
        missed. After an error (a dropped connection), call it again: it goes on from the
        last event it read."""
        return drive(_WaitFor(self, id, timeout, from_now=False), Link(client, self.functions))

    async def wait_for_async(self, client: AsyncClient, id: str, timeout: float) -> Optional[JobEnd]:
        """`wait_for`, on an asyncio client."""
        waiting = _WaitFor(self, id, timeout, from_now=False)
        return await drive_async(waiting, AsyncLink(client, self.functions))


def wait_for_job(
    client: SyncClient, queue: Union[_wq.WorkQueue, str], id: str, timeout: float, *, functions: bool = False
) -> Optional[JobEnd]:
    """Waits until job `id` ends, or `timeout` seconds passed (None): it reads where the
    events stand, then the job's state (so an end before the call is seen), then follows
    the events. Needs the queue's events on (``events_max``); with them off it learns
    only an end before the call, and otherwise times out.

        end = wait_for_job(r, "reports", "report-7", timeout=60.0)
        if end is not None and end.kind == "completed":
            pdf = end.result
    """
    events = Events(queue, functions=functions)
    return drive(_WaitFor(events, id, timeout, from_now=True), Link(client, functions))


async def wait_for_job_async(
    client: AsyncClient, queue: Union[_wq.WorkQueue, str], id: str, timeout: float, *, functions: bool = False
) -> Optional[JobEnd]:
    """`wait_for_job`, on an asyncio client."""
    events = Events(queue, functions=functions)
    return await drive_async(_WaitFor(events, id, timeout, from_now=True), AsyncLink(client, functions))


class _Block(NamedTuple):
    """Blocking on the stream after `after`, at most `ms`."""

    after: str
    ms: int


class _Follow:
    """Reads the events after the reader's last id until a read answers some (or says
    some were lost), blocking on the stream between reads, until the deadline: the page,
    or None. An error ends it: raised as it is."""

    def __init__(self, events: Events, deadline: float) -> None:
        self.events = events
        self.deadline = deadline
        self.blocked: Optional[_Block] = None
        self.page: Optional[_Page] = None
        self.over = False

    def step(self) -> Step[Optional[_Page]]:
        if self.over:
            return Done(self.page)
        family = self.events.family
        if self.blocked is None:
            return Run(family.events(self.events.after, MAX_EVENTS_READ))
        key = _wq.KEY_EVENTS.build(name=family.name)
        return Run(command("XREAD", "COUNT", 1, "BLOCK", self.blocked.ms, "STREAMS", key, self.blocked.after))

    def feed(self, answer: Any) -> None:
        if isinstance(answer, Failed):
            raise answer.error
        if self.blocked is not None:  # woken, or time to read again
            self.blocked = None
            return
        lost, newest, rows = answer
        left = self.deadline - time.monotonic()
        if rows or lost or left <= 0:
            self.page = answer if rows or lost else None
            self.over = True
        else:
            self.blocked = _Block(newest, max(1, min(MAX_BLOCK_MS, int(left * 1000))))


class _Newest(NamedTuple):
    pass


class _Record(NamedTuple):
    pass


class _Result(NamedTuple):
    completed: bool


_UNSET: Any = object()


class _WaitFor:
    """The loop of `Events.wait_for` and `wait_for_job`: follow the events until one says
    the job ended, then read its result; where events went unread, or before following
    from now, read the job's state instead."""

    def __init__(self, events: Events, id: str, timeout: float, *, from_now: bool) -> None:
        self.events = events
        self.id = id
        self.deadline = time.monotonic() + timeout
        self.output: Any = _UNSET
        self.at: Union[_Newest, _Record, _Result, _Follow] = _Newest() if from_now else self._follow()

    def _follow(self) -> _Follow:
        return _Follow(self.events, self.deadline)

    def _go_on(self) -> _Follow:
        """After reads that did not tell the end: on to the next, or done at the deadline."""
        if time.monotonic() >= self.deadline:
            self.output = None
        return self._follow()

    def step(self) -> Union[Run, Pause, Done[Optional[JobEnd]]]:
        if self.output is not _UNSET:
            return Done(self.output)
        family, at = self.events.family, self.at
        if isinstance(at, _Newest):
            return Run(family.events("0-0", 0))
        if isinstance(at, _Record):
            return Run(family.job(self.id))
        if isinstance(at, _Result):
            return Run(family.result(self.id))
        step = at.step()
        if not isinstance(step, Done):
            return step
        for event in self.events._handed(step.value):
            if event.job == self.id and event.kind == "completed":
                self.at = _Result(completed=True)
                return self.step()
            if event.job == self.id and event.kind == "dead":
                return Done(JobEnd("dead", error=event.detail))
        self.at = _Record() if self.events.lost() else self._go_on()
        return self.step()

    def feed(self, answer: Any) -> None:
        at = self.at
        if isinstance(at, _Follow):
            return at.feed(answer)
        if isinstance(answer, Failed):
            raise answer.error
        if isinstance(at, _Newest):
            self.events.after = answer[1]
            self.at = _Record()
        elif isinstance(at, _Record):
            if answer is None:  # no record: acked or removed; its result tells which
                self.at = _Result(completed=False)
            elif answer[0] == "dead":
                self.output = JobEnd("dead", error=answer[4] or b"")
            elif answer[0] == "completed":  # kept in the queue's history, with its result
                self.output = JobEnd("completed", result=answer[11] or None)
            else:
                self.at = self._go_on()
        elif at.completed or answer is not None:
            # An empty result marks an ack without one (kept while events are on).
            self.output = JobEnd("completed", result=answer or None)
        else:
            self.output = JobEnd("gone")
