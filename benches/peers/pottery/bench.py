"""pottery's side of benches/bloom.rs: one run per process, its results as one JSON line
on stdout. The Rust bench spawns it with the venv's python; by hand:

    benches/peers/pottery/venv/bin/python benches/peers/pottery/bench.py \
        add 20000 100 100000 100 redis://127.0.0.1:6379 pottery-bloom in:1:

Arguments: op (add or check), items, items per call, capacity (pottery's num_elements),
one_in (false_positives = 1 / one_in), server URL, key, and the items' prefix: the items
are prefix + 0, prefix + 1, ... One `redis.Redis` client and one `BloomFilter` on `key`;
`add` calls `update(chunk)` per `per_call` items (WATCH, MULTI, a SETBIT per distinct bit
of the chunk, EXEC; `add(item)` when per_call is 1, which is the same), `check` calls
`contains_many(*chunk)` (WATCH, MULTI, a GETBIT per item and hash, EXEC). Before the
clock starts it makes the filter object (pottery's constructor runs an empty update) and
prints `ready`, then waits for a line on stdin, so that the bench reads the server's CPU
around the run alone. Prints the items, the seconds, the client's CPU (getrusage), the
filter's m and k, and for `check` how many items it answered "maybe added".
"""

import json
import resource
import sys
import time
import warnings
from importlib.metadata import version

import redis
from pottery import BloomFilter
from pottery.exceptions import InefficientAccessWarning


def cpu_us():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return round((usage.ru_utime + usage.ru_stime) * 1e6)


def main():
    op, items, per_call, capacity, one_in, url, key, prefix = sys.argv[1:9]
    items, per_call = int(items), int(per_call)
    # pottery warns on every update of more than one item; the bench batches on purpose.
    warnings.simplefilter("ignore", InefficientAccessWarning)
    con = redis.Redis.from_url(url)
    bloom = BloomFilter(
        num_elements=int(capacity),
        false_positives=1 / int(one_in),
        redis=con,
        key=key,
    )
    values = [f"{prefix}{i}" for i in range(items)]
    chunks = [values[i:i + per_call] for i in range(0, items, per_call)]

    print("ready", flush=True)
    sys.stdin.readline()
    cpu_before = cpu_us()
    start = time.perf_counter()
    maybe = 0
    if op == "add":
        for chunk in chunks:
            bloom.update(chunk)
    elif op == "check":
        for chunk in chunks:
            maybe += sum(bloom.contains_many(*chunk))
    else:
        sys.stderr.write(f"unknown op {op} (add or check)\n")
        sys.exit(2)
    secs = time.perf_counter() - start
    print(json.dumps({
        "lib": "pottery",
        "version": version("pottery"),
        "items": items,
        "secs": secs,
        "client_cpu_us": cpu_us() - cpu_before,
        "m": bloom.size(),
        "k": bloom.num_hashes(),
        "maybe": maybe,
    }), flush=True)


if __name__ == "__main__":
    main()
