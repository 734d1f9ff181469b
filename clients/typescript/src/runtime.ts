/**
 * What the generated code calls: a script's contract (its arguments' rules, its key
 * templates, its reply type), and `Call`, which runs one script on a connection.
 *
 * The generated modules hold the facts (every header, as data); this module holds the
 * rules that apply them, once.
 *
 * @module
 */

import { readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";

import { InvalidInput, ScriptError, UnexpectedReply } from "./errors.js";

/** An integer argument: a number (a safe integer) or a `bigint`. */
export type Int = number | bigint;

/** A duration argument: whole milliseconds, as a number (a safe integer) or a `bigint`. */
export type Ms = number | bigint;

/** An opaque value: bytes as they are, or text sent as UTF-8. */
export type Bytes = Buffer | Uint8Array | string;

/** What reads a raw reply (as ioredis's `callBuffer` gives it) into the header's type. */
export type Decode<T> = (reply: unknown) => T;

/** A connection a call runs on: ioredis's `Redis` or `Cluster`. */
export type Client = Redis | Cluster;

/**
 * How many times one call loads its script (or the Functions library) and runs again after
 * the server answered that it lacks it: a flush can land between the load and the call,
 * but not this many times in a row unless something flushes continuously.
 */
export const NOSCRIPT_ATTEMPTS = 5;

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

// The one rule for numbers, as every script reads its arguments.

const INTEGER = /^(0|-?[1-9][0-9]*)$/;
const FLOAT_TEXT = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/;

/**
 * The integer `text` spells by the scripts' one rule for integers, or null: decimal digits
 * with an optional leading `-`, no leading zero, and no `+`, space, fraction, exponent or
 * hex; within 64 bits.
 */
export function integerFromText(text: string): bigint | null {
  if (!INTEGER.test(text) || text === "-0") return null;
  const value = BigInt(text);
  return value >= I64_MIN && value <= I64_MAX ? value : null;
}

/**
 * The float `text` spells by the scripts' one rule for floats, or null: decimal digits
 * with an optional leading `-`, then an optional fraction and an optional exponent; no
 * leading zero, no `+` before the number, space, hex, `inf` or `nan`; finite.
 */
export function floatFromText(text: string): number | null {
  if (!FLOAT_TEXT.test(text)) return null;
  const value = Number(text);
  return Number.isFinite(value) ? value : null;
}

// A script's contract.

/** The rules of one `@arg` line beyond its name, type and code. */
export interface Rules {
  optional?: boolean;
  variadic?: boolean;
  least?: number;
  most?: number | null;
  low?: bigint;
  high?: bigint;
  nonEmpty?: boolean;
  choices?: readonly string[];
  length?: readonly [number, number | null];
  hexDigits?: number;
}

/** An `@arg` line: how a value is checked and sent, and the code a bad one gets. */
export class Param {
  readonly name: string;
  readonly kind: string;
  readonly code: string;
  readonly optional: boolean;
  readonly variadic: boolean;
  readonly least: number;
  readonly most: number | null;
  readonly low: bigint | null;
  readonly high: bigint | null;
  readonly nonEmpty: boolean;
  readonly choices: readonly string[] | null;
  readonly length: readonly [number, number | null] | null;
  readonly hexDigits: number | null;

  constructor(name: string, kind: string, code: string, rules: Rules = {}) {
    this.name = name;
    this.kind = kind;
    this.code = code;
    this.optional = rules.optional ?? false;
    this.variadic = rules.variadic ?? false;
    this.least = rules.least ?? 1;
    this.most = rules.most === undefined ? 1 : rules.most;
    this.low = rules.low ?? null;
    this.high = rules.high ?? null;
    this.nonEmpty = rules.nonEmpty ?? false;
    this.choices = rules.choices ?? null;
    this.length = rules.length ?? null;
    this.hexDigits = rules.hexDigits ?? null;
  }

  /** The bytes sent for `value`; throws a `RangeError` saying why the header refuses it. */
  encode(value: unknown): Buffer {
    if (value === null || value === undefined) {
      if (this.optional) return Buffer.alloc(0);
      throw new RangeError("is required");
    }
    switch (this.kind) {
      case "int":
      case "uint":
      case "ms": {
        const unit = this.kind === "ms" ? "whole milliseconds" : "an integer";
        const n = wholeNumber(value, unit);
        const low = this.low ?? I64_MIN;
        const high = this.high ?? I64_MAX;
        if (n < low || n > high) {
          throw new RangeError(`must be ${unit} from ${bound(low)} to ${bound(high)}, got ${n}`);
        }
        return Buffer.from(n.toString());
      }
      case "float": {
        if (typeof value !== "number") throw new RangeError(`must be a number, got ${shown(value)}`);
        if (!Number.isFinite(value)) throw new RangeError(`must be a finite number, got ${value}`);
        return Buffer.from(String(value));
      }
      case "bool": {
        if (typeof value !== "boolean") {
          throw new RangeError(`must be true or false, got ${shown(value)}`);
        }
        return Buffer.from(value ? "1" : "0");
      }
      case "json": {
        let text: string | undefined;
        try {
          text = JSON.stringify(value, (_, v: unknown) => {
            if (typeof v === "bigint") throw new RangeError("a bigint has no JSON form");
            return v;
          });
        } catch (err) {
          throw new RangeError(`does not serialise to JSON: ${(err as Error).message}`);
        }
        if (text === undefined) throw new RangeError(`does not serialise to JSON: ${shown(value)}`);
        return this.checked(Buffer.from(text));
      }
      case "string": {
        if (typeof value !== "string") throw new RangeError(`must be text (a string), got ${shown(value)}`);
        if (this.choices !== null && !this.choices.includes(value)) {
          const options = this.choices.map((c) => `\`${c}\``).join(", ");
          throw new RangeError(`must be one of ${options}, got ${JSON.stringify(value.slice(0, 32))}`);
        }
        return this.checked(utf8(value));
      }
      default:
        return this.checked(asBytes(value));
    }
  }

  private checked(data: Buffer): Buffer {
    const size = data.length;
    if (this.nonEmpty && size === 0) throw new RangeError("must not be empty");
    if (this.length !== null) {
      const [least, most] = this.length;
      if (size < least || (most !== null && size > most)) {
        const bounds = most !== null ? `from ${least} to ${most} bytes long` : `${least} bytes long at least`;
        throw new RangeError(`must be ${bounds}, got ${size}`);
      }
    }
    if (this.hexDigits !== null) {
      if (size !== this.hexDigits || !/^[0-9a-fA-F]*$/.test(data.toString("latin1"))) {
        throw new RangeError(`must be ${this.hexDigits} hex digits, got ${shown(data.toString("latin1").slice(0, 32))}`);
      }
    }
    return data;
  }
}

/** `new Param(...)`, as the generated modules write it. */
export function param(name: string, kind: string, code: string, rules: Rules = {}): Param {
  return new Param(name, kind, code, rules);
}

/** What the generated modules give a `Script`. */
export interface ScriptSpec {
  name: string;
  path: string;
  sha1: string;
  function: string;
  readOnly: boolean;
  keys: readonly [number, number | null];
  keyNames: readonly string[];
  args: readonly Param[];
  /** The `@default` text of each argument that has one, by its header name. */
  defaults: Readonly<Record<string, string>>;
  errors: readonly string[];
}

/**
 * One script of the package: its name, file, SHA1, Functions-library name, and the
 * contract of its keys and arguments. Every generated module has one per script.
 */
export class Script {
  readonly name: string;
  readonly path: string;
  readonly sha1: string;
  readonly function: string;
  readonly readOnly: boolean;
  readonly keys: readonly [number, number | null];
  readonly keyNames: readonly string[];
  readonly args: readonly Param[];
  readonly defaults: Readonly<Record<string, string>>;
  readonly errors: readonly string[];
  #source: string | null = null;

  constructor(spec: ScriptSpec) {
    this.name = spec.name;
    this.path = spec.path;
    this.sha1 = spec.sha1;
    this.function = spec.function;
    this.readOnly = spec.readOnly;
    this.keys = spec.keys;
    this.keyNames = spec.keyNames;
    this.args = spec.args;
    this.defaults = spec.defaults;
    this.errors = spec.errors;
  }

  /** The script's text, as shipped in the package (`scripts/<family>/<op>.lua`). */
  get source(): string {
    this.#source ??= packageText(this.path);
    return this.#source;
  }

  /** The `@arg` line of argument `name`. */
  param(name: string): Param {
    const found = this.args.find((p) => p.name === name);
    if (found === undefined) throw new Error(`${this.name} has no argument \`${name}\``);
    return found;
  }

  /** Whether `code` is one of the error codes this script declares. */
  declares(code: string): boolean {
    return this.errors.includes(code);
  }

  invalid(code: string, what: string, why: string): InvalidInput {
    return new InvalidInput(this.name, code, what, why);
  }

  /**
   * Every argument, in `ARGV` order, checked against its `@arg` line (the variadic one given
   * as an array): the first one refused throws `InvalidInput` with the code the script
   * would answer.
   */
  encode(values: readonly unknown[]): Buffer[] {
    const out: Buffer[] = [];
    this.args.forEach((param, at) => {
      const value = values[at];
      if (!param.variadic) {
        out.push(this.encodeOne(param, value, ""));
        return;
      }
      const items = many(this, param.name, value, "BAD_ARGS");
      if (items.length < param.least || (param.most !== null && items.length > param.most)) {
        throw this.invalid("BAD_ARGS", param.name, `takes ${countWords(param.least, param.most)} values, got ${items.length}`);
      }
      items.forEach((item, i) => out.push(this.encodeOne(param, item, `value ${i} `)));
    });
    return out;
  }

  private encodeOne(param: Param, value: unknown, prefix: string): Buffer {
    try {
      return param.encode(value);
    } catch (err) {
      if (err instanceof RangeError) throw this.invalid(param.code, param.name, prefix + err.message);
      throw err;
    }
  }

  /**
   * The call of this script with `keys` (each checked to be a non-empty string) and `args` (from
   * `encode`), whose reply `decode` reads.
   */
  call<T>(keys: readonly unknown[], args: readonly Buffer[], decode: Decode<T>): Call<T> {
    const [least, most] = this.keys;
    if (keys.length < least || (most !== null && keys.length > most)) {
      throw this.invalid("BAD_ARGS", "keys", `takes ${countWords(least, most)} keys, got ${keys.length}`);
    }
    const names: string[] = [];
    for (const key of keys) {
      if (typeof key !== "string" || key === "") {
        throw this.invalid("BAD_KEYS", "keys", `must be non-empty key names (strings), got ${shown(key)}`);
      }
      names.push(key);
    }
    return new Call(this, names, [...args], decode);
  }

  /** A script's declared code as `ScriptError`; any other error as it is. */
  error(err: Error): Error {
    const text = err.message;
    const space = text.indexOf(" ");
    const code = space < 0 ? text : text.slice(0, space);
    if (this.declares(code)) return new ScriptError(this.name, code, space < 0 ? "" : text.slice(space + 1));
    return err;
  }
}

/**
 * `values` as the array of a variadic key or argument: a string, which would be read as its
 * characters, or anything else but an array, is refused.
 */
export function many(script: Script, what: string, values: unknown, code = "BAD_KEYS"): readonly unknown[] {
  if (!Array.isArray(values)) {
    throw script.invalid(code, what, `must be an array, got ${shown(values)}`);
  }
  return values as readonly unknown[];
}

// Key templates.

/** A piece of a key template: literal text, a parameter's value, or the hash tag. */
export type Part =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "value"; readonly name: string }
  | { readonly kind: "tag"; readonly parts: readonly Part[] };

