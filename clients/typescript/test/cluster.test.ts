/**
 * On a 3-master cluster (ioredis's `Cluster`): a call after `SCRIPT FLUSH` on every node, a
 * call through FCALL, a pipeline and a transaction in one hash slot, each one round trip
 * after a flush, and a batch over several slots refused before any I/O.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { Cluster } from "ioredis";

import { Batch, Counter, FixedLengthQueue, InvalidInput } from "../src/index.js";
import { ClusterServers } from "./server.js";

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
