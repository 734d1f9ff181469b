/**
 * The TypeScript client against the npm packages a Node user would pick, side by side on
 * one redis-server this bench starts (REDIS_SERVER_BIN, or redis-server from the PATH):
 *
 * - **queue**: this package's `Worker` against BullMQ's, jobs per second and the
 *   server's CPU per job, W = 1 and 8 workers (and as many producers), one job per call
 *   and batches of 10 (`Batch` adds and Workers of concurrency 10, which take and ack up
 *   to 10 per call; BullMQ: `addBulk` of 10 and Workers of concurrency 10). Each side
 *   runs a cell in a node process of its own, its W producers and W workers in it:
 *   `queue.ts` here, `benches/peers/bullmq/bench.mjs` for BullMQ (the crate's
 *   `cargo bench --bench bullmq` runs the same program, with the same cell).
 * - **coordination**: this package's `FairLock` and `Semaphore` (capacity 4, one permit
 *   each), waiting with `wait`, against npm `redis-semaphore` (`Mutex`, `Semaphore`) and
 *   `redlock`, 1, 8 and 32 contenders looping acquire → release: operations per second,
 *   the server's CPU per operation, and the wake-up latency from a release to the next
 *   holder (as `cargo bench --bench coordination` derives it). `coordination.ts` here,
 *   `benches/peers/coordination/bench.mjs` for the peers.
 *
 * ```sh
 * sh benches/peers/fetch-bullmq.sh              # once: BullMQ, into benches/peers/bullmq/ (ignored by git)
 * sh benches/peers/fetch-coordination.sh npm    # once: redis-semaphore and redlock, into benches/peers/coordination/
 * bash .ci/typescript-client                    # builds clients/typescript/dist
 * node clients/typescript/dist/bench/main.js    # 3 rounds
 * ROUNDS=5 JOBS=5000 OPS=2000 node clients/typescript/dist/bench/main.js
 * ```
 *
 * Also: WARM (500, each queue side's untimed warm-up jobs), CONTENDERS (`1,8,32`), MAX_SECS
 * (20, the longest one side of one coordination cell runs), PARTS (`queue,coordination`).
 * A peer that is not installed is skipped, with a line saying how to install it.
 * Rounds take turns (this package first, then the peers; the reverse next round).
 * Medians of the rounds; ratios this package ÷ peer (ops/s: above 1 is faster; µs/op:
 * below 1 costs the server less). Read the ratios, not the digits.
 */

import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createInterface } from "node:readline";

import type { Redis } from "ioredis";

import { Server } from "../test/server.js";

const ROOT = new URL("../../../../", import.meta.url);
const HERE = new URL(".", import.meta.url);
const NODE = process.execPath;
const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const list = (name: string, fallback: string): string[] => (process.env[name] ?? fallback).split(",").map((s) => s.trim());

const ROUNDS = env("ROUNDS", 3);
const JOBS = env("JOBS", 3000);
const WARM = env("WARM", 500);
const OPS = env("OPS", 1000);
const MAX_SECS = env("MAX_SECS", 20);
const CONTENDERS = list("CONTENDERS", "1,8,32").map(Number);
const PARTS = list("PARTS", "queue,coordination");

const median = (values: number[]): number => {
  const sorted = [...values].filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};
const quantile = (samples: number[], q: number): number => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};
const shown = (value: number, decimals: number): string => (Number.isFinite(value) ? value.toFixed(decimals) : "-");
const times = (ratio: number): string => (Number.isFinite(ratio) ? `${ratio.toFixed(2)}×` : "-");

/** A peer's version, from the package.json it installed; null when it is not installed. */
function installed(dir: URL, name: string): string | null {
  const path = new URL(`node_modules/${name}/package.json`, dir);
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version : null;
}

/** The server's CPU time so far (INFO cpu), µs. */
async function serverUs(con: Redis): Promise<number> {
  let seconds = 0;
  for (const line of (await con.info("cpu")).split("\n")) {
    if (line.startsWith("used_cpu_sys:") || line.startsWith("used_cpu_user:")) seconds += parseFloat(line.split(":")[1]!);
  }
  return Math.round(seconds * 1e6);
}

async function unlink(con: Redis, pattern: string): Promise<void> {
  const keys = await con.keys(pattern);
  if (keys.length > 0) await con.unlink(...keys);
}

// ---------------------------------------------------------------------------------------
// The queue.

interface QueueRun {
  jobs: number;
  secs: number;
  cpu_us: number;
}

