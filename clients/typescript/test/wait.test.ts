/**
 * Waits on a coordination primitive's wake stream or bell (a semaphore, a fair lock, a
 * read-write lock), each waiter blocked (XREAD, or BLPOP on a bell) until another client
 * frees what it waits for; a wait that times out, one a signal ends; and a job's end
 * waited for through the queue's events.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import type { Redis } from "ioredis";

import { Events, FairLock, NotGranted, RwLock, Semaphore, WorkQueue, hold, wait, waitForJob } from "../src/index.js";
import { Server, blockedIn, poll, serve } from "./server.js";

let server: Server;
let r: Redis;

const token = (n: number): string => n.toString(16).padStart(32, "0");

/** Whether `clients` connections are blocked in `command` right now. */
const blocked = async (clients: number, command: string): Promise<boolean> => (await blockedIn(r, command)) >= clients;

serve((s, c) => {
  server = s;
  r = c;
});

test("a semaphore waiter wakes when a permit frees", async () => {
  const permits = new Semaphore("slots");
  await permits.setCapacity(1).run(r);
  assert.notEqual((await permits.acquire(token(1), 1, 60_000, 10).run(r))[0], null);
  const waiter = wait(server.client(), () => permits.acquire(token(2), 1, 60_000, 10, { place: 60_000 }), (reply) => reply[0] !== null, 30_000);
  await poll(() => blocked(1, "blpop"), "the waiter blocking on the bell");
  assert.equal(await permits.release(token(1)).run(r), 1);
  const granted = await waiter;
  assert.ok(granted !== null && granted[0] !== null && granted[2] === 0);
  assert.equal((await permits.state().run(r))[1], 1); // b holds the permit
});

for (const order of ["fifo", "any"]) {
  test(`a fair lock (${order}) wakes one waiter at a time`, async () => {
    const lock = new FairLock(`printer:${order}`);
    const first = (await lock.acquire(token(1), 60_000, 60_000, 10, { order }).run(r))[0];
    assert.ok(first >= 1);
    let thirdDone = false;
    const second = wait(server.client(), () => lock.acquire(token(2), 60_000, 60_000, 10, { order }), (reply) => reply[0] !== 0, 30_000);
    await poll(() => blocked(1, "blpop"), "b blocking");
    const third = wait(server.client(), () => lock.acquire(token(3), 60_000, 60_000, 10, { order }), (reply) => reply[0] !== 0, 30_000);
    void third.then(() => (thirdDone = true));
    await poll(() => blocked(2, "blpop"), "b and c blocking");
    // b blocks on a's turn key, c on b's: the release wakes b alone, and c sleeps on.
    assert.equal(await lock.release(token(1)).run(r), true);
    assert.equal((await second)![0], first + 1);
    await poll(() => blocked(1, "blpop"), "c still blocking");
    assert.equal(thirdDone, false);
    assert.equal(await lock.release(token(2)).run(r), true);
    assert.equal((await third)![0], first + 2);
  });
}

test("a writer waits for the readers on the wake stream", async () => {
  const lock = new RwLock("doc");
  assert.equal((await lock.acquireRead(token(1), 60_000, false, 10).run(r))[0], 1);
  const writer = wait(server.client(), () => lock.acquireWrite(token(2), 60_000, 10, { placeLease: 60_000 }), (reply) => reply[0] !== 0, 30_000);
  await poll(() => blocked(1, "xread"), "the writer blocking");
  assert.equal(await lock.releaseRead(token(1)).run(r), 0);
  assert.ok((await writer)![0] >= 1);
});

