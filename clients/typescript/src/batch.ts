/**
 * Several calls in one round trip: a pipeline, or a MULTI/EXEC transaction, loading their
 * scripts in band so that a batch is one round trip even right after a `SCRIPT FLUSH`, a
 * restart or a failover.
 *
 * @module
 */

import { InvalidInput, RanOutsideTransaction } from "./errors.js";
import {
  type Call,
  type Client,
  type Command,
  NOSCRIPT_ATTEMPTS,
  type Script,
  isMissing,
  isReplyError,
} from "./runtime.js";

/**
 * Calls sent together in one round trip: a pipeline, or with `transaction: true` a
 * MULTI/EXEC transaction.
 *
 * A transaction loads each distinct script (`SCRIPT LOAD`) inside itself, in front of its
 * calls, so it is applied whole or not at all, never cut short by a missing script. A
 * pipeline loads its scripts in front of its calls too, except one whose calls all run one
 * script: it sends its calls alone, as a raw pipeline would, and right after a flush sends
 * the calls that got `NOSCRIPT` again behind the load, up to five times. A call that got
 * `NOSCRIPT` did not run, so nothing is applied twice, and the order holds. A batch always
 * runs with `EVALSHA`. Replies are read from the `Slot` each `add` returns:
 *
 * ```ts
 * const batch = new Batch({ transaction: true });
 * const kept = batch.add(new FixedLengthQueue("{q}:jobs").enqueue(100, ["job"]));
 * await batch.run(redis);
 * kept.result(); // [1, 0]
 * ```
 *
 * On a cluster every call of a batch must be in one hash slot (give the keys one hash
 * tag); one over several slots is refused before anything is sent.
 */
export class Batch {
  readonly transaction: boolean;
  readonly #calls: Call<unknown>[] = [];
  #values: unknown[] | null = null;

  constructor(options: { transaction?: boolean } = {}) {
    this.transaction = options.transaction ?? false;
  }

  get length(): number {
    return this.#calls.length;
  }

