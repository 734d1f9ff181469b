"""What the generated code calls: a script's contract (its arguments' rules, its key
templates, its reply type), and `Call`, which runs one script on a connection.

The generated modules hold the facts (every header, as data); this module holds the
rules that apply them, once.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import timedelta
from functools import lru_cache
from importlib import resources
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Generator,
    Generic,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    TypeVar,
    Union,
)

import redis.exceptions
from redis.client import NEVER_DECODE

from ._errors import InvalidInput, ScriptError, UnexpectedReply

if TYPE_CHECKING:
    import redis.asyncio
    import redis.asyncio.cluster
    import redis.cluster

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

Ms = Union[int, timedelta]
"""A duration: whole milliseconds, or a `timedelta` (rounded down to whole milliseconds)."""

Bytes = Union[bytes, bytearray, memoryview, str]
"""An opaque value: bytes as they are, or text sent as UTF-8."""

SyncClient = Union["redis.Redis", "redis.cluster.RedisCluster"]
"""A connection `Call.run` and `Batch.run` take."""

AsyncClient = Union["redis.asyncio.Redis", "redis.asyncio.cluster.RedisCluster"]
"""A connection `Call.run_async` and `Batch.run_async` take."""

NOSCRIPT_ATTEMPTS = 5
"""How many times one call loads its script (or the Functions library) and runs again
after the server answered that it lacks it: a flush can land between the load and the
call, but not this many times in a row unless something flushes continuously."""

_RAW = {NEVER_DECODE: True}
"""Replies as bytes whatever the client's ``decode_responses``: the reply types decide."""

_HEX = re.compile(rb"[0-9a-fA-F]*")


# The one rule for numbers, as every script reads its arguments.


def integer_from_text(text: str) -> Optional[int]:
    """The integer `text` spells by the scripts' one rule for integers, or None.

    Decimal digits with an optional leading ``-``, no leading zero, and no ``+``, space,
    fraction, exponent or hex; within 64 bits.

    >>> integer_from_text("-42")
    -42
    >>> [integer_from_text(t) for t in ("007", "+5", " 5", "1e3", "0x10", "-0", "")]
    [None, None, None, None, None, None, None]
    """
    digits = text[1:] if text.startswith("-") else text
    canonical = text == "0" or (
        digits != "" and digits[0] != "0" and all("0" <= c <= "9" for c in digits)
    )
    if not canonical:
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def float_from_text(text: str) -> Optional[float]:
    """The float `text` spells by the scripts' one rule for floats, or None.

    Decimal digits with an optional leading ``-``, then an optional fraction and an
    optional exponent (``e`` or ``E``, an optional sign, digits); no leading zero, no ``+``
    before the number, space, hex, ``inf`` or ``nan``; finite. Every finite float as
    Python prints it (``repr``) is read back exactly.

    >>> [float_from_text(t) for t in ("1e+20", "1.0E16", "1e-07", "-0.5")]
    [1e+20, 1e+16, 1e-07, -0.5]
    >>> [float_from_text(t) for t in ("NaN", "inf", " 5", "+5", ".5", "5.", "007", "1e400")]
    [None, None, None, None, None, None, None, None]
    """
    unsigned = text[1:] if text.startswith("-") else text
    mantissa, _, exponent = unsigned.replace("E", "e").partition("e")
    whole, dot, fraction = mantissa.partition(".")

    def digits(s: str) -> bool:
        return s != "" and all("0" <= c <= "9" for c in s)

    if not digits(whole) or (whole != "0" and whole[0] == "0"):
        return None
    if dot and not digits(fraction):
        return None
    if "e" in unsigned.lower() and not digits(exponent[1:] if exponent[:1] in ("+", "-") else exponent):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


# A script's contract.


