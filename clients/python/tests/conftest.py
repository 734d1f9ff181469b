"""Throwaway redis-server processes on free loopback ports: one standalone server shared by
the session, fresh ones for the tests that flush scripts, and a 3-master cluster. The
binary is REDIS_SERVER_BIN, or redis-server from the PATH. Waits poll the server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional

import pytest
import redis
import redis.cluster

BINARY = os.environ.get("REDIS_SERVER_BIN", "redis-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def poll(ready: Callable[[], bool], what: str, seconds: float = 30.0) -> None:
    """Asks `ready` until it answers True; fails naming `what` after `seconds`."""
    deadline = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not after {seconds} s")
        time.sleep(0.01)


class Server:
    """A redis-server on a free port of 127.0.0.1, in a folder of its own."""

    def __init__(self, *extra: str) -> None:
        if shutil.which(BINARY) is None and not os.path.exists(BINARY):
            pytest.exit(
                f"`{BINARY}` not found; install it with `sudo apt-get install redis-server` "
                "(Debian, Ubuntu), or set REDIS_SERVER_BIN to its path",
                returncode=1,
            )
        self.dir = tempfile.mkdtemp(prefix="redis-patterns-py-")
        log = ""
        # The free port can be taken by someone else before the server binds it.
        for _ in range(5):
            self.port = free_port()
            self.process = subprocess.Popen(
                [BINARY, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.dir, "--logfile", "redis.log", *extra],
                cwd=self.dir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                poll(self._answers, "redis-server", 10)
                return
            except TimeoutError:
                self.process.kill()
                self.process.wait()
                log = self.log()
        raise RuntimeError(f"redis-server did not start; its log:\n{log}")

    def _answers(self) -> bool:
        if self.process.poll() is not None:
            raise TimeoutError("exited")
        try:
            with self.client() as c:
                return bool(c.ping())
        except redis.exceptions.ConnectionError:
            return False

    def client(self, **options: Any) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **options)

    def log(self) -> str:
        try:
            with open(os.path.join(self.dir, "redis.log")) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Cluster:
    """Three masters sharing the 16384 slots, joined without redis-cli."""

    def __init__(self) -> None:
        flags = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--cluster-node-timeout", "5000")
        self.nodes = [Server(*flags) for _ in range(3)]
        ranges = [(0, 5460), (5461, 10922), (10923, 16383)]
        for node, (first, last) in zip(self.nodes, ranges):
            with node.client() as c:
                c.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
        with self.nodes[0].client() as c:
            for node in self.nodes[1:]:
                c.execute_command("CLUSTER", "MEET", "127.0.0.1", node.port)
        for node in self.nodes:
            poll(lambda: self._formed(node), "the cluster")

    @staticmethod
    def _formed(node: Server) -> bool:
        with node.client() as c:
            info = c.execute_command("CLUSTER", "INFO").decode()
            slots = c.execute_command("CLUSTER", "SLOTS")
        return "cluster_state:ok" in info and "cluster_known_nodes:3" in info and len(slots) == 3

    def client(self) -> redis.cluster.RedisCluster:
        return redis.cluster.RedisCluster(host="127.0.0.1", port=self.nodes[0].port)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """The standalone server every test shares (never flush its scripts)."""
    s = Server()
    yield s
    s.stop()


@pytest.fixture
def r(server: Server) -> Iterator[redis.Redis]:
    """A connection to the shared server, on an empty keyspace."""
    c = server.client()
    c.flushdb()
    yield c
    c.close()


@pytest.fixture
def own_server() -> Iterator[Server]:
    """A server of the test's own, whose scripts and functions it may flush."""
    s = Server()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    yield c
    c.stop()


@pytest.fixture
def dead() -> redis.Redis:
    """A client of a port nobody listens on: any I/O on it fails."""
    return redis.Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=1)


def dump(r: redis.Redis) -> Dict[bytes, Optional[bytes]]:
    """Every key of the keyspace, serialised (DUMP)."""
    return {key: r.dump(key) for key in r.scan_iter(count=1000)}


def hex_token(n: int = 1) -> str:
    """A 128-bit token as the scripts take it: 32 hex digits."""
    return f"{n:032x}"


def all_keys(r: redis.Redis) -> List[bytes]:
    return sorted(r.scan_iter(count=1000))
