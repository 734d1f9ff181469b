"""What every section of the Python bench shares: the redis-server it starts, the pool of
processes the sides run in, what is read around a cell (the server's CPU, the processes'
CPU), and the statistics and tables.

The pool: processes spawned once (`multiprocessing`, spawn), reused cell after cell, so
no cell pays for starting Python and importing its libraries. A cell sends each process
a task (a function of a bench module and its arguments); the task sets up (connects,
builds its objects), says `ready`, and runs. A task that must start on the clock
(a producer, a contender) waits in `ready` for the driver's go; a worker starts its loop
at once and the driver waits until the server shows it blocked, waiting for work. The
processes share a counter: `job_done` counts handled jobs and marks the cell done at its
total, `claim` hands out a contender's next operation until the total is claimed.
"""

from __future__ import annotations

import importlib
import math
import multiprocessing
import multiprocessing.connection
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, TypeVar

import redis

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root."""

# The crate's Python client, from the checkout: the bench always runs the code beside it.
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))

REDIS_SERVER_BIN = os.environ.get("REDIS_SERVER_BIN", "redis-server")


def env_int(name: str, default: int) -> int:
    """The environment's whole number `name`, or `default`."""
    value = os.environ.get(name, "")
    return int(value) if value else default


def env_list(name: str, default: str) -> List[str]:
    """The environment's comma-separated list `name`, or `default`'s."""
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# ---------------------------------------------------------------------------------------
# The server.


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Server:
    """A redis-server on a free port of 127.0.0.1, without persistence, in a folder of its
    own; `stop` ends it and removes the folder."""

    def __init__(self) -> None:
        if shutil.which(REDIS_SERVER_BIN) is None and not os.path.exists(REDIS_SERVER_BIN):
            sys.exit(f"`{REDIS_SERVER_BIN}` not found: install redis-server, or set REDIS_SERVER_BIN")
        self.dir = tempfile.mkdtemp(prefix="redis-patterns-pybench-")
        for _ in range(5):  # the free port can be taken before the server binds it
            self.port = free_port()
            self.process = subprocess.Popen(
                [REDIS_SERVER_BIN, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.dir, "--logfile", "redis.log"],
                cwd=self.dir, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            if poll(self._answers, 10.0):
                return
            self.process.kill()
            self.process.wait()
        sys.exit(f"redis-server did not start; see {self.dir}/redis.log")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port)

    def version(self) -> str:
        with self.client() as c:
            return str(c.info("server")["redis_version"])

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            return False
        try:
            with self.client() as c:
                return bool(c.ping())
        except redis.exceptions.ConnectionError:
            return False

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def poll(ready: Callable[[], bool], seconds: float) -> bool:
    """Asks `ready` every millisecond until it answers True (then True) or `seconds`
    passed (then False)."""
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


