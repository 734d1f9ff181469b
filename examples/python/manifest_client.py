#!/usr/bin/env python3
"""Calls redis-patterns scripts from Python, with the manifest as the only manual.

The manifest lists every script with its keys, arguments, types, rules and error codes.
This client checks each call against it before sending anything, as the Rust API does,
then runs the script with EVALSHA (loading it on NOSCRIPT). It validates the manifest
against its JSON Schema, then calls three patterns: an identity lock's release, a
timeline's add and an hourly statistic's update, and shows a bad call refused twice:
here, and by the script itself. Last, it loads the Functions library and calls the
lock's release through FCALL.

    python3 examples/python/manifest_client.py [<folder>] [<redis-url>]

Without a folder it reads the files of the repository it is in: generated/manifest.json,
schema/manifest.schema.json, generated/functions.lua and scripts/<family>/<op>.lua. With
one, it reads the files `cargo run --example export -- <folder>` wrote there (what an app
outside the repository ships): manifest.json, manifest.schema.json, functions.lua and
scripts/. An argument with `://` in it is the URL; without one, it starts a throwaway
redis-server (REDIS_SERVER_BIN, or the one on PATH) on a Unix socket and stops it at the
end. Needs redis-py and jsonschema.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import jsonschema
import redis

# The one rule for integers: decimal digits, an optional leading '-', no leading zero.
INTEGER = re.compile(r"^(0|-?[1-9][0-9]*)$")
# A float as the scripts read it: decimal, with an optional fraction and exponent, as
# Python, JavaScript, Java, Go and C print floats (1e+16, 1e-07, 1.0E16): repr() passes.
FLOAT = re.compile(r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$")
HEX = re.compile(r"^[0-9a-fA-F]*$")
BOUNDS = {"int": (-(2**63), 2**63 - 1), "uint": (0, 2**63 - 1), "ms": (0, 2**63 - 1)}


class BadCall(ValueError):
    """A call the script would refuse: its code is the one the script would answer."""

    def __init__(self, code, message):
        super().__init__(f"{code} {message}")
        self.code = code


class Files:
    """Where the manifest, its schema, the Functions library and the scripts are: in a
    folder the export example wrote, or in this file's repository. Either way, a script's
    `path` in the manifest (scripts/<family>/<op>.lua) is relative to `root`."""

    def __init__(self, folder=None):
        if folder is None:
            # This file is examples/python/manifest_client.py in the repository.
            self.root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            self.manifest = os.path.join(self.root, "generated", "manifest.json")
            self.schema = os.path.join(self.root, "schema", "manifest.schema.json")
            self.functions = os.path.join(self.root, "generated", "functions.lua")
        else:
            self.root = folder
            self.manifest = os.path.join(folder, "manifest.json")
            self.schema = os.path.join(folder, "manifest.schema.json")
            self.functions = os.path.join(folder, "functions.lua")


class Patterns:
    def __init__(self, client, files):
        with open(files.manifest) as f:
            manifest = json.load(f)
        with open(files.schema) as f:
            jsonschema.validate(manifest, json.load(f))
        self.client = client
        self.files = files
        self.scripts = {s["name"]: s for s in manifest["scripts"]}

    def call(self, name, keys=(), args=()):
        script = self.scripts[name]
        keys, args = [str(k) for k in keys], [str(a) for a in args]
        check_counts(script, keys, args)
        for param, value in spread(script["args"], args):
            check_value(param, value)
        try:
            return self.client.evalsha(script["sha1"], len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            with open(os.path.join(self.files.root, script["path"])) as f:
                self.client.script_load(f.read())
            return self.client.evalsha(script["sha1"], len(keys), *keys, *args)


def count_range(params):
    low = sum(p["count"]["min"] for p in params)
    maxes = [p["count"]["max"] for p in params]
    return low, None if None in maxes else sum(maxes)


def check_counts(script, keys, args):
    for what, params, given in (("keys", script["keys"], keys), ("arguments", script["args"], args)):
        low, high = count_range(params)
        if len(given) < low or (high is not None and len(given) > high):
            raise BadCall("BAD_ARGS", f"{script['name']} takes {low} to {high} {what}, got {len(given)}")


def spread(params, values):
    """Each value with the parameter it belongs to: one each, the rest to the variadic."""
    fixed = [p for p in params if not p["variadic"]]
    pairs = list(zip(fixed, values))
    if params and params[-1]["variadic"]:
        pairs += [(params[-1], v) for v in values[len(fixed):]]
    return pairs


def check_value(param, value):
    code, kind, rule = "BAD_" + param["name"].upper(), param["type"], param["rule"]
    if value == "" and param["optional"]:
        return
    if kind in BOUNDS:
        low, high = BOUNDS[kind]
        if rule["kind"] == "range":
            low, high = rule["min"], rule["max"]
        if not INTEGER.match(value) or not low <= int(value) <= high:
            raise BadCall(code, f"{param['name']} must be an integer from {low} to {high}, got {value!r}")
    elif kind == "float":
        if not FLOAT.match(value) or not math.isfinite(float(value)):
            raise BadCall(code, f"{param['name']} must be a finite number, got {value!r}")
    elif kind == "bool" and value not in ("0", "1"):
        raise BadCall(code, f"{param['name']} must be 1 or 0, got {value!r}")
    if rule["kind"] == "non_empty" and value == "":
        raise BadCall(code, f"{param['name']} must not be empty")
    if rule["kind"] == "one_of" and value not in rule["options"]:
        raise BadCall(code, f"{param['name']} must be one of {rule['options']}, got {value!r}")
    size = len(value.encode())
    if rule["kind"] == "length" and not (
        rule["min"] <= size and (rule["max"] is None or size <= rule["max"])
    ):
        raise BadCall(code, f"{param['name']} must be from {rule['min']} to {rule['max']} bytes long")
    if rule["kind"] == "hex" and (size != rule["digits"] or not HEX.match(value)):
        raise BadCall(code, f"{param['name']} must be {rule['digits']} hex digits, got {value!r}")
    # What the script's own code checks beyond the rule (param["more"]) is its to answer.


def throwaway_server():
    """A redis-server on a Unix socket in a fresh folder, and that folder."""
    folder = tempfile.mkdtemp(prefix="redis-patterns-")
    socket = os.path.join(folder, "redis.sock")
    binary = os.environ.get("REDIS_SERVER_BIN") or shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server is not installed: apt-get install redis-server")
    process = subprocess.Popen(
        [binary, "--port", "0", "--unixsocket", socket, "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(500):
        if os.path.exists(socket):
            break
        time.sleep(0.01)
    return process, folder, redis.Redis(unix_socket_path=socket)


def main():
    args = sys.argv[1:]
    urls = [a for a in args if "://" in a]
    folders = [a for a in args if "://" not in a]
    if len(urls) > 1 or len(folders) > 1 or args[:1] in (["-h"], ["--help"]):
        sys.exit(__doc__)
    files = Files(folders[0] if folders else None)
    server = None
    if urls:
        client = redis.Redis.from_url(urls[0])
    else:
        server, folder, client = throwaway_server()
    try:
        demo(Patterns(client, files))
    finally:
        if server is not None:
            server.terminate()
            server.wait()
            shutil.rmtree(folder)


def demo(patterns):
    client = patterns.client
    print(f"manifest: {len(patterns.scripts)} scripts, valid against its schema")

    # An identity lock: only the token it was taken with releases it.
    client.set("py:lock", "secret", nx=True, px=30000)
    wrong = patterns.call("identity_lock/release", ["py:lock"], ["guess"])
    right = patterns.call("identity_lock/release", ["py:lock"], ["secret"])
    print(f"identity_lock/release: wrong token -> {wrong}, right token -> {right}")
    assert (wrong, right) == (0, 1)

    # A timeline: entries at their own times, the oldest trimmed beyond a maximum of 2.
    length, trimmed = patterns.call("timeline/add", ["py:timeline"], ["2", "100", "a", "200", "b", "300", "c"])
    newest = client.zrevrange("py:timeline", 0, -1)
    print(f"timeline/add: length {length}, trimmed {trimmed}, newest first {newest}")
    assert (length, trimmed, newest) == (2, 1, [b"c", b"b"])

    # Hourly statistics, on the caller's clock.
    stats = ["{py:stats:ms}", "{py:stats:ms}:start", "{py:stats:ms}:last", "{py:stats:ms}:pstart"]
    for value in (0.5, 1.5):
        totals = patterns.call("stats/update", stats, [value, 1_700_000_000_000])
    print(f"stats/update: count, sum, sum of squares -> {[float(t) for t in totals]}")
    assert [float(t) for t in totals] == [2.0, 2.0, 2.5]

    # A bad call: refused here before anything is sent, and by the script, with one code.
    try:
        patterns.call("stats/update", stats, ["nan", 1_700_000_000_000])
        raise AssertionError("a NaN was accepted")
    except BadCall as err:
        print(f"refused by the client: {err}")
        here = err.code
    before = client.dump("{py:stats:ms}")
    try:
        client.evalsha(patterns.scripts["stats/update"]["sha1"], 4, *stats, "nan", 1_700_000_000_000)
        raise AssertionError("a NaN was accepted")
    except redis.exceptions.ResponseError as err:
        print(f"refused by the script: {err}")
        assert str(err).split()[0] == here
    assert client.dump("{py:stats:ms}") == before, "a refused call changed the statistics"
    # The same script as a Redis Function: the library named in the manifest, loaded once.
    with open(patterns.files.functions) as f:
        client.execute_command("FUNCTION", "LOAD", "REPLACE", f.read())
    client.set("py:lock", "secret")
    function = patterns.scripts["identity_lock/release"]["function"]
    released = client.execute_command("FCALL", function, 1, "py:lock", "secret")
    print(f"FCALL {function}: {released}")
    assert released == 1
    client.delete("py:timeline", *stats)
    print("ok")


if __name__ == "__main__":
    main()
