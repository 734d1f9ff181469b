"""What the loop tests share: a loop run on a thread of its own, a queue's counts, and
the clients a server holds blocked in a command."""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Optional

import redis

import redis_patterns as rp


class Running(threading.Thread):
    """`work` on a thread of its own; its answer, or its error raised, from `result`."""

    def __init__(self, work: Callable[[], Any]) -> None:
        super().__init__(daemon=True)
        self.work = work
        self.answer: Any = None
        self.error: Optional[BaseException] = None
        self.start()

    def run(self) -> None:
        try:
            self.answer = self.work()
        except BaseException as err:  # raised again by result()
            self.error = err

    def result(self) -> Any:
        self.join(30)
        assert not self.is_alive(), "still running after 30 s"
        if self.error is not None:
            raise self.error
        return self.answer


def counts(r: redis.Redis, name: str) -> Dict[str, int]:
    """How many jobs of queue `name` are in each state."""
    waiting, parked, delayed, leased, dead, completed, blocked = rp.WorkQueue(name).counts().run(r)
    return {
        "waiting": waiting,
        "parked": parked,
        "delayed": delayed,
        "leased": leased,
        "dead": dead,
        "completed": completed,
        "blocked": blocked,
    }


def drained(r: redis.Redis, name: str) -> bool:
    """Whether queue `name` holds no job but dead (and kept completed) ones."""
    return sum(n for state, n in counts(r, name).items() if state not in ("dead", "completed")) == 0


def blocked_in(r: redis.Redis, command: str) -> int:
    """How many clients of `r`'s server are blocked in `command` (lower case) now."""
    listed: List[Any] = r.client_list()
    return sum(1 for c in listed if c.get("cmd") == command and "b" in c.get("flags", ""))
