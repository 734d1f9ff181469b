/**
 * Data shared with the Python client: the Python half (`clients/python/tests/sharing.py`,
 * run as a program, as the Rust crate's own sharing tests run it) makes calls of its
 * package on the same server; each test checks that this package names the same keys and
 * reads what the other wrote, and that a Python worker and a TypeScript worker share one
 * queue, each job handled and acked once.
 *
 * The Python is the venv `.ci/python-client` makes (`target/python-client`, or
 * REDIS_PATTERNS_PY_VENV): without it the tests are skipped with a message, unless CI is set.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";

import type { Redis } from "ioredis";

import { Bloom, Leaderboard, RateLimiter, Semaphore, Session, WorkQueue, Worker } from "../src/index.js";
import { Server, killOnExit, poll, stopAfter } from "./server.js";

const ROOT = new URL("../../../../", import.meta.url);
const VENV = process.env["REDIS_PATTERNS_PY_VENV"] ?? new URL("target/python-client", ROOT).pathname;
const PYTHON = `${VENV}/bin/python`;
const PROGRAM = new URL("clients/python/tests/sharing.py", ROOT).pathname;
const missing = existsSync(PYTHON) ? null : `no Python client venv at ${VENV}: run \`bash .ci/python-client\` first`;
if (missing !== null && process.env["CI"] !== undefined && process.env["CI"] !== "") {
  throw new Error(missing);
}

/** The Python half: one JSON request a line, one JSON answer a line. */
class Python {
  readonly child: ChildProcess;
  readonly #answers: ((line: string) => void)[] = [];

