#!/usr/bin/env python3
"""Shares data with a Rust app of redis-patterns, from Python, with the manifest and the
script files as the only manual.

The manifest gives each key of each script a template, such as `{<name>}:waiting`: this
program names a pattern instance's keys from it exactly as the Rust crate does, so that
both work on the same data. It loads each script from its file and runs it with EVALSHA
(loading it on NOSCRIPT).

    python3 examples/python/share_with_rust.py add-jobs [<folder>] <redis-url> <queue> <count>
        adds <count> jobs (ids job-0, job-1, ...; payloads "email <i>") to the work queue
        <queue> with work_queue/add, for a Rust worker to take
    python3 examples/python/share_with_rust.py around [<folder>] <redis-url> <board> <item> <n> <policy>
        reads the items around <item> on a leaderboard a Rust app wrote, with
        leaderboard/around

Without a folder it reads the files of the repository it is in (generated/manifest.json
and scripts/<family>/<op>.lua); with one, the files `cargo run --example export --
<folder>` wrote there (manifest.json and scripts/). Each prints one JSON object: the keys
it named, and what it read (`around`: a row per item, as the manifest's return type
`[(bytes, float, uint)]` says: the item as hex, so that a reader can compare it byte for
byte, its score as the text Redis sent, and its rank). Needs redis-py only.
"""

import json
import os
import sys

import redis


def has_hash_tag(s):
    """Redis Cluster's rule: a '{', then later a '}', with something between."""
    start = s.find("{")
    return start >= 0 and s.find("}", start + 1) > start + 1


def build(form, values):
    """A key of a template's form, with the manifest's rule (its `key_names` note): a
    parameter is its value as it is; the hash tag group's content is wrapped in braces
    unless it already holds a hash tag."""

    def value(name):
        v = values[name]
        if v == "":
            raise ValueError(f"{name} must not be empty")
        return v

    key = ""
    for part in form["parts"]:
        if part["kind"] == "text":
            key += part["text"]
        elif part["kind"] == "param":
            key += value(part["name"])
        else:
            content = "".join(p["text"] if p["kind"] == "text" else value(p["name"]) for p in part["parts"])
            if not has_hash_tag(content):
                if "}" in content:
                    raise ValueError(f"{content!r} holds a '}}' but no hash tag")
                content = "{" + content + "}"
            key += content
    return key


class Scripts:
    def __init__(self, client, folder=None):
        if folder is None:
            # This file is examples/python/share_with_rust.py in the repository, whose
            # generated/ holds the manifest; a script's `path` in it is relative to the root.
            self.root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            manifest = os.path.join(self.root, "generated", "manifest.json")
        else:
            self.root = folder
            manifest = os.path.join(folder, "manifest.json")
        with open(manifest) as f:
            self.manifest = json.load(f)
        self.client = client
        self.scripts = {s["name"]: s for s in self.manifest["scripts"]}

    def keys(self, name, values):
        """The keys of the script `name` (none variadic) for the parameters `values`."""
        return [build(k["template"]["forms"][0], values) for k in self.scripts[name]["keys"]]

    def call(self, name, keys, args):
        script = self.scripts[name]
        try:
            return self.client.evalsha(script["sha1"], len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            with open(os.path.join(self.root, script["path"])) as f:
                self.client.script_load(f.read())
            return self.client.evalsha(script["sha1"], len(keys), *keys, *args)


def add_jobs(scripts, queue, count):
    keys = scripts.keys("work_queue/add", {"name": queue})
    added = 0
    for i in range(count):
        # id, payload, priority, delay (ms), group ('' for none), then the job's own
        # options at their defaults: attempts, backoff, its delay and longest delay, lifo,
        # remove_on_complete, remove_on_fail; last, the producer's W3C trace context (a
        # traceparent: version, trace id, span id, flags), which a Rust worker reads.
        options = [0, "worker", 0, 0, 0, 0, 0]
        trace = f"00-{i + 1:032x}-{i + 1:016x}-01"
        new, _state = scripts.call("work_queue/add", keys, [f"job-{i}", f"email {i}", 0, 0, "", *options, trace])
        added += int(new == 1)
    return {"keys": keys, "added": added}


def around(scripts, board, item, n, policy):
    keys = scripts.keys("leaderboard/around", {"key": board})
    # A row per item, highest first, the item itself included: item, score, rank.
    rows = scripts.call("leaderboard/around", keys, [item, n, policy])
    return {"keys": keys, "rows": [[item.hex(), score.decode(), rank] for item, score, rank in rows]}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("add-jobs", "around"):
        sys.exit(__doc__)
    command, rest = sys.argv[1], sys.argv[2:]
    # The folder is optional: the URL is the first argument with `://` in it.
    folder = rest.pop(0) if rest and "://" not in rest[0] else None
    if (command, len(rest)) not in (("add-jobs", 3), ("around", 5)) or "://" not in rest[0]:
        sys.exit(__doc__)
    scripts = Scripts(redis.Redis.from_url(rest[0]), folder)
    if command == "add-jobs":
        out = add_jobs(scripts, rest[1], int(rest[2]))
    else:
        out = around(scripts, rest[1], rest[2], int(rest[3]), rest[4])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
