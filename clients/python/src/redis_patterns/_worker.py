"""The work queue's consumer loop, as the Rust crate's ``work_queue::Worker`` runs it: one
state machine (`_Working`: what to send next, what an answer means, when to start
handlers and when to wait), run by a sync driver (`Worker.run`: the handler on this
thread, or on a pool of threads) and an asyncio one (`Worker.run_async`: handler
coroutines side by side in one task); and the lease renewals (`_Renewals`), run on a
thread with a connection of their own, or in the asyncio loop's task.

One turn: hand each ended job on (a failed one is nacked at once, a finished one waits to
be acked); with free slots, ack the finished jobs and take as many as are free in one
call (``work_queue/take``), start their handlers, or wait for work when none came; with
every slot busy, wait for a handler to end. Stopping, it takes nothing, acks what ends,
one call each, and ends once no handler runs. A call that fails with an error that
passes is sent again after a pause, unless the loop was asked to stop (then a job whose
ack or nack never went through is counted lost: its lease runs out). Every job is held
for renewal from its take until its ack or nack is settled.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import queue as _queue
import random
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import timedelta
from typing import (
    Any,
    Awaitable,
    Callable,
    Deque,
    Dict,
    List,
    NamedTuple,
    Optional,
    Protocol,
    Set,
    Tuple,
    Union,
)

from ._generated import work_queue as _wq
from ._machine import (
    AsyncLink,
    Connect,
    ConnectAsync,
    Done,
    Failed,
    Link,
    Op,
    Pause,
    Retries,
    Run,
    command,
    error_code,
    is_connection_failure,
    lazy,
)
from ._runtime import Ms, Param, Script

logger = logging.getLogger("redis_patterns")


def _param(script: Script, name: str) -> Param:
    return next(p for p in script.args if p.name == name)


def _ms(value: Ms) -> int:
    return value // timedelta(milliseconds=1) if isinstance(value, timedelta) else value


_TAKE_DEFAULTS = inspect.signature(_wq.WorkQueue.take).parameters

MAX_TAKE: int = _param(_wq.TAKE, "limit").high or 1
"""The most jobs one ``work_queue/take`` hands out, and acks: its header's bound."""

MAX_CONCURRENCY = 25
"""The most jobs a `Worker` runs at once (it takes them up to `MAX_TAKE` per call), as in
the Rust crate."""

MAX_DELAY_MS: int = _param(_wq.NACK, "delay").high or 0
"""The longest delay ``work_queue/nack`` takes: a longer backoff is cut to it."""

LEASE_LOST = "LEASE_LOST"
"""The code an ack, a nack or a renewal fails with when the job is no longer held under
its token."""

IN_FLIGHT_WAIT = 0.1
"""The longest a worker with jobs still running waits for new work (seconds) before it
looks for jobs that ended, to ack them."""


# What a handler gets, and what it may fail with.


@dataclass(frozen=True)
class Job:
    """A job a worker holds: its id, the lease token it is held under, its delivery count
    (1 on its first), its lease deadline (ms, server clock), its group and payload, and the
    W3C trace context its producer kept with it (``traceparent``, then a space and the
    ``tracestate`` if any; ``None`` without one), the same for every delivery."""

    id: str
    token: str
    delivery: int
    deadline_ms: int
    group: Optional[str]
    payload: bytes
    trace_context: Optional[str] = None


class JobError(Exception):
    """What a handler raises for a job it could not do: the job is nacked (retried after
    the worker's backoff, or dead after its last delivery). Any other exception does the
    same; these subclasses ask for more."""


class Unrecoverable(JobError):
    """The job fails for good: dead at once, whatever its delivery count (BullMQ's
    ``UnrecoverableError``)."""


class RateLimitGroup(JobError):
    """The job's group is held back for `hold` (ms or a timedelta) and the job goes back,
    its delivery not counted (``work_queue/rate_limit_group``); a job without a group is
    retried instead."""

    def __init__(self, hold: Ms, message: str = "") -> None:
        super().__init__(message)
        self.hold = hold


def _reason(err: BaseException) -> str:
    """What a nack keeps as the job's last error: a `JobError`'s message, or another
    exception's type and message."""
    if isinstance(err, JobError):
        return str(err)
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _result_of(output: object) -> bytes:
    """The result a handler's return value keeps: None keeps none."""
    if output is None:
        return b""
    if isinstance(output, (bytes, bytearray, memoryview)):
        return bytes(output)
    if isinstance(output, str):
        return output.encode("utf-8")
    raise TypeError(f"a handler returns None, bytes or str (the job's result), not {type(output).__name__}")