@dataclass(frozen=True)
class Param:
    """An ``@arg`` line: how a value is checked and sent, and the code a bad one gets."""

    name: str
    kind: str
    code: str
    optional: bool = False
    variadic: bool = False
    least: int = 1
    most: Optional[int] = 1
    low: Optional[int] = None
    high: Optional[int] = None
    non_empty: bool = False
    choices: Optional[Tuple[str, ...]] = None
    length: Optional[Tuple[int, Optional[int]]] = None
    hex_digits: Optional[int] = None

    def encode(self, value: object) -> bytes:
        """The bytes sent for `value`; `ValueError` saying why the header refuses it."""
        if value is None:
            if self.optional:
                return b""
            raise ValueError("is required")
        kind = self.kind
        if kind in ("int", "uint"):
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"must be an integer, got {_shown(value)}")
            self._in_range(value, "an integer")
            return str(value).encode()
        if kind == "ms":
            if isinstance(value, timedelta):
                value = value // timedelta(milliseconds=1)
            elif not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"must be whole milliseconds (int) or a timedelta, got {_shown(value)}")
            self._in_range(value, "whole milliseconds")
            return str(value).encode()
        if kind == "float":
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                raise ValueError(f"must be a number, got {_shown(value)}")
            try:
                number = float(value)
            except OverflowError:
                raise ValueError(f"must be a finite number, got {value}") from None
            if not math.isfinite(number):
                raise ValueError(f"must be a finite number, got {number}")
            return repr(number).encode()
        if kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"must be True or False, got {_shown(value)}")
            return b"1" if value else b"0"
        if kind == "json":
            try:
                data = json.dumps(value, separators=(",", ":")).encode()
            except (TypeError, ValueError) as err:
                raise ValueError(f"does not serialise to JSON: {err}") from None
        elif kind == "string":
            if not isinstance(value, str):
                raise ValueError(f"must be text (str), got {_shown(value)}")
            if self.choices is not None and value not in self.choices:
                options = ", ".join(f"`{c}`" for c in self.choices)
                raise ValueError(f"must be one of {options}, got {value[:32]!r}")
            data = _utf8(value)
        else:
            data = _as_bytes(value)
        self._check_bytes(data)
        return data

    def _in_range(self, value: int, unit: str) -> None:
        low = -(2**63) if self.low is None else self.low
        high = 2**63 - 1 if self.high is None else self.high
        if not low <= value <= high:
            raise ValueError(f"must be {unit} from {_bound(low)} to {_bound(high)}, got {value}")

    def _check_bytes(self, data: bytes) -> None:
        size = len(data)
        if self.non_empty and size == 0:
            raise ValueError("must not be empty")
        if self.length is not None:
            least, most = self.length
            if size < least or (most is not None and size > most):
                bounds = f"from {least} to {most} bytes long" if most is not None else f"{least} bytes long at least"
                raise ValueError(f"must be {bounds}, got {size}")
        if self.hex_digits is not None:
            if size != self.hex_digits or _HEX.fullmatch(data) is None:
                raise ValueError(f"must be {self.hex_digits} hex digits, got {data[:32]!r}")


