// The npm peers of benches/coordination.rs: one cell per run, its results as one JSON line
// on stdout. The Rust bench spawns it; by hand:
//
//   node benches/peers/coordination/bench.mjs redis-semaphore mutex 8 1000 redis://127.0.0.1:6379 k1 20000
//   node benches/peers/coordination/bench.mjs redis-semaphore semaphore 8 1000 redis://127.0.0.1:6379 k2 20000
//   node benches/peers/coordination/bench.mjs redlock mutex 8 1000 redis://127.0.0.1:6379 k3 20000
//
// Arguments: library, cell (mutex or semaphore), contenders, operations, server URL, key,
// the most ms the cell may last. `contenders` async loops in this process, each with its
// own ioredis connection, each looping acquire (the library's own waiting acquire) →
// release until `operations` acquisitions were claimed between them or the time is up.
// After one untimed hold per contender, it prints `ready` and waits for a line on stdin
// before the clock starts (the bench reads the server's CPU then). Every hold's start of acquire, acquire returning and release returning are read from
// performance.now() (one monotonic clock) and printed in µs; the bench derives the
// wake-ups from them. Client CPU: process.cpuUsage() over the cell.
//
// Settings (every lease 10 s, as the other sides):
// - redis-semaphore `Mutex` / `Semaphore` (limit 4, each contender takes 1): lockTimeout
//   10 s (its default), acquireTimeout 60 s (its default is 10 s, raised so that a
//   contender that loses for long does not throw), retryInterval 10 ms (its default: it
//   polls, SET NX or its acquire script, every 10 ms), refreshInterval its default (8 s,
//   never reached).
// - redlock (v4) `lock(key, 10000)` and `lock.unlock()`: retryCount -1 (its default is
//   10 attempts, then an error; -1 retries until it gets the lock), retryDelay 200 ms and
//   retryJitter 100 ms (its defaults), driftFactor 0.01 (its default). redlock has no
//   semaphore: that cell is refused.
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import IORedis from 'ioredis';
import { Mutex, Semaphore } from 'redis-semaphore';
import Redlock from 'redlock';

const require = createRequire(import.meta.url);
const [lib, cell, contendersArg, opsArg, url, key, maxMsArg] = process.argv.slice(2);
const contenders = Number(contendersArg);
const ops = Number(opsArg);
const maxMs = Number(maxMsArg);
const TTL = 10000;
const CAPACITY = 4;

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(3);
}

/** One contender's acquire and release, on its own connection. */
function contender(con) {
  if (lib === 'redis-semaphore') {
    const options = { lockTimeout: TTL, acquireTimeout: 60000 };
    return async () => {
      const lock =
        cell === 'mutex'
          ? new Mutex(con, key, options)
          : new Semaphore(con, key, CAPACITY, options);
      await lock.acquire();
      return () => lock.release();
    };
  }
  if (lib === 'redlock') {
    if (cell !== 'mutex') fail('redlock has no semaphore');
    const redlock = new Redlock([con], { retryCount: -1 });
    redlock.on('clientError', (err) => fail(`redlock: ${err}`));
    return async () => {
      const lock = await redlock.lock(key, TTL);
      return () => lock.unlock();
    };
  }
  return fail(`unknown library ${lib}`);
}

const cons = [];
for (let i = 0; i < contenders; i++) {
  const con = new IORedis(url, { maxRetriesPerRequest: null });
  await con.ping();
  cons.push(con);
}
// One untimed hold per contender first: connections made, scripts loaded, code warmed.
for (const con of cons) {
  const release = await contender(con)();
  await release();
}

// Ready: the bench reads the server's CPU and resets its stats, then says go.
process.stdout.write('ready\n');
await new Promise((resolve) => process.stdin.once('data', resolve));
process.stdin.pause();

let claimed = 0;
const holds = [];
const base = performance.now();
const cpuBefore = process.cpuUsage();
const us = () => Math.round((performance.now() - base) * 1000);
await Promise.all(
  cons.map(async (con) => {
    const take = contender(con);
    while (performance.now() - base < maxMs && claimed++ < ops) {
      const start = us();
      const release = await take();
      const acquired = us();
      await release();
      holds.push([start, acquired, us()]);
    }
  }),
);
const secs = (performance.now() - base) / 1000;
const cpu = process.cpuUsage(cpuBefore);
const version = require(`${lib}/package.json`).version;
for (const con of cons) con.disconnect();
// Exit once the line is flushed: a pipe takes 64 KiB at a time, and the holds of a long
// cell are more.
process.stdout.write(
  JSON.stringify({ lib, version, ops: holds.length, secs, client_cpu_us: cpu.user + cpu.system, holds }) + '\n',
  () => process.exit(0),
);
