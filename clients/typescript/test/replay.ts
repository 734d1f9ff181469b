/**
 * One scenario of the Rust suite (`scenarios/<name>.json`, as `scenarios/README.md` says
 * they read), replayed through this package on a real server.
 *
 * Each script call is made with the function this package generates for the script: its
 * recorded arguments are read back as TypeScript values by the header's types, and the
 * function must send them as the Rust client did, byte for byte (floats and JSON as the
 * same values). Its reply is compared raw (RESP2, as ioredis's `callBuffer` gives it) with
 * the recorded one, and must decode as the header's `@return` says; the other commands are
 * sent as they were. After each step the whole keyspace must be the recorded one, the
 * marked values (clock readings, tokens, times left) tolerated.
 */

import { randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { isDeepStrictEqual } from "node:util";

import type { Redis } from "ioredis";

import * as rp from "../src/index.js";
import { type Call, type Param, type Script, ScriptError } from "../src/index.js";
import { poll } from "./server.js";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export const SCENARIOS = new URL("../../../../scenarios/", import.meta.url);
const DAY_MS = 86_400_000;
const MINUTE_LEFT_MS = 15_000;

export const SCRIPTS = new Map(rp.SCRIPTS.map((script) => [script.name, script]));

/** The scenario files, sorted. */
export function scenarioFiles(): string[] {
  const files = readdirSync(SCENARIOS).filter((f) => f.endsWith(".json")).sort();
  if (files.length === 0) throw new Error("no recordings: run `cargo test --test it scenario_standalone`");
  return files;
}

/**
 * A recording, its integers beyond 2^53 kept exact: each becomes `{"int": digits}` (JSON's
 * numbers are doubles in JavaScript).
 */
export function recording(file: string): Json {
  return JSON.parse(exactIntegers(readFileSync(new URL(file, SCENARIOS), "utf8")));
}

/** `text` (JSON) with every integer of 16 digits or more outside strings as `{"int": "<digits>"}`. */
function exactIntegers(text: string): string {
  let out = "";
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === "-" || (c >= "0" && c <= "9")) {
      const found = /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/.exec(text.slice(i))![0];
      const digits = found.replace("-", "");
      out += /^-?[0-9]+$/.test(found) && digits.length >= 16 ? `{"int":"${found}"}` : found;
      i += found.length;
    } else {
      out += c;
      i += 1;
    }
  }
  return out;
}

export function waits(file: string): boolean {
  return recording(file).steps.some((step: Json) => "wait" in step);
}

/** `snake_case` as the generator names it in TypeScript. */
export function camel(name: string): string {
  return name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

type Generated = (...args: unknown[]) => Call<unknown>;

/** The generated function of `script`. */
export function functionOf(script: Script): Generated {
  const [family, op] = script.name.split("/") as [string, string];
  const module = (rp as unknown as Record<string, Record<string, unknown>>)[camel(family)];
  const found = module?.[camel(op)] ?? module?.[camel(op) + "_"];
  if (typeof found !== "function") throw new Error(`no generated function for ${script.name}`);
  return found as Generated;
}

/** Whether the script's last key is variadic (the generated function takes an array). */
export function variadicKey(script: Script): boolean {
  const [least, most] = script.keys;
  return most !== script.keyNames.length || least !== script.keyNames.length;
}

export class Mismatch extends Error {}

/**
 * A reply as text: an integer reply (a string: the replay's client has ioredis's
 * `stringNumbers`, so that integers beyond 2^53 stay exact) or a bulk string.
 */
function asText(actual: unknown): string | null {
  if (typeof actual === "string") return actual;
  if (Buffer.isBuffer(actual)) {
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(actual);
    } catch {
      return null;
    }
  }
  return null;
}

function asNumber(text: string): number | null {
  if (text.trim() === "") return null;
  const n = Number(text);
  return Number.isNaN(n) && !/^[-+]?nan$/i.test(text) ? null : n;
}