class Script:
    """One script of the package: its name, file, SHA1, Functions-library name, and the
    contract of its keys and arguments. Every generated module has one per script."""

    __slots__ = ("name", "path", "sha1", "function", "read_only", "keys", "key_names", "args", "errors", "heads")

    def __init__(
        self,
        name: str,
        *,
        path: str,
        sha1: str,
        function: str,
        read_only: bool,
        keys: Tuple[int, Optional[int]],
        key_names: Tuple[str, ...],
        args: Tuple[Param, ...],
        errors: Tuple[str, ...],
    ) -> None:
        self.name = name
        self.path = path
        self.sha1 = sha1
        self.function = function
        self.read_only = read_only
        self.keys = keys
        self.key_names = key_names
        self.args = args
        self.errors = errors
        suffix = "_RO" if read_only else ""
        # What a call's command starts with: by EVALSHA, and by FCALL.
        self.heads = (("EVALSHA" + suffix, sha1), ("FCALL" + suffix, function))

    def __repr__(self) -> str:
        return f"<Script {self.name}>"

    @property
    def source(self) -> str:
        """The script's text, as shipped in the package (``redis_patterns/scripts/``)."""
        return _package_text(self.path)

    def declares(self, code: str) -> bool:
        """Whether `code` is one of the error codes this script declares."""
        return code in self.errors

    def invalid(self, code: str, what: str, why: str) -> InvalidInput:
        return InvalidInput(self.name, code, what, why)

    def encode(self, *values: object) -> List[bytes]:
        """Every argument, in ``ARGV`` order, checked against its ``@arg`` line (the
        variadic one given as a sequence): the first one refused raises `InvalidInput`
        with the code the script would answer."""
        out: List[bytes] = []
        for param, value in zip(self.args, values):
            if not param.variadic:
                try:
                    out.append(param.encode(value))
                except ValueError as err:
                    raise self.invalid(param.code, param.name, str(err)) from None
                continue
            items = many(self, param.name, value, "BAD_ARGS")
            if len(items) < param.least or (param.most is not None and len(items) > param.most):
                raise self.invalid("BAD_ARGS", param.name, f"takes {_count_words(param.least, param.most)} values, got {len(items)}")
            for i, item in enumerate(items):
                try:
                    out.append(param.encode(item))
                except ValueError as err:
                    raise self.invalid(param.code, param.name, f"value {i} {err}") from None
        return out

    def call(self, keys: List[str], args: List[bytes], decode: Callable[[Any], T]) -> Call[T]:
        """The call of this script with `keys` (each checked to be a key name) and `args`
        (from `encode`), whose reply `decode` reads."""
        least, most = self.keys
        if len(keys) < least or (most is not None and len(keys) > most):
            raise self.invalid("BAD_ARGS", "keys", f"takes {_count_words(least, most)} keys, got {len(keys)}")
        for key in keys:
            if not isinstance(key, str) or key == "":
                raise self.invalid("BAD_KEYS", "keys", f"must be non-empty key names (str), got {_shown(key)}")
        return Call(self, keys, args, decode)

    def error(self, err: redis.exceptions.ResponseError) -> Exception:
        """A script's declared code as `ScriptError`; any other error as it is."""
        code, _, message = str(err).partition(" ")
        if self.declares(code):
            return ScriptError(self.name, code, message)
        return err


def many(script: Script, what: str, values: object, code: str = "BAD_KEYS") -> Sequence[Any]:
    """`values` as the sequence of a variadic key or argument: a str or bytes, which would
    be read as its characters, is refused."""
    if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Sequence):
        raise script.invalid(code, what, f"must be a sequence such as a list, got {_shown(values)}")
    return values


# Key templates.


class Text(NamedTuple):
    """Literal text of a key template."""

    text: str


class Value(NamedTuple):
    """``<name>``: the value of a template's parameter, as it is."""

    name: str


class Tag(NamedTuple):
    """``{…}``: the cluster hash tag, of literal text and values."""

    parts: Tuple[Union[Text, Value], ...]