export const text = (text: string): Part => ({ kind: "text", text });
export const value = (name: string): Part => ({ kind: "value", name });
export const tag = (parts: readonly Part[]): Part => ({ kind: "tag", parts });

/**
 * One form of a key's name template (`{<name>}:waiting`), as the header writes it.
 *
 * Each `<param>` is the value as it is; the `{…}` group is the cluster hash tag: its
 * content, values put in, is wrapped in `{}` unless it already holds a hash tag, and then
 * stands as it is. An empty value, a group content with a `}` but no hash tag, or one
 * whose hash tag begins in one value and ends in another, is refused.
 */
export class Form {
  readonly family: string;
  readonly text: string;
  readonly parts: readonly Part[];
  readonly params: readonly string[];

  constructor(family: string, text: string, parts: readonly Part[]) {
    this.family = family;
    this.text = text;
    this.parts = parts;
    const names: string[] = [];
    for (const part of parts) {
      for (const inner of part.kind === "tag" ? part.parts : [part]) {
        if (inner.kind === "value" && !names.includes(inner.name)) names.push(inner.name);
      }
    }
    this.params = names;
  }

  /** The key's name for these values of its parameters (`params`). */
  build(values: Readonly<Record<string, unknown>>): string {
    return this.name(this.family, values);
  }

