/**
 * The TypeScript client's side of the queue bench (`main.ts`): one throughput cell per
 * process, taking the cell as BullMQ's side (`benches/peers/bullmq/bench.mjs`) takes it,
 * as a JSON argument, and printing its results as one JSON line in the same shape:
 *
 *     node dist/bench/queue.js '{"port":6379,"queue":"ts-1","workers":8,"per":1,"jobs":3000}'
 *
 * `workers` producers (a connection each) add `jobs` 100-byte jobs between them, one per
 * call, or a `Batch` of `per` per call (one round trip), while `workers` `Worker`s
 * (a connection each, plus the one each blocks on and its renewals thread's) with
 * `concurrency: per` handle them: a Worker takes as many jobs per call as it has free
 * slots and acks the finished ones in the same call. Timed from the start of the adds to
 * the last ack; the server's CPU (INFO cpu) and this process's (`process.cpuUsage`, every
 * thread) over the same span. The Workers start before the clock, handle an untimed
 * warm-up of `warm` jobs (500), as BullMQ's side warms up on a cell of its own, and the
 * clock starts once they wait for work (blocked on the queue's signal key) and the
 * process is quiet: each Worker's renewals thread loads its modules once when it
 * starts, which is a cost of starting a worker process, not of its jobs (the CPU of the
 * start and the warm-up is printed as `startup_cpu_us`). The queue has the crate's default settings (no
 * metrics, no events).
 */

import { performance } from "node:perf_hooks";

import { Redis } from "ioredis";

import { Batch, WorkQueue, Worker } from "../src/index.js";

interface Spec {
  port: number;
  queue: string;
  workers: number;
  per: number;
  jobs: number;
  warm?: number;
}

const PAYLOAD = Buffer.alloc(100, "x");

/** The server's CPU time so far (INFO cpu: used_cpu_sys + used_cpu_user), µs. */
async function serverUs(con: Redis): Promise<number> {
  let seconds = 0;
  for (const line of (await con.info("cpu")).split("\n")) {
    if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) seconds += parseFloat(line.split(":")[1]!);
  }
  return Math.round(seconds * 1e6);
}

/** How many clients of the server are blocked in BZPOPMIN now. */
async function blocked(con: Redis): Promise<number> {
  return String(await con.client("LIST"))
    .split("\n")
    .filter((line) => line.includes(" cmd=bzpopmin ") && / flags=[a-zA-Z]*b/.test(line)).length;
}

/** Whether this process used less than 5 ms of CPU over the next 50 ms. */
async function quiet(): Promise<boolean> {
  const before = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, 50));
  const used = process.cpuUsage(before);
  return used.user + used.system < 5_000;
}

async function cell(spec: Spec): Promise<Record<string, unknown>> {
  const { port, workers, per, jobs } = spec;
  const warm = spec.warm ?? 500;
  const redis = (): Redis => new Redis({ host: "127.0.0.1", port });
  const probe = redis();
  const queue = new WorkQueue(spec.queue);
  const added = new Float64Array(jobs);
  const started = new Float64Array(jobs);
  let handled = 0;
  let allHandled: () => void = () => {};
  let handledAll = Promise.resolve();
  const expect = (count: number): void => {
    handled = 0;
    handledAll = new Promise<void>((resolve) => (allHandled = resolve));
    if (count === 0) allHandled();
  };
  const stop = new AbortController();
  const startup = process.cpuUsage();
  const clients = Array.from({ length: workers }, redis);
  const worker = new Worker(queue, { concurrency: per, onEviction: "ignore" });
  const runs = clients.map((client) =>
    worker.run(
      client,
      (job) => {
        if (job.id.startsWith("j-")) started[Number(job.id.slice(2))] = performance.now();
        if (++handled === jobsNow) allHandled();
      },
      stop.signal,
    ),
  );
  let jobsNow = warm;
  const producers = Array.from({ length: workers }, redis);
  await Promise.all(producers.map((p) => p.ping()));
  // Producer p adds jobs p, p + workers, …, one call at a time (a batch of `per` at a time).
  const produce = async (p: number, prefix: string, count: number, times: Float64Array | null): Promise<void> => {
    const mine: number[] = [];
    for (let n = p; n < count; n += workers) mine.push(n);
    for (let i = 0; i < mine.length; i += per) {
      const chunk = mine.slice(i, i + per);
      if (per === 1) {
        await queue.add(`${prefix}${chunk[0]}`, PAYLOAD, 0, 0, "").run(producers[p]!);
      } else {
        const batch = new Batch();
        for (const n of chunk) batch.add(queue.add(`${prefix}${n}`, PAYLOAD, 0, 0, ""));
        await batch.run(producers[p]!);
      }
      const now = performance.now();
      if (times !== null) for (const n of chunk) times[n] = now;
    }
  };
  /** Until the queue holds no job: the last ones are acked with the Workers' next takes. */
  const drained = async (): Promise<void> => {
    for (;;) {
      const [waiting, , , leased] = await queue.counts().run(probe);
      if (waiting + leased === 0) return;
    }
  };
  expect(warm);
  await Promise.all(producers.map((_, p) => produce(p, "w-", warm, null)));
  await handledAll;
  await drained();
  while ((await blocked(probe)) < workers || !(await quiet())) {
    // every Worker waiting for work again, and the renewals threads loaded
  }
  const startupCpu = process.cpuUsage(startup);

  jobsNow = jobs;
  expect(jobs);
  const cpuBefore = await serverUs(probe);
  const clientBefore = process.cpuUsage();
  const start = performance.now();
  await Promise.all(producers.map((_, p) => produce(p, "j-", jobs, added)));
  const addsSecs = (performance.now() - start) / 1000;
  await handledAll;
  await drained();
  const secs = (performance.now() - start) / 1000;
  const client = process.cpuUsage(clientBefore);
  const cpuUs = (await serverUs(probe)) - cpuBefore;
  stop.abort();
  const reports = await Promise.all(runs);
  for (const c of [...clients, ...producers, probe]) c.disconnect();
  const pickupUs = Array.from(added, (a, n) => Math.max(0, Math.round((started[n]! - Math.max(a, start)) * 1000)));
  return {
    jobs: reports.reduce((sum, r) => sum + r.acked, 0) - warm,
    secs,
    adds_secs: addsSecs,
    cpu_us: cpuUs,
    client_cpu_us: client.user + client.system,
    startup_cpu_us: startupCpu.user + startupCpu.system,
    pickup_us: pickupUs,
  };
}

const result = await cell(JSON.parse(process.argv[2] ?? "{}") as Spec);
process.stdout.write(`${JSON.stringify(result)}\n`, () => process.exit(0));