@dataclass(frozen=True)
class Backoff:
    """How long a failed job waits before its next delivery: `fixed`, or `exponential`
    (``base`` after the first delivery fails, doubling after each further one, at most
    ``most``), in milliseconds.

    >>> Backoff.exponential(1_000, 60_000).delay(3)
    4000
    >>> Backoff.exponential(1_000, 60_000).delay(30)
    60000
    """

    base_ms: int
    most_ms: int
    doubling: bool

    @staticmethod
    def fixed(delay: Ms) -> Backoff:
        """The same delay after every failure."""
        return Backoff(_ms(delay), _ms(delay), False)

    @staticmethod
    def exponential(base: Ms, most: Ms) -> Backoff:
        """`base` after the first failure, doubling after each further one, at most `most`."""
        return Backoff(_ms(base), _ms(most), True)

    def delay(self, delivery: int) -> int:
        """The delay (ms) after delivery number `delivery` (1 for the first) failed."""
        if not self.doubling:
            return self.base_ms
        return min(self.base_ms << min(max(delivery - 1, 0), 62), self.most_ms)

    def jittered(self, delivery: int) -> int:
        """The delay a nack uses: a fixed one as it is, an exponential one at a random
        point from half of `delay` to all of it, so that jobs that failed together do not
        all come back at once."""
        delay = self.delay(delivery)
        return delay if not self.doubling else delay // 2 + random.randint(0, delay - delay // 2)


# What the loop reports.


class MemoryPolicy(enum.Enum):
    """What a server's ``maxmemory-policy`` means for a queue, whose keys have no expiry."""

    NOT_CHECKED = "not_checked"
    """Not looked at (``on_eviction="ignore"``)."""
    NO_EVICTION = "noeviction"
    """Nothing is evicted."""
    VOLATILE = "volatile"
    """Only keys with an expiry are evicted: none of a queue's."""
    ALL_KEYS = "allkeys"
    """A queue's keys may be evicted, and its jobs lost silently."""
    UNKNOWN = "unknown"
    """The server refused ``CONFIG GET`` (a managed Redis, an ACL): look in its console."""

    @staticmethod
    def of(policy: str) -> MemoryPolicy:
        """What a ``maxmemory-policy`` value means for a queue."""
        if policy == "noeviction":
            return MemoryPolicy.NO_EVICTION
        if policy.startswith("volatile-"):
            return MemoryPolicy.VOLATILE
        if policy.startswith("allkeys-"):
            return MemoryPolicy.ALL_KEYS
        return MemoryPolicy.UNKNOWN


class EvictingServer(Exception):
    """A worker with ``on_eviction="refuse"`` found a ``maxmemory-policy`` that may evict
    the queue's keys (``allkeys-*``)."""

    def __init__(self, policy: str) -> None:
        super().__init__(
            f"the server's maxmemory-policy is {policy}: it may evict the queue's keys and lose "
            "its jobs silently; set it to noeviction"
        )
        self.policy = policy


@dataclass
class WorkReport:
    """What a `Worker` did before it stopped."""

    acked: int = 0
    """Jobs the handler finished and that were acked."""
    retried: int = 0
    """Jobs the handler failed that will be delivered again."""
    dead: int = 0
    """Jobs failed on their last delivery, or for good (`Unrecoverable`)."""
    held_back: int = 0
    """Jobs given back with their group held back (`RateLimitGroup`)."""
    lost: int = 0
    """Jobs whose lease was lost before they ended (another worker took the job, or the
    loop stopped while the server was away): their ack or nack changed nothing."""
    renewals_failed: int = 0
    """Lease renewals that failed for another reason than a lost lease; each was sent again."""
    reconnects: int = 0
    """Failed connections the loop met and replaced."""
    server_retries: int = 0
    """Calls sent again after a server error that passes (``UNBLOCKED``, ``READONLY``,
    ``LOADING``, …)."""
    memory_policy: MemoryPolicy = MemoryPolicy.NOT_CHECKED
    """What the loop found of its server's ``maxmemory-policy`` when it started."""