  /**
   * The key's name for `values`; `InvalidInput` (`BAD_KEYS`, for `script`) when one is
   * missing or refused.
   */
  name(script: string, values: Readonly<Record<string, unknown>>): string {
    const texts = new Map<string, string>();
    for (const param of this.params) {
      let v = Object.hasOwn(values, param) ? values[param] : undefined;
      if ((typeof v === "number" && Number.isSafeInteger(v)) || typeof v === "bigint") v = String(v);
      if (typeof v !== "string" || v === "") {
        throw new InvalidInput(script, "BAD_KEYS", param, `must be non-empty text for \`${this.text}\`, got ${shown(v)}`);
      }
      texts.set(param, v);
    }
    let key = "";
    for (const part of this.parts) {
      if (part.kind === "text") key += part.text;
      else if (part.kind === "value") key += texts.get(part.name) ?? "";
      else key += this.group(script, part.parts, texts);
    }
    return key;
  }

  private group(script: string, parts: readonly Part[], texts: ReadonlyMap<string, string>): string {
    let content = "";
    const spans: [number, number, string][] = [];
    for (const part of parts) {
      if (part.kind === "text") content += part.text;
      else if (part.kind === "value") {
        const start = content.length;
        content += texts.get(part.name) ?? "";
        spans.push([start, content.length, part.name]);
      }
    }
    const found = hashTagSpan(content);
    if (found !== null) {
      const [openAt, closeAt] = found;
      if (spans.some(([start, end]) => start <= openAt && closeAt < end)) return content;
      const what = spans.find(([start, end]) => start <= openAt && openAt < end)?.[2] ?? "key";
      throw new InvalidInput(
        script,
        "BAD_KEYS",
        what,
        `\`${content}\` holds a hash tag that begins in one value and ends in another; ` +
          "put a hash tag wholly inside one value, or no braces at all",
      );
    }
    if (content.includes("}")) {
      const what = spans.find(([, , name]) => (texts.get(name) ?? "").includes("}"))?.[2] ?? "key";
      throw new InvalidInput(
        script,
        "BAD_KEYS",
        what,
        `\`${content}\` holds a \`}\` but no hash tag; add one, as in \`{${content}}\`, or drop the \`}\``,
      );
    }
    return `{${content}}`;
  }
}

