/**
 * Waiting on a coordination primitive without missing a wake-up, as the Rust crate's
 * `runtime::wait` and the Python client's `wait` do.
 *
 * A script that answers "not yet" (a full semaphore, a held fair lock or read-write lock,
 * a closed latch, a barrier still waiting) answers, as the last item of its reply, the
 * most milliseconds to block before running again, and what to block on is one of two
 * things:
 *
 * - a list the fair lock's and the semaphore's scripts ring: a waiter in line blocks with
 *   `BLPOP` on the turn key of the one just ahead of it (`{name}:turn:<token>`, the token
 *   the reply names), which that one rings when it leaves the line; one the reply names no
 *   token for blocks on the bell (`{name}:bell`);
 * - a wake stream (the `wake` key of the others), whose last id is the reply's item
 *   before: every script that frees something appends to it, so a waiter blocked on
 *   `XREAD BLOCK … STREAMS <wake> <id>` wakes at once, and one that blocks after the append
 *   returns at once too.
 *
 * Every block lasts at most `MAX_BLOCK_MS`, then the script runs again; pub/sub is never
 * involved. The blocking reads go on a connection of the wait's own (a duplicate of the
 * client's, kept for the client's next wait once this one ends), so the client's other
 * commands never queue behind them, and an `AbortSignal` ends the wait at once by closing
 * it.
 *
 * @module
 */

import type { Redis } from "ioredis";

import { RedisPatternsError, UnexpectedReply } from "./errors.js";
import * as fairLock from "./generated/fair_lock.js";
import * as semaphore from "./generated/semaphore.js";
import type { Call, Client, Form } from "./runtime.js";

/**
 * The longest one blocking read lasts before the script runs again, whatever it said: a
 * wake-up lost to a failover or a deleted stream costs at most this.
 */
export const MAX_BLOCK_MS = 1000;

/**
 * What a "not yet" reply says to block on: the wake stream `key` after id `after`, or the
 * list `key` (`after` null), for at most `withinMs`.
 */
export interface Wake {
  readonly key: string;
  readonly after: string | null;
  readonly withinMs: number;
}

/** The scripts whose "not yet" names the waiter to block behind, by family. */
const RINGING = new Map<string, { first: Form; turn: Form; bell: Form }>([
  [fairLock.ACQUIRE.name, { first: fairLock.KEY_OWNER, turn: fairLock.KEY_TURN, bell: fairLock.KEY_BELL }],
  [semaphore.ACQUIRE.name, { first: semaphore.KEY_STATE, turn: semaphore.KEY_TURN, bell: semaphore.KEY_BELL }],
]);

/** Per client, the duplicates its waits block on that no wait uses now. */
const idle = new WeakMap<object, Redis[]>();

/**
 * A connection for a wait's blocking reads: one of `client`'s idle duplicates, or a new
 * one. Connecting costs the server far more than a blocking read, so a client that waits
 * again reuses it (`giveBack`).
 */
export function borrowBlocking(client: Client): Redis {
  const spare = idle.get(client);
  for (let found = spare?.pop(); found !== undefined; found = spare?.pop()) {
    if (found.status !== "end" && found.status !== "close") return found;
  }
  const blocking = (client as Redis).duplicate();
  blocking.on("error", () => {}); // met by the wait that uses it
  return blocking;
}

/** Keeps `blocking` for `client`'s next wait, until the client ends (then it is closed too). */
export function giveBack(client: Client, blocking: Redis): void {
  const status = (client as Redis).status;
  if (status === "end" || status === "close") {
    blocking.disconnect();
    return;
  }
  let spare = idle.get(client);
  if (spare === undefined) {
    const kept: Redis[] = [];
    spare = kept;
    idle.set(client, kept);
    client.once("end", () => {
      for (const c of kept.splice(0)) c.disconnect();
    });
  }
  spare.push(blocking);
}

/** `<ms>-<seq>`, as Redis prints a stream id. */
export function isStreamId(text: string): boolean {
  return /^[0-9]{1,20}-[0-9]{1,20}$/.test(text);
}

/**
 * The wake of `call`'s "not yet" `reply`: for a fair lock or a semaphore, the list its reply
 * names; otherwise its wake stream and the reply's last two items (the stream id, the ms to
 * block at most); the ms capped at `MAX_BLOCK_MS`.
 */