function shown(value: unknown): string {
  const text = JSON.stringify(value, (_, v: unknown) =>
    v !== null && typeof v === "object" && (v as { type?: string }).type === "Buffer"
      ? `<${Buffer.from((v as { data: number[] }).data).toString("latin1")}>`
      : v instanceof Error
        ? `<error ${v.message}>`
        : typeof v === "bigint" ? `${v}n` : v,
  );
  return text === undefined ? String(value) : text;
}

/** The value a MessagePack encoding holds (the kinds `cmsgpack` writes); maps with text keys only. */
export function readMsgpack(data: Buffer): unknown {
  let at = 0;
  const take = (n: number): Buffer => {
    if (at + n > data.length) throw new Error("truncated");
    const chunk = data.subarray(at, at + n);
    at += n;
    return chunk;
  };
  const uint = (n: number): number => Number(take(n).readUIntBE(0, n));
  const read = (): unknown => {
    const tag = take(1)[0]!;
    if (tag <= 0x7f) return tag;
    if (tag >= 0xe0) return tag - 0x100;
    if (tag === 0xc0) return null;
    if (tag === 0xc2 || tag === 0xc3) return tag === 0xc3;
    if (tag === 0xcb) return take(8).readDoubleBE(0);
    if (tag >= 0xcc && tag <= 0xcf) {
      const n = 1 << (tag - 0xcc);
      return n === 8 ? Number(take(8).readBigUInt64BE(0)) : uint(n);
    }
    if (tag >= 0xd0 && tag <= 0xd3) {
      const n = 1 << (tag - 0xd0);
      return n === 8 ? Number(take(8).readBigInt64BE(0)) : take(n).readIntBE(0, n);
    }
    if ((tag >= 0xa0 && tag <= 0xbf) || (tag >= 0xd9 && tag <= 0xdb)) {
      const n = tag <= 0xbf ? tag & 0x1f : uint(1 << (tag - 0xd9));
      return new TextDecoder("utf-8", { fatal: true }).decode(take(n));
    }
    if ((tag >= 0x90 && tag <= 0x9f) || tag === 0xdc || tag === 0xdd) {
      const n = tag <= 0x9f ? tag & 0x0f : uint(2 << (tag - 0xdc));
      return Array.from({ length: n }, read);
    }
    if ((tag >= 0x80 && tag <= 0x8f) || tag === 0xde || tag === 0xdf) {
      const n = tag <= 0x8f ? tag & 0x0f : uint(2 << (tag - 0xde));
      const out: Record<string, unknown> = {};
      for (let i = 0; i < n; i++) {
        const key = read();
        if (typeof key !== "string") throw new Error(`a map key that is not text: ${String(key)}`);
        out[key] = read();
      }
      return out;
    }
    throw new Error(`MessagePack tag 0x${tag.toString(16)}`);
  };
  const value = read();
  if (at !== data.length) throw new Error("bytes after the value");
  return value;
}

/** An error reply as the recording writes it: without where in a script it came from. */
function errorText(err: Error, recorded: Json): string {
  const text = err.message.split(" script: ")[0]!;
  const code = (typeof recorded === "string" ? recorded : "").split(" ")[0]!;
  return text.startsWith(code) ? text : `${code} ${text}`;
}

/** One scenario replayed on `client`. */
export class Replay {
  readonly client: Redis;
  readonly functions: boolean;
  tokens = new Map<number, string>();
  readonly replies = new Map<number, unknown>();
  readonly keyspace = new Map<string, Json>();
  nowMs = 0;
  readonly called = new Set<string>();

  constructor(client: Redis, functions: boolean) {
    this.client = client;
    this.functions = functions;
  }

  async raw(name: string, ...args: (string | Buffer | number)[]): Promise<unknown> {
    try {
      return await this.client.callBuffer(name, ...args);
    } catch (err) {
      if (err instanceof Error && err.name === "ReplyError") return err;
      throw err;
    }
  }