  constructor(port: number) {
    this.child = killOnExit(spawn(PYTHON, [PROGRAM, `redis://127.0.0.1:${port}/0`], { stdio: ["pipe", "pipe", "inherit"] }));
    createInterface({ input: this.child.stdout! }).on("line", (line) => this.#answers.shift()?.(line));
  }

  async ask(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const line = new Promise<string>((resolve) => this.#answers.push(resolve));
    this.child.stdin!.write(`${JSON.stringify(request)}\n`);
    const answer = JSON.parse(await line) as Record<string, unknown>;
    assert.equal(answer["error"], undefined, String(answer["error"]));
    return answer;
  }

  async close(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.child.stdin!.end();
    await exited;
  }
}

let server: Server;
let r: Redis;
let python: Python;
const skip = missing ?? false;

before(async () => {
  if (missing !== null) return;
  server = await Server.start();
  r = server.client();
  python = new Python(server.port);
});

after(async () => {
  if (missing !== null) return;
  await python.close();
  await server.stop();
});

test("a semaphore's permits are one count across languages", { skip }, async () => {
  await new Semaphore("printers").setCapacity(3).run(r);
  const taken = await python.ask({ do: "semaphore_acquire", name: "printers", n: 2, lease_ms: 60_000 });
  const token = randomBytes(16).toString("hex");
  const call = new Semaphore("printers").acquire(taken["token"] as string, 2, 60_000, 10);
  // The same keys for the same token (the last is the token's own).
  assert.deepEqual(call.keys, taken["keys"]);
  // Three permits: the Python holding has two, so two more are refused, and one is not.
  const [refused] = await new Semaphore("printers").acquire(token, 2, 60_000, 10).run(r);
  assert.equal(refused, null);
  const [granted] = await new Semaphore("printers").acquire(token, 1, 60_000, 10).run(r);
  assert.equal(typeof granted, "number");
});

test("a leaderboard written by Python reads the same here, and the other way", { skip }, async () => {
  const written = await python.ask({ do: "leaderboard_set", key: "board", weights: { ann: 3, bob: 5.5, cid: 1 } });
  const board = new Leaderboard("board");
  assert.deepEqual(board.set("dan", 4).keys, written["keys"]);
  assert.equal(await board.set("dan", 4).run(r), true);
  const read = await python.ask({ do: "leaderboard_around", key: "board", item: "dan", n: 1, policy: "standard" });
  const rows = (await board.around("dan", 1, "standard").run(r)).map(([item, score, rank]) => [item.toString(), score, rank]);
  assert.deepEqual(rows, read["rows"]);
});

test("rate limits, a Bloom filter and sessions name the same keys and share state", { skip }, async () => {
  const gcra = await python.ask({ do: "gcra", uid: "u1", action: "login", count: 2, period_ms: 60_000, cost: 1 });
  const mine = new RateLimiter("u1", "login").gcra(2, 60_000, 1);
  assert.deepEqual(mine.keys, gcra["keys"]);
  const [allowed] = await mine.run(r);
  assert.equal(allowed, true);
  const [third] = await new RateLimiter("u1", "login").gcra(2, 60_000, 1).run(r);
  assert.equal(third, false, "the Python attempt and this one used the bucket of 2");

  const window = await python.ask({ do: "fixed_window", uid: "u1", action: "post", maximum: 1, interval_ms: 60_000, cost: 1 });
  const post = new RateLimiter("u1", "post").isPermitted(1, 60_000, 1);
  assert.deepEqual(post.keys, window["keys"]);
  assert.equal((await post.run(r))[0], false);

  await python.ask({ do: "bloom_add", filter: "seen", capacity: 1000, one_in: 100, items: ["a", "b"] });
  const check = new Bloom("seen").check(1000, 100, 1, 0, ["a", "b", "zzz-never"]);
  assert.deepEqual(await check.run(r), [1, 1, 0]);

  const session = await python.ask({ do: "session_create", namespace: "web", uid: "u7" });
  const token = session["token"] as string;
  const set = new Session("web", "u7").set(token, ["theme", "dark"]);
  assert.deepEqual(set.keys.slice(0, 1), (session["keys"] as string[]).slice(0, 1));
  await set.run(r);
  const read = await python.ask({ do: "session_read", namespace: "web", uid: "u7", token });
  assert.deepEqual(read["data"], { theme: "dark" });
});

test("a Python worker and a TypeScript worker share one queue: each job handled and acked once", { skip }, async (t) => {
  const name = "shared";
  const ids = Array.from({ length: 40 }, (_, i) => `job-${i}`);
  const added = await python.ask({ do: "work_queue_add", name, jobs: Object.fromEntries(ids.slice(0, 20).map((id) => [id, id])) });
  const queue = new WorkQueue(name);
  assert.deepEqual(queue.add("x", "x", 0, 0, "").keys, added["keys"]);
  for (const id of ids.slice(20)) await queue.add(id, id, 0, 0, "").run(r);
  const first = `{${name}}:test:first`;
  await python.ask({ do: "work_queue_work", name, together: 2, first });
  // A failed test stops the Python worker too: its process ends only once it has.
  let theirs: Record<string, unknown> | null = null;
  t.after(async () => {
    if (theirs === null) await python.ask({ do: "work_queue_stop", name }).catch(() => {});
  });
  const handled: string[] = [];
  const stop = stopAfter(t);
  const run = new Worker(name, { poll: 50 }).run(
    server.client(),
    async (job) => {
      // Hold the first job until the Python worker has one too, so that both work.
      if (handled.length === 0) {
        await r.incr(first);
        await poll(async () => Number(await r.get(first)) >= 2, "the Python worker's first job");
      }
      handled.push(job.id);
      return `done by TypeScript: ${job.payload.toString()}`;
    },
    stop.signal,
  );
  await poll(async () => (await queue.counts().run(r)).slice(0, 4).every((n) => n === 0), "the queue to drain", 60);
  stop.abort();
  const report = await run;
  theirs = await python.ask({ do: "work_queue_stop", name });
  const all = [...handled, ...(theirs["handled"] as string[])].sort();
  assert.deepEqual(all, [...ids].sort());
  assert.ok(handled.length > 0 && (theirs["handled"] as string[]).length > 0);
  assert.equal(report.acked + (theirs["acked"] as number), ids.length);
});
