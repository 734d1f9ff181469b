"""The input contract of every script, driven by the generated catalogue: each value a
header refuses is refused here before any I/O with the code the script answers, and the
script answers that code itself to a raw call of the same value, leaving the keyspace as
it was. A new script is covered the day it lands."""

from __future__ import annotations

import inspect
import math
from datetime import timedelta
from typing import Any, Callable, Iterator, List, Tuple, cast

import pytest
import redis

import redis_patterns
from redis_patterns import InvalidInput, Param, Script

from .conftest import dump

HOUR = 3_600_000


def valid(param: Param) -> Any:
    """A value the parameter accepts: an hour for a duration where the header allows it."""
    if param.choices:
        return param.choices[0]
    if param.length is not None:
        return "x" * max(param.length[0], 1)
    if param.hex_digits is not None:
        return "0" * param.hex_digits
    low = param.low if param.low is not None else 0
    high = param.high if param.high is not None else 2**63 - 1
    if param.kind == "ms":
        return max(low, min(HOUR, high))
    if param.kind in ("int", "uint"):
        return min(max(low, 1), high)
    return {"float": 1.5, "bool": True, "json": {}, "bytes": b"x"}.get(param.kind, "x")


def fewest(param: Param) -> int:
    """How many values a valid call gives: the fewest the parameter takes, at least one."""
    if not param.variadic:
        return 1
    return max(param.least, 0 if param.most == 0 else 1)


def bad_values(param: Param) -> Iterator[Tuple[str, Any, bytes]]:
    """(case, a Python value the header refuses, the raw text of a refused value)."""
    if param.kind in ("int", "uint", "ms"):
        low = param.low if param.low is not None else -(2**63)
        high = param.high if param.high is not None else 2**63 - 1
        yield "above the range", high + 1, str(high + 1).encode()
        if low > -(2**63):
            yield "below the range", low - 1, str(low - 1).encode()
        for odd in (b"007", b"+5", b" 5", b"1e3", b"1.5", b"0x10", b"-0", b"abc"):
            yield f"text {odd!r}", "5", odd
        yield "a bool", True, b"true"
    if param.kind == "ms":
        yield "a negative timedelta", timedelta(milliseconds=-1), b"-1"
    if param.kind == "float":
        yield "infinite", math.inf, b"inf"
        yield "not a number", math.nan, b"NaN"
        for odd in (b".5", b"5.", b"+5", b"1e400", b"0x10"):
            yield f"text {odd!r}", "1.5", odd
    if param.kind == "bool":
        yield "an integer", 1, b"2"
    if param.non_empty:
        yield "empty", b"" if param.kind == "bytes" else "", b""
    if param.choices:
        yield "not a choice", "nope", b"nope"
    if param.length is not None:
        least, most = param.length
        if least > 0:
            yield "too short", "x" * (least - 1), b"x" * (least - 1)
        if most is not None:
            yield "too long", "x" * (most + 1), b"x" * (most + 1)
    if param.hex_digits is not None:
        yield "not hex", "g" * param.hex_digits, b"g" * param.hex_digits
        yield "too many digits", "0" * (param.hex_digits + 1), b"0" * (param.hex_digits + 1)


def function_of(script: Script) -> Callable[..., redis_patterns.Call[Any]]:
    family, op = script.name.split("/")
    module = getattr(redis_patterns, family)
    function = getattr(module, op) if hasattr(module, op) else getattr(module, op + "_")
    return cast(Callable[..., redis_patterns.Call[Any]], function)


def key_arguments(script: Script) -> List[Any]:
    """Key names for the generated function of `script`, all in one slot."""
    params = list(inspect.signature(function_of(script)).parameters.values())
    keys = params[: len(params) - len(script.args)]
    return [["{t}:k"] if "Sequence" in str(p.annotation) else "{t}:k" for p in keys]


def valid_values(script: Script) -> List[Any]:
    return [[valid(p)] * fewest(p) if p.variadic else valid(p) for p in script.args]


def raw_call(script: Script) -> Tuple[List[str], List[bytes]]:
    """Keys and arguments of a call every argument check of the script accepts."""
    args: List[bytes] = []
    for param in script.args:
        args.extend(param.encode(valid(param)) for _ in range(fewest(param)))
    return [f"{{t}}:k{i}" for i in range(script.keys[0])], args


def offset_of(script: Script, name: str) -> int:
    """Where the (first) value of argument `name` stands in a raw call's ARGV."""
    offset = 0
    for param in script.args:
        if param.name == name:
            return offset
        offset += fewest(param)
    raise KeyError(name)


CASES = [
    pytest.param(script, param, case, value, raw, id=f"{script.name}:{param.name}:{case}")
    for script in redis_patterns.SCRIPTS
    for param in script.args
    for case, value, raw in bad_values(param)
]


@pytest.mark.parametrize("script, param, case, value, raw", CASES)
def test_a_refused_value_gets_the_scripts_code_before_any_io(
    r: redis.Redis, dead: redis.Redis, script: Script, param: Param, case: str, value: Any, raw: bytes
) -> None:
    values = valid_values(script)
    at = script.args.index(param)
    values[at] = [value] * fewest(param) if param.variadic else value
    with pytest.raises(InvalidInput) as refused:
        function_of(script)(*key_arguments(script), *values).run(dead)
    assert refused.value.code == param.code
    assert refused.value.script == script.name
    assert script.declares(param.code)

    # The script refuses the same value itself, and writes nothing.
    keys, args = raw_call(script)
    try:
        r.evalsha(script.sha1, len(keys), *keys, *args)
    except redis.exceptions.NoScriptError:
        r.script_load(script.source)
    except redis.exceptions.ResponseError:
        pass  # a valid call may still fail, later than the argument checks
    args[offset_of(script, param.name)] = raw
    before = dump(r)
    with pytest.raises(redis.exceptions.ResponseError) as answered:
        r.evalsha(script.sha1, len(keys), *keys, *args)
    assert str(answered.value).split(" ")[0] == param.code, str(answered.value)
    assert dump(r) == before


@pytest.mark.parametrize("script", redis_patterns.SCRIPTS, ids=lambda s: s.name)
def test_wrong_key_and_argument_counts_get_bad_args(r: redis.Redis, dead: redis.Redis, script: Script) -> None:
    assert script.declares("BAD_ARGS")
    keys, args = raw_call(script)
    r.script_load(script.source)
    before = dump(r)
    most = sum(p.most if p.variadic and p.most is not None else 1 for p in script.args)
    for k, a in [(keys[1:], args), (keys, args + [b"1"] * (most - len(args) + 1)), ([], [])]:
        with pytest.raises(redis.exceptions.ResponseError) as answered:
            r.evalsha(script.sha1, len(k), *k, *a)
        assert str(answered.value).startswith("BAD_ARGS "), str(answered.value)
    assert dump(r) == before
    # Here, the same counts are refused before any I/O.
    with pytest.raises(InvalidInput) as refused:
        script.call(keys[1:], args, lambda reply: reply).run(dead)
    assert refused.value.code == "BAD_ARGS"
    too_many = [*keys, *(f"{{t}}:x{i}" for i in range(1001))]
    with pytest.raises(InvalidInput) as refused:
        script.call(too_many, args, lambda reply: reply).run(dead)
    assert refused.value.code == "BAD_ARGS"


@pytest.mark.parametrize("script", redis_patterns.SCRIPTS, ids=lambda s: s.name)
def test_every_script_ships_as_generated(script: Script) -> None:
    import hashlib

    assert hashlib.sha1(script.source.encode()).hexdigest() == script.sha1
    assert script.declares("BAD_ARGS")
