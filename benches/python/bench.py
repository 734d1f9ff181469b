"""The crate's Python client against the Python libraries a user would pick, side by side
on one redis-server this bench starts on a free port. See README.md beside this file for
what each section measures and how to read it.

    sh benches/python/fetch.sh                                   # once: the peers, into an ignored venv
    benches/peers/python/venv/bin/python benches/python/bench.py # every section
    benches/peers/python/venv/bin/python benches/python/bench.py locks calls

Sections (all by default): `queues` (the work queue's worker against bullmq and rq),
`calls` (a generated call against a bare `evalsha`), `locks` (the fair lock and the
semaphore against pottery's Redlock and redis-py's Lock). The knobs are environment
variables; README.md lists them.
"""

from __future__ import annotations

import importlib.util
import platform
import sys
import time
from importlib.metadata import PackageNotFoundError, version

SECTIONS = ("queues", "calls", "locks")


def versions() -> str:
    found = []
    for package in ("redis", "bullmq", "rq", "pottery"):
        try:
            found.append(f"{package} {version(package)}")
        except PackageNotFoundError:
            found.append(f"{package} not installed")
    return ", ".join(found)


def main() -> None:
    wanted = sys.argv[1:] or list(SECTIONS)
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        sys.exit(f"unknown section {', '.join(unknown)}: pick from {', '.join(SECTIONS)}")
    missing = [p for p in ("redis", "bullmq", "rq", "pottery") if importlib.util.find_spec(p) is None]
    if missing:
        sys.exit(f"{', '.join(missing)} not installed here: run `sh benches/python/fetch.sh`, then "
                 "this bench with benches/peers/python/venv/bin/python")
    import harness

    server = harness.Server()
    pool = harness.Pool()
    began = time.monotonic()
    print(f"python {platform.python_version()}, redis-server {server.version()}, {versions()}", flush=True)
    try:
        for section in wanted:
            module, started = __import__(section), time.monotonic()
            print(f"\n== {section}", flush=True)
            table = module.run(server, pool)
            print(f"{table}\n({time.monotonic() - started:.0f} s)", flush=True)
    finally:
        pool.close()
        server.stop()
    print(f"\nin all {time.monotonic() - began:.0f} s", flush=True)


if __name__ == "__main__":
    main()