  async serverMs(): Promise<number> {
    const [seconds, micros] = (await this.client.callBuffer("TIME")) as [Buffer, Buffer];
    return Number(seconds.toString()) * 1000 + Math.floor(Number(micros.toString()) / 1000);
  }

  clock(unit: string, ms: number): number {
    switch (unit) {
      case "ms": return ms;
      case "s": return Math.floor(ms / 1000);
      case "us": return ms * 1000;
      case "min": return Math.floor(ms / 60_000);
      default: throw new Error(`a clock unit this replay cannot read: ${unit}`);
    }
  }

  /** What to send for a recorded key or argument. */
  async sent(value: Json): Promise<Buffer> {
    if (typeof value === "string") return Buffer.from(value, "utf8");
    if ("bytes" in value) return Buffer.from(value.bytes, "hex");
    if ("text" in value) {
      const pieces: Buffer[] = [];
      for (const piece of value.text) pieces.push(await this.sent(piece));
      return Buffer.concat(pieces);
    }
    if ("token" in value) {
      const n = value.token as number;
      if (!this.tokens.has(n)) this.tokens.set(n, randomBytes(value.width / 2).toString("hex"));
      return Buffer.from(this.tokens.get(n)!);
    }
    if ("from" in value) {
      const [step, ...path] = value.from as number[];
      let found: unknown = this.replies.get(step!);
      for (const i of path) found = (found as unknown[])[i];
      return Buffer.isBuffer(found) ? found : Buffer.from(String(found));
    }
    let now = this.clock(value.clock, await this.serverMs());
    if ("round" in value) now -= now % value.round;
    return Buffer.from(String(now + (value.add ?? 0)));
  }

  /** The TypeScript values a caller passes for `sent`, by the header's types. */
  values(script: Script, sent: Buffer[]): unknown[] {
    const value = (param: Param, raw: Buffer): unknown => {
      if (param.optional && raw.length === 0) return null;
      switch (param.kind) {
        case "int":
        case "uint":
        case "ms": {
          const n = BigInt(raw.toString());
          return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
        }
        case "float": return Number(raw.toString());
        case "bool": {
          const text = raw.toString();
          if (text !== "1" && text !== "0") throw new Error(`a bool sent as ${text}`);
          return text === "1";
        }
        case "json": return JSON.parse(raw.toString());
        case "string": return raw.toString("utf8");
        default: return raw;
      }
    };
    return script.args.map((param, i) =>
      param.variadic ? sent.slice(i).map((raw) => value(param, raw)) : value(param, sent[i]!),
    );
  }

  /** The call of the generated function for `keys` and `args`, checked to send them as recorded, and its raw reply. */
  async call(script: Script, keys: string[], args: Buffer[]): Promise<unknown> {
    const fixed = script.keyNames.length - (variadicKey(script) ? 1 : 0);
    const positional: unknown[] = keys.slice(0, fixed);
    if (variadicKey(script)) positional.push(keys.slice(fixed));
    const call = functionOf(script)(...positional, ...this.values(script, args));
    if (!isDeepStrictEqual(call.keys, keys)) throw new Mismatch(`keys ${shown(call.keys)} sent for ${shown(keys)}`);
    if (call.args.length !== args.length) throw new Mismatch(`${call.args.length} arguments for ${args.length}`);
    call.args.forEach((mine, i) => {
      const param = script.args[Math.min(i, script.args.length - 1)]!;
      const theirs = args[i]!;
      const same =
        param.kind === "float"
          ? Number(mine.toString()) === Number(theirs.toString())
          : param.kind === "json"
            ? isDeepStrictEqual(JSON.parse(mine.toString()), JSON.parse(theirs.toString()))
            : mine.equals(theirs);
      if (!same) throw new Mismatch(`${param.name}: ${shown(mine.toString())} sent for ${shown(theirs.toString())}`);
    });
    // Keep the raw reply the call got (error replies too), as it ran.
    let reply: unknown = null;
    const capture = new Proxy(this.client, {
      get: (target, prop, receiver) => {
        if (prop === "callBuffer") {
          return async (...a: Parameters<Redis["callBuffer"]>) => {
            try {
              reply = await target.callBuffer(...a);
            } catch (err) {
              reply = err;
              throw err;
            }
            return reply;
          };
        }
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === "function" ? (v as (...x: unknown[]) => unknown).bind(target) : v;
      },
    });
    try {
      await call.run(capture, { functions: this.functions });
    } catch (err) {
      // The error reply is compared with the recorded one; any other failure (a reply that
      // does not decode as the header says) fails the replay.
      if (!(err instanceof ScriptError) && !(err instanceof Error && err.name === "ReplyError")) throw err;
    }
    return reply;
  }