def _read_policy(reply: Any) -> Tuple[Optional[str], MemoryPolicy]:
    """What ``CONFIG GET maxmemory-policy`` answered (RESP2's list, RESP3's map, a
    cluster's answer per node: the first evicting one counts)."""
    texts: List[str] = []

    def collect(value: Any) -> None:
        if isinstance(value, (bytes, str)):
            texts.append(value.decode("utf-8", "replace") if isinstance(value, bytes) else value)
        elif isinstance(value, dict):
            for k, v in value.items():
                collect(k)
                collect(v)
        elif isinstance(value, (list, tuple)):
            for item in value:
                collect(item)

    collect(reply)
    found: Optional[str] = None
    for name, value in zip(texts, texts[1:]):
        if name == "maxmemory-policy" and (found is None or MemoryPolicy.of(value) == MemoryPolicy.ALL_KEYS):
            found = value
    return (found, MemoryPolicy.of(found)) if found is not None else (None, MemoryPolicy.UNKNOWN)


# Lease renewals.


class _Hold(NamedTuple):
    """Renew `job` every `every` seconds from now on."""

    job: Job
    every: float


class _Release(NamedTuple):
    """No more renewals of job `id` held under `token` (the jobs of one take share a token
    when their deliveries are the same, so the token alone does not tell them apart)."""

    id: str
    token: str


_Renewal = Union[_Hold, _Release]


class _Idle(NamedTuple):
    """Nothing due: the next renewal is due in this many seconds (None: no job held)."""

    due: Optional[float]


@dataclass
class _Held:
    job: Job
    next: float
    every: float
    again: bool = False
    """The last renewal failed and was sent again at once."""


class _Renewals:
    """The held jobs and when each is renewed next: a lost lease drops a job (its ack or
    nack tells); another failure is counted and sent again at once, then at the next tick."""

    def __init__(self, family: _wq.WorkQueue, lease_ms: int) -> None:
        self.family = family
        self.lease_ms = lease_ms
        self.held: List[_Held] = []
        self.in_flight: Optional[Tuple[str, str]] = None
        self.failed = 0
        self.retries = Retries()

    def apply(self, renewal: _Renewal) -> None:
        if isinstance(renewal, _Hold):
            self.held.append(_Held(renewal.job, time.monotonic() + renewal.every, renewal.every))
        else:
            self.held = [h for h in self.held if (h.job.id, h.job.token) != (renewal.id, renewal.token)]

    def step(self) -> Union[Run, _Idle]:
        if not self.held:
            return _Idle(None)
        now = time.monotonic()
        first = min(self.held, key=lambda h: h.next)
        if first.next > now:
            return _Idle(first.next - now)
        self.in_flight = (first.job.id, first.job.token)
        return Run(self.family.extend(first.job.id, first.job.token, lease=self.lease_ms))

    def feed(self, answer: Any) -> None:
        job, self.in_flight = self.in_flight, None
        held = next((h for h in self.held if (h.job.id, h.job.token) == job), None)
        if held is None:  # released meanwhile: its ack or nack settled it
            return
        if isinstance(answer, Failed):
            if error_code(answer.error) == LEASE_LOST:
                self.held.remove(held)
                return
            self.failed += 1
            self.retries.after(answer.error)
            held.again = not held.again
            if held.again:
                return
        else:
            held.again = False
        held.next = time.monotonic() + held.every

    def add_to(self, report: WorkReport) -> None:
        report.renewals_failed += self.failed
        report.reconnects += self.retries.reconnects
        report.server_retries += self.retries.server_retries


