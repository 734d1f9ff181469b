/**
 * The work queue's Worker on a real server: N workers drain a queue, each job handled and
 * acked once; renewals keep a job whose handler keeps the event loop busy past its lease;
 * a failing job is retried then dead, an unrecoverable one dead at once; an idle worker
 * wakes on an added job; a stop ends the loop at once, even during a long blocking wait.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import type { Redis } from "ioredis";

import { Backoff, MAX_LOG_LINES, type ScriptError, Unrecoverable, WorkQueue, Worker, type WorkReport, workQueue } from "../src/index.js";
import { Server, blockedIn, poll, serve, serverMs, stopAfter } from "./server.js";

let server: Server;
let r: Redis;

serve((s, c) => {
  server = s;
  r = c;
});

async function add(name: string, ...ids: string[]): Promise<void> {
  const queue = new WorkQueue(name);
  for (const id of ids) await queue.add(id, id, 0, 0, "").run(r);
}

/** How many jobs of queue `name` are waiting, delayed or held. */
async function pending(name: string): Promise<number> {
  const key = (form: typeof workQueue.KEY_WAITING): string => form.build({ name });
  return (
    (await r.zcard(key(workQueue.KEY_WAITING))) +
    (await r.zcard(key(workQueue.KEY_DELAYED))) +
    (await r.zcard(key(workQueue.KEY_LEASED)))
  );
}


test("N workers of concurrency M drain a queue: every job handled and acked once", async (t) => {
  const ids = Array.from({ length: 150 }, (_, i) => `job-${i}`);
  await add("mail", ...ids);
  const seen = new Map<string, number>();
  const stop = stopAfter(t);
  const handler = async (job: { id: string; payload: Buffer }): Promise<string> => {
    seen.set(job.id, (seen.get(job.id) ?? 0) + 1);
    assert.equal(job.payload.toString(), job.id);
    await new Promise((resolve) => setImmediate(resolve));
    return `done ${job.id}`;
  };
  const runs = [0, 1, 2].map(() => new Worker("mail", { concurrency: 4, poll: 20 }).run(server.client(), handler, stop.signal));
  await poll(async () => seen.size === ids.length && (await pending("mail")) === 0, "the queue drained");
  stop.abort();
  const reports: WorkReport[] = await Promise.all(runs);
  assert.deepEqual([...seen.values()].filter((n) => n !== 1), []);
  assert.deepEqual([...seen.keys()].sort(), [...ids].sort());
  assert.equal(reports.reduce((n, report) => n + report.acked, 0), ids.length);
  for (const report of reports) {
    assert.equal(report.lost, 0);
    assert.equal(report.retried + report.dead, 0);
    assert.equal(report.memoryPolicy, "noeviction");
  }
  // The results are kept only when the queue keeps them; every job left the queue.
  assert.equal(await pending("mail"), 0);
});

test("renewals keep a job whose handler keeps the event loop busy past its lease", async (t) => {
  await add("busy", "long");
  const stop = stopAfter(t);
  let deadlineLeft = 0;
  const worker = new Worker("busy", { lease: 600, poll: 20 });
  const report = await worker.run(
    server.client(),
    async (job) => {
      try {
        // Three leases of CPU work: this thread runs no timer meanwhile.
        const until = Date.now() + 1800;
        while (Date.now() < until) {
          /* busy */
        }
        const deadline = Number(await r.zscore(workQueue.KEY_LEASED.build({ name: "busy" }), job.id));
        deadlineLeft = deadline - (await serverMs(r));
      } finally {
        stop.abort();
      }
    },
    stop.signal,
  );
  assert.ok(deadlineLeft > 0, `the lease ran out ${-deadlineLeft} ms before the handler ended`);
  assert.equal(report.acked, 1);
  assert.equal(report.lost, 0);
  assert.equal(await pending("busy"), 0);
});

