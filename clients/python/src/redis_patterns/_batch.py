"""Several calls in one round trip: a pipeline, or a MULTI/EXEC transaction, loading
their scripts in band so that a batch is one round trip even right after a
``SCRIPT FLUSH``, a restart or a failover."""

from __future__ import annotations

from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Generic, Iterator, List, Optional, Tuple, TypeVar

import redis.exceptions
from redis.crc import key_slot

from ._errors import InvalidInput, RanOutsideTransaction
from ._runtime import (
    NOSCRIPT_ATTEMPTS,
    AsyncClient,
    Call,
    Plan,
    RefreshSlots,
    RoundTrip,
    Script,
    SyncClient,
    _is_cluster,
    drive,
    drive_async,
)

T = TypeVar("T")


class Batch:
    """Calls sent together in one round trip: a pipeline, or with ``transaction=True`` a
    MULTI/EXEC transaction.

    A transaction loads each distinct script (``SCRIPT LOAD``) inside itself, in front of
    its calls, so it is applied whole or not at all, never cut short by a missing script.
    A pipeline loads its scripts in front of its calls too, except one whose calls all run
    one script: it sends its calls alone, as a raw pipeline would, and right after a flush
    sends the calls that got ``NOSCRIPT`` (all of them, or the last ones) again behind the
    load, up to five times. A call that got ``NOSCRIPT`` did not run, so nothing is applied
    twice, and the order holds. A batch always runs with ``EVALSHA``.

    On a cluster every call of a batch must be in one hash slot (give the keys one hash
    tag): the batch runs on that slot's node, and one over several slots is refused before
    anything is sent. A batch that meets ``MOVED`` (a resharding moved its slot), which
    ran none of the calls it answers, reads the slot map again and sends them to the new
    node. Replies are read from the `Slot` each `add` returns:

        batch = Batch(transaction=True)
        kept = batch.add(FixedLengthQueue("{q}:jobs").enqueue(100, [b"job"]))
        batch.run(r)
        kept.result()                   # (1, 0)
    """

    def __init__(self, *, transaction: bool = False) -> None:
        self.transaction = transaction
        self._calls: List[Call[Any]] = []
        self._values: Optional[List[Any]] = None

    def __len__(self) -> int:
        return len(self._calls)

    def __repr__(self) -> str:
        kind = "transaction" if self.transaction else "pipeline"
        return f"<Batch {kind} of {len(self._calls)}>"

    def add(self, call: Call[T]) -> Slot[T]:
        """Adds `call`; its reply is read from the returned `Slot` once the batch ran."""
        if self._values is not None:
            raise RuntimeError("this batch already ran: build a new one")
        self._calls.append(call)
        return Slot(self, len(self._calls) - 1, call)

    def run(self, client: SyncClient) -> None:
        """Sends the batch on a sync connection (`redis.Redis`, `RedisCluster`)."""
        drive(self._plan(_is_cluster(client)), client)

    async def run_async(self, client: AsyncClient) -> None:
        """Sends the batch on an asyncio connection (`redis.asyncio.Redis`, its
        `RedisCluster`)."""
        await drive_async(self._plan(_is_cluster(client)), client)

    def _plan(self, cluster: bool) -> Plan[None]:
        if self._values is not None:
            raise RuntimeError("this batch already ran: build a new one")
        route = next((call.keys[0] for call in self._calls if call.keys), None)
        if cluster:
            self._refuse_cross_slot()
        values: List[Any] = [None] * len(self._calls)
        pending = list(range(len(self._calls)))
        one_script = len({call.script.sha1 for call in self._calls}) == 1
        attempt = 0
        while pending and attempt <= NOSCRIPT_ATTEMPTS:
            loads = self.transaction or attempt > 0 or not one_script
            scripts = _distinct(self._calls[i].script for i in pending) if loads else []
            commands: List[Tuple[Any, ...]] = [("SCRIPT", "LOAD", s.source) for s in scripts]
            commands += [self._calls[i].command() for i in pending]
            if self.transaction:
                commands = [("MULTI",), *commands, ("EXEC",)]
            replies = yield RoundTrip(commands, route)
            attempt += 1
            if self.transaction:
                if cluster and attempt <= NOSCRIPT_ATTEMPTS and any(_is_moved(r) for r in replies):
                    # Refused while queued (EXECABORT): nothing ran; all again, elsewhere.
                    yield RefreshSlots()
                    continue
                replies = _unwrap_transaction(replies, len(commands) - 2)
            again = self._file(pending, scripts, replies, values)
            moved = [i for i in pending if _is_moved(values[i])] if cluster else []
            if moved and attempt <= NOSCRIPT_ATTEMPTS:
                yield RefreshSlots()
            pending = sorted(set(again) | set(moved))
        self._values = values

    def _file(self, sent: List[int], scripts: List[Script], replies: List[Any], values: List[Any]) -> List[int]:
        """Files the calls' replies into `values`; returns those to send again: the calls
        of a pipeline that got ``NOSCRIPT`` while their script's load did not fail. A call
        whose script's load failed gets the load's error (it did not run either)."""
        loaded = dict(zip((s.sha1 for s in scripts), replies))
        again = []
        for index, reply in zip(sent, replies[len(scripts) :]):
            values[index] = reply
            if not isinstance(reply, redis.exceptions.NoScriptError):
                continue
            load = loaded.get(self._calls[index].script.sha1)
            if isinstance(load, Exception):
                values[index] = load
            elif not self.transaction:
                again.append(index)
        return again

    def _refuse_cross_slot(self) -> None:
        first: Optional[Tuple[int, str, int]] = None
        for index, call in enumerate(self._calls):
            if not call.keys:
                continue
            slot = key_slot(call.keys[0].encode())
            if first is None:
                first = (index, call.keys[0], slot)
            elif slot != first[2]:
                why = (
                    f"call {first[0]} uses `{first[1]}` (hash slot {first[2]}) and call {index} uses "
                    f"`{call.keys[0]}` (hash slot {slot}); a batch runs on one cluster node, so its "
                    "keys must share a hash slot: give them one hash tag, as in `{tag}:a` and `{tag}:b`"
                )
                raise InvalidInput("batch", "CROSSSLOT", "keys", why)