class _RenewalCounts:
    """What a renewals thread counted so far, read when the loop ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counted = WorkReport()

    def keep(self, renewals: _Renewals) -> None:
        counted = WorkReport()
        renewals.add_to(counted)
        with self._lock:
            self._counted = counted

    def add_to(self, report: WorkReport) -> None:
        with self._lock:
            counted = self._counted
        report.renewals_failed += counted.renewals_failed
        report.reconnects += counted.reconnects
        report.server_retries += counted.server_retries


def _renew_on_thread(
    renewals: _Renewals, link: Link, inbox: _queue.Queue[Optional[_Renewal]], counts: _RenewalCounts
) -> None:
    """The renewals thread: renews every job held on `inbox` on `link`, until told None."""
    try:
        while True:
            while True:  # what the loop said meanwhile, before the next renewal
                try:
                    told = inbox.get_nowait()
                except _queue.Empty:
                    break
                if told is None:
                    return
                renewals.apply(told)
            step = renewals.step()
            if isinstance(step, Run):
                renewals.feed(link.run(step.op))
                counts.keep(renewals)
                continue
            try:
                told = inbox.get(timeout=step.due) if step.due is not None else inbox.get()
            except _queue.Empty:
                continue
            if told is None:
                return
            renewals.apply(told)
    finally:
        link.close()


async def _renew_in_task(renewals: _Renewals, link: AsyncLink, every: float) -> None:
    """The renewals in the asyncio loop's task, until cancelled: it sleeps at most `every`
    at a time, so a job held while it sleeps is renewed on time."""
    try:
        while True:
            step = renewals.step()
            if isinstance(step, Run):
                renewals.feed(await link.run(step.op))
            else:
                await asyncio.sleep(every if step.due is None else min(step.due, every))
    finally:
        await link.close()


# The worker's loop.


@dataclass
class _Finished:
    job: Job
    result: bytes


class _Policy(NamedTuple):
    pass


class _Take(NamedTuple):
    done: List[_Finished]


class _Nack(NamedTuple):
    job: Job
    held_back: bool


class _Ack(NamedTuple):
    finished: _Finished


class _Waiting(NamedTuple):
    pass


_Sent = Union[_Policy, _Take, _Nack, _Ack, _Waiting]


class _Wait(NamedTuple):
    """Wait for work with this call. A driver that can also see a handler end meanwhile
    may cut it short, and then calls `_Working.woke` instead of feeding the answer."""

    op: Op


class _Start(NamedTuple):
    """Start the handler on each of these jobs (held for renewal already), and hand its
    outcome to `_Working.ended` when it ends."""

    jobs: List[Job]


class _AwaitEnd(NamedTuple):
    """Every slot is busy: wait for a handler to end, up to this many seconds."""

    seconds: float


_WorkStep = Union[Run, _Wait, _Start, _AwaitEnd, Pause, Done[WorkReport]]

Outcome = Union[bytes, Exception]
"""How a handler ended: the result to keep (b"" for none), or why it failed."""


class _Flag(Protocol):
    def is_set(self) -> bool: ...


class _Never:
    def is_set(self) -> bool:
        return False


class _Working:
    """The worker loop's state (see the module's docs)."""

    def __init__(self, worker: Worker, stop: _Flag, renewals: Callable[[_Renewal], None]) -> None:
        self.worker = worker
        self.stop = stop
        self.renewals = renewals
        self.running = 0
        self.finished: List[_Finished] = []
        """Jobs whose handler finished, to ack in the next take."""
        self.failed: Deque[Tuple[Job, Exception]] = deque()
        """Jobs whose handler failed, to nack."""
        self.acking: Deque[_Finished] = deque()
        """Jobs to ack one call each: stopping, or after an ack of several lost a lease."""
        self.to_start: List[Job] = []
        self.panicked = False
        self.memory_checked = False
        self.idle = False
        """The last take answered no job: wait for work next."""
        self.in_flight: Optional[Tuple[_Sent, Op]] = None
        self.pause: Optional[float] = None
        self.failure: Optional[Exception] = None
        self.retries = Retries()
        self.report = WorkReport()

    def step(self) -> _WorkStep:
        """What to do next; raises the error that ended the loop."""
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure
        if self.to_start:
            jobs, self.to_start = self.to_start, []
            return _Start(jobs)
        if self.pause is not None:
            pause, self.pause = self.pause, None
            return Pause(pause)
        if self.in_flight is not None:  # sent again after a pause
            sent, op = self.in_flight
            return _Wait(op) if isinstance(sent, _Waiting) else Run(op)
        worker, family = self.worker, self.worker.family
        if not self.memory_checked:
            if worker.on_eviction == "ignore":
                self.memory_checked = True
                self.report.memory_policy = MemoryPolicy.NOT_CHECKED
            else:
                return self._send(_Policy(), command("CONFIG", "GET", "maxmemory-policy"))
        if self.failed:
            job, why = self.failed.popleft()
            held_back = isinstance(why, RateLimitGroup) and job.group is not None
            return self._send(_Nack(job, held_back), worker._nack(job, why))
        if self.acking:
            finished = self.acking.popleft()
            job = finished.job
            return self._send(_Ack(finished), lazy(lambda: family.ack(job.id, job.token, finished.result)))
        stopping = self.stop.is_set() or self.panicked
        free = 0 if stopping else worker.concurrency - self.running
        if free == 0:
            if self.finished:  # stopping: ack what ended, take nothing
                self.acking.extend(self.finished)
                self.finished.clear()
                return self.step()
            if self.running == 0:
                self.report.reconnects += self.retries.reconnects
                self.report.server_retries += self.retries.server_retries
                return Done(self.report)
            return _AwaitEnd(worker.poll_ms / 1000)
        was_idle, self.idle = self.idle, False
        # Wait for work only with nothing to ack: a handler that ended since the empty
        # take is acked by the next take, not after a whole poll.
        if was_idle and not self.finished:
            # With handlers running, a job that ends is acked within IN_FLIGHT_WAIT.
            wait = worker._wait() if self.running == 0 else worker._wait_at_most(IN_FLIGHT_WAIT)
            self.in_flight = (_Waiting(), wait)
            return _Wait(wait)
        done = self.finished[:MAX_TAKE]
        del self.finished[:MAX_TAKE]
        return self._send(_Take(done), worker._take(done, min(free, MAX_TAKE)))

    def _send(self, sent: _Sent, op: Op) -> Run:
        self.in_flight = (sent, op)
        return Run(op)

    def feed(self, answer: Any) -> None:
        """The answer to the last `Run` or `_Wait` (a `Failed` for an error)."""
        if self.in_flight is None:
            return
        sent, op = self.in_flight
        self.in_flight = None
        if isinstance(answer, Failed):
            return self._failed_call(sent, op, answer.error)
        self.retries.passed()
        if isinstance(sent, _Policy):
            self._judge_memory(*_read_policy(answer))
        elif isinstance(sent, _Take):
            for finished in sent.done:
                self._release(finished.job)
            self.report.acked += len(sent.done)
            jobs = [Job(*row) for row in answer]
            self.idle = not jobs
            for job in jobs:
                self.renewals(_Hold(job, self.worker.renew_every))
            self.running += len(jobs)
            self.to_start = jobs
        elif isinstance(sent, _Nack):
            self._release(sent.job)
            if sent.held_back:
                self.report.held_back += 1
            elif answer[0] == "dead":
                self.report.dead += 1
            else:
                self.report.retried += 1
        elif isinstance(sent, _Ack):
            self._release(sent.finished.job)
            self.report.acked += 1

    def woke(self) -> None:
        """A wait for work cut short by a handler that ended."""
        self.in_flight = None

    def ended(self, job: Job, outcome: Outcome) -> None:
        """A handler ended: with the result to keep, or failed."""
        self.running -= 1
        if isinstance(outcome, Exception):
            self.failed.append((job, outcome))
        else:
            self.finished.append(_Finished(job, outcome))

    def panicked_on(self, job: Job) -> None:
        """A handler raised past `Exception` (``KeyboardInterrupt``, a cancellation): its
        lease runs out, and the loop stops as if asked to."""
        self.running -= 1
        self.panicked = True
        self._release(job)

    def _failed_call(self, sent: _Sent, op: Op, err: Exception) -> None:
        if isinstance(sent, _Policy) and not is_connection_failure(err):
            # A server that refuses CONFIG GET answers an unknown policy.
            return self._judge_memory(None, MemoryPolicy.UNKNOWN)
        pause = self.retries.after(err)
        if pause is not None and not self.stop.is_set():
            self.pause = pause
            self.in_flight = (sent, op)
        elif pause is not None:  # asked to stop while the server is away: gives the call up
            if isinstance(sent, _Policy):
                self._judge_memory(None, MemoryPolicy.UNKNOWN)
            elif isinstance(sent, _Take):
                self.finished.extend(sent.done)
            elif isinstance(sent, _Nack):
                self._lose(sent.job)
            elif isinstance(sent, _Ack):
                self._lose(sent.finished.job)
        elif isinstance(sent, _Take) and error_code(err) == LEASE_LOST:
            self.acking.extend(sent.done)  # one of them was lost: ack them one by one to tell which
        elif isinstance(sent, (_Nack, _Ack)):
            job = sent.job if isinstance(sent, _Nack) else sent.finished.job
            self._release(job)
            if error_code(err) == LEASE_LOST:
                self.report.lost += 1
            else:
                self.failure = err
        else:
            self.failure = err

    def _judge_memory(self, policy: Optional[str], meaning: MemoryPolicy) -> None:
        self.memory_checked = True
        self.report.memory_policy = meaning
        name = self.worker.family.name
        if meaning == MemoryPolicy.ALL_KEYS and policy is not None:
            if self.worker.on_eviction == "refuse":
                self.failure = EvictingServer(policy)
            else:
                logger.warning(
                    "queue %s: the server's maxmemory-policy %s may evict the queue's keys and lose "
                    "its jobs silently: set it to noeviction", name, policy,
                )
        elif meaning == MemoryPolicy.UNKNOWN:
            logger.warning(
                "queue %s: could not read the server's maxmemory-policy (CONFIG GET refused): make "
                "sure it is noeviction, or the queue's keys may be evicted", name,
            )

    def _lose(self, job: Job) -> None:
        """A job whose ack or nack never went through: its lease runs out."""
        self._release(job)
        self.report.lost += 1

    def _release(self, job: Job) -> None:
        self.renewals(_Release(job.id, job.token))


class Worker:
    """The consumer loop of a work queue: takes jobs, renews each one's lease every third
    of the lease while its handler runs, then acks it (the handler returned: None, or
    bytes or str, the result to keep) or nacks it with the error's text and the worker's
    backoff (it raised; `Unrecoverable` fails it for good, `RateLimitGroup` holds its
    group back). A finished job is acked in the call that takes the next ones, so a busy
    worker makes one round trip per batch. With nothing to take it blocks on the queue's
    ``{name}:signal`` (``BZPOPMIN``), which every script that makes a job ready fills: a
    job added to an idle queue starts at once; a delayed job that comes due is found
    within `poll`.

    A failed connection, and a server that changes roles, loads its data or moves slots
    (`is_transient`), only make the loop open a new connection (from its connect function)
    and send the call again, after a pause that doubles from 10 ms up to 1 s; the
    `WorkReport` counts them. It returns when `stop` is set (after the jobs in hand, each
    acked), or raises the first error that cannot pass.

        from threading import Event
        from redis_patterns import Worker

        stop = Event()                      # set it from a signal handler or another thread
        report = Worker("thumbnails", concurrency=4).run(r, make_thumbnail, stop)
        print(report.acked, report.retried, report.dead)

    `lease` and `max_deliveries` default to the ``work_queue/take`` header's defaults
    (30 s, 5), as the Rust `WorkQueue` does; `poll` (ms) is the longest wait for a
    wake-up, each drawn from 80 % to 100 % of it; `on_eviction` is what the loop does when
    the server's ``maxmemory-policy`` may evict the queue's keys ("warn", "refuse",
    "ignore": see `MemoryPolicy`); with `functions`, the scripts run through the Functions
    library.
    """

    def __init__(
        self,
        queue: Union[_wq.WorkQueue, str],
        *,
        lease: Ms = _TAKE_DEFAULTS["lease"].default,
        max_deliveries: int = _TAKE_DEFAULTS["max_deliveries"].default,
        backoff: Backoff = Backoff.exponential(1_000, 300_000),
        concurrency: int = 1,
        poll: Ms = 200,
        on_eviction: str = "warn",
        functions: bool = False,
    ) -> None:
        self.family = queue if isinstance(queue, _wq.WorkQueue) else _wq.WorkQueue(queue)
        # The header's rules, checked now rather than at the first take.
        self.family.take(1, "0" * 32, [], lease=lease, max_deliveries=max_deliveries)
        if not 1 <= concurrency <= MAX_CONCURRENCY:
            raise ValueError(f"concurrency must be from 1 to {MAX_CONCURRENCY}, got {concurrency}")
        if on_eviction not in ("warn", "refuse", "ignore"):
            raise ValueError(f"on_eviction must be warn, refuse or ignore, got {on_eviction!r}")
        self.lease_ms = _ms(lease)
        self.max_deliveries = max_deliveries
        self.backoff = backoff
        self.concurrency = concurrency
        self.poll_ms = max(_ms(poll), 1)
        self.on_eviction = on_eviction
        self.functions = functions
        self.signal = _wq.KEY_SIGNAL.build(name=self.family.name)

    def __repr__(self) -> str:
        return f"<Worker {self.family.name} concurrency={self.concurrency}>"

    @property
    def renew_every(self) -> float:
        """How often (seconds) each held job's lease is renewed: a third of the lease."""
        return max(self.lease_ms / 3, 1) / 1000

    def _take(self, done: List[_Finished], limit: int) -> Op:
        flat: List[bytes] = []
        for f in done:
            flat += [f.job.id.encode(), f.job.token.encode(), f.result]
        token = secrets.token_hex(16)
        return lazy(lambda: self.family.take(
            limit, token, flat, lease=self.lease_ms, max_deliveries=self.max_deliveries
        ))

    def _nack(self, job: Job, why: Exception) -> Op:
        family, reason = self.family, _reason(why)
        if isinstance(why, RateLimitGroup) and job.group is not None:
            hold = why.hold
            return lazy(lambda: family.rate_limit_group(job.id, job.token, hold))
        if isinstance(why, Unrecoverable):
            return lazy(lambda: family.nack(job.id, job.token, 0, reason, max_deliveries=1))
        delay = min(self.backoff.jittered(job.delivery), MAX_DELAY_MS)
        return lazy(lambda: family.nack(job.id, job.token, delay, reason, max_deliveries=self.max_deliveries))

    def _wait(self) -> Op:
        """One wait for a wake-up, with its jitter."""
        return self._block(self.poll_ms * 4 // 5 + random.randint(0, self.poll_ms // 5))

    def _wait_at_most(self, seconds: float) -> Op:
        return self._block(min(int(seconds * 1000), self.poll_ms))

    def _block(self, ms: int) -> Op:
        ms = max(ms, 1)  # BZPOPMIN 0 would wait for ever
        return command("BZPOPMIN", self.signal, f"{ms // 1000}.{ms % 1000:03d}")

    def run(self, client: Connect, handler: Callable[[Job], object], stop: Optional[_Flag] = None) -> WorkReport:
        """Runs the loop until `stop` (a `threading.Event`) is set, on `client` (a
        ``redis.Redis`` or ``RedisCluster``, or a function that answers a new one, called
        again after an error that passes: one that finds the primary goes on at once after
        a failover). The lease renewals run on a thread of their own, with a connection of
        their own, so a handler that blocks its thread cannot stop them. With a
        `concurrency` of 1 the handler runs on this thread; above, on that many threads,
        each job under its own lease.
        """
        stop = stop if stop is not None else _Never()
        inbox: _queue.Queue[Optional[_Renewal]] = _queue.Queue()
        counts = _RenewalCounts()
        renewing = threading.Thread(
            target=_renew_on_thread,
            args=(_Renewals(self.family, self.lease_ms), Link(client, self.functions), inbox, counts),
            name=f"redis-patterns renewals {self.family.name}",
            daemon=True,
        )
        renewing.start()
        working = _Working(self, stop, inbox.put)
        handlers = _Handlers(handler, self.concurrency) if self.concurrency > 1 else None
        link = Link(client, self.functions)
        try:
            while True:
                if handlers is not None:
                    handlers.collect(working, None)
                step = working.step()
                if isinstance(step, (Run, _Wait)):
                    working.feed(link.run(step.op))
                elif isinstance(step, _Start):
                    for job in step.jobs:
                        if handlers is not None:
                            handlers.start(job)
                        else:  # the handler runs inside _Start: none runs at any other step
                            working.ended(job, _outcome(handler, job))
                elif isinstance(step, _AwaitEnd):
                    if handlers is not None:
                        handlers.collect(working, step.seconds)
                elif isinstance(step, Pause):
                    time.sleep(step.seconds)
                else:
                    report = step.value
                    break
        finally:
            if handlers is not None:
                handlers.close()
            link.close()
            inbox.put(None)
            renewing.join()
        if handlers is not None and handlers.panic is not None:
            raise handlers.panic
        counts.add_to(report)
        return report

    async def run_async(
        self,
        client: ConnectAsync,
        handler: Callable[[Job], Awaitable[object]],
        stop: Optional[_Flag] = None,
        *,
        renew_from: Optional[Connect] = None,
    ) -> WorkReport:
        """Runs the loop on an asyncio client (or a function that answers one) until `stop`
        (an `asyncio.Event` or a `threading.Event`) is set: one job at a time, or up to
        `concurrency` handler coroutines side by side in this task, each on its own lease.
        The wait for work blocks one connection of `client`'s pool, and is cut short when
        a handler ends.

        The renewals run in this task (on another connection of `client`'s) unless
        `renew_from` (a sync client, or a function that answers one) gives them a thread
        and a connection of their own: do that when a handler may block the event loop
        (CPU work, a sync call), which would stop renewals in the same loop, and the job
        would run a second time elsewhere.
        """
        stop = stop if stop is not None else _Never()
        inbox: _queue.Queue[Optional[_Renewal]] = _queue.Queue()
        counts = _RenewalCounts()
        renewals = _Renewals(self.family, self.lease_ms)
        renew_task: Optional[asyncio.Task[None]] = None
        if renew_from is None:
            hold: Callable[[_Renewal], None] = renewals.apply
            renew_task = asyncio.ensure_future(
                _renew_in_task(renewals, AsyncLink(client, self.functions), self.renew_every)
            )
        else:
            hold = inbox.put
            threading.Thread(
                target=_renew_on_thread,
                args=(renewals, Link(renew_from, self.functions), inbox, counts),
                name=f"redis-patterns renewals {self.family.name}",
                daemon=True,
            ).start()
        working = _Working(self, stop, hold)
        running: Dict[asyncio.Future[Outcome], Job] = {}
        panic: Optional[BaseException] = None
        link = AsyncLink(client, self.functions)

        def hand_over(done: Set[Any]) -> None:
            nonlocal panic
            for task in done:
                job = running.pop(task, None)
                if job is None:
                    continue
                try:
                    working.ended(job, task.result())
                except BaseException as err:  # cancelled, or past Exception
                    working.panicked_on(job)
                    panic = panic or err

        try:
            while True:
                hand_over({t for t in running if t.done()})
                step = working.step()
                if isinstance(step, Run) or (isinstance(step, _Wait) and not running):
                    working.feed(await link.run(step.op))
                elif isinstance(step, _Wait):
                    wait = asyncio.ensure_future(link.run(step.op))
                    done, _ = await asyncio.wait({wait, *running}, return_when=asyncio.FIRST_COMPLETED)
                    if wait in done:
                        working.feed(wait.result())
                    else:  # a handler ended first: its job is acked now, not after the wait
                        wait.cancel()
                        await asyncio.gather(wait, return_exceptions=True)
                        working.woke()
                elif isinstance(step, _Start):
                    for job in step.jobs:
                        running[asyncio.ensure_future(_outcome_async(handler, job))] = job
                elif isinstance(step, _AwaitEnd):
                    await asyncio.wait(running, timeout=step.seconds, return_when=asyncio.FIRST_COMPLETED)
                elif isinstance(step, Pause):
                    await asyncio.sleep(step.seconds)
                else:
                    report = step.value
                    break
        finally:
            for task in running:
                task.cancel()
            await link.close()
            if renew_task is not None:
                renew_task.cancel()
                await asyncio.gather(renew_task, return_exceptions=True)
            inbox.put(None)
        if panic is not None:
            raise panic
        if renew_from is None:
            renewals.add_to(report)
        else:
            counts.add_to(report)
        return report


def _outcome(handler: Callable[[Job], object], job: Job) -> Outcome:
    try:
        return _result_of(handler(job))
    except Exception as err:
        return err


async def _outcome_async(handler: Callable[[Job], Awaitable[object]], job: Job) -> Outcome:
    try:
        return _result_of(await handler(job))
    except Exception as err:
        return err


class _Handlers:
    """The threads of a sync worker of concurrency above 1: each takes a job, runs the
    handler and hands back its outcome."""

    def __init__(self, handler: Callable[[Job], object], concurrency: int) -> None:
        self.work: _queue.Queue[Optional[Job]] = _queue.Queue()
        self.ended: _queue.Queue[Tuple[Job, Optional[Outcome], Optional[BaseException]]] = _queue.Queue()
        self.panic: Optional[BaseException] = None
        self.threads = [
            threading.Thread(target=self._serve, args=(handler,), name=f"redis-patterns handler {n}", daemon=True)
            for n in range(concurrency)
        ]
        for thread in self.threads:
            thread.start()

    def _serve(self, handler: Callable[[Job], object]) -> None:
        while True:
            job = self.work.get()
            if job is None:
                return
            try:
                self.ended.put((job, _outcome(handler, job), None))
            except BaseException as err:  # past Exception: the loop stops, and raises it
                self.ended.put((job, None, err))

    def start(self, job: Job) -> None:
        self.work.put(job)

    def collect(self, working: _Working, wait: Optional[float]) -> None:
        """Hands the jobs that ended to `working`, first waiting up to `wait` seconds for one."""
        if wait is not None:
            try:
                self._hand(working, self.ended.get(timeout=wait))
            except _queue.Empty:
                return
        while True:
            try:
                self._hand(working, self.ended.get_nowait())
            except _queue.Empty:
                return

    def _hand(self, working: _Working, ended: Tuple[Job, Optional[Outcome], Optional[BaseException]]) -> None:
        job, outcome, panic = ended
        if outcome is None:
            working.panicked_on(job)
            self.panic = self.panic or panic
        else:
            working.ended(job, outcome)

    def close(self) -> None:
        """The threads end after their job in hand."""
        for _ in self.threads:
            self.work.put(None)
        for thread in self.threads:
            thread.join()
