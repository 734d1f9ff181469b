"""Every scenario of the Rust suite, replayed through this package on a real server.

The Rust scenario tests write each call they make, its reply and what it changed in the
keyspace to ``scenarios/<name>.json`` at the repository's root (``scenarios/README.md``
says how they read). Here each script call is made with the function this package
generates for the script: its recorded arguments are read back as Python values by the
header's types, and the function must send them as the Rust client did, byte for byte
(floats and JSON as the same values). Its reply is compared raw (as RESP2 gives it, before
any decoding) with the recorded one, and must decode as the header's ``@return`` says; the
other commands are sent as they were. After each step the whole keyspace must be the
recorded one, the marked values (clock readings, tokens, times left) tolerated. The last
test checks that the scenarios call every script of the package.
"""

from __future__ import annotations

import inspect
import json
import re
import secrets
import struct
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

import pytest
import redis
from redis.client import NEVER_DECODE

import redis_patterns
from redis_patterns import Call, Param, Script, ScriptError

from .conftest import poll
from .test_contract import function_of

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
"""The recordings: ``scenarios/`` of the checkout these tests are in."""

Json = Any
"""A value read from a recording."""

DAY_MS = 86_400_000

SCRIPTS: Dict[str, Script] = {script.name: script for script in redis_patterns.SCRIPTS}

CALLED: Set[str] = set()
"""The scripts the replays called."""


def scenario_files() -> List[Path]:
    files = sorted(SCENARIOS.glob("*.json"))
    assert files, f"no recordings in {SCENARIOS}: run `cargo test --test it scenario_standalone`"
    return files


class Mismatch(AssertionError):
    """What the replay got differs from the recording."""


class Capture:
    """A connection that keeps the last reply `Call.run` got, raw, error replies too."""

    def __init__(self, client: redis.Redis) -> None:
        self.client: Any = client
        self.reply: Any = None

    def execute_command(self, *args: Any, **options: Any) -> Any:
        try:
            self.reply = self.client.execute_command(*args, **options)
        except redis.exceptions.ResponseError as err:
            self.reply = err
            raise
        return self.reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def as_text(actual: Any) -> Optional[str]:
    if isinstance(actual, int) and not isinstance(actual, bool):
        return str(actual)
    if isinstance(actual, bytes):
        try:
            return actual.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def as_number(text: str) -> Optional[float]:
    try:
        return float(text)
    except ValueError:
        return None


def read_msgpack(data: bytes) -> Any:
    """The value a MessagePack encoding holds (the kinds ``cmsgpack`` writes)."""
    at = 0

    def take(n: int) -> bytes:
        nonlocal at
        if at + n > len(data):
            raise ValueError("truncated")
        chunk = data[at : at + n]
        at += n
        return chunk

    def read() -> Any:
        tag = take(1)[0]
        if tag <= 0x7F:
            return tag
        if tag >= 0xE0:
            return tag - 0x100
        if tag == 0xC0:
            return None
        if tag in (0xC2, 0xC3):
            return tag == 0xC3
        if tag == 0xCB:
            return struct.unpack(">d", take(8))[0]
        if 0xCC <= tag <= 0xCF:
            return int.from_bytes(take(1 << (tag - 0xCC)), "big")
        if 0xD0 <= tag <= 0xD3:
            return int.from_bytes(take(1 << (tag - 0xD0)), "big", signed=True)
        if 0xA0 <= tag <= 0xBF or 0xD9 <= tag <= 0xDB:
            n = tag & 0x1F if tag <= 0xBF else int.from_bytes(take(1 << (tag - 0xD9)), "big")
            return take(n).decode("utf-8")
        if 0x90 <= tag <= 0x9F or tag in (0xDC, 0xDD):
            n = tag & 0x0F if tag <= 0x9F else int.from_bytes(take(2 << (tag - 0xDC)), "big")
            return [read() for _ in range(n)]
        if 0x80 <= tag <= 0x8F or tag in (0xDE, 0xDF):
            n = tag & 0x0F if tag <= 0x8F else int.from_bytes(take(2 << (tag - 0xDE)), "big")
            return {read(): read() for _ in range(n)}
        raise ValueError(f"MessagePack tag {tag:#x}")

    value = read()
    if at != len(data):
        raise ValueError("bytes after the value")
    return value