class Slot(Generic[T]):
    """Where one call's reply will be, once its `Batch` ran."""

    __slots__ = ("_batch", "_index", "_call")

    def __init__(self, batch: Batch, index: int, call: Call[T]) -> None:
        self._batch = batch
        self._index = index
        self._call = call

    def __repr__(self) -> str:
        return f"<Slot {self._index} of {self._batch!r}: {self._call.script.name}>"

    def result(self) -> T:
        """The call's decoded reply; its error reply raised (a declared code as
        `ScriptError`)."""
        values = self._batch._values
        if values is None:
            raise RuntimeError("the batch has not run yet: call run() or run_async() first")
        return self._call.result(values[self._index])


def _is_moved(reply: Any) -> bool:
    """Whether `reply` is ``MOVED``: the node does not own the slot, and ran nothing."""
    return isinstance(reply, redis.exceptions.MovedError) or (
        isinstance(reply, redis.exceptions.ResponseError) and str(reply).startswith("MOVED ")
    )


def _distinct(scripts: Iterator[Script]) -> List[Script]:
    seen: List[Script] = []
    for script in scripts:
        if all(s.sha1 != script.sha1 for s in seen):
            seen.append(script)
    return seen


def _unwrap_transaction(replies: List[Any], queued: int) -> List[Any]:
    """The replies inside ``EXEC``'s, from ``MULTI``, the queued commands' and ``EXEC``'s."""
    multi, refusals, exec_reply = replies[0], replies[1:-1], replies[-1]
    if isinstance(multi, Exception):
        raise RanOutsideTransaction(multi, queued)
    if isinstance(exec_reply, list) and len(exec_reply) == queued:
        return exec_reply
    # EXECABORT: a command was refused while queued, so nothing ran; say which and why.
    refused = next((r for r in refusals if isinstance(r, Exception)), None)
    if refused is not None:
        raise refused
    if isinstance(exec_reply, Exception):
        raise exec_reply
    raise redis.exceptions.ResponseError(f"EXEC did not answer the transaction's replies: {exec_reply!r}")


@contextmanager
def pipeline(client: SyncClient) -> Iterator[Batch]:
    """A `Batch` that is sent when the block ends without an exception (and never
    otherwise)."""
    batch = Batch()
    yield batch
    batch.run(client)


@contextmanager
def transaction(client: SyncClient) -> Iterator[Batch]:
    """A transaction `Batch`, sent when the block ends without an exception."""
    batch = Batch(transaction=True)
    yield batch
    batch.run(client)


@asynccontextmanager
async def pipeline_async(client: AsyncClient) -> AsyncIterator[Batch]:
    """`pipeline`, on an asyncio connection."""
    batch = Batch()
    yield batch
    await batch.run_async(client)


@asynccontextmanager
async def transaction_async(client: AsyncClient) -> AsyncIterator[Batch]:
    """`transaction`, on an asyncio connection."""
    batch = Batch(transaction=True)
    yield batch
    await batch.run_async(client)