test("a failing job is retried then dead; an unrecoverable one is dead at once", async (t) => {
  await add("flaky", "fail", "never", "ok");
  const deliveries = new Map<string, number[]>();
  const stop = stopAfter(t);
  const worker = new Worker("flaky", { maxDeliveries: 2, backoff: Backoff.fixed(10), poll: 10 });
  const run = worker.run(
    server.client(),
    (job) => {
      deliveries.set(job.id, [...(deliveries.get(job.id) ?? []), job.delivery]);
      if (job.id === "fail") throw new Error("boom");
      if (job.id === "never") throw new Unrecoverable("bad payload");
      return undefined;
    },
    stop.signal,
  );
  await poll(async () => (await pending("flaky")) === 0, "the queue drained");
  stop.abort();
  const report = await run;
  assert.deepEqual(Object.fromEntries(deliveries), { fail: [1, 2], never: [1], ok: [1] });
  assert.deepEqual([report.acked, report.retried, report.dead, report.lost], [1, 1, 2, 0]);
  const dead = await r.zrange(workQueue.KEY_DEAD.build({ name: "flaky" }), 0, -1);
  assert.deepEqual(dead.sort(), ["fail", "never"]);
});

test("an idle worker wakes on an added job, and a stop ends a long wait at once", async (t) => {
  const stop = stopAfter(t);
  const handled: string[] = [];
  // A poll of a minute: only the signal key can wake it in time.
  const run = new Worker("idle", { poll: 60_000 }).run(server.client(), (job) => void handled.push(job.id), stop.signal);
  const blocked = async (): Promise<boolean> => (await blockedIn(r, "bzpopmin")) === 1;
  await poll(blocked, "the worker blocked on its signal key");
  await add("idle", "wake");
  await poll(() => handled.length === 1, "the added job handled", 10);
  await poll(blocked, "the worker blocked again");
  const stopping = Date.now();
  stop.abort();
  const report = await run;
  assert.ok(Date.now() - stopping < 10_000, "the stop waited for the blocking command");
  assert.equal(report.acked, 1);
  assert.deepEqual(handled, ["wake"]);
});

test("bad settings are refused before any I/O", () => {
  assert.throws(() => new Worker("q", { concurrency: 0 }), RangeError);
  assert.throws(() => new Worker("q", { lease: 0 }), (err: Error) => (err as { code?: string }).code === "BAD_LEASE");
  assert.throws(() => new Worker("", {}), (err: Error) => (err as { code?: string }).code === "BAD_KEYS");
});

test("jobs taken in one call are renewed each on its own: one that ends stops none of the others", async (t) => {
  // The jobs of one take share a lease token (`<token>:1`): renewals know a job by its id too.
  await add("batch", "quick", "slow-1", "slow-2");
  const stop = stopAfter(t);
  const deadlines: number[] = [];
  const worker = new Worker("batch", { lease: 600, concurrency: 3, poll: 20 });
  let ended = 0;
  const report = await worker.run(
    server.client(),
    async (job) => {
      try {
        if (job.id !== "quick") {
          // Until the server's clock is two leases past the lease the job was taken with:
          // only renewals keep it now.
          await poll(async () => (await serverMs(r)) > job.deadlineMs + 2 * 600, "two leases to pass");
          const deadline = Number(await r.zscore(workQueue.KEY_LEASED.build({ name: "batch" }), job.id));
          deadlines.push(deadline - (await serverMs(r)));
        }
      } finally {
        if (++ended === 3) stop.abort();
      }
    },
    stop.signal,
  );
  assert.equal(deadlines.length, 2);
  assert.ok(deadlines.every((left) => left > 0), `a lease ran out: ${JSON.stringify(deadlines)}`);
  assert.deepEqual([report.acked, report.lost], [3, 0]);
});