  /** Throws `Mismatch` unless `actual` is what `expected` records; binds the tokens first seen here. */
  match(expected: Json, actual: unknown, where: string): void {
    if (expected === null || typeof expected === "boolean") {
      if (actual !== expected) throw new Mismatch(`${where}: ${shown(actual)}, recorded ${shown(expected)}`);
    } else if (typeof expected === "number" || (typeof expected === "object" && "int" in expected)) {
      // An integer reply: ioredis gives it as its digits (`stringNumbers`), never a bulk string.
      const digits = typeof expected === "number" ? String(expected) : (expected.int as string);
      if (actual !== digits) throw new Mismatch(`${where}: ${shown(actual)}, recorded the integer ${digits}`);
    } else if (typeof expected === "string") {
      const text = asText(actual);
      if (text === expected) return;
      const x = asNumber(expected);
      const y = text === null ? null : asNumber(text);
      if (x === null || y === null || x !== y || !/[.eE]/.test(expected + (text ?? ""))) {
        throw new Mismatch(`${where}: ${shown(actual)}, recorded ${shown(expected)}`);
      }
    } else if (Array.isArray(expected)) {
      if (!Array.isArray(actual) || actual.length !== expected.length) {
        throw new Mismatch(`${where}: ${shown(actual)}, recorded ${expected.length} items ${shown(expected)}`.slice(0, 600));
      }
      expected.forEach((e, i) => this.match(e, actual[i], `${where}[${i}]`));
    } else if ("error" in expected) {
      if (!(actual instanceof Error)) throw new Mismatch(`${where}: ${shown(actual)}, recorded the error ${shown(expected.error)}`);
      this.match(expected.error, Buffer.from(errorText(actual, expected.error)), `${where} (error)`);
    } else if ("unordered" in expected) {
      if (!Array.isArray(actual)) throw new Mismatch(`${where}: ${shown(actual)}, recorded a list`);
      this.matchUnordered(expected.unordered, actual, where);
    } else if ("bytes" in expected) {
      if (!Buffer.isBuffer(actual) || !actual.equals(Buffer.from(expected.bytes, "hex"))) {
        throw new Mismatch(`${where}: ${shown(actual)}, recorded ${expected.bytes}`);
      }
    } else if ("msgpack" in expected) {
      let held: unknown;
      try {
        held = Buffer.isBuffer(actual) ? readMsgpack(actual) : undefined;
      } catch {
        held = undefined;
      }
      if (!isDeepStrictEqual(held, expected.msgpack)) {
        throw new Mismatch(`${where}: ${shown(actual)} holds ${shown(held)}, recorded ${shown(expected.msgpack)}`);
      }
    } else if ("text" in expected) {
      this.matchText(expected.text, actual, where);
    } else if ("token" in expected) {
      const text = asText(actual);
      const width = expected.width as number;
      if (text === null || !new RegExp(`^[0-9a-f]{${width}}$`).test(text)) {
        throw new Mismatch(`${where}: ${shown(actual)}, recorded a token of ${width} hex digits`);
      }
      if (!this.tokens.has(expected.token)) this.tokens.set(expected.token, text);
      if (this.tokens.get(expected.token) !== text) {
        throw new Mismatch(`${where}: ${text}, recorded token ${expected.token}, which is ${this.tokens.get(expected.token)}`);
      }
    } else if ("clock" in expected) {
      this.matchClock(expected.clock, actual, where);
    } else if (!("random" in expected)) {
      throw new Error(`${where}: a recording this replay cannot read: ${shown(expected)}`);
    }
  }

