"""pottery's side of benches/coordination.rs: one cell per run, its results as one JSON
line on stdout (the protocol of bench.mjs). The Rust bench spawns it with the venv's
python; by hand:

    benches/peers/coordination/venv/bin/python benches/peers/coordination/bench.py \
        mutex 8 1000 redis://127.0.0.1:6379 k1 20000

Arguments: cell (mutex only: pottery has no semaphore), contenders, operations, server
URL, key, the most ms the cell may last. `contenders` threads (pottery's Redlock is
synchronous), each with its own `redis.Redis` client (so its own connection) and its own
`Redlock`, each looping `acquire()` (pottery's waiting form: blocking, no timeout, a
random sleep of 0-200 ms between tries, its defaults) -> `release()`, with
`auto_release_time` 10 s (its default), until `operations` acquisitions were claimed
between them or the time is up. After one untimed hold per contender it prints `ready`
and waits for a line on stdin before the clock starts. Every hold's start of acquire, acquire returning and
release returning are read from time.perf_counter_ns() (one monotonic clock) and printed
in us; the bench derives the wake-ups from them. Client CPU: getrusage over the cell.
"""

import json
import resource
import sys
import threading
import time
from importlib.metadata import version

import redis
from pottery import Redlock

TTL = 10.0


def cpu_us():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return round((usage.ru_utime + usage.ru_stime) * 1e6)


def main():
    cell, contenders, ops, url, key, max_ms = sys.argv[1:7]
    if cell != "mutex":
        sys.stderr.write(f"pottery has no {cell}\n")
        sys.exit(3)
    contenders, ops, max_s = int(contenders), int(ops), int(max_ms) / 1000
    locks = []
    for _ in range(contenders):
        con = redis.Redis.from_url(url)
        lock = Redlock(key=key, masters={con}, auto_release_time=TTL)
        # One untimed hold first: connection made, scripts loaded.
        lock.acquire()
        lock.release()
        locks.append(lock)

    guard = threading.Lock()
    claimed = [0]
    holds = []
    go = threading.Barrier(contenders + 1)
    base = [0]

    def us():
        return (time.perf_counter_ns() - base[0]) // 1000

    def run(lock):
        mine = []
        go.wait()
        while True:
            with guard:
                if us() >= max_s * 1e6 or claimed[0] >= ops:
                    break
                claimed[0] += 1
            start = us()
            lock.acquire()
            acquired = us()
            lock.release()
            mine.append([start, acquired, us()])
        with guard:
            holds.extend(mine)

    threads = [threading.Thread(target=run, args=(lock,)) for lock in locks]
    for thread in threads:
        thread.start()
    # Ready: the bench reads the server's CPU and resets its stats, then says go.
    print("ready", flush=True)
    sys.stdin.readline()
    base[0] = time.perf_counter_ns()
    cpu_before = cpu_us()
    go.wait()
    for thread in threads:
        thread.join()
    secs = (time.perf_counter_ns() - base[0]) / 1e9
    print(json.dumps({
        "lib": "pottery",
        "version": version("pottery"),
        "ops": len(holds),
        "secs": secs,
        "client_cpu_us": cpu_us() - cpu_before,
        "holds": holds,
    }))


if __name__ == "__main__":
    main()
