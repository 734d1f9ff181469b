/**
 * The TypeScript side of the Rust crate's `tests/it/typescript_sharing.rs`, run with node
 * once `.ci/typescript-client` built it:
 *
 *     node clients/typescript/dist/test/rust-peer.js add-jobs <redis-url> <queue> <count>
 *
 * adds `count` jobs (ids `job-<i>`, payloads `email <i>`) to the work queue `queue` with
 * this package's `WorkQueue.add`, ten to a pipeline (one round trip each), every fifth
 * one at priority 1, and prints one JSON line: the keys its add named, and how many jobs
 * were new.
 */

import { Redis } from "ioredis";

import { Batch, WorkQueue } from "../src/index.js";

async function addJobs(url: string, name: string, count: number): Promise<void> {
  const redis = new Redis(url);
  try {
    const queue = new WorkQueue(name);
    let added = 0;
    for (let start = 0; start < count; start += 10) {
      const batch = new Batch();
      const slots = [];
      for (let i = start; i < Math.min(start + 10, count); i++) {
        slots.push(batch.add(queue.add(`job-${i}`, `email ${i}`, i % 5 === 0 ? 1 : 0, 0, "")));
      }
      await batch.run(redis);
      added += slots.filter((slot) => slot.result()[0]).length;
    }
    process.stdout.write(`${JSON.stringify({ keys: queue.add("x", "x", 0, 0, "").keys, added })}\n`);
  } finally {
    redis.disconnect();
  }
}

const [command, url, name, count] = process.argv.slice(2);
if (command !== "add-jobs" || url === undefined || name === undefined || count === undefined) {
  process.stderr.write("usage: node rust-peer.js add-jobs <redis-url> <queue> <count>\n");
  process.exit(2);
}
await addJobs(url, name, Number(count));