  matchClock(unit: string, actual: unknown, where: string): void {
    const text = asText(actual) ?? "";
    let number: number | null;
    if (unit === "id") {
      const found = /^(\d+)-\d+$/.exec(text);
      number = found ? Number(found[1]) : null;
      unit = "ms";
    } else {
      number = /^-?\d+$/.test(text) ? Number(text) : null;
    }
    if (number === null) throw new Mismatch(`${where}: ${shown(actual)}, recorded a ${unit} reading of the clock`);
    if (unit === "span" || unit === "slot") return;
    const now = this.clock(unit, this.nowMs);
    if (Math.abs(number - now) > this.clock(unit, DAY_MS)) {
      throw new Mismatch(`${where}: ${number} is not within a day of the server's clock in ${unit} (${now})`);
    }
  }

  matchText(pieces: Json[], actual: unknown, where: string): void {
    const text = asText(actual);
    const markers = pieces.filter((p) => typeof p !== "string");
    const pattern = pieces
      .map((p) =>
        typeof p === "string"
          ? p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
          : "token" in p
            ? `([0-9a-f]{${p.width}})`
            : p.clock === "id"
              ? "(\\d+-\\d+)"
              : "(-?\\d+)",
      )
      .join("");
    const found = text === null ? null : new RegExp(`^${pattern}$`, "s").exec(text);
    if (found === null) throw new Mismatch(`${where}: ${shown(actual)}, recorded ${shown(pieces)}`);
    markers.forEach((marker, i) => this.match(marker, Buffer.from(found[i + 1]!), `${where} (part ${i})`));
  }

  /** Whether `actual` matches `expected`, binding tokens only if it does. */
  tried(expected: Json, actual: unknown): boolean {
    const tokens = new Map(this.tokens);
    try {
      this.match(expected, actual, "");
      return true;
    } catch (err) {
      if (!(err instanceof Mismatch)) throw err;
      this.tokens = tokens;
      return false;
    }
  }

  matchUnordered(expected: Json[], actual: unknown[], where: string): void {
    if (expected.length !== actual.length) {
      throw new Mismatch(`${where}: ${shown(actual)}, recorded ${expected.length} items ${shown(expected)}`.slice(0, 600));
    }
    const left = [...actual];
    for (const item of expected) {
      const at = left.findIndex((a) => this.tried(item, a));
      if (at < 0) throw new Mismatch(`${where}: none of ${shown(left)} is ${shown(item)}`.slice(0, 600));
      left.splice(at, 1);
    }
  }

  // The keyspace.

  async actualKeyspace(): Promise<[Buffer, string, boolean, unknown][]> {
    const keys = (await this.client.callBuffer("KEYS", "*")) as Buffer[];
    const reads: Record<string, string[]> = {
      string: ["GET"],
      list: ["LRANGE", "0", "-1"],
      set: ["SMEMBERS"],
      zset: ["ZRANGE", "0", "-1", "WITHSCORES"],
      hash: ["HGETALL"],
      stream: ["XRANGE", "-", "+"],
    };
    const out: [Buffer, string, boolean, unknown][] = [];
    for (const key of keys) {
      const kind = String(await this.client.callBuffer("TYPE", key));
      const pttl = Number(await this.client.callBuffer("PTTL", key));
      const [read, ...rest] = reads[kind] ?? ["EXISTS"];
      const value = await this.raw(read!, key, ...rest);
      if (kind !== "none") out.push([key, kind, pttl >= 0, value]);
    }
    return out;
  }