export function wakeOf(call: Call<unknown>, reply: unknown): Wake {
  const items = Array.isArray(reply) ? (reply as unknown[]) : [];
  const [mark, within] = items.slice(-2);
  const ringing = RINGING.get(call.script.name);
  if (ringing !== undefined) {
    if (typeof mark !== "string" || typeof within !== "number") {
      throw new UnexpectedReply(`${call.script.name}: not a waiter and a time: ${String(reply)}`);
    }
    const first = call.keys[0]!;
    const suffix = ringing.first.parts[ringing.first.parts.length - 1];
    if (suffix?.kind !== "text" || !first.endsWith(suffix.text)) {
      throw new UnexpectedReply(`${call.script.name}: the key ${first} is not named by ${ringing.first.text}`);
    }
    // The key's hash tag, which the templates keep as it is.
    const name = first.slice(0, -suffix.text.length);
    const key = mark !== "" ? ringing.turn.build({ name, token: mark }) : ringing.bell.build({ name });
    return { key, after: null, withinMs: Math.min(within, MAX_BLOCK_MS) };
  }
  if (typeof mark !== "string" || !isStreamId(mark) || typeof within !== "number") {
    throw new UnexpectedReply(`${call.script.name}: not a wake id and a time: ${String(reply)}`);
  }
  return { key: call.key("wake"), after: mark, withinMs: Math.min(within, MAX_BLOCK_MS) };
}

/** What `wait` takes besides its calls. */
export interface WaitOptions {
  /** Run the scripts through the Functions library (FCALL). */
  functions?: boolean;
  /** Ends the wait at once (it answers null). */
  signal?: AbortSignal;
}

/**
 * Runs the call `attempt` builds (from the last reply, null at first) until its reply is
 * `ready`, or `timeoutMs` passed (this process's clock; every lease is the server's), then
 * null; between tries it blocks on what each reply said (a bell or a wake stream).
 *
 * ```ts
 * const permits = new Semaphore("slots");
 * const granted = await wait(redis, () => permits.acquire(token, 1, 30_000, 10, { place: 5_000 }),
 *   (reply) => reply[0] !== null, 5_000);
 * ```
 */
export async function wait<R>(
  client: Client,
  attempt: (last: R | null) => Call<R>,
  ready: (reply: R) => boolean,
  timeoutMs: number,
  options: WaitOptions = {},
): Promise<R | null> {
  const functions = options.functions ?? false;
  const signal = options.signal;
  const deadline = performance.now() + timeoutMs;
  let blocking: Redis | null = null;
  let closed = false;
  const close = (): void => {
    closed = true;
    blocking?.disconnect();
  };
  signal?.addEventListener("abort", close, { once: true });
  try {
    let reply: R | null = null;
    for (;;) {
      if (signal?.aborted) return null;
      const call = attempt(reply);
      reply = await call.run(client, { functions });
      if (ready(reply)) return reply;
      if (performance.now() >= deadline) return null;
      const wake = wakeOf(call, reply);
      // Block until woken, or until it is time to try again.
      const left = Math.min(deadline, performance.now() + wake.withinMs) - performance.now();
      if (left <= 0) continue;
      const block = Math.max(1, Math.floor(left)); // BLOCK 0 would wait for ever
      blocking ??= borrowBlocking(client);
      try {
        if (wake.after === null) {
          await blocking.callBuffer("BLPOP", wake.key, `${Math.floor(block / 1000)}.${String(block % 1000).padStart(3, "0")}`);
        } else {
          await blocking.callBuffer("XREAD", "COUNT", 1, "BLOCK", block, "STREAMS", wake.key, wake.after);
        }
      } catch (err) {
        if (signal?.aborted) return null;
        blocking.disconnect(); // in an unknown state: not kept
        blocking = null;
        throw err;
      }
    }
  } finally {
    signal?.removeEventListener("abort", close);
    if (blocking !== null && !closed) giveBack(client, blocking);
  }
}

/** What was asked for was not granted in time: held by others all along. Nothing is held. */
export class NotGranted extends RedisPatternsError {
  override name = "NotGranted";
}

/**
 * `wait`, then `use` with the ready reply, then `release`, whatever `use` did; throws
 * `NotGranted` when `timeoutMs` passed first.
 *
 * ```ts
 * await hold(redis, () => permits.acquire(token, 1, 30_000, 10, { place: 5_000 }),
 *   (reply) => reply[0] !== null, permits.release(token), 5_000, async () => {
 *     // one of the permits is this block's
 *   });
 * ```
 *
 * The lease still runs on the server: work that outlives it loses what it held (extend it
 * meanwhile, or take a lease longer than the work).
 */
export async function hold<R, T>(
  client: Client,
  attempt: (last: R | null) => Call<R>,
  ready: (reply: R) => boolean,
  release: Call<unknown>,
  timeoutMs: number,
  use: (granted: R) => Promise<T> | T,
  options: WaitOptions = {},
): Promise<T> {
  const granted = await wait(client, attempt, ready, timeoutMs, options);
  if (granted === null) {
    throw new NotGranted(`${release.script.name.split("/")[0]}: not granted within ${timeoutMs} ms`);
  }
  try {
    return await use(granted);
  } finally {
    await release.run(client, { functions: options.functions ?? false });
  }
}