function queueRun(program: string, cell: Record<string, unknown>): QueueRun {
  const out = spawnSync(NODE, [program, JSON.stringify(cell)], { encoding: "utf8", maxBuffer: 1 << 28 });
  if (out.status !== 0) throw new Error(`${program} failed on ${JSON.stringify(cell)}:\n${out.stderr}`);
  return JSON.parse(out.stdout.trim().split("\n").pop()!) as QueueRun;
}

async function queueBench(server: Server, con: Redis): Promise<void> {
  const bullmq = installed(new URL("benches/peers/bullmq/", ROOT), "bullmq");
  const sides = [
    { name: "TypeScript Worker", program: new URL("queue.js", HERE).pathname, keys: (q: string) => `{${q}*` },
    ...(bullmq === null ? [] : [{ name: `BullMQ ${bullmq}`, program: new URL("benches/peers/bullmq/bench.mjs", ROOT).pathname, keys: (q: string) => `bull:${q}*` }]),
  ];
  const cells = [
    { workers: 1, per: 1 },
    { workers: 8, per: 1 },
    { workers: 1, per: 10 },
    { workers: 8, per: 10 },
  ];
  const rate = sides.map(() => cells.map((): number[] => []));
  const cpu = sides.map(() => cells.map((): number[] => []));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? sides.map((_, i) => i) : sides.map((_, i) => i).reverse();
    cells.forEach((spec, c) => {
      for (const s of order) {
        const queue = `${s === 0 ? "ts" : "bull"}-r${round}-c${c}`;
        const run = queueRun(sides[s]!.program, { port: server.port, mode: "throughput", queue, jobs: JOBS, warm: WARM, ...spec });
        rate[s]![c]!.push(run.jobs / run.secs);
        cpu[s]![c]!.push(run.cpu_us / run.jobs);
      }
    });
    for (const side of sides) await unlink(con, side.keys(""));
    process.stderr.write(`queue: round ${round + 1} of ${ROUNDS}\n`);
  }
  console.log(`\nqueue: add → take → ack of ${JOBS} 100-byte jobs per cell, ${ROUNDS} rounds, medians`);
  console.log(`${"cell".padEnd(34)} ${sides.map((s) => s.name.padStart(18)).join(" ")}   ${sides.length > 1 ? "TS ÷ BullMQ" : ""}`);
  const label = (spec: { workers: number; per: number }): string =>
    `${spec.workers} worker${spec.workers > 1 ? "s" : ""}, ${spec.per === 1 ? "one job per call" : `batches of ${spec.per}`}`;
  for (const [title, table, decimals] of [["jobs/s", rate, 0], ["server CPU µs/job", cpu, 1]] as const) {
    console.log(title);
    cells.forEach((spec, c) => {
      const medians = table.map((side) => median(side[c]!));
      const ratio = medians.length > 1 ? times(medians[0]! / medians[1]!) : "";
      console.log(`  ${label(spec).padEnd(32)} ${medians.map((m) => shown(m, decimals).padStart(18)).join(" ")}   ${ratio}`);
    });
  }
  if (bullmq === null) console.log("BullMQ: skipped, not installed: run sh benches/peers/fetch-bullmq.sh (needs node 20+ and npm)");
}

// ---------------------------------------------------------------------------------------
// Coordination.

interface CoordinationRun {
  ops: number;
  secs: number;
  client_cpu_us: number;
  holds: [number, number, number][];
}

