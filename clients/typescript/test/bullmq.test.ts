/**
 * A BullMQ queue on the same server is left as it was by this package's queue of the same
 * name: its keys (`bull:<name>:*`, and `{<name>}:<name>:*` under the hash-tagged prefix
 * BullMQ advises on a cluster, in this queue's slot) are byte for byte the same (DUMP)
 * after the whole life of this queue: configured, added to (options, deduplication, a
 * schedule), worked (acks, a dead job, a retry), cleaned and deleted.
 *
 * BullMQ's keys are written by BullMQ itself where `benches/peers/fetch-bullmq.sh`
 * installed it (benches/peers/bullmq/node_modules, ignored by git), and by raw commands
 * in BullMQ's shapes in any case, so the test runs without it too.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";

import type { Redis } from "ioredis";

import { WorkQueue, Worker, Unrecoverable } from "../src/index.js";
import { Server, poll, serve, serverMs, stopAfter } from "./server.js";

const ROOT = new URL("../../../../", import.meta.url);
const PEER = new URL("benches/peers/bullmq/", ROOT);

let server: Server;
let r: Redis;

serve((s, c) => {
  server = s;
  r = c;
});

const NAME = "emails";

/** Keys in BullMQ's shapes for queue `name` under `prefix`, written with plain commands. */
async function bullShaped(prefix: string, name: string): Promise<void> {
  const k = (suffix: string): string => `${prefix}:${name}:${suffix}`;
  await r.hset(k("meta"), "opts.maxLenEvents", "10000", "version", "bullmq:6.7.0");
  await r.set(k("id"), "4");
  await r.rpush(k("wait"), "2", "1");
  await r.zadd(k("delayed"), 1_000_000 * 4096 + 3, "3");
  await r.zadd(k("prioritized"), 2 * 2 ** 32 + 1, "4");
  await r.set(k("pc"), "1");
  await r.zadd(k("marker"), 0, "0");
  await r.zadd(k("completed"), 1_700_000_000_000, "0");
  for (const id of ["0", "1", "2", "3", "4"]) {
    await r.hset(k(id), "name", "send", "data", JSON.stringify({ to: `user-${id}` }), "opts", "{}", "timestamp", "1700000000000");
  }
  await r.set(k("de:welcome"), "1", "PX", 3_600_000);
  await r.xadd(k("events"), "MAXLEN", "~", "10000", "*", "event", "added", "jobId", "1", "name", "send");
}

/** BullMQ's own queue `name` under `prefix`: jobs added (plain, delayed, prioritized, deduplicated) and one completed. */
async function bullmqItself(prefix: string, name: string): Promise<void> {
  type Bull = {
    Queue: new (name: string, options: object) => {
      add(name: string, data: object, options?: object): Promise<unknown>;
      close(): Promise<void>;
    };
    Worker: new (name: string, processor: (job: unknown) => Promise<unknown>, options: object) => {
      close(): Promise<void>;
    };
  };
  // BullMQ's CommonJS build, as its bench peer loads it (its ES one needs a bundler).
  const bull = createRequire(new URL("package.json", PEER))("bullmq") as Bull;
  const connection = { host: "127.0.0.1", port: server.port, maxRetriesPerRequest: null };
  let done = 0;
  const worker = new bull.Worker(name, async () => void (done += 1), { connection, prefix });
  const queue = new bull.Queue(name, { connection, prefix });
  try {
    await queue.add("send", { to: "first" }, { jobId: "bull-1", removeOnComplete: false });
    await poll(() => done === 1, "BullMQ's worker to complete its job");
  } finally {
    await worker.close();
  }
  try {
    await queue.add("send", { to: "later" }, { jobId: "bull-2", delay: 3_600_000 });
    await queue.add("send", { to: "vip" }, { jobId: "bull-3", priority: 3 });
    await queue.add("send", { to: "once" }, { jobId: "bull-4", deduplication: { id: "welcome", ttl: 3_600_000 } });
  } finally {
    await queue.close();
  }
}

/** Every key of BullMQ's queue under each prefix, with its DUMP, sorted. */
async function bullKeys(): Promise<[string, string][]> {
  const keys = [...(await r.keys(`bull:${NAME}:*`)), ...(await r.keys(`{${NAME}}:${NAME}:*`))].sort();
  const out: [string, string][] = [];
  for (const key of keys) out.push([key, (await r.dumpBuffer(key))?.toString("hex") ?? "gone"]);
  return out;
}

test("a BullMQ queue of the same name is left byte for byte as it was", async (t) => {
  for (const prefix of ["bull", `{${NAME}}`]) await bullShaped(prefix, NAME);
  const real = existsSync(new URL("node_modules/bullmq/package.json", PEER));
  if (real) {
    await r.flushall();
    for (const prefix of ["bull", `{${NAME}}`]) await bullmqItself(prefix, NAME);
  } else {
    t.diagnostic("BullMQ is not installed (sh benches/peers/fetch-bullmq.sh): its keys are written in its shapes");
  }
  const before = await bullKeys();
  assert.ok(before.length >= 10, JSON.stringify(before.map(([key]) => key)));

  const queue = new WorkQueue(NAME);
  await queue.configure({ eventsMax: 1000, resultTtl: 60_000 }).run(r);
  await queue.add("1", "plain", 0, 0, "").run(r);
  await queue.add("2", "retried", 0, 0, "", { attempts: 2, backoff: "fixed", backoffDelay: 1 }).run(r);
  await queue.add("3", "urgent", 0, 0, "", { lifo: true }).run(r);
  await queue.add("wait", "named as BullMQ's list", 1, 0, "mail").run(r);
  await queue.add("later", "delayed", 0, 3_600_000, "").run(r);
  await queue.addDeduplicated("welcome", "once", 0, 0, "", "welcome", 60_000).run(r);
  await queue.addDeduplicated("welcome-2", "twice", 0, 0, "", "welcome", 60_000).run(r);
  await queue.setSchedule("digest", 0, "", "", 0, 0, "", "daily", false, { every: 86_400_000, first: (await serverMs(r)) + 3_600_000 }).run(r);
  const stop = stopAfter(t);
  const seen = new Set<string>();
  let deliveriesOf2 = 0;
  const run = new Worker(queue, { poll: 20, maxDeliveries: 3 }).run(
    server.client(),
    (job) => {
      seen.add(job.id);
      if (job.id === "2") {
        deliveriesOf2 += 1;
        throw new Unrecoverable("no such mailbox");
      }
      return `sent ${job.payload.toString()}`;
    },
    stop.signal,
  );
  await poll(async () => {
    const [waiting, , delayed, leased, dead] = await queue.counts().run(r);
    return waiting + leased === 0 && delayed === 1 && dead === 1;
  }, "every job ready to run handled");
  assert.equal(await queue.retryDead(10).run(r), 1);
  await poll(async () => deliveriesOf2 === 2 && (await queue.counts().run(r))[4] === 1, "the retried job to die again");
  stop.abort();
  await run;
  assert.deepEqual([...seen].sort(), ["1", "2", "3", "wait", "welcome"]);
  assert.equal(await queue.clean("dead", 10).run(r), 1);
  assert.equal(await queue.removeSchedule("digest").run(r), true);
  await queue.pause().run(r);
  await poll(async () => (await queue.deleteQueue(100, true).run(r)) === 0, "the queue deleted");

  assert.deepEqual(await bullKeys(), before, "a key of BullMQ's queue changed");
  assert.equal(await r.exists(`{${NAME}}:jobs`), 0, "this queue was not deleted");
});
