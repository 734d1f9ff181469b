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
import { Server, blockedIn, clientsIn, killOnExit, poll, serve } from "./server.js";

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

  /** A worker process; a victim's handlers never end, so that it is killed mid-job. */
  start(victim = false): ChildProcess {
    const program = new URL("./worker-process.js", import.meta.url).pathname;
    const child = spawn(process.execPath, [program, String(server.port), this.name, ...(victim ? ["victim"] : [])], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    killOnExit(child);
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

  /** SIGKILL to every live process: a failed test leaves none running. */
  async killAll(): Promise<void> {
    for (const child of [...this.live]) await this.kill(child);
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
  try {
    const victims = [true, true, false, false].map((victim) => processes.start(victim)).slice(0, 2);
    const midJob: string[] = [];
    for (const victim of victims) {
      // SIGKILL once its handler runs a job; what it held comes back after the lease.
      await poll(async () => (await r.hget(runningKey(name), String(victim.pid))) !== null, "the victim to run a job");
      await processes.kill(victim);
      const held = await r.hget(runningKey(name), String(victim.pid));
      assert.notEqual(held, null, "a victim's handler ended");
      midJob.push(held!); // its handler never ended: killed mid-job
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
    assert.ok(midJob.length === 2 && midJob.every((job) => (runs.get(job) ?? 0) >= 2), JSON.stringify({ midJob }));
  } finally {
    await processes.killAll();
  }
});


test("workers go on through a demotion and a promotion", async () => {
  const primary = await Server.start("--repl-diskless-sync-delay", "0");
  const replica = await Server.start("--replicaof", "127.0.0.1", String(primary.port));
  const stop = new AbortController();
  let runs: Promise<WorkReport>[] = [];
  let producing: Promise<void> = Promise.resolve();
  try {
    const ports = [primary.port, replica.port];
    const servers = ports.map((port) => ({ host: "127.0.0.1", port }));
    const name = "demoted";
    const workers = 3;
    await poll(async () => /master_link_status:up/.test(await replica.client().info("replication")), "the replica in sync");
    const ran = new Map<string, number>();
    const durable: string[] = [];
    /** Adds a job on whichever server is the primary, waiting for the replica; gives up once the test stops. */
    const add = async (id: string): Promise<void> => {
      for (;;) {
        if (stop.signal.aborted) throw new Error(`${id} not added: the test stopped`);
        let client: Redis;
        try {
          client = await primaryOf(servers)();
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 10)); // a pause between tries, not a wait
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
    // One worker runs a job through the demotion (its next call meets it); a gate runs
    // only while every worker runs one (each takes work after the promotion).
    let holding = false;
    let demoted = false;
    let gates = 0;
    const handler = async (job: { id: string }): Promise<void> => {
      ran.set(job.id, (ran.get(job.id) ?? 0) + 1);
      if (job.id === "held") {
        holding = true;
        await poll(() => demoted || stop.signal.aborted, "the demotion", 60);
      } else if (job.id.startsWith("gate-")) {
        gates += 1;
        await poll(() => gates >= workers || stop.signal.aborted, "a gate on every worker", 60);
      }
    };
    const worker = new Worker(name, { poll: 200, renewFrom: servers.map((s) => ({ ...s, maxRetriesPerRequest: 0 })) });
    runs = Array.from({ length: workers }, () => worker.run(primaryOf(servers), handler, stop.signal));
    for (let n = 0; n < 20; n++) await add(`before-${n}`);
    const old = primary.client();
    await add("held");
    await poll(() => holding, "a worker to run the held job");
    await poll(async () => (await blockedIn(old, "bzpopmin")) >= 1, "a worker blocked in BZPOPMIN");
    // Under load: a producer goes on adding while the primary is demoted.
    producing = (async () => {
      for (let n = 0; n < 30; n++) await add(`during-${n}`);
    })();
    await old.call("REPLICAOF", "127.0.0.1", String(replica.port));
    demoted = true;
    // Every worker leaves the demoted server before the promotion: the demotion unblocked
    // each wait (UNBLOCKED), and a worker that was not waiting (the held job's) meets
    // READONLY at its next call, after which it keeps no connection there (its waits' one,
    // idle, whose last command was BZPOPMIN, goes with its loop's). No primary answers
    // meanwhile, so none comes back.
    await poll(async () => (await clientsIn(old, "bzpopmin")) === 0, "every worker off the demoted server");
    await replica.client().call("REPLICAOF", "NO", "ONE");
    await producing;
    for (let n = 0; n < 5; n++) await add(`after-${n}`);
    for (let n = 0; n < workers; n++) await add(`gate-${n}`);
    const queue = new WorkQueue(name);
    const fresh = replica.client();
    await poll(async () => gates >= workers && (await queue.counts().run(fresh)).slice(0, 4).every((n) => n === 0), "every job to run", 60);
    stop.abort();
    const reports = await Promise.all(runs);
    assert.deepEqual(durable.filter((id) => !ran.has(id)), [], "durable adds that never ran");
    // Jobs added after the promotion ran once each, one gate on each worker.
    const after = [...ran].filter(([id]) => id.startsWith("after-") || id.startsWith("gate-"));
    assert.deepEqual(after.filter(([, n]) => n !== 1), [], "a job added after the promotion ran twice");
    assert.equal(after.length, 5 + workers);
    assert.ok(reports.every((rep) => rep.serverRetries + rep.reconnects >= 1), `a worker met no fault: ${JSON.stringify(reports)}`);
  } finally {
    // A failed test leaves no worker or producer running (the test process would not end).
    stop.abort();
    await Promise.allSettled([...runs, producing]);
    await primary.stop();
    await replica.stop();
  }
});
