// BullMQ's side of benches/bullmq.rs: one cell per run, its results as one JSON line on
// stdout. The Rust bench spawns it (`node bench.mjs '<json>'`); by hand:
//
//   node benches/peers/bullmq/bench.mjs '{"port":6379,"mode":"throughput","queue":"q1","workers":1,"per":1,"jobs":1000}'
//   node benches/peers/bullmq/bench.mjs '{"port":6379,"mode":"throughput","queue":"q2","workers":8,"per":1,"jobs":1000,"paused":true}'
//   node benches/peers/bullmq/bench.mjs '{"port":6379,"mode":"throughput","queue":"q4","workers":8,"per":1,"jobs":1000,"limits":true}'
//   node benches/peers/bullmq/bench.mjs '{"port":6379,"mode":"pickup","queue":"q3","pickups":20,"gapMs":250}'
//
// Modes (the same flows as the crate's side, see benches/bullmq.rs):
// - throughput: `workers` producers (a Queue each, so a connection each) add `jobs` jobs
//   between them while `workers` Workers (a connection each, plus BullMQ's blocking one)
//   handle them, each with `concurrency: per`; producers add one job per call when `per`
//   is 1, else `addBulk` of `per` (one pipeline). Timed from the start of the adds to the
//   last `completed` event; the server's CPU (INFO cpu) and this process's CPU
//   (process.cpuUsage) around the same span. An untimed
//   warm-up of the same cell on another queue runs first (`warm` jobs, 500 by default).
//   With `paused`, the queue is paused first (`queue.pause()`), the workers run and the
//   producers add every job, then the clock starts and the queue is resumed
//   (`queue.resume()`): timed from the resume to the last `completed` event.
//   With `limits`, limits that are on but do not bind at the bench's pace: the queue's
//   global concurrency 64 (`queue.setGlobalConcurrency(64)`, untimed) and each Worker's
//   `limiter: { max: 1000, duration: 10 }` (BullMQ's open-source package has no groups,
//   so no per-group limits as on the crate's side). With `metrics`, each Worker keeps
//   per-minute metrics (`metrics: { maxDataPoints: 1440 }`, a day as the crate's). With
//   `dedup`, job n is added under the deduplication id `d-<n>` with a window of a minute
//   (`deduplication: { id, ttl: 60000 }`): every add opens a window and adds. With
//   `retain`, each job keeps the newest 1,000 completed jobs (`removeOnComplete: 1000`).
// - pickup: one Worker (concurrency 1), one job at a time on an idle queue: a random
//   pause in [0, gapMs), add, wait until the job is completed, again.
//
// Pickup latency is from `add` resolving to the processor starting, both read from
// performance.now() in this process (in the paused cells, from the later of the add and
// the resume). A processor that starts before its add resolved
// (the reply of the add can come after the worker's) counts as 0.
//
// BullMQ's settings: removeOnComplete (it keeps no finished job, as the crate's ack
// deletes it), a custom jobId per job (the crate's add takes an id and deduplicates by
// it; BullMQ checks a custom id the same way), every other option at its default
// (lockDuration 30 s as the crate's lease, stalledInterval 30 s, drainDelay 5 s, events
// stream capped near 10,000 entries, no limiter, no global concurrency, no metrics)
// but in the `limits` and `metrics` cells (above).
import { performance } from 'node:perf_hooks';
import { Queue, Worker } from 'bullmq';
import IORedis from 'ioredis';

const cell = JSON.parse(process.argv[2]);
const { port, mode, queue: name } = cell;
// 100 bytes of job data as BullMQ stores it: JSON of a 98-character string.
const DATA = 'x'.repeat(98);
const JOB_OPTS = { removeOnComplete: true, removeOnFail: true };

// A fresh connection per Queue and Worker (BullMQ adds a blocking one per Worker).
const redis = () => new IORedis({ host: '127.0.0.1', port, maxRetriesPerRequest: null });

/** The server's CPU time so far (INFO cpu: used_cpu_sys + used_cpu_user), in µs. */
async function serverUs(con) {
  const info = await con.info('cpu');
  let seconds = 0;
  for (const line of info.split('\n')) {
    if (line.startsWith('used_cpu_sys:') || line.startsWith('used_cpu_user:')) {
      seconds += parseFloat(line.split(':')[1]);
    }
  }
  return Math.round(seconds * 1e6);
}

/** The job's number, from its id `j-<n>`. */
const numberOf = (id) => Number(id.slice(id.lastIndexOf('-') + 1));

// A fresh node process runs cold code: before the timed cell, the same cell runs untimed
// on its own queue (`warm` jobs, 500 by default), as a worker that has been running for
// a while would be warmed up.
async function throughput({
  workers,
  per,
  jobs,
  warm = 500,
  paused = false,
  limits = false,
  metrics = false,
  dedup = false,
  retain = false,
}) {
  const flow = { workers, per, paused, limits, metrics, dedup, retain };
  if (warm > 0) await throughputOn(`${name}-warm`, { ...flow, jobs: warm });
  return throughputOn(name, { ...flow, jobs });
}