  async checkKeyspace(where: string): Promise<void> {
    const actual = await this.actualKeyspace();
    for (const entry of this.keyspace.values()) {
      const fits = ([key, kind, expires, value]: [Buffer, string, boolean, unknown]): boolean => {
        if (kind !== entry.type || expires !== (entry.ttl ?? false)) return false;
        let recorded: Json = entry.value;
        let found = value;
        if (kind === "hash" || kind === "zset") {
          const flat = value as unknown[];
          const pairs: unknown[] = [];
          for (let i = 0; i < flat.length; i += 2) pairs.push(flat.slice(i, i + 2));
          found = pairs;
        }
        if (kind === "hash" || kind === "zset" || kind === "set") recorded = { unordered: recorded };
        return this.tried([entry.key, recorded], [key, found]);
      };
      const at = actual.findIndex(fits);
      if (at < 0) {
        throw new Mismatch(`${where}: the keyspace holds no ${JSON.stringify(entry)}; it holds ${shown(actual)}`.slice(0, 2000));
      }
      actual.splice(at, 1);
    }
    if (actual.length > 0) throw new Mismatch(`${where}: keys the recording does not hold: ${shown(actual)}`.slice(0, 2000));
  }

  apply(changes: Json): void {
    for (const entry of changes.set ?? []) this.keyspace.set(JSON.stringify(entry.key), entry);
    for (const key of changes.del ?? []) this.keyspace.delete(JSON.stringify(key));
  }

  // Steps.

  /** Replays step `i`; false when the recording ends there. */
  async step(i: number, step: Json): Promise<boolean> {
    let where = `step ${i}`;
    if ("stop" in step) return false;
    if ("wait" in step) {
      await this.wait(step.wait);
      return true;
    }
    let reply: unknown;
    if ("script" in step) {
      const script = SCRIPTS.get(step.script);
      if (script === undefined) throw new Error(`${where}: no script ${step.script} in the package`);
      const keys: string[] = [];
      for (const k of step.keys) keys.push((await this.sent(k)).toString("utf8"));
      const args: Buffer[] = [];
      for (const a of step.args) args.push(await this.sent(a));
      reply = await this.call(script, keys, args);
      this.called.add(script.name);
      where = `${where} (${script.name})`;
    } else {
      const command: Buffer[] = [];
      for (const a of step.command) command.push(await this.sent(a));
      reply = await this.raw(command[0]!.toString(), ...command.slice(1));
      where = `${where} (${command[0]!.toString()})`;
    }
    this.replies.set(i, reply);
    this.nowMs = await this.serverMs();
    this.match(step.reply, reply, `${where}: the reply`);
    this.apply(step.keyspace ?? {});
    if (!(step.pipelined ?? false)) await this.checkKeyspace(`${where}: after it`);
    return true;
  }

  async wait(wait: Json): Promise<void> {
    if ("gone" in wait) {
      const key = await this.sent(wait.gone);
      await poll(async () => Number(await this.client.exists(key)) === 0, `${key.toString()} expiring`, 60);
    } else {
      const until = (await this.serverMs()) + (wait.server_ms as number);
      await poll(async () => (await this.serverMs()) >= until, `the server's clock at ${until}`, 60);
    }
  }
}

/** Replays scenario `file` on `client`; returns the scripts it called. */
export async function replay(client: Redis, file: string, functions = false): Promise<Set<string>> {
  const rec = recording(file);
  const run = new Replay(client, functions);
  if (rec.within_one_minute ?? false) {
    await poll(async () => (await run.serverMs()) % 60_000 <= 60_000 - MINUTE_LEFT_MS, "a minute starting", 60);
  }
  for (const [i, step] of (rec.steps as Json[]).entries()) {
    if (!(await run.step(i, step))) break;
  }
  return run.called;
}