class Form:
    """One form of a key's name template (``{<name>}:waiting``), as the header writes it.

    Each ``<param>`` is the value as it is; the ``{…}`` group is the cluster hash tag: its
    content, values put in, is wrapped in ``{}`` unless it already holds a hash tag, and
    then stands as it is. An empty value, a group content with a ``}`` but no hash tag, or
    one whose hash tag begins in one value and ends in another, is refused.
    """

    __slots__ = ("family", "text", "parts", "params")

    def __init__(self, family: str, text: str, parts: Tuple[Union[Text, Value, Tag], ...]) -> None:
        self.family = family
        self.text = text
        self.parts = parts
        names: List[str] = []
        for part in parts:
            for inner in part.parts if isinstance(part, Tag) else (part,):
                if isinstance(inner, Value) and inner.name not in names:
                    names.append(inner.name)
        self.params = tuple(names)

    def __repr__(self) -> str:
        return f"<Form {self.text}>"

    def build(self, **values: object) -> str:
        """The key's name for these values of its parameters (`params`)."""
        return self.name(self.family, values)

    def name(self, script: str, values: Mapping[str, object]) -> str:
        """The key's name for `values`; `InvalidInput` (``BAD_KEYS``, for `script`) when
        one is missing or refused."""
        texts: Dict[str, str] = {}
        for param in self.params:
            value = values.get(param)
            if isinstance(value, int) and not isinstance(value, bool):
                value = str(value)
            if not isinstance(value, str) or value == "":
                why = f"must be non-empty text for `{self.text}`, got {_shown(value)}"
                raise InvalidInput(script, "BAD_KEYS", param, why)
            texts[param] = value
        key = ""
        for part in self.parts:
            if isinstance(part, Text):
                key += part.text
            elif isinstance(part, Value):
                key += texts[part.name]
            else:
                key += self._group(script, part, texts)
        return key

    def _group(self, script: str, tag: Tag, texts: Mapping[str, str]) -> str:
        content = ""
        spans: List[Tuple[int, int, str]] = []
        for part in tag.parts:
            if isinstance(part, Text):
                content += part.text
            else:
                start = len(content)
                content += texts[part.name]
                spans.append((start, len(content), part.name))
        found = hash_tag_span(content)
        if found is not None:
            open_at, close_at = found
            if any(start <= open_at and close_at < end for start, end, _ in spans):
                return content
            what = next((name for start, end, name in spans if start <= open_at < end), "key")
            why = (
                f"`{content}` holds a hash tag that begins in one value and ends in another; "
                "put a hash tag wholly inside one value, or no braces at all"
            )
            raise InvalidInput(script, "BAD_KEYS", what, why)
        if "}" in content:
            what = next((name for _, _, name in spans if "}" in texts[name]), "key")
            why = f"`{content}` holds a `}}` but no hash tag; add one, as in `{{{content}}}`, or drop the `}}`"
            raise InvalidInput(script, "BAD_KEYS", what, why)
        return "{" + content + "}"


def hash_tag_span(key: str) -> Optional[Tuple[int, int]]:
    """Where Redis Cluster's hash tag of `key` stands: its ``{`` and ``}``, if the text
    between them is not empty."""
    open_at = key.find("{")
    if open_at < 0:
        return None
    close_at = key.find("}", open_at + 1)
    if close_at <= open_at + 1:
        return None
    return open_at, close_at


def rounds(
    script: Script,
    forms: Tuple[Form, ...],
    values: Mapping[str, object],
    each: Mapping[str, object],
) -> List[str]:
    """The items of a variadic key: each of its `forms` in turn, once per round, where
    `each` gives every per-round parameter one value per round (all of one length)."""
    sequences = {name: many(script, name, seq) for name, seq in each.items()}
    lengths = {len(seq) for seq in sequences.values()}
    if len(lengths) != 1:
        raise script.invalid("BAD_ARGS", ", ".join(sequences), "must all hold one value per item")
    keys: List[str] = []
    for i in range(lengths.pop()):
        round_values = dict(values)
        round_values.update({name: seq[i] for name, seq in sequences.items()})
        keys.extend(form.name(script.name, round_values) for form in forms)
    return keys


def check_names(family: str, forms: Tuple[Form, ...], values: Mapping[str, object]) -> Dict[Form, str]:
    """Builds each of `forms` from `values`: a family's settings are checked when it is
    built, not on its first call, and the keys they name are built once."""
    return {form: form.name(family, values) for form in forms}


# Replies, decoded as the `@return` line says.


def _unexpected(what: str, reply: object) -> UnexpectedReply:
    return UnexpectedReply(f"expected {what}, got {reply!r}"[:300])


def _nil(reply: object) -> None:
    if reply is not None:
        raise _unexpected("nil", reply)


def _bool(reply: object) -> bool:
    # Lua's false reaches the client as nil.
    if reply is None or reply is False or reply == 0:
        return False
    if reply is True or reply == 1:
        return True
    raise _unexpected("1 or 0", reply)