/** Runs one cell of a program of the coordination protocol (ready, go, one JSON line); with the server's CPU over it. */
async function coordinationRun(
  server: Server,
  con: Redis,
  args: string[],
  kind: string,
  contenders: number,
  key: string,
): Promise<CoordinationRun & { serverUs: number }> {
  const child = spawn(NODE, [...args, kind, String(contenders), String(OPS), `redis://127.0.0.1:${server.port}/0`, key, String(MAX_SECS * 1000)], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const ready = await lines.next();
  if (ready.done === true || ready.value.trim() !== "ready") throw new Error(`${args.join(" ")} did not get ready: ${String(ready.value)}`);
  const before = await serverUs(con);
  child.stdin.end("go\n");
  const result = await lines.next();
  const serverUsed = (await serverUs(con)) - before;
  if (result.done === true) throw new Error(`${args.join(" ")} printed no result`);
  return { ...(JSON.parse(result.value) as CoordinationRun), serverUs: serverUsed };
}

/**
 * The wake-up latencies of one run, as `benches/coordination.rs` derives them: with
 * capacity C, the i-th grant could happen once the (i − C)-th release and the (i − 1)-th
 * grant had returned; when its acquire started before that, the sample is from then to
 * its acquire returning.
 */
function wakeUps(holds: [number, number, number][], capacity: number): number[] {
  const grants = [...holds].sort((a, b) => a[1] - b[1]);
  const releases = holds.map((h) => h[2]).sort((a, b) => a - b);
  const samples: number[] = [];
  for (let i = capacity; i < grants.length; i++) {
    const free = Math.max(releases[i - capacity]!, grants[i - 1]![1]);
    const [start, acquired] = grants[i]!;
    if (start < free) samples.push(Math.max(0, acquired - free));
  }
  return samples;
}

async function coordinationBench(server: Server, con: Redis): Promise<void> {
  const dir = new URL("benches/peers/coordination/", ROOT);
  const peerProgram = new URL("bench.mjs", dir).pathname;
  const ours = new URL("coordination.js", HERE).pathname;
  const versions = { "redis-semaphore": installed(dir, "redis-semaphore"), redlock: installed(dir, "redlock") };
  type Side = { name: string; args: string[]; kinds: string[] };
  const sides: Side[] = [
    { name: "TypeScript (Fifo)", args: [ours, "fifo"], kinds: ["mutex", "semaphore"] },
    { name: "TypeScript (Any)", args: [ours, "any"], kinds: ["mutex", "semaphore"] },
  ];
  if (versions["redis-semaphore"] !== null) {
    sides.push({ name: `redis-semaphore ${versions["redis-semaphore"]}`, args: [peerProgram, "redis-semaphore"], kinds: ["mutex", "semaphore"] });
  }
  if (versions.redlock !== null) sides.push({ name: `redlock ${versions.redlock}`, args: [peerProgram, "redlock"], kinds: ["mutex"] });
  const cells = ["mutex", "semaphore"].flatMap((kind) => CONTENDERS.map((contenders) => ({ kind, contenders })));
  const tallies = cells.map(() => sides.map(() => ({ rate: [] as number[], server: [] as number[], wake: [] as number[], ops: [] as number[] })));
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? sides.map((_, i) => i) : sides.map((_, i) => i).reverse();
    for (const [c, { kind, contenders }] of cells.entries()) {
      for (const s of order) {
        const side = sides[s]!;
        if (!side.kinds.includes(kind)) continue;
        const key = `k-r${round}-c${c}-s${s}`;
        const run = await coordinationRun(server, con, side.args, kind, contenders, key);
        const t = tallies[c]![s]!;
        t.rate.push(run.ops / run.secs);
        t.server.push(run.serverUs / Math.max(run.ops, 1));
        t.wake.push(...wakeUps(run.holds, kind === "mutex" ? 1 : 4));
        t.ops.push(run.ops);
        await unlink(con, `*${key}*`);
      }
    }
    process.stderr.write(`coordination: round ${round + 1} of ${ROUNDS}\n`);
  }
  console.log(`\ncoordination: acquire → release, ${OPS} operations per cell, ${ROUNDS} rounds, medians; wake-ups in ms over the holds that waited`);
  console.log(`${"cell, side".padEnd(30)} ${"ops/s".padStart(8)} ${"server µs".padStart(10)} ${"wake p50".padStart(9)} ${"wake p99".padStart(9)} ${"waited".padStart(7)} ${"ops".padStart(10)}   TS (Fifo) ÷ peer`);
  for (const [c, { kind, contenders }] of cells.entries()) {
    console.log(`${kind} ×${contenders}`);
    const first = tallies[c]![0]!;
    for (const [s, side] of sides.entries()) {
      if (!side.kinds.includes(kind)) continue;
      const t = tallies[c]![s]!;
      const [rate, server] = [median(t.rate), median(t.server)];
      const ratio =
        s === 0
          ? ""
          : `${times(median(first.rate) / rate)} ops/s, ${times(median(first.server) / server)} µs`;
      const ops = `${median(t.ops)}/${OPS}`;
      console.log(
        `  ${side.name.padEnd(28)} ${shown(rate, 0).padStart(8)} ${shown(server, 1).padStart(10)} ${shown(quantile(t.wake, 0.5) / 1000, 2).padStart(9)} ${shown(quantile(t.wake, 0.99) / 1000, 2).padStart(9)} ${String(t.wake.length).padStart(7)} ${ops.padStart(10)}   ${ratio}`,
      );
    }
  }
  for (const [name, version] of Object.entries(versions)) {
    if (version === null) console.log(`${name}: skipped, not installed: run sh benches/peers/fetch-coordination.sh npm`);
  }
}

const server = await Server.start();
const con = server.client();
try {
  if (PARTS.includes("queue")) await queueBench(server, con);
  if (PARTS.includes("coordination")) await coordinationBench(server, con);
} finally {
  await server.stop();
}