def resp2(value: Any) -> Any:
    """A reply as RESP2 gives it, as the recordings have them: a map as its keys and
    values in turn, a set as a list, a double as its text, a boolean as 1 or 0."""
    if isinstance(value, dict):
        return [resp2(x) for pair in value.items() for x in pair]
    if isinstance(value, (list, set)):
        return [resp2(x) for x in value]
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        return repr(value).encode()
    return value


def error_text(err: redis.exceptions.ResponseError, recorded: Json) -> str:
    """An error reply as the recording writes it: with its code, which redis-py drops from
    some (`ERR`), and without where in a script it came from, which differs between
    EVALSHA and FCALL."""
    text = str(err).split(" script: ")[0]
    code = (recorded if isinstance(recorded, str) else "").split(" ")[0]
    return text if text.startswith(code) else f"{code} {text}"


class Replay:
    """One scenario replayed on `client`: what it sent, what it saw, and the keyspace the
    recording says it should find."""

    def __init__(self, client: redis.Redis, functions: bool) -> None:
        self.client = client
        # The scenarios' own commands, with their replies as they come: RESP2, as the
        # recording has them, and no callbacks.
        where = client.connection_pool.connection_kwargs
        self.raw: Any = redis.Redis(host=where["host"], port=where["port"], db=where.get("db", 0), protocol=2)
        self.raw.response_callbacks.clear()
        self.functions = functions
        self.tokens: Dict[int, str] = {}
        self.replies: Dict[int, Any] = {}
        self.keyspace: Dict[str, Json] = {}
        self.now_ms = 0

    # Sending.

    def server_ms(self) -> int:
        seconds, micros = self.raw.execute_command("TIME", **{NEVER_DECODE: True})
        return int(seconds) * 1000 + int(micros) // 1000

    def clock(self, unit: str, ms: int) -> int:
        return {"ms": ms, "s": ms // 1000, "us": ms * 1000, "min": ms // 60_000}[unit]

    def sent(self, value: Json) -> bytes:
        """What to send for a recorded key or argument."""
        if isinstance(value, str):
            return value.encode()
        if "bytes" in value:
            return bytes.fromhex(value["bytes"])
        if "text" in value:
            return b"".join(self.sent(piece) for piece in value["text"])
        if "token" in value:
            n, width = value["token"], value["width"]
            return self.tokens.setdefault(n, secrets.token_hex(width // 2)).encode()
        if "from" in value:
            step, *path = value["from"]
            found = self.replies[step]
            for i in path:
                found = found[i]
            return found if isinstance(found, bytes) else str(found).encode()
        now = self.clock(value["clock"], self.server_ms())
        if "round" in value:
            now -= now % value["round"]
        return str(now + value.get("add", 0)).encode()

    def values(self, script: Script, sent: List[bytes]) -> List[Any]:
        """The Python values a caller passes for `sent`, by the header's types."""

        def value(param: Param, raw: bytes) -> Any:
            if param.optional and raw == b"":
                return None
            kind = param.kind
            if kind in ("int", "uint", "ms"):
                return int(raw)
            if kind == "float":
                return float(raw)
            if kind == "bool":
                return {b"1": True, b"0": False}[raw]
            if kind == "json":
                return json.loads(raw)
            return raw.decode() if kind == "string" else raw

        values: List[Any] = []
        for i, param in enumerate(script.args):
            if param.variadic:
                values.append([value(param, raw) for raw in sent[i:]])
            else:
                values.append(value(param, sent[i]))
        return values

    def call(self, script: Script, keys: List[str], args: List[bytes]) -> Tuple[Call[Any], Any]:
        """The call of the generated function for `keys` and `args`, checked to send them
        as the recording did, and its raw reply."""
        function = function_of(script)
        params = list(inspect.signature(function).parameters.values())[: len(script.key_names)]
        fixed = [p for p in params if "Sequence" not in str(p.annotation)]
        positional: List[Any] = list(keys[: len(fixed)])
        if len(params) > len(fixed):
            positional.append(keys[len(fixed) :])
        call = function(*positional, *self.values(script, args))
        assert call.keys == keys, f"keys {call.keys} sent for {keys}"
        for param, mine, theirs in zip(self.params_of(script, len(args)), call.args, args):
            if param.kind == "float":
                assert float(mine) == float(theirs), f"{param.name}: {mine!r} for {theirs!r}"
            elif param.kind == "json":
                assert json.loads(mine) == json.loads(theirs), f"{param.name}: {mine!r} for {theirs!r}"
            else:
                assert mine == theirs, f"{param.name}: {mine!r} sent for {theirs!r}"
        assert len(call.args) == len(args), f"{len(call.args)} arguments for {len(args)}"
        capture = Capture(self.client)
        try:
            call.run(capture, functions=self.functions)  # type: ignore[arg-type]
        except (ScriptError, redis.exceptions.ResponseError):
            pass  # the error reply is compared with the recorded one
        return call, resp2(capture.reply)

    @staticmethod
    def params_of(script: Script, count: int) -> Iterator[Param]:
        """The `@arg` line of each of `count` arguments (a variadic one repeated)."""
        for i in range(count):
            yield script.args[min(i, len(script.args) - 1)] if script.args[-1].variadic else script.args[i]

    # Comparing.

    def match(self, expected: Json, actual: Any, where: str) -> None:
        """Raises `Mismatch` unless `actual` is what `expected` records; binds the tokens
        first seen here."""
        if expected is None or isinstance(expected, (bool, int)):
            if actual != expected or type(actual) is not type(expected):
                raise Mismatch(f"{where}: {actual!r}, recorded {expected!r}")
        elif isinstance(expected, str):
            text = as_text(actual)
            if text == expected:
                return
            x, y = as_number(expected), None if text is None else as_number(text)
            if x is None or y is None or x != y or not re.search(r"[.eE]", expected + (text or "")):
                raise Mismatch(f"{where}: {actual!r}, recorded {expected!r}")
        elif isinstance(expected, list):
            if not isinstance(actual, list) or len(actual) != len(expected):
                raise Mismatch(f"{where}: {actual!r}, recorded {len(expected)} items {expected!r}"[:600])
            for i, (e, a) in enumerate(zip(expected, actual)):
                self.match(e, a, f"{where}[{i}]")
        elif "error" in expected:
            if not isinstance(actual, redis.exceptions.ResponseError):
                raise Mismatch(f"{where}: {actual!r}, recorded the error {expected['error']!r}")
            self.match(expected["error"], error_text(actual, expected["error"]).encode(), f"{where} (error)")
        elif "unordered" in expected:
            if not isinstance(actual, list):
                raise Mismatch(f"{where}: {actual!r}, recorded a list")
            self.match_unordered(expected["unordered"], actual, where)
        elif "bytes" in expected:
            if actual != bytes.fromhex(expected["bytes"]):
                raise Mismatch(f"{where}: {actual!r}, recorded {expected['bytes']}")
        elif "msgpack" in expected:
            try:
                held = read_msgpack(actual) if isinstance(actual, bytes) else None
            except ValueError:
                held = None
            if held != expected["msgpack"]:
                raise Mismatch(f"{where}: {actual!r} holds {held!r}, recorded {expected['msgpack']!r}")
        elif "text" in expected:
            self.match_text(expected["text"], actual, where)
        elif "token" in expected:
            text = as_text(actual)
            width = expected["width"]
            if text is None or re.fullmatch(f"[0-9a-f]{{{width}}}", text) is None:
                raise Mismatch(f"{where}: {actual!r}, recorded a token of {width} hex digits")
            if self.tokens.setdefault(expected["token"], text) != text:
                raise Mismatch(f"{where}: {text}, recorded token {expected['token']}, which is {self.tokens[expected['token']]}")
        elif "clock" in expected:
            self.match_clock(expected["clock"], actual, where)
        elif "random" not in expected:
            raise AssertionError(f"{where}: a recording this replay cannot read: {expected!r}")

    def match_clock(self, unit: str, actual: Any, where: str) -> None:
        text = as_text(actual) or ""
        if unit == "id":
            found = re.fullmatch(r"(\d+)-\d+", text)
            number = int(found.group(1)) if found else None
            unit = "ms"
        else:
            number = int(text) if re.fullmatch(r"-?\d+", text) else None
        if number is None:
            raise Mismatch(f"{where}: {actual!r}, recorded a {unit} reading of the clock")
        if unit in ("span", "slot"):
            return
        now = self.clock(unit, self.now_ms)
        if abs(number - now) > self.clock(unit, DAY_MS):
            raise Mismatch(f"{where}: {number} is not within a day of the server's clock in {unit} ({now})")

    def match_text(self, pieces: List[Json], actual: Any, where: str) -> None:
        text = as_text(actual)
        markers = [p for p in pieces if not isinstance(p, str)]
        pattern = "".join(
            re.escape(p)
            if isinstance(p, str)
            else f"([0-9a-f]{{{p['width']}}})"
            if "token" in p
            else r"(\d+-\d+)"
            if p.get("clock") == "id"
            else r"(-?\d+)"
            for p in pieces
        )
        found = None if text is None else re.fullmatch(pattern, text)
        if found is None:
            raise Mismatch(f"{where}: {actual!r}, recorded {pieces!r}")
        for i, (marker, part) in enumerate(zip(markers, found.groups())):
            self.match(marker, part.encode(), f"{where} (part {i})")

    def tried(self, expected: Json, actual: Any) -> bool:
        """Whether `actual` matches `expected`, binding tokens only if it does."""
        tokens = dict(self.tokens)
        try:
            self.match(expected, actual, "")
            return True
        except Mismatch:
            self.tokens = tokens
            return False

    def match_unordered(self, expected: List[Json], actual: List[Any], where: str) -> None:
        if len(expected) != len(actual):
            raise Mismatch(f"{where}: {actual!r}, recorded {len(expected)} items {expected!r}"[:600])
        left = list(actual)
        for item in expected:
            at = next((i for i, a in enumerate(left) if self.tried(item, a)), None)
            if at is None:
                raise Mismatch(f"{where}: none of {left!r} is {item!r}"[:600])
            left.pop(at)

    # The keyspace.

    def actual_keyspace(self) -> List[Tuple[bytes, bytes, bool, Any]]:
        keys = self.raw.execute_command("KEYS", "*", **{NEVER_DECODE: True})
        pipe = self.raw.pipeline(transaction=False)
        for key in keys:
            pipe.execute_command("TYPE", key, **{NEVER_DECODE: True})
            pipe.execute_command("PTTL", key, **{NEVER_DECODE: True})
        kinds = pipe.execute()
        reads = {
            b"string": ("GET",),
            b"list": ("LRANGE", 0, -1),
            b"set": ("SMEMBERS",),
            b"zset": ("ZRANGE", 0, -1, "WITHSCORES"),
            b"hash": ("HGETALL",),
            b"stream": ("XRANGE", "-", "+"),
        }
        pipe = self.raw.pipeline(transaction=False)
        for key, kind in zip(keys, kinds[::2]):
            read = reads.get(kind, ("EXISTS",))
            pipe.execute_command(read[0], key, *read[1:], **{NEVER_DECODE: True})
        contents = pipe.execute()
        return [
            (key, kind, pttl >= 0, value)
            for key, kind, pttl, value in zip(keys, kinds[::2], kinds[1::2], contents)
            if kind != b"none"
        ]

    def check_keyspace(self, where: str) -> None:
        actual = self.actual_keyspace()
        for entry in self.keyspace.values():

            def fits(found: Tuple[bytes, bytes, bool, Any], entry: Json = entry) -> bool:
                key, kind, expires, value = found
                if kind.decode() != entry["type"] or expires != entry.get("ttl", False):
                    return False
                recorded = entry["value"]
                if kind in (b"hash", b"zset"):
                    value = [value[i : i + 2] for i in range(0, len(value), 2)]
                if kind in (b"hash", b"zset", b"set"):
                    recorded = {"unordered": recorded}
                return self.tried([entry["key"], recorded], [key, value])

            at = next((i for i, found in enumerate(actual) if fits(found)), None)
            if at is None:
                raise Mismatch(f"{where}: the keyspace holds no {json.dumps(entry)}; it holds {actual!r}"[:2000])
            actual.pop(at)
        if actual:
            raise Mismatch(f"{where}: keys the recording does not hold: {actual!r}"[:2000])

    def apply(self, changes: Json) -> None:
        for entry in changes.get("set", []):
            self.keyspace[json.dumps(entry["key"])] = entry
        for key in changes.get("del", []):
            del self.keyspace[json.dumps(key)]

    # Steps.

    def step(self, i: int, step: Json) -> bool:
        """Replays step `i`; False when the recording ends there."""
        where = f"step {i}"
        if "stop" in step:
            return False
        if "wait" in step:
            self.wait(step["wait"])
            return True
        if "script" in step:
            script = SCRIPTS[step["script"]]
            keys = [self.sent(k).decode() for k in step["keys"]]
            args = [self.sent(a) for a in step["args"]]
            call, reply = self.call(script, keys, args)
            CALLED.add(script.name)
            where = f"{where} ({script.name})"
        else:
            command = [self.sent(a) for a in step["command"]]
            try:
                reply = self.raw.execute_command(*command, **{NEVER_DECODE: True})
            except redis.exceptions.ResponseError as err:
                reply = err
            where = f"{where} ({command[0].decode()})"
        self.replies[i] = reply
        self.now_ms = self.server_ms()
        self.match(step["reply"], reply, f"{where}: the reply")
        self.apply(step.get("keyspace", {}))
        if not step.get("pipelined", False):
            self.check_keyspace(f"{where}: after it")
        return True

    def wait(self, wait: Json) -> None:
        if "gone" in wait:
            key = self.sent(wait["gone"])
            poll(lambda: self.raw.execute_command("EXISTS", key) == 0, f"{key!r} expiring", 60)
        else:
            until = self.server_ms() + wait["server_ms"]
            poll(lambda: self.server_ms() >= until, f"the server's clock at {until}", 60)


MINUTE_LEFT_MS = 15_000
"""What a scenario marked `within_one_minute` is given of a minute of the server's clock:
it writes per-minute slots, one only if it ends in the minute it began."""


def replay(client: redis.Redis, path: Path, functions: bool = False) -> None:
    recording = json.loads(path.read_text())
    run = Replay(client, functions)
    try:
        if recording.get("within_one_minute", False):
            poll(lambda: run.server_ms() % 60_000 <= 60_000 - MINUTE_LEFT_MS, "a minute starting", 60)
        for i, step in enumerate(recording["steps"]):
            if not run.step(i, step):
                break
    finally:
        run.raw.close()


def waits(path: Path) -> bool:
    return any("wait" in step for step in json.loads(path.read_text())["steps"])


@pytest.mark.parametrize("path", scenario_files(), ids=lambda p: p.stem)
def test_scenario(r: redis.Redis, path: Path) -> None:
    replay(r, path)


@pytest.mark.parametrize("path", [p for p in scenario_files() if not waits(p)], ids=lambda p: p.stem)
def test_scenario_through_functions(r: redis.Redis, path: Path) -> None:
    """The same calls through the Functions library (FCALL): the same replies. (The
    scenarios that wait for time run once, above.)"""
    replay(r, path, functions=True)


def test_the_scenarios_call_every_script() -> None:
    recorded: Set[str] = set()
    for path in scenario_files():
        recorded |= {s["script"] for s in json.loads(path.read_text())["steps"] if "script" in s}
    missing = sorted(set(SCRIPTS) - recorded)
    assert not missing, f"{len(missing)} scripts no scenario calls: {missing}"