/** Where Redis Cluster's hash tag of `key` stands: its `{` and `}`, if the text between them is not empty. */
export function hashTagSpan(key: string): [number, number] | null {
  const openAt = key.indexOf("{");
  if (openAt < 0) return null;
  const closeAt = key.indexOf("}", openAt + 1);
  if (closeAt <= openAt + 1) return null;
  return [openAt, closeAt];
}

/**
 * The items of a variadic key: each of its `forms` in turn, once per round, where `each`
 * gives every per-round parameter one value per round (all of one length).
 */
export function rounds(
  script: Script,
  forms: readonly Form[],
  values: Readonly<Record<string, unknown>>,
  each: Readonly<Record<string, unknown>>,
): string[] {
  const sequences = Object.entries(each).map(([name, seq]) => [name, many(script, name, seq)] as const);
  const lengths = new Set(sequences.map(([, seq]) => seq.length));
  if (lengths.size !== 1) {
    throw script.invalid("BAD_ARGS", sequences.map(([name]) => name).join(", "), "must all hold one value per item");
  }
  const [count] = lengths;
  const keys: string[] = [];
  for (let i = 0; i < (count ?? 0); i++) {
    const round: Record<string, unknown> = { ...values };
    for (const [name, seq] of sequences) round[name] = seq[i];
    for (const form of forms) keys.push(form.name(script.name, round));
  }
  return keys;
}

