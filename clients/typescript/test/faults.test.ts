/**
 * The Worker under the faults a deployment meets: worker processes SIGKILLed mid-job and
 * started again lose no job and ack none twice; a primary demoted and its replica promoted
 * under working workers that find the primary by `ROLE` (every worker goes on, and every
 * job whose add the replica acknowledged runs).
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { test } from "node:test";

import { Redis } from "ioredis";

import { WorkQueue, Worker, type WorkReport, primaryOf } from "../src/index.js";
import { readyKey, runningKey, runsKey } from "./worker-process.js";
import { Server, poll, serve } from "./server.js";

let server: Server;
let r: Redis;

serve((s, c) => {
  server = s;
  r = c;
}, { flush: false });

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
  const ends = events.filter(([, kind]) => kind !== "added" && kind !== "active");
  const lapsed = ends.filter(([, kind, , detail]) => kind === "stalled" && detail.toString() === "lease ran out").map(([, , job]) => job);
  assert.equal(lapsed.length, ends.length - jobs, JSON.stringify(events.map(([, kind, job]) => [kind, job])));
  assert.ok(midJob.every((job) => lapsed.includes(job)) && lapsed.length <= 4, JSON.stringify({ midJob, lapsed }));
  assert.equal((await counts(queue)).dead, 0);
  assert.deepEqual(reports.map((report) => report["lost"]), [0, 0, 0, 0]);
  const runs = new Map<string, number>();
  for (const job of await r.lrange(runsKey(name), 0, -1)) runs.set(job, (runs.get(job) ?? 0) + 1);
  assert.ok(midJob.length > 0 && midJob.every((job) => (runs.get(job) ?? 0) >= 2), JSON.stringify({ midJob }));
});


test("workers go on through a demotion and a promotion", async () => {
  const primary = await Server.start("--repl-diskless-sync-delay", "0");
  const replica = await Server.start("--replicaof", "127.0.0.1", String(primary.port));
  try {
    const ports = [primary.port, replica.port];
    const name = "demoted";
    await poll(async () => /master_link_status:up/.test(await replica.client().info("replication")), "the replica in sync");
    const ran = new Map<string, number>();
    const durable: string[] = [];
    /** Adds a job on whichever server is the primary, waiting for the replica. */
    const add = async (id: string): Promise<void> => {
      for (;;) {
        let client: Redis;
        try {
          client = await primaryOf(ports.map((port) => ({ host: "127.0.0.1", port })))();
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 10));
          continue;
        }
        try {
          await new WorkQueue(name).add(id, "x", 0, 0, "").run(client);
          if (Number(await client.call("WAIT", 1, 200)) >= 1) durable.push(id);
          return;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 10));
        } finally {
          client.disconnect();
        }
      }
    };
    const stop = new AbortController();
    const worker = new Worker(name, {
      poll: 200,
      renewFrom: ports.map((port) => ({ host: "127.0.0.1", port, maxRetriesPerRequest: 0 })),
    });
    const runs: Promise<WorkReport>[] = [0, 1, 2].map(() =>
      worker.run(primaryOf(ports.map((port) => ({ host: "127.0.0.1", port }))), (job) => void ran.set(job.id, (ran.get(job.id) ?? 0) + 1), stop.signal),
    );
    for (let n = 0; n < 20; n++) await add(`before-${n}`);
    const blocked = async (port: number): Promise<number> => {
      const c = new Redis({ port, host: "127.0.0.1" });
      try {
        return String(await c.client("LIST")).split("\n").filter((l) => / cmd=bzpopmin /.test(l)).length;
      } finally {
        c.disconnect();
      }
    };
    await poll(async () => (await blocked(primary.port)) >= 1, "a worker blocked in BZPOPMIN");
    // Under load: a producer goes on adding while the primary is demoted.
    const producing = (async () => {
      for (let n = 0; n < 30; n++) await add(`during-${n}`);
    })();
    await primary.client().call("REPLICAOF", "127.0.0.1", String(replica.port));
    await poll(async () => (await blocked(primary.port)) === 0, "no worker blocked on the demoted server");
    await replica.client().call("REPLICAOF", "NO", "ONE");
    await producing;
    for (let n = 0; n < 5; n++) await add(`after-${n}`);
    const queue = new WorkQueue(name);
    const fresh = replica.client();
    await poll(async () => (await queue.counts().run(fresh)).slice(0, 4).every((n) => n === 0), "every job to run", 30);
    stop.abort();
    const reports = await Promise.all(runs);
    assert.deepEqual(durable.filter((id) => !ran.has(id)), [], "durable adds that never ran");
    assert.ok(reports.every((rep) => rep.serverRetries + rep.reconnects >= 1), `a worker met no fault: ${JSON.stringify(reports)}`);
  } finally {
    await primary.stop();
    await replica.stop();
  }
});