test("a job's own attempts and backoff outrank the worker's", async (t) => {
  const queue = new WorkQueue("own");
  // The worker's: two deliveries, a minute between them; "own" asks four, 10 ms apart.
  await queue.add("own", "x", 0, 0, "", { attempts: 4, backoff: "fixed", backoffDelay: 10 }).run(r);
  await queue.add("plain", "x", 0, 0, "").run(r);
  const deliveries = new Map<string, number[]>();
  const stop = stopAfter(t);
  const run = new Worker(queue, { maxDeliveries: 2, backoff: Backoff.fixed(60_000), poll: 20 }).run(
    server.client(),
    (job) => {
      deliveries.set(job.id, [...(deliveries.get(job.id) ?? []), job.delivery]);
      throw new Error("boom");
    },
    stop.signal,
  );
  const dead = workQueue.KEY_DEAD.build({ name: "own" });
  const delayed = workQueue.KEY_DELAYED.build({ name: "own" });
  await poll(async () => (await r.zscore(dead, "own")) !== null && (await r.zscore(delayed, "plain")) !== null, "own dead, plain delayed");
  stop.abort();
  const report = await run;
  assert.deepEqual(Object.fromEntries(deliveries), { own: [1, 2, 3, 4], plain: [1] });
  // plain waits the worker's minute (the server's clock), own waited 10 ms each time.
  assert.ok(Number(await r.zscore(delayed, "plain")) > (await serverMs(r)) + 50_000);
  assert.deepEqual([report.retried, report.dead], [4, 1]);
});

test("a LIFO job is taken ahead of those waiting at its priority", async () => {
  const queue = new WorkQueue("stack");
  for (const id of ["first", "second"]) await queue.add(id, id, 0, 0, "").run(r);
  await queue.add("urgent", "now", 0, 0, "", { lifo: true }).run(r);
  await queue.add("low", "later", 0, 0, "", { lifo: true }).run(r);
  await queue.add("high", "x", 1, 0, "").run(r);
  const taken = await queue.take(5, "f".repeat(32), []).run(r);
  assert.deepEqual(taken.map(([id]) => id), ["high", "low", "urgent", "first", "second"]);
});

test("a deduplication window adds a job once, and a later payload replaces a waiting one's", async () => {
  const queue = new WorkQueue("dedup");
  assert.deepEqual(await queue.addDeduplicated("v1", "one", 0, 0, "", "doc:42", 60_000).run(r), ["added", "v1", "waiting"]);
  assert.deepEqual(await queue.addDeduplicated("v2", "two", 0, 0, "", "doc:42", 60_000).run(r), ["ignored", "v1", "waiting"]);
  assert.deepEqual(
    await queue.addDeduplicated("v3", "three", 0, 0, "", "doc:42", 60_000, { replace: true }).run(r),
    ["replaced", "v1", "waiting"],
  );
  assert.deepEqual(await queue.addDeduplicated("v1", "again", 0, 0, "", "doc:43", 60_000).run(r), ["duplicate", "v1", "waiting"]);
  const [[id, , , , , payload]] = (await queue.take(5, "e".repeat(32), []).run(r)) as [[string, string, number, number, string | null, Buffer, string | null]];
  assert.deepEqual([id, payload.toString()], ["v1", "three"]);
});

test("a handler writes its job's log, which lasts as long as the job", async (t) => {
  const queue = new WorkQueue("logged");
  await queue.add("report", "x", 0, 0, "").run(r);
  const stop = stopAfter(t);
  let read: [number, Buffer[]] | null = null;
  const report = await new Worker(queue, { poll: 20 }).run(
    server.client(),
    async (job) => {
      try {
        assert.equal(await queue.log(job.id, job.token, "started", MAX_LOG_LINES).run(r), 1);
        assert.equal(await queue.log(job.id, job.token, "half done", 1).run(r), 1); // keeps the newest line only
        await queue.log(job.id, job.token, "done", MAX_LOG_LINES).run(r);
        read = await queue.logs(job.id, 0, 10).run(r);
      } finally {
        stop.abort();
      }
    },
    stop.signal,
  );
  assert.equal(report.acked, 1);
  assert.deepEqual(read, [2, [Buffer.from("half done"), Buffer.from("done")]]);
  // Another holder's token is refused; the acked job took its log along.
  await assert.rejects(queue.log("report", "0".repeat(32), "late", 10).run(r), (err: ScriptError) => err.code === "LEASE_LOST");
  assert.deepEqual(await queue.logs("report", 0, 10).run(r), [0, []]);
});