def server_cpu_us(r: redis.Redis) -> float:
    """The server's CPU time so far (`INFO cpu`: used_cpu_sys + used_cpu_user), in µs."""
    cpu = r.info("cpu")
    return (float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"])) * 1e6


def blocked_clients(r: redis.Redis) -> int:
    """The connections blocked in a command (BZPOPMIN, BLPOP, XREAD BLOCK, ...)."""
    return int(r.info("clients")["blocked_clients"])


def commandstats(r: redis.Redis) -> Dict[str, int]:
    """`INFO commandstats`: each command run since the last `CONFIG RESETSTAT`, and how often."""
    stats = r.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_s(pid: int) -> float:
    """A process's CPU time so far, every thread of it (`/proc/<pid>/stat`: utime + stime;
    Linux), read from outside it while it runs."""
    with open(f"/proc/{pid}/stat") as f:
        # The command name, in parentheses, may hold spaces: split after it.
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


# ---------------------------------------------------------------------------------------
# The pool.


class Shared:
    """What the pool's processes share with the driver, made once and inherited."""

    def __init__(self, ctx: Any) -> None:
        self.go = ctx.Event()
        self.stop = ctx.Event()
        self.done = ctx.Event()
        self.count = ctx.Value("q", 0)
        self.total = ctx.Value("q", 0, lock=False)
        self.done_ns = ctx.Value("q", 0, lock=False)

    def reset(self, total: int) -> None:
        self.go.clear()
        self.stop.clear()
        self.done.clear()
        with self.count.get_lock():
            self.count.value = 0
        self.total.value = total
        self.done_ns.value = 0

    def job_done(self, n: int = 1) -> None:
        """`n` more jobs were handled; the one that reaches the total marks the cell done."""
        with self.count.get_lock():
            before = self.count.value
            self.count.value = before + n
            if before < self.total.value <= before + n:
                self.done_ns.value = time.perf_counter_ns()
                self.done.set()

    def claim(self) -> bool:
        """Claims the next operation of the cell: False once the total is claimed."""
        with self.count.get_lock():
            if self.count.value >= self.total.value:
                return False
            self.count.value += 1
            return True


SHARED: Shared
"""In a pool process: what it shares with the driver."""

_PIPE: multiprocessing.connection.Connection


def ready(wait_for_go: bool = True) -> None:
    """A task is set up: tells the driver, and waits for the go unless `wait_for_go` is False
    (a worker, which starts its loop and waits for work on the server)."""
    _PIPE.send(("ready", None))
    if wait_for_go:
        SHARED.go.wait()


def _serve(pipe: multiprocessing.connection.Connection, shared: Shared) -> None:
    """A pool process: runs the tasks the driver sends, one after another, until None."""
    global SHARED, _PIPE
    SHARED, _PIPE = shared, pipe
    while True:
        task = pipe.recv()
        if task is None:
            return
        module, name, kwargs = task
        try:
            result = getattr(importlib.import_module(module), name)(**kwargs)
            pipe.send(("result", result))
        except BaseException:  # noqa: BLE001 (the driver shows it)
            pipe.send(("error", traceback.format_exc()))


class TaskFailed(Exception):
    """A task raised (the message is its traceback), or its process died or hung."""


Task = Tuple[str, str, Dict[str, Any]]
"""A bench module, the name of one of its functions, and its keyword arguments."""


ANSWER_S = 60.0
"""How long a task has to say `ready` once sent, and to return once told to stop; a
process that does not is killed, and a new one takes its place."""


class Pool:
    """Processes spawned on demand and kept for every later cell."""

    def __init__(self) -> None:
        self._ctx = multiprocessing.get_context("spawn")
        self.shared = Shared(self._ctx)
        self._processes: List[Any] = []
        self._pipes: List[multiprocessing.connection.Connection] = []

    def _spawn(self) -> Tuple[Any, multiprocessing.connection.Connection]:
        mine, theirs = self._ctx.Pipe()
        process = self._ctx.Process(target=_serve, args=(theirs, self.shared), daemon=True)
        process.start()
        theirs.close()  # the child's now: a child that dies closes it, and `recv` says so
        return process, mine

    def _grow(self, n: int) -> None:
        while len(self._processes) < n:
            process, pipe = self._spawn()
            self._processes.append(process)
            self._pipes.append(pipe)

    def answer(self, i: int, task: Task, seconds: float) -> Tuple[str, Any]:
        """The next message of process `i`, which runs `task`: an error when it died, or
        said nothing within `seconds` (then it is killed and replaced)."""
        what = f"the process running {task[0]}.{task[1]}"
        try:
            if self._pipes[i].poll(seconds):
                kind, value = self._pipes[i].recv()
                return kind, value
            why = f"{what} did not answer within {seconds:.0f} s"
        except EOFError:
            why = f"{what} died"
        self._processes[i].kill()
        self._processes[i].join()
        self._processes[i], self._pipes[i] = self._spawn()
        return "error", why

    def cell(self, tasks: Sequence[Task], total: int) -> "Cell":
        """Sends `tasks` (one per process) for a cell of `total` jobs or operations, and
        returns once each said `ready`."""
        self._grow(len(tasks))
        self.shared.reset(total)
        for pipe, task in zip(self._pipes, tasks):
            pipe.send(task)
        cell = Cell(self, tasks)
        for i, task in enumerate(tasks):
            kind, value = self.answer(i, task, ANSWER_S)
            if kind == "error":
                cell.owed.remove(i)
                try:
                    cell.finish()  # the others go on to their end
                except TaskFailed:
                    pass
                raise TaskFailed(value)
        return cell

    def close(self) -> None:
        """Ends every process: a task still waiting for the go or the stop (after a
        failure) gets both, then its process is told to end, or killed after 10 s."""
        self.shared.go.set()
        self.shared.stop.set()
        for pipe in self._pipes:
            try:
                pipe.send(None)
            except OSError:  # its process died
                pass
        deadline = time.monotonic() + 10
        for process in self._processes:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()


class Cell:
    """One cell running in the pool: `start` gives the go, `finish` stops it and collects."""

    def __init__(self, pool: Pool, tasks: Sequence[Task]) -> None:
        self.pool = pool
        self.shared = pool.shared
        self.tasks = tasks
        self.pids = [p.pid for p in pool._processes[: len(tasks)]]
        self.owed = list(range(len(tasks)))  # the processes that owe their task's answer
        self.start_ns = 0
        self._cpu_before = 0.0

    def cpu_s(self) -> float:
        """The CPU time of the cell's processes so far."""
        return sum(process_cpu_s(pid) for pid in self.pids)

    def start(self) -> None:
        self._cpu_before = self.cpu_s()
        self.start_ns = time.perf_counter_ns()
        self.shared.go.set()

    def client_cpu_s(self) -> float:
        """The CPU time the cell's processes used since the go."""
        return self.cpu_s() - self._cpu_before

    def wait_done(self, seconds: float) -> bool:
        """Waits until a worker marked the cell done (True), or `seconds` (False)."""
        return bool(self.shared.done.wait(seconds))

    def finish(self) -> List[Any]:
        """Tells the tasks to stop (and to start, those that never got the go), and
        returns what each returned; `TaskFailed` when one failed."""
        self.shared.go.set()
        self.shared.stop.set()
        results: List[Any] = []
        failed: List[str] = []
        for i in self.owed:
            kind, value = self.pool.answer(i, self.tasks[i], ANSWER_S)
            if kind == "error":
                failed.append(value)
            results.append(value)
        self.owed = []
        if failed:
            raise TaskFailed("\n".join(failed))
        return results


# ---------------------------------------------------------------------------------------
# Statistics and tables.


def peer_failure(section: str, side: str, cell: str, err: Exception) -> None:
    """Says that a peer's side of a cell failed this round (a peer's bug or hiccup does not
    end the run: its round counts no result, and the table marks it)."""
    detail = "\n".join("      " + line for line in str(err).strip().splitlines()[-6:])
    print(f"  {section}: {side}, {cell}: failed, this round counts no result:\n{detail}", flush=True)


def median(values: Iterable[float]) -> float:
    ordered = sorted(v for v in values if v == v)
    n = len(ordered)
    if n == 0:
        return float("nan")
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def quantile_ms(samples_us: Sequence[int], q: float) -> float:
    """The `q`-quantile (nearest rank) of `samples_us`, in ms."""
    if not samples_us:
        return float("nan")
    ordered = sorted(samples_us)
    rank = min(max(1, math.ceil(q * len(ordered))), len(ordered))
    return ordered[rank - 1] / 1000


def shown(value: Optional[float], decimals: int = 0) -> str:
    """`value` with `decimals` digits, or `-` when there is none."""
    if value is None or value != value or value in (float("inf"), float("-inf")):
        return "-"
    return f"{value:.{decimals}f}"


def percent(share: float) -> str:
    """`share` as a whole percentage, or `-`."""
    return "-" if share != share else f"{share:.0%}"


def ratio(ours: Optional[float], theirs: Optional[float]) -> str:
    """`ours ÷ theirs`, as `1.23×`, or `-`."""
    if ours is None or theirs is None or ours != ours or theirs != theirs or theirs == 0:
        return "-"
    return f"{ours / theirs:.2f}×"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned first column, right-aligned others, two spaces apart."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        cells = [str(row[0]).ljust(widths[0])]
        cells += [str(cell).rjust(width) for cell, width in zip(row[1:], widths[1:])]
        return "  ".join(cells).rstrip()

    return "\n".join([line(header), *(line(row) for row in rows)])


S = TypeVar("S")


def turns(sides: Sequence[S], round_no: int) -> List[S]:
    """The sides in the order round `round_no` runs them: as given, then reversed, and so
    on, so that a noisy moment on the machine hits every side alike."""
    return list(sides) if round_no % 2 == 0 else list(reversed(sides))