  /** Adds `call`; its reply is read from the returned `Slot` once the batch ran. */
  add<T>(call: Call<T>): Slot<T> {
    if (this.#values !== null) throw new Error("this batch already ran: build a new one");
    this.#calls.push(call);
    return new Slot(this, this.#calls.length - 1, call);
  }

  /** The raw reply of call `index`, once the batch ran. */
  reply(index: number): unknown {
    if (this.#values === null) throw new Error("the batch has not run yet: await run() first");
    return this.#values[index];
  }

  /** Sends the batch on `client`. */
  async run(client: Client): Promise<void> {
    if (this.#values !== null) throw new Error("this batch already ran: build a new one");
    if ("nodes" in client) this.refuseCrossSlot(client);
    const calls = this.#calls;
    const values: unknown[] = new Array<unknown>(calls.length).fill(null);
    let pending = calls.map((_, i) => i);
    const oneScript = new Set(calls.map((call) => call.script.sha1)).size === 1;
    let attempt = 0;
    while (pending.length > 0 && attempt <= NOSCRIPT_ATTEMPTS) {
      const loads = this.transaction || attempt > 0 || !oneScript;
      const scripts = loads ? distinct(pending.map((i) => calls[i]!.script)) : [];
      let commands: Command[] = scripts.map((s) => ["SCRIPT", "LOAD", s.source]);
      commands.push(...pending.map((i) => calls[i]!.command()));
      if (this.transaction) commands = [["MULTI"], ...commands, ["EXEC"]];
      let replies = await roundTrip(client, commands);
      attempt += 1;
      if (this.transaction) replies = unwrapTransaction(replies, commands.length - 2);
      pending = this.file(pending, scripts, replies, values);
    }
    this.#values = values;
  }

  /**
   * Files the calls' replies into `values`; returns those to send again: the calls of a
   * pipeline that got `NOSCRIPT` while their script's load did not fail. A call whose
   * script's load failed gets the load's error (it did not run either).
   */
  private file(sent: number[], scripts: Script[], replies: unknown[], values: unknown[]): number[] {
    const loaded = new Map(scripts.map((s, i) => [s.sha1, replies[i]]));
    const again: number[] = [];
    sent.forEach((index, i) => {
      const reply = replies[scripts.length + i];
      values[index] = reply;
      if (!isMissing(reply, false)) return;
      const load = loaded.get(this.#calls[index]!.script.sha1);
      if (load instanceof Error) values[index] = load;
      else if (!this.transaction) again.push(index);
    });
    return again;
  }

  private refuseCrossSlot(client: Client): void {
    let first: [number, string, number] | null = null;
    this.#calls.forEach((call, index) => {
      const key = call.keys[0];
      if (key === undefined) return;
      const slot = keySlot(key);
      if (first === null) first = [index, key, slot];
      else if (slot !== first[2]) {
        throw new InvalidInput(
          "batch",
          "CROSSSLOT",
          "keys",
          `call ${first[0]} uses \`${first[1]}\` (hash slot ${first[2]}) and call ${index} uses ` +
            `\`${key}\` (hash slot ${slot}); a batch runs on one cluster node, so its keys must ` +
            "share a hash slot: give them one hash tag, as in `{tag}:a` and `{tag}:b`",
        );
      }
    });
    void client;
  }
}

/** Where one call's reply will be, once its `Batch` ran. */
export class Slot<T> {
  readonly #batch: Batch;
  readonly #index: number;
  readonly #call: Call<T>;

  constructor(batch: Batch, index: number, call: Call<T>) {
    this.#batch = batch;
    this.#index = index;
    this.#call = call;
  }

  /** The call's decoded reply; its error reply thrown (a declared code as `ScriptError`). */
  result(): T {
    return this.#call.result(this.#batch.reply(this.#index));
  }
}

/** `commands` in one round trip, as a plain pipeline: every reply, error replies as errors. */
async function roundTrip(client: Client, commands: Command[]): Promise<unknown[]> {
  const pipe = client.pipeline();
  for (const [name, ...args] of commands) pipe.callBuffer(String(name), ...args);
  const results = await pipe.exec();
  if (results === null) throw new Error("the pipeline was not sent");
  return results.map(([err, reply]) => {
    if (err === null) return reply;
    if (isReplyError(err)) return err;
    throw err;
  });
}

function distinct(scripts: Script[]): Script[] {
  const seen: Script[] = [];
  for (const script of scripts) if (seen.every((s) => s.sha1 !== script.sha1)) seen.push(script);
  return seen;
}

/** The replies inside `EXEC`'s, from `MULTI`, the queued commands' and `EXEC`'s. */
function unwrapTransaction(replies: unknown[], queued: number): unknown[] {
  const multi = replies[0];
  const refusals = replies.slice(1, -1);
  const exec = replies[replies.length - 1];
  if (multi instanceof Error) throw new RanOutsideTransaction(multi, queued);
  if (Array.isArray(exec) && exec.length === queued) return exec as unknown[];
  // EXECABORT: a command was refused while queued, so nothing ran; say which and why.
  const refused = refusals.find((r): r is Error => r instanceof Error);
  if (refused !== undefined) throw refused;
  if (exec instanceof Error) throw exec;
  throw new Error(`EXEC did not answer the transaction's replies: ${String(exec)}`);
}

/** Redis Cluster's hash slot of `key` (CRC16 of its hash tag, or of the whole key). */
export function keySlot(key: string): number {
  let bytes = Buffer.from(key, "utf8");
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

/** A `Batch` sent after `fill` adds its calls (and never when `fill` throws). */
export async function pipeline<R>(client: Client, fill: (batch: Batch) => R): Promise<R> {
  const batch = new Batch();
  const out = fill(batch);
  await batch.run(client);
  return out;
}

/** A transaction `Batch` sent after `fill` adds its calls (and never when `fill` throws). */
export async function transaction<R>(client: Client, fill: (batch: Batch) => R): Promise<R> {
  const batch = new Batch({ transaction: true });
  const out = fill(batch);
  await batch.run(client);
  return out;
}
