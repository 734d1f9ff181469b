/**
 * The TypeScript client's side of the coordination bench (`main.ts`): one cell per
 * process, with the arguments and the output of the npm peers' program
 * (`benches/peers/coordination/bench.mjs`):
 *
 *     node dist/bench/coordination.js <order> <mutex|semaphore> <contenders> <operations> <url> <key> <max ms>
 *
 * `contenders` async loops in this process, each with its own ioredis connection, each
 * looping acquire → release until `operations` acquisitions were claimed between them
 * or the time is up: a `FairLock` (`order` `fifo`: first come, first served; `any`:
 * barging) or a `Semaphore` of capacity 4, each contender taking 1 permit (`fifo`: with a
 * place in line; `any`: without), every lease 10 s, waiting with `wait` (it blocks on
 * the turn key or bell the script names, on a connection of its own for the wait). After
 * one untimed hold per contender it prints `ready` and starts on a line on stdin; then it
 * prints one JSON line: the operations done, the seconds, its CPU time, and every hold's
 * start of acquire, acquire returned and release returned, in µs of one clock.
 */

import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";

import { Redis } from "ioredis";

import { FairLock, Semaphore, VERSION, wait } from "../src/index.js";

const [order, cell, contendersArg, opsArg, url, key, maxMsArg] = process.argv.slice(2) as string[];
const contenders = Number(contendersArg);
const ops = Number(opsArg);
const maxMs = Number(maxMsArg);
const TTL = 10_000;
const CAPACITY = 4;
if ((order !== "fifo" && order !== "any") || (cell !== "mutex" && cell !== "semaphore") || url === undefined || key === undefined) {
  process.stderr.write("usage: coordination.js fifo|any mutex|semaphore <contenders> <operations> <url> <key> <max ms>\n");
  process.exit(2);
}

/** One acquire (waiting until granted) and its release, on `con`. */
async function take(con: Redis): Promise<() => Promise<unknown>> {
  const token = randomBytes(16).toString("hex");
  if (cell === "mutex") {
    const lock = new FairLock(key!);
    const granted = await wait(con, () => lock.acquire(token, TTL, TTL, 10, { order }), (reply) => reply[0] !== 0, 60_000);
    if (granted === null) throw new Error("not granted in 60 s");
    return () => lock.release(token).run(con);
  }
  const permits = new Semaphore(key!);
  const place = order === "fifo" ? { place: TTL } : {};
  const granted = await wait(con, () => permits.acquire(token, 1, TTL, 10, place), (reply) => reply[0] !== null, 60_000);
  if (granted === null) throw new Error("not granted in 60 s");
  return () => permits.release(token).run(con);
}

const cons: Redis[] = [];
for (let i = 0; i < contenders; i++) {
  const con = new Redis(url!, { maxRetriesPerRequest: null });
  await con.ping();
  cons.push(con);
}
if (cell === "semaphore") await new Semaphore(key!).setCapacity(CAPACITY).run(cons[0]!);
// One untimed hold per contender first: connections made, scripts loaded, code warmed.
for (const con of cons) await (await take(con))();

process.stdout.write("ready\n");
await new Promise((resolve) => process.stdin.once("data", resolve));
process.stdin.pause();

let claimed = 0;
const holds: [number, number, number][] = [];
const base = performance.now();
const cpuBefore = process.cpuUsage();
const us = (): number => Math.round((performance.now() - base) * 1000);
await Promise.all(
  cons.map(async (con) => {
    while (performance.now() - base < maxMs && claimed++ < ops) {
      const start = us();
      const release = await take(con);
      const acquired = us();
      await release();
      holds.push([start, acquired, us()]);
    }
  }),
);
const secs = (performance.now() - base) / 1000;
const cpu = process.cpuUsage(cpuBefore);
for (const con of cons) con.disconnect();
const line = JSON.stringify({ lib: `redis-patterns ${order}`, version: VERSION, ops: holds.length, secs, client_cpu_us: cpu.user + cpu.system, holds });
process.stdout.write(`${line}\n`, () => process.exit(0));