/**
 * Builds each of `forms` from `values`: a family's settings are checked when it is built,
 * not on its first call, and the keys they name are built once.
 */
export function checkNames(
  family: string,
  forms: readonly Form[],
  values: Readonly<Record<string, unknown>>,
): ReadonlyMap<Form, string> {
  return new Map(forms.map((form) => [form, form.name(family, values)]));
}

/** The name of a key an instance built with it (`checkNames`). */
export function keyOf(keys: ReadonlyMap<Form, string>, form: Form): string {
  const key = keys.get(form);
  if (key === undefined) throw new Error(`the instance named no key \`${form.text}\``);
  return key;
}

// Replies, decoded as the `@return` line says.

function unexpected(what: string, reply: unknown): UnexpectedReply {
  return new UnexpectedReply(`expected ${what}, got ${shown(reply)}`.slice(0, 300));
}

function asText(reply: unknown): string | null {
  return Buffer.isBuffer(reply) ? reply.toString("latin1") : typeof reply === "string" ? reply : null;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

export const NIL: Decode<null> = (reply) => {
  if (reply !== null) throw unexpected("nil", reply);
  return null;
};

/**
 * An integer reply as a number: ioredis gives a number, or with its `stringNumbers` option
 * the reply's digits. A script's integer is a Lua number (a double) made an integer, so a
 * JavaScript number holds it exactly.
 */
function integerReply(reply: unknown): number | null {
  if (typeof reply === "number" && Number.isInteger(reply)) return reply;
  if (typeof reply === "string" && integerFromText(reply) !== null) return Number(reply);
  return null;
}

/** Lua's false reaches the client as nil. */
export const BOOL: Decode<boolean> = (reply) => {
  if (reply === null) return false;
  const value = integerReply(reply);
  if (value === 0 || value === 1) return value === 1;
  throw unexpected("1 or 0", reply);
};

export const INT: Decode<number> = (reply) => {
  const value = integerReply(reply);
  if (value !== null) return value;
  throw unexpected("an integer", reply);
};

export const UINT: Decode<number> = (reply) => {
  const value = INT(reply);
  if (value < 0) throw unexpected("a count (never negative)", reply);
  return value;
};

export const DECIMAL: Decode<bigint> = (reply) => {
  const text = asText(reply);
  if (text !== null) {
    const value = integerFromText(text);
    if (value !== null) return value;
  }
  if (typeof reply === "number" && Number.isInteger(reply)) return BigInt(reply);
  throw unexpected("a decimal integer", reply);
};

export const FLOAT: Decode<number> = (reply) => {
  const text = asText(reply);
  if (text !== null) {
    const value = floatFromText(text);
    if (value !== null) return value;
    // Redis spells the infinite scores of a sorted set so.
    if (text === "inf" || text === "+inf") return Infinity;
    if (text === "-inf") return -Infinity;
  }
  if (typeof reply === "number") return reply;
  throw unexpected("a number", reply);
};

export const STR: Decode<string> = (reply) => {
  if (Buffer.isBuffer(reply)) {
    try {
      return strictUtf8.decode(reply);
    } catch {
      throw unexpected("UTF-8 text", reply);
    }
  }
  if (typeof reply === "string") return reply;
  throw unexpected("text", reply);
};

export const BYTES: Decode<Buffer> = (reply) => {
  if (Buffer.isBuffer(reply)) return reply;
  throw unexpected("bytes", reply);
};

/** `decode`, or null for a nil reply. */
export function opt<T>(decode: Decode<T>): Decode<T | null> {
  return (reply) => (reply === null ? null : decode(reply));
}

/** An array, each item read by `decode`. */
export function listOf<T>(decode: Decode<T>): Decode<T[]> {
  return (reply) => {
    if (!Array.isArray(reply)) throw unexpected("an array", reply);
    return reply.map((item: unknown) => decode(item));
  };
}

/** An array of exactly these items, each read by its own decoder. */
export function tupleOf<T extends unknown[]>(...decodes: { [K in keyof T]: Decode<T[K]> }): Decode<T> {
  return (reply) => {
    if (!Array.isArray(reply) || reply.length !== decodes.length) {
      throw unexpected(`an array of ${decodes.length}`, reply);
    }
    return decodes.map((decode: Decode<unknown>, i) => decode(reply[i])) as T;
  };
}

// Running a call.

/** A command as sent: its name and arguments. */
export type Command = readonly (string | Buffer | number)[];

/**
 * One script call, checked and ready to send: built by the generated functions and family
 * methods, which check every key and argument against the header first. Building it sends
 * nothing; run it with `run`, or add it to a `Batch`.
 */
export class Call<T> {
  readonly script: Script;
  readonly keys: readonly string[];
  readonly args: readonly Buffer[];
  readonly decode: Decode<T>;

  constructor(script: Script, keys: readonly string[], args: readonly Buffer[], decode: Decode<T>) {
    this.script = script;
    this.keys = keys;
    this.args = args;
    this.decode = decode;
  }

  /** The key the call passes as the header's `@key name` (a fixed key). */
  key(name: string): string {
    const at = this.script.keyNames.indexOf(name);
    const key = at < 0 ? undefined : this.keys[at];
    if (key === undefined) throw new Error(`${this.script.name} has no key \`${name}\``);
    return key;
  }

  /**
   * The command that runs the call: `EVALSHA` (`EVALSHA_RO` for a read-only script), or
   * with `functions`, `FCALL` (`FCALL_RO`) of its function.
   */
  command(functions = false): Command {
    const suffix = this.script.readOnly ? "_RO" : "";
    const head = functions ? ["FCALL" + suffix, this.script.function] : ["EVALSHA" + suffix, this.script.sha1];
    return [...head, this.keys.length, ...this.keys, ...this.args];
  }

  /** The decoded reply, or the error reply thrown (a declared code as `ScriptError`). */
  result(reply: unknown): T {
    if (reply instanceof Error) throw this.script.error(reply);
    return this.decode(reply);
  }

  /**
   * Runs the call with `EVALSHA`, or with `functions` through the package's Functions
   * library (`FCALL`). If the server lacks the script (`NOSCRIPT`) or the library, loads it
   * and sends the call again, up to `NOSCRIPT_ATTEMPTS` times: a call that found nothing
   * to run did not run, so nothing runs twice.
   */
  async run(client: Client, options: { functions?: boolean } = {}): Promise<T> {
    const functions = options.functions ?? false;
    const [name, ...rest] = this.command(functions);
    let reply = await send(client, String(name), rest);
    for (let attempt = 0; attempt < NOSCRIPT_ATTEMPTS && isMissing(reply, functions); attempt++) {
      if (functions) await loadFunctions(client);
      else await loadScript(client, this.script);
      reply = await send(client, String(name), rest);
    }
    return this.result(reply);
  }
}

/** One command on `client`; its reply, or its error reply as the error object. */
export async function send(client: Client, name: string, args: Command): Promise<unknown> {
  try {
    return await client.callBuffer(name, ...args);
  } catch (err) {
    if (isReplyError(err)) return err;
    throw err;
  }
}

/** Whether `err` is an error reply of the server (not a connection's failure). */
export function isReplyError(err: unknown): err is Error {
  return err instanceof Error && err.name === "ReplyError";
}

/** Whether `reply` says the server lacks the script (`NOSCRIPT`) or, for FCALL, the function. */
export function isMissing(reply: unknown, functions: boolean): boolean {
  if (!(reply instanceof Error)) return false;
  return functions ? /^(ERR )?Function not found/.test(reply.message) : reply.message.startsWith("NOSCRIPT");
}

function masters(client: Client): (Redis | Cluster)[] {
  return "nodes" in client && typeof client.nodes === "function" ? client.nodes("master") : [client];
}

/** `SCRIPT LOAD` of `script` (on every primary of a cluster). */
export async function loadScript(client: Client, script: Script): Promise<void> {
  for (const node of masters(client)) {
    const sha1 = String(await node.call("SCRIPT", "LOAD", script.source));
    if (sha1 !== script.sha1) {
      throw new UnexpectedReply(`${script.path}: SCRIPT LOAD answered ${sha1}, not the SHA1 generated for it`);
    }
  }
}

/** `FUNCTION LOAD REPLACE` of the package's library (on every primary of a cluster). */
export async function loadFunctions(client: Client): Promise<void> {
  for (const node of masters(client)) await node.call("FUNCTION", "LOAD", "REPLACE", functionsLibrary());
}

let library: string | null = null;

/**
 * The package's Redis Functions library (`functions.lua`), as `FUNCTION LOAD` takes it:
 * every script as a function, named for the package version.
 */
export function functionsLibrary(): string {
  library ??= packageText("functions.lua");
  return library;
}

function packageText(path: string): string {
  // This module is `dist/src/runtime.js`: the package's folder is two up.
  return readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");
}

// Messages.

function bound(n: bigint): string {
  return n === I64_MAX ? "2^63-1" : n === I64_MIN ? "-2^63" : n.toString();
}

export function countWords(least: number, most: number | null): string {
  if (most === null) return `at least ${least}`;
  return least === most ? String(least) : `from ${least} to ${most}`;
}

export function shown(value: unknown): string {
  let text: string;
  if (typeof value === "string") text = JSON.stringify(value);
  else if (typeof value === "bigint") text = `${value}n`;
  else if (Buffer.isBuffer(value)) text = `<Buffer ${JSON.stringify(value.toString("latin1").slice(0, 32))}>`;
  else if (Array.isArray(value)) text = `[${value.map(shown).join(", ")}]`;
  else if (value instanceof Error) text = `${value.name}: ${value.message}`;
  else text = String(value);
  return text.length <= 40 ? text : text.slice(0, 37) + "...";
}

function wholeNumber(value: unknown, unit: string): bigint {
  if (typeof value === "bigint") return value;
  if (typeof value === "number" && Number.isInteger(value)) {
    if (!Number.isSafeInteger(value)) {
      throw new RangeError(`must be ${unit} exact as a number (up to 2^53-1) or a bigint, got ${value}`);
    }
    return BigInt(value);
  }
  throw new RangeError(`must be ${unit} (a number or a bigint), got ${shown(value)}`);
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function utf8(text: string): Buffer {
  if (LONE_SURROGATE.test(text)) throw new RangeError(`must be valid text, got ${shown(text)}`);
  return Buffer.from(text, "utf8");
}

function asBytes(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (typeof value === "string") return utf8(value);
  throw new RangeError(`must be bytes (a Buffer or Uint8Array) or text, got ${shown(value)}`);
}