def _int(reply: object) -> int:
    if type(reply) is int:  # not a bool, whose type is bool
        return reply
    raise _unexpected("an integer", reply)


def _uint(reply: object) -> int:
    value = _int(reply)
    if value < 0:
        raise _unexpected("a count (never negative)", reply)
    return value


def _decimal(reply: object) -> int:
    if isinstance(reply, bytes):
        value = integer_from_text(reply.decode("ascii", "replace"))
        if value is not None:
            return value
    if isinstance(reply, int) and not isinstance(reply, bool):
        return reply
    raise _unexpected("a decimal integer", reply)


def _float(reply: object) -> float:
    if isinstance(reply, bytes):
        text = reply.decode("ascii", "replace")
        value = float_from_text(text)
        if value is not None:
            return value
        # Redis spells the infinite scores of a sorted set so.
        if text in ("inf", "+inf", "-inf"):
            return float(text)
    if isinstance(reply, float):
        return reply
    if isinstance(reply, int) and not isinstance(reply, bool):
        return float(reply)
    raise _unexpected("a number", reply)


def _str(reply: object) -> str:
    if isinstance(reply, bytes):
        try:
            return reply.decode("utf-8")
        except UnicodeDecodeError:
            raise _unexpected("UTF-8 text", reply) from None
    if isinstance(reply, str):
        return reply
    raise _unexpected("text", reply)


def _bytes(reply: object) -> bytes:
    if isinstance(reply, bytes):
        return reply
    raise _unexpected("bytes", reply)


NIL: Callable[[Any], None] = _nil
BOOL: Callable[[Any], bool] = _bool
INT: Callable[[Any], int] = _int
UINT: Callable[[Any], int] = _uint
DECIMAL: Callable[[Any], int] = _decimal
FLOAT: Callable[[Any], float] = _float
STR: Callable[[Any], str] = _str
BYTES: Callable[[Any], bytes] = _bytes


def opt(decode: Callable[[Any], T]) -> Callable[[Any], Optional[T]]:
    """`decode`, or None for a nil reply."""
    return lambda reply: None if reply is None else decode(reply)


def list_of(decode: Callable[[Any], T]) -> Callable[[Any], List[T]]:
    """An array, each item read by `decode`."""

    def read(reply: Any) -> List[T]:
        if not isinstance(reply, list):
            raise _unexpected("an array", reply)
        return [decode(item) for item in reply]

    return read


def tuple_of(*decodes: Callable[[Any], Any]) -> Callable[[Any], Tuple[Any, ...]]:
    """An array of exactly these items, each read by its own decoder."""

    def read(reply: Any) -> Tuple[Any, ...]:
        if not isinstance(reply, list) or len(reply) != len(decodes):
            raise _unexpected(f"an array of {len(decodes)}", reply)
        return tuple([decode(item) for decode, item in zip(decodes, reply)])

    return read


# Running a call: the steps are written once, as a plan; a sync and an async driver
# perform them on a connection.


class Execute(NamedTuple):
    """Send one command; the reply, or its error reply as an exception object."""

    args: Tuple[Any, ...]


class LoadScript(NamedTuple):
    """``SCRIPT LOAD`` (every primary of a cluster); raises when the server refuses."""

    script: Script


class LoadFunctions(NamedTuple):
    """``FUNCTION LOAD REPLACE`` of the package's library (every primary of a cluster)."""


class RefreshSlots(NamedTuple):
    """Read a cluster's slot map again (after ``MOVED``: a resharding moved a slot)."""


class RoundTrip(NamedTuple):
    """Send these commands in one round trip to the node of `route` (a key), as a plain
    pipeline; every reply, error replies as exception objects."""

    commands: List[Tuple[Any, ...]]
    route: Optional[str]


Request = Union[Execute, LoadScript, LoadFunctions, RefreshSlots, RoundTrip]
Plan = Generator[Request, Any, T]