test("a wait times out with null, a signal ends one at once, and hold throws NotGranted", async () => {
  const permits = new Semaphore("full");
  await permits.setCapacity(1).run(r);
  await permits.acquire(token(1), 1, 60_000, 10).run(r);
  const attempt = (): ReturnType<Semaphore["acquire"]> => permits.acquire(token(2), 1, 60_000, 10, { place: 60_000 });
  assert.equal(await wait(server.client(), attempt, (reply) => reply[0] !== null, 50), null);
  const stop = new AbortController();
  const stopped = wait(server.client(), attempt, (reply) => reply[0] !== null, 60_000, { signal: stop.signal });
  await poll(() => blocked(1, "blpop"), "the waiter blocking");
  stop.abort();
  assert.equal(await stopped, null);
  await assert.rejects(
    hold(server.client(), attempt, (reply) => reply[0] !== null, permits.release(token(2)), 50, () => "never"),
    NotGranted,
  );
  // Granted, hold runs the block and releases after it.
  await permits.release(token(1)).run(r);
  const inside = await hold(r, attempt, (reply) => reply[0] !== null, permits.release(token(2)), 5_000, async () => (await permits.state().run(r))[1]);
  assert.equal(inside, 1);
  assert.equal((await permits.state().run(r))[1], 0);
});

test("waitForJob sees an end before the call, and one after it through the events", async () => {
  const queue = new WorkQueue("reports");
  await queue.configure({ eventsMax: 1000, resultTtl: 60_000 }).run(r);
  await queue.add("r1", "x", 0, 0, "").run(r);
  await queue.add("r2", "x", 0, 0, "").run(r);
  assert.equal(await waitForJob(r, queue, "r1", 50), null);
  const take = async (): Promise<[string, string]> => {
    const [row] = await queue.take(1, token(9), []).run(r);
    assert.ok(row !== undefined, "no job taken");
    return [row[0], row[1]];
  };
  const [id1, lease1] = await take();
  assert.equal(id1, "r1");
  await queue.ack(id1, lease1, "pdf-1").run(r);
  assert.deepEqual(await waitForJob(r, "reports", "r1", 1_000), { kind: "completed", result: Buffer.from("pdf-1") });
  const waiting = waitForJob(server.client(), "reports", "r2", 30_000);
  await poll(() => blocked(1, "xread"), "the waiter blocking on the events");
  const [id2, lease2] = await take();
  await queue.nack(id2, lease2, 0, "broken", { maxDeliveries: 1 }).run(r);
  assert.deepEqual(await waiting, { kind: "dead", error: Buffer.from("broken") });
  assert.deepEqual(await waitForJob(r, "reports", "never-added", 1_000), { kind: "gone" });
});

test("with events on, a job acked without a result before the wait reads as completed, not gone", async () => {
  const queue = new WorkQueue("plain-acks");
  await queue.configure({ eventsMax: 1000, resultTtl: 60_000 }).run(r);
  await queue.add("p1", "x", 0, 0, "").run(r);
  const [row] = await queue.take(1, token(7), []).run(r);
  assert.ok(row !== undefined, "no job taken");
  await queue.ack(row[0], row[1], "").run(r);
  assert.deepEqual(await waitForJob(r, queue, "p1", 1_000), { kind: "completed", result: null });
  // The events say what happened to it, each kind as the scripts write it.
  const events = await new Events(queue).next(r, 1_000);
  assert.deepEqual(
    events.map((e) => [e.kind, e.job, e.detail.toString()]),
    [["added", "p1", "waiting"], ["active", "p1", "1"], ["completed", "p1", ""]],
  );
  // With events off, nothing is kept of it: gone.
  await queue.configure({ eventsMax: 0, resultTtl: 60_000 }).run(r);
  await queue.add("p2", "x", 0, 0, "").run(r);
  const [second] = await queue.take(1, token(8), []).run(r);
  await queue.ack(second![0], second![1], "").run(r);
  assert.deepEqual(await waitForJob(r, queue, "p2", 50), { kind: "gone" });
});

test("waitForJob reads a job kept in the queue's history as completed, with its result", async () => {
  const queue = new WorkQueue("history");
  await queue.configure({ completedMax: 100 }).run(r); // events off: only the record tells
  await queue.add("h1", "x", 0, 0, "").run(r);
  const [row] = await queue.take(1, token(5), []).run(r);
  assert.ok(row !== undefined, "no job taken");
  await queue.ack(row[0], row[1], "report").run(r);
  assert.deepEqual(await waitForJob(r, queue, "h1", 50), { kind: "completed", result: Buffer.from("report") });
});
