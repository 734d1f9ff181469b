/**
 * Redlock on three throwaway servers: one holder at a time with a growing fencing token,
 * contenders that take turns, a lock held with one server down, an extension, and an error
 * when a majority cannot answer.
 */

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import type { Redis } from "ioredis";

import { NotGranted, QuorumLock } from "../src/index.js";
import { Server, deadClient } from "./server.js";

let servers: Server[];
let clients: Redis[];

before(async () => {
  servers = await Promise.all([Server.start(), Server.start(), Server.start()]);
  clients = servers.map((s) => s.client());
});

after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

test("one holder at a time, with a growing fence", async () => {
  const lock = new QuorumLock("invoice:1", { retries: 0 });
  const first = await lock.acquire(clients, 10_000);
  assert.ok(first !== null && first.validity() > 9_000 && first.validity() <= 10_000);
  assert.equal(await lock.acquire(clients, 10_000), null, "a second holder while the first holds it");
  assert.equal(await lock.release(clients, first), 3);
  const second = await lock.acquire(clients, 10_000);
  assert.ok(second !== null && second.fence > first.fence);
  for (const c of clients) assert.equal(await c.get(lock.key), second.token);
  assert.equal(await lock.extend(clients, second, 20_000), true);
  assert.ok(second.validity() > 10_000);
  await lock.release(clients, second);
});

test("contenders take turns, never two at once", async () => {
  const lock = new QuorumLock("invoice:2", { retries: 50, retryDelay: 20 });
  let inside = 0;
  let most = 0;
  const fences: number[] = [];
  await Promise.all(
    [0, 1, 2, 3].map(() =>
      lock.hold(clients, 5_000, async (held) => {
        inside += 1;
        most = Math.max(most, inside);
        fences.push(held.fence);
        await new Promise((resolve) => setImmediate(resolve));
        inside -= 1;
      }),
    ),
  );
  assert.equal(most, 1);
  assert.equal(new Set(fences).size, 4);
});

test("a minority down still grants; a majority down is an error", async () => {
  const dead = [await deadClient(), await deadClient()];
  const lock = new QuorumLock("invoice:3", { retries: 0 });
  const held = await lock.acquire([clients[0]!, clients[1]!, dead[0]!], 10_000);
  assert.ok(held !== null);
  assert.equal(await lock.release([clients[0]!, clients[1]!, dead[0]!], held), 2);
  await assert.rejects(lock.acquire([clients[0]!, dead[0]!, dead[1]!], 10_000));
  // Nothing was left held where it was granted.
  assert.equal(await clients[0]!.exists(lock.key), 0);
  await assert.rejects(new QuorumLock("invoice:4", { retries: 0 }).hold([clients[0]!, dead[0]!, dead[1]!], 1_000, () => 1));
  const busy = new QuorumLock("invoice:5", { retries: 0 });
  const taken = await busy.acquire(clients, 10_000);
  await assert.rejects(busy.hold(clients, 1_000, () => 1), NotGranted);
  await busy.release(clients, taken!);
  for (const c of dead) c.disconnect();
});