class Call(Generic[T_co]):
    """One script call, checked and ready to send: built by the generated functions and
    family methods, which check every key and argument against the header first. Building
    it sends nothing; run it with `run` (`Redis`, `RedisCluster`), `run_async`
    (`redis.asyncio`), or add it to a `Batch`.
    """

    __slots__ = ("script", "keys", "args", "decode")

    def __init__(self, script: Script, keys: List[str], args: List[bytes], decode: Callable[[Any], T_co]) -> None:
        self.script = script
        self.keys = keys
        self.args = args
        self.decode = decode

    def __repr__(self) -> str:
        return f"<Call {self.script.name} keys={self.keys!r}>"

    def key(self, name: str) -> str:
        """The key the call passes as the header's `@key name` (a fixed key: the
        variadic one, if any, is the last)."""
        return self.keys[self.script.key_names.index(name)]

    def command(self, functions: bool = False) -> Tuple[Any, ...]:
        """The command that runs the call: ``EVALSHA`` (``EVALSHA_RO`` for a read-only
        script), or with `functions`, ``FCALL`` (``FCALL_RO``) of its function."""
        return (*self.script.heads[functions], len(self.keys), *self.keys, *self.args)

    def result(self, reply: Any) -> T_co:
        """The decoded reply, or the error reply raised (a declared code as `ScriptError`)."""
        if isinstance(reply, redis.exceptions.ResponseError):
            raise self.script.error(reply) from None
        return self.decode(reply)

    def plan(self, functions: bool) -> Plan[T_co]:
        """Sends the call; if the server lacks the script (``NOSCRIPT``) or, for ``FCALL``,
        the library, loads it and sends the call again, up to `NOSCRIPT_ATTEMPTS` times.
        A call that found nothing to run did not run, so nothing runs twice."""
        command = self.command(functions)
        reply = yield Execute(command)
        return (yield from self._after(command, reply, functions))

    def _after(self, command: Tuple[Any, ...], reply: Any, functions: bool) -> Plan[T_co]:
        """`plan` from the first reply on."""
        for _ in range(NOSCRIPT_ATTEMPTS):
            if not _is_missing(reply, functions):
                break
            yield LoadFunctions() if functions else LoadScript(self.script)
            reply = yield Execute(command)
        return self.result(reply)

    # `run` and `run_async` send the first command themselves and hand any error reply to
    # `_after`: the same plan, without a generator's cost on a call that succeeds.

    def run(self, client: SyncClient, *, functions: bool = False) -> T_co:
        """Runs the call on a sync connection (`redis.Redis`, `redis.cluster.RedisCluster`)
        with ``EVALSHA``, or with `functions` through the package's Functions library
        (``FCALL``; the library is loaded where the server lacks it)."""
        command = self.command(functions)
        con: Any = client  # redis-py leaves execute_command untyped
        try:
            reply = con.execute_command(*command, **_RAW)
        except redis.exceptions.ResponseError as err:
            return drive(self._after(command, err, functions), client)
        return self.decode(reply)

    async def run_async(self, client: AsyncClient, *, functions: bool = False) -> T_co:
        """`run`, on an asyncio connection (`redis.asyncio.Redis`, its `RedisCluster`)."""
        command = self.command(functions)
        con: Any = client
        try:
            reply = await con.execute_command(*command, **_RAW)
        except redis.exceptions.ResponseError as err:
            return await drive_async(self._after(command, err, functions), client)
        return self.decode(reply)


def _is_missing(reply: object, functions: bool) -> bool:
    if functions:
        return isinstance(reply, redis.exceptions.ResponseError) and str(reply).startswith("Function not found")
    return isinstance(reply, redis.exceptions.NoScriptError)


