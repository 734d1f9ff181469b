/**
 * On a 3-master cluster (ioredis's `Cluster`): a call after `SCRIPT FLUSH` on every node, a
 * call through FCALL, a pipeline and a transaction in one hash slot, each one round trip
 * after a flush, a batch over several slots refused before any I/O, and workers (through
 * FCALL) draining a queue, their renewals on a cluster connection of their thread's own.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Cluster } from "ioredis";

import { Batch, Counter, FixedLengthQueue, InvalidInput, WorkQueue, Worker } from "../src/index.js";
import { ClusterServers, poll, stopAfter } from "./server.js";

let servers: ClusterServers;
let cluster: Cluster;

before(async () => {
  servers = await ClusterServers.start();
  cluster = new Cluster([{ host: "127.0.0.1", port: servers.nodes[0]!.port }]);
  await new Promise((resolve) => cluster.once("ready", resolve));
});

after(async () => {
  cluster.disconnect();
  await servers.stop();
});

async function flushScripts(): Promise<void> {
  for (const node of cluster.nodes("master")) {
    await node.script("FLUSH");
    await node.call("FUNCTION", "FLUSH");
  }
}

test("calls load their script, or the library, on the node that lacks it", async () => {
  await flushScripts();
  for (const name of ["a", "b", "c", "d", "e", "f"]) {
    assert.deepEqual(await new FixedLengthQueue(`q:${name}`).enqueue(10, ["x"]).run(cluster), [1, 0]);
  }
  await flushScripts();
  for (const name of ["a", "b", "c", "d", "e", "f"]) {
    assert.deepEqual(await new FixedLengthQueue(`q:${name}`).enqueue(10, ["y"]).run(cluster, { functions: true }), [1, 0]);
    assert.deepEqual(await cluster.lrange(`q:${name}`, 0, -1), ["x", "y"]);
  }
});

test("a pipeline and a transaction in one slot, after a flush", async () => {
  for (const transaction of [false, true]) {
    await flushScripts();
    const batch = new Batch({ transaction });
    const pushed = batch.add(new FixedLengthQueue(`{t${transaction}}:q`).enqueue(10, ["1"]));
    const reset = batch.add(new Counter(`{t${transaction}}:c`).hashReset("n", 5));
    await batch.run(cluster);
    assert.deepEqual([pushed.result(), reset.result()], [[1, 0], 0n]);
    assert.equal(await cluster.hget(`{t${transaction}}:c`, "n"), "5");
  }
});

test("a batch over several slots is refused before any I/O", async () => {
  const batch = new Batch();
  batch.add(new FixedLengthQueue("{a}:q").enqueue(10, ["1"]));
  batch.add(new FixedLengthQueue("{b}:q").enqueue(10, ["1"]));
  await assert.rejects(batch.run(cluster), (err: InvalidInput) => err.code === "CROSSSLOT");
  assert.equal(await cluster.exists("{a}:q"), 0);
});

test("workers drain a queue on a cluster, through the Functions library, renewing on the cluster", async (t) => {
  const queue = new WorkQueue("clustered");
  const ids = Array.from({ length: 20 }, (_, i) => `job-${i}`);
  for (const id of ids) await queue.add(id, id, 0, 0, "").run(cluster);
  const seen: string[] = [];
  const stop = stopAfter(t);
  const worker = new Worker(queue, { poll: 20, lease: 900, functions: true, concurrency: 3 });
  let deadlineLeft = 0;
  const clients = [cluster.duplicate(), cluster.duplicate()];
  const runs = clients.map((client) =>
    worker.run(
      client,
      async (job) => {
        if (job.id === "job-0") {
          // Past two leases: only the thread's renewals keep it.
          const until = Date.now() + 2_000;
          while (Date.now() < until) {
            /* busy */
          }
          const [s, us] = await cluster.time();
          const deadline = Number(await cluster.zscore("{clustered}:leased", job.id));
          deadlineLeft = deadline - (Number(s) * 1000 + Math.floor(Number(us) / 1000));
        }
        seen.push(job.id);
      },
      stop.signal,
    ),
  );
  await poll(async () => (await queue.counts().run(cluster)).slice(0, 4).every((n) => n === 0), "the queue drained", 30);
  stop.abort();
  const reports = await Promise.all(runs);
  for (const client of clients) client.disconnect();
  assert.deepEqual([...seen].sort(), [...ids].sort());
  assert.equal(reports.reduce((n, r) => n + r.acked, 0), ids.length);
  assert.ok(deadlineLeft > 0, `the lease ran out ${-deadlineLeft} ms before the handler ended`);
});