async function throughputOn(name, { workers, per, jobs, paused, limits, metrics, dedup, retain }) {
  // With `dedup`, each job is added under a deduplication id of its own with a window of
  // a minute (`deduplication: { id, ttl }`), so every add opens a window and adds.
  const optsOf = (n) => ({
    ...JOB_OPTS,
    jobId: `j-${n}`,
    ...(dedup ? { deduplication: { id: `d-${n}`, ttl: 60000 } } : {}),
    ...(retain ? { removeOnComplete: 1000 } : {}),
  });
  const added = new Float64Array(jobs);
  const started = new Float64Array(jobs);
  const producers = [];
  for (let p = 0; p < workers; p++) {
    producers.push(new Queue(name, { connection: redis() }));
  }
  let completed = 0;
  let allDone;
  const done = new Promise((resolve) => (allDone = resolve));
  const consumers = [];
  for (let w = 0; w < workers; w++) {
    const worker = new Worker(
      name,
      async (job) => {
        started[numberOf(job.id)] = performance.now();
      },
      {
        connection: redis(),
        concurrency: per,
        autorun: false,
        ...(limits ? { limiter: { max: 1000, duration: 10 } } : {}),
        ...(metrics ? { metrics: { maxDataPoints: 1440 } } : {}),
      },
    );
    worker.on('completed', () => {
      completed += 1;
      if (completed === jobs) allDone();
    });
    worker.on('error', (err) => {
      console.error(`bullmq worker: ${err}`);
      process.exit(1);
    });
    consumers.push(worker);
  }
  await Promise.all([...producers, ...consumers].map((q) => q.waitUntilReady()));
  if (limits) await producers[0].setGlobalConcurrency(64);
  const probe = redis();
  // Producer p adds jobs p, p + workers, … one call at a time (`per` at a time with addBulk).
  const produce = async (p) => {
    const queue = producers[p];
    const mine = [];
    for (let n = p; n < jobs; n += workers) mine.push(n);
    for (let i = 0; i < mine.length; i += per) {
      const chunk = mine.slice(i, i + per);
      if (per === 1) {
        await queue.add('j', DATA, optsOf(chunk[0]));
      } else {
        await queue.addBulk(chunk.map((n) => ({ name: 'j', data: DATA, opts: optsOf(n) })));
      }
      const now = performance.now();
      for (const n of chunk) added[n] = now;
    }
  };
  let cpuBefore, clientBefore, start, addsSecs;
  if (paused) {
    await producers[0].pause();
    for (const worker of consumers) worker.run();
    await Promise.all(producers.map((_, p) => produce(p)));
    cpuBefore = await serverUs(probe);
    clientBefore = process.cpuUsage();
    start = performance.now();
    await producers[0].resume();
    addsSecs = 0;
  } else {
    cpuBefore = await serverUs(probe);
    clientBefore = process.cpuUsage();
    start = performance.now();
    for (const worker of consumers) worker.run();
    await Promise.all(producers.map((_, p) => produce(p)));
    addsSecs = (performance.now() - start) / 1000;
  }
  await done;
  const secs = (performance.now() - start) / 1000;
  const client = process.cpuUsage(clientBefore);
  const cpuUs = (await serverUs(probe)) - cpuBefore;
  const pickupUs = [];
  for (let n = 0; n < jobs; n++) {
    pickupUs.push(Math.max(0, Math.round((started[n] - Math.max(added[n], start)) * 1000)));
  }
  await Promise.all(consumers.map((w) => w.close()));
  await Promise.all(producers.map((q) => q.close()));
  probe.disconnect();
  return {
    jobs: completed,
    secs,
    adds_secs: addsSecs,
    cpu_us: cpuUs,
    client_cpu_us: client.user + client.system,
    pickup_us: pickupUs,
  };
}

async function pickup({ pickups, gapMs }) {
  const queue = new Queue(name, { connection: redis() });
  let onStart = null;
  let onCompleted = null;
  const worker = new Worker(
    name,
    async () => {
      onStart(performance.now());
    },
    { connection: redis(), concurrency: 1 },
  );
  worker.on('completed', () => onCompleted());
  await Promise.all([queue.waitUntilReady(), worker.waitUntilReady()]);
  const probe = redis();
  const cpuBefore = await serverUs(probe);
  const start = performance.now();
  const pickupUs = [];
  for (let n = 0; n < pickups; n++) {
    await new Promise((resolve) => setTimeout(resolve, Math.random() * gapMs));
    const startedAt = new Promise((resolve) => (onStart = resolve));
    const completedAt = new Promise((resolve) => (onCompleted = resolve));
    await queue.add('j', DATA, { ...JOB_OPTS, jobId: `j-${n}` });
    const addedAt = performance.now();
    const began = await startedAt;
    pickupUs.push(Math.max(0, Math.round((began - addedAt) * 1000)));
    await completedAt;
  }
  const secs = (performance.now() - start) / 1000;
  const cpuUs = (await serverUs(probe)) - cpuBefore;
  await worker.close();
  await queue.close();
  probe.disconnect();
  return { jobs: pickups, secs, cpu_us: cpuUs, pickup_us: pickupUs };
}

const result = mode === 'throughput' ? await throughput(cell) : await pickup(cell);
// Exit once the line is flushed: a pipe takes 64 KiB at a time, and the pickups of a
// long cell are more.
process.stdout.write(JSON.stringify(result) + '\n', () => process.exit(0));