def drive(plan: Plan[T], client: Any) -> T:
    """Performs `plan`'s requests on a sync connection, in order."""
    reply: Any = None
    while True:
        try:
            request = plan.send(reply)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if isinstance(request, Execute):
            try:
                reply = client.execute_command(*request.args, **_RAW)
            except redis.exceptions.ResponseError as err:
                reply = err
        elif isinstance(request, LoadScript):
            _loaded(request.script, client.script_load(request.script.source))
        elif isinstance(request, LoadFunctions):
            client.function_load(functions_library(), replace=True)
        elif isinstance(request, RefreshSlots):
            client.nodes_manager.initialize()
        else:
            reply = _round_trip(client, request)


async def drive_async(plan: Plan[T], client: Any) -> T:
    """Performs `plan`'s requests on an asyncio connection, in order."""
    reply: Any = None
    while True:
        try:
            request = plan.send(reply)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        if isinstance(request, Execute):
            try:
                reply = await client.execute_command(*request.args, **_RAW)
            except redis.exceptions.ResponseError as err:
                reply = err
        elif isinstance(request, LoadScript):
            _loaded(request.script, await client.script_load(request.script.source))
        elif isinstance(request, LoadFunctions):
            await client.function_load(functions_library(), replace=True)
        elif isinstance(request, RefreshSlots):
            await client.nodes_manager.initialize()
        else:
            reply = await _round_trip_async(client, request)


def _loaded(script: Script, sha1: object) -> None:
    if isinstance(sha1, bytes):
        sha1 = sha1.decode()
    if sha1 != script.sha1:
        raise UnexpectedReply(f"{script.path}: SCRIPT LOAD answered {sha1!r}, not the SHA1 generated for it")


def _is_cluster(client: Any) -> bool:
    return hasattr(client, "get_node_from_key")


def _round_trip(client: Any, request: RoundTrip) -> List[Any]:
    if _is_cluster(client):
        node = client.get_node_from_key(request.route) if request.route else client.get_default_node()
        client = client.get_redis_connection(node)
    pipe = client.pipeline(transaction=False)
    for command in request.commands:
        pipe.execute_command(*command, **_RAW)
    return list(pipe.execute(raise_on_error=False))


async def _round_trip_async(client: Any, request: RoundTrip) -> List[Any]:
    if not _is_cluster(client):
        pipe = client.pipeline(transaction=False)
        for command in request.commands:
            pipe.execute_command(*command, **_RAW)
        return list(await pipe.execute(raise_on_error=False))
    # redis.asyncio's cluster pipeline refuses SCRIPT LOAD; a batch is of one hash slot,
    # so its round trip goes straight to that slot's node.
    node = client.get_node_from_key(request.route) if request.route else client.get_default_node()
    connection = node.acquire_connection()
    try:
        await connection.connect()
        await connection.send_packed_command(connection.pack_commands(request.commands))
        replies: List[Any] = []
        for _ in request.commands:
            try:
                replies.append(await connection.read_response(disable_decoding=True))
            except redis.exceptions.ResponseError as err:
                replies.append(err)
        return replies
    except BaseException:
        await connection.disconnect()
        raise
    finally:
        if hasattr(node, "release"):
            node.release(connection)
        else:  # redis-py before 7 puts a node's connections back in its queue itself
            node._free.append(connection)


@lru_cache(maxsize=None)
def _package_text(path: str) -> str:
    return resources.files(__package__).joinpath(path).read_text(encoding="utf-8")


def functions_library() -> str:
    """The package's Redis Functions library (``redis_patterns/functions.lua``), as
    ``FUNCTION LOAD`` takes it: every script as a function, named for the package version."""
    return _package_text("functions.lua")


# Messages.


def _bound(n: int) -> str:
    return {2**63 - 1: "2^63-1", -(2**63): "-2^63"}.get(n, str(n))


def _count_words(least: int, most: Optional[int]) -> str:
    if most is None:
        return f"at least {least}"
    return str(least) if least == most else f"from {least} to {most}"


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"must be valid text, got {_shown(text)}") from None


def _as_bytes(value: object) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return _utf8(value)
    raise ValueError(f"must be bytes or text, got {_shown(value)}")
