/**
 * A worker process of the fault tests: `node dist/test/worker-process.js <port> <queue>
 * [victim]` runs a Worker of concurrency 2 until SIGTERM, then prints its report as JSON.
 * Each handler notes the job it runs in Redis, and takes a moment; a victim's handlers
 * never end (until the process stops), so that a SIGKILL finds it mid-job.
 */

import { setTimeout as sleep } from "node:timers/promises";

import { Redis } from "ioredis";

import { Worker } from "../src/index.js";

export const LEASE = 1_500;

/** Per worker process (pid): the job its handler runs now. */
export const runningKey = (name: string): string => `{${name}}:test:running`;
/** Every run of a handler, as the job's id. */
export const runsKey = (name: string): string => `{${name}}:test:runs`;
/** The worker processes (pids) that stop on SIGTERM: their handler of it is set. */
export const readyKey = (name: string): string => `{${name}}:test:ready`;

async function main(port: number, name: string, victim: boolean): Promise<void> {
  const r = new Redis({ port, host: "127.0.0.1" });
  const stop = new AbortController();
  process.once("SIGTERM", () => stop.abort());
  const pid = String(process.pid);
  await r.sadd(readyKey(name), pid);
  const report = await new Worker(name, { lease: LEASE, concurrency: 2, poll: 50 }).run(
    r,
    async (job, signal) => {
      await r.rpush(runsKey(name), job.id);
      await r.hset(runningKey(name), pid, job.id);
      if (victim) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
      await sleep(100);
      await r.hdel(runningKey(name), pid);
    },
    stop.signal,
  );
  r.disconnect();
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

if (process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  await main(Number(process.argv[2]), process.argv[3] ?? "killed", process.argv[4] === "victim");
}
