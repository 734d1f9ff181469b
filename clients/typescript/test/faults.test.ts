/**
 * The Worker under the faults a deployment meets: worker processes SIGKILLed mid-job and
 * started again lose no job and ack none twice.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { after, before, test } from "node:test";

import type { Redis } from "ioredis";

import { WorkQueue } from "../src/index.js";
import { readyKey, runningKey, runsKey } from "./worker-process.js";
import { Server, poll } from "./server.js";

let server: Server;
let r: Redis;

before(async () => {
  server = await Server.start();
  r = server.client();
});

after(async () => {
  await server.stop();
});

/** The worker processes of one test. */
class Processes {
  readonly live: ChildProcess[] = [];
  readonly outputs = new Map<ChildProcess, string>();

  constructor(readonly name: string) {}

  start(): ChildProcess {
    const child = spawn(process.execPath, [new URL("./worker-process.js", import.meta.url).pathname, String(server.port), this.name], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    this.outputs.set(child, "");
    child.stdout!.on("data", (chunk: Buffer) => this.outputs.set(child, this.outputs.get(child) + chunk.toString()));
    this.live.push(child);
    return child;
  }

  async kill(child: ChildProcess): Promise<void> {
    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    this.live.splice(this.live.indexOf(child), 1);
  }

  /** SIGTERM to every live process: each finishes its jobs in hand and reports. */
  async stop(): Promise<Record<string, number>[]> {
    for (const child of this.live) {
      await poll(async () => (await r.sismember(readyKey(this.name), String(child.pid))) === 1, "a worker process to start");
    }
    const exits = this.live.map((child) => new Promise<number | null>((resolve) => child.once("exit", resolve)));
    for (const child of this.live) child.kill("SIGTERM");
    const codes = await Promise.all(exits);
    assert.deepEqual(codes, this.live.map(() => 0));
    const reports = this.live.map((child) => JSON.parse(this.outputs.get(child)!.trim().split("\n").pop()!) as Record<string, number>);
    this.live.length = 0;
    return reports;
  }
}

async function counts(queue: WorkQueue): Promise<{ live: number; dead: number }> {
  const [waiting, parked, delayed, leased, dead] = await queue.counts().run(r);
  return { live: waiting + parked + delayed + leased, dead };
}

test("worker processes killed mid-job lose no job and ack none twice", async () => {
  const name = "killed";
  const jobs = 60;
  const queue = new WorkQueue(name);
  await queue.configure({ eventsMax: 10_000 }).run(r);
  for (let n = 0; n < jobs; n++) await queue.add(`job-${n}`, "x", 0, 0, "").run(r);
  const processes = new Processes(name);
  const victims = [0, 1, 2, 3].map(() => processes.start());
  const midJob: string[] = [];
  for (const victim of victims.slice(0, 2)) {
    // SIGKILL once its handler runs a job; what it held comes back after the lease.
    await poll(async () => (await r.hget(runningKey(name), String(victim.pid))) !== null, "the victim to run a job");
    await processes.kill(victim);
    const held = await r.hget(runningKey(name), String(victim.pid));
    if (held !== null) midJob.push(held); // the handler never cleared it: killed mid-job
    processes.start();
  }
  await poll(async () => (await counts(queue)).live === 0, "the queue to drain", 60);
  const reports = await processes.stop();
  const [lost, , events] = await queue.events("0-0", 1000).run(r);
  assert.equal(lost, false);
  const acks = new Map<string, number>();
  for (const [, kind, job] of events) if (kind === "completed") acks.set(job, (acks.get(job) ?? 0) + 1);
  assert.deepEqual([...acks.keys()].sort(), Array.from({ length: jobs }, (_, n) => `job-${n}`).sort(), "a job never acked");
  assert.deepEqual([...acks.entries()].filter(([, n]) => n > 1), [], "acked twice");
  // Else only the leases of the killed workers' jobs ran out: at most two jobs each.
  const lapsed = events.filter(([, kind, , detail]) => kind === "failed" && detail.toString() === "lease ran out").map(([, , job]) => job);
  assert.equal(lapsed.length, events.length - jobs, JSON.stringify(events.map(([, kind, job]) => [kind, job])));
  assert.ok(midJob.every((job) => lapsed.includes(job)) && lapsed.length <= 4, JSON.stringify({ midJob, lapsed }));
  assert.equal((await counts(queue)).dead, 0);
  assert.deepEqual(reports.map((report) => report["lost"]), [0, 0, 0, 0]);
  const runs = new Map<string, number>();
  for (const job of await r.lrange(runsKey(name), 0, -1)) runs.set(job, (runs.get(job) ?? 0) + 1);
  assert.ok(midJob.length > 0 && midJob.every((job) => (runs.get(job) ?? 0) >= 2), JSON.stringify({ midJob }));
});
