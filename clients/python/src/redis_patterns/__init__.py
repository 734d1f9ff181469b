"""The Redis patterns of the `redis-patterns` crate, for Python: every pattern is one Lua
script whose header is its contract, and this package is generated from those headers.

Each family (``identity_lock``, ``work_queue``, ...) is a module with a typed function
per script and a class built from the pattern instance's name, whose methods name the
keys as the Rust crate does, so apps in both languages share data. A function or method
checks its input before any I/O and returns a `Call`; run it on a connection:

    import redis
    from redis_patterns import IdentityLock

    r = redis.Redis()
    lock = IdentityLock("report:lock")
    held = lock.lease("secret").run(r)          # None: not held with that token

`Call.run` takes `redis.Redis` or `redis.cluster.RedisCluster`, `Call.run_async` the
`redis.asyncio` ones; `Batch` (and the `pipeline` and `transaction` context managers)
sends several calls in one round trip, and `wait` runs a coordination primitive's call
until it is granted, blocking in between on what its replies say. A script's declared error
is raised as `ScriptError` (with ``.code``, ``.script`` and ``.message``); the same
code, caught before anything was sent, as `InvalidInput`, a `ScriptError` too.

The loops some patterns run on the client, sync and asyncio, are here too: the work
queue's `Worker` and `Scheduler`, `wait_for_job` (and an `Events` reader), and Redlock
across independent servers, `QuorumLock`.
"""

from ._batch import Batch, Slot, pipeline, pipeline_async, transaction, transaction_async
from ._errors import InvalidInput, NotGranted, RanOutsideTransaction, ScriptError, UnexpectedReply
from . import _generated
from ._generated import *  # noqa: F403 (every family module and class)
from ._runtime import (
    NOSCRIPT_ATTEMPTS,
    Call,
    Form,
    Param,
    Script,
    float_from_text,
    functions_library,
    integer_from_text,
)
from ._wait import MAX_BLOCK_MS, Wake, hold, hold_async, wait, wait_async
from ._machine import is_transient
from ._worker import (
    MAX_CONCURRENCY,
    MAX_TAKE,
    Backoff,
    EvictingServer,
    Job,
    JobError,
    MemoryPolicy,
    RateLimitGroup,
    Unrecoverable,
    Worker,
    WorkReport,
)
from ._scheduler import CronTimes, ScheduleReport, Scheduler, cron_times
from ._events import Event, Events, JobEnd, wait_for_job, wait_for_job_async
from ._redlock import Held, QuorumLock

__version__ = _generated.VERSION

__all__ = [
    "MAX_BLOCK_MS",
    "MAX_CONCURRENCY",
    "MAX_TAKE",
    "NOSCRIPT_ATTEMPTS",
    "Backoff",
    "Batch",
    "Call",
    "CronTimes",
    "Event",
    "Events",
    "EvictingServer",
    "Form",
    "Held",
    "InvalidInput",
    "Job",
    "JobEnd",
    "JobError",
    "MemoryPolicy",
    "NotGranted",
    "Param",
    "QuorumLock",
    "RateLimitGroup",
    "RanOutsideTransaction",
    "ScheduleReport",
    "Scheduler",
    "Script",
    "ScriptError",
    "Slot",
    "UnexpectedReply",
    "Unrecoverable",
    "Wake",
    "WorkReport",
    "Worker",
    "cron_times",
    "float_from_text",
    "functions_library",
    "hold",
    "hold_async",
    "integer_from_text",
    "is_transient",
    "pipeline",
    "pipeline_async",
    "transaction",
    "transaction_async",
    "wait",
    "wait_async",
    "wait_for_job",
    "wait_for_job_async",
]
__all__ += _generated.__all__
