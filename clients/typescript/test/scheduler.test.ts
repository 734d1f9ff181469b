/**
 * The Scheduler on a real server: three schedulers add each run of a schedule once; a
 * sleeping scheduler wakes when a schedule is set; a stop ends a long sleep at once; a cron
 * schedule without `cron` is refused.
 */

import assert from "node:assert/strict";
import { test } from "node:test";

import type { Redis } from "ioredis";

import { InvalidInput, type ScheduleReport, Scheduler, WorkQueue, cronTimes, workQueue } from "../src/index.js";
import { Server, blockedIn, poll, serve, serverMs, stopAfter } from "./server.js";

let server: Server;
let r: Redis;

serve((s, c) => {
  server = s;
  r = c;
});


async function every(queue: string, name: string, everyMs: number, first: number | null = null): Promise<void> {
  await new WorkQueue(queue).setSchedule(name, 0, "", "", 0, 0, "", "tick", first === null, { every: everyMs, first }).run(r);
}

/** The ids of the jobs waiting in `queue`. */
async function jobIds(queue: string): Promise<string[]> {
  return (await r.zrange(workQueue.KEY_WAITING.build({ name: queue }), 0, -1)).sort();
}


test("three schedulers add each run once", async (t) => {
  await every("ticks", "tick", 50);
  const stop = stopAfter(t);
  const runs = [0, 1, 2].map(() => new Scheduler("ticks").run(server.client(), stop.signal));
  await poll(async () => (await jobIds("ticks")).length >= 8, "eight runs");
  stop.abort();
  const reports: ScheduleReport[] = await Promise.all(runs);
  const ids = await jobIds("ticks");
  const times = ids.map((id) => Number(id.split(":")[1])).sort((a, b) => a - b);
  assert.ok(times.every((t) => t % 50 === 0), JSON.stringify(ids));
  // Each run once: one job per run time, and the schedulers added exactly those.
  assert.equal(new Set(times).size, times.length);
  assert.equal(reports.reduce((n, rep) => n + rep.added, 0), times.length, JSON.stringify(reports));
  // And none missed: every run time from the first to the last was added or skipped.
  const skipped = reports.reduce((n, rep) => n + rep.skipped, 0);
  assert.ok(times.length + skipped >= (times[times.length - 1]! - times[0]!) / 50 + 1, JSON.stringify({ ids, reports }));
  assert.ok(reports.every((rep) => rep.reconnects === 0 && rep.serverRetries === 0), JSON.stringify(reports));
});

test("a sleeping scheduler wakes when a schedule is set, and a stop ends its sleep at once", async (t) => {
  const stop = stopAfter(t);
  // Nothing due and nothing scheduled: it sleeps a minute.
  const run = new Scheduler("wake", { maxWait: 60_000 }).run(server.client(), stop.signal);
  await poll(async () => (await blockedIn(r, "xread")) === 1, "the scheduler to sleep");
  await every("wake", "hourly", 3_600_000, await serverMs(r));
  await poll(async () => (await jobIds("wake")).length > 0, "the first run, well before the minute", 5);
  await poll(async () => (await blockedIn(r, "xread")) === 1, "the scheduler to sleep again");
  const stopping = Date.now();
  stop.abort();
  const report = await run;
  assert.ok(Date.now() - stopping < 10_000, "the stop waited for the sleep");
  assert.equal(report.added, 1);
  assert.equal(report.reconnects, 0);
});

test("a cron schedule needs the caller's cron times", async () => {
  await new WorkQueue("cron").setSchedule("nightly", 0, "0 3 * * *", "UTC", 0, 0, "", "x", true, { first: await serverMs(r) }).run(r);
  await assert.rejects(new Scheduler("cron").run(server.client()), (err: InvalidInput) => err.code === "BAD_TIMES");
  // With times given: every minute (a toy cron of whole minutes), the runs since `run` and the next ones.
  const minutes = {
    next: (_e: string, _t: string, after: number): number => (Math.floor(after / 60_000) + 1) * 60_000,
    previous: (_e: string, _t: string, before: number): number | null => (Math.ceil(before / 60_000) - 1) * 60_000,
  };
  assert.deepEqual(cronTimes(minutes, "* * * * *", "UTC", 60_000, 200_000, 2), [120_000, 180_000, 240_000, 300_000, 360_000]);
});
