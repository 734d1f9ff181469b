/**
 * The input contract of every script, driven by the generated catalogue: each value a
 * header refuses is refused here before any I/O with the code the script answers, and the
 * script answers that code itself to a raw call of the same value, leaving the keyspace as
 * it was. A new script is covered the day it lands.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { after, before, describe, test } from "node:test";

import type { Redis } from "ioredis";

import { InvalidInput, type Param, SCRIPTS, type Script } from "../src/index.js";
import { functionOf, variadicKey } from "./replay.js";
import { Server, deadClient, dump } from "./server.js";

const HOUR = 3_600_000n;
const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;

function asInt(n: bigint): number | bigint {
  return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

/** A value the parameter accepts: an hour for a duration where the header allows it. */
function valid(param: Param): unknown {
  if (param.choices !== null) return param.choices[0];
  if (param.length !== null) return "x".repeat(Math.max(param.length[0], 1));
  if (param.hexDigits !== null) return "0".repeat(param.hexDigits);
  const low = param.low ?? 0n;
  const high = param.high ?? I64_MAX;
  const clamp = (n: bigint): bigint => (n < low ? low : n > high ? high : n);
  if (param.kind === "ms") return asInt(clamp(HOUR));
  if (param.kind === "int" || param.kind === "uint") return asInt(clamp(1n));
  return ({ float: 1.5, bool: true, json: {}, bytes: Buffer.from("x") } as Record<string, unknown>)[param.kind] ?? "x";
}

/** How many values a valid call gives: the fewest the parameter takes, at least one. */
function fewest(param: Param): number {
  if (!param.variadic) return 1;
  return Math.max(param.least, param.most === 0 ? 0 : 1);
}

/** [case, a value the header refuses, the raw text of a refused value]. */
function* badValues(param: Param): Generator<[string, unknown, string]> {
  if (param.kind === "int" || param.kind === "uint" || param.kind === "ms") {
    const low = param.low ?? I64_MIN;
    const high = param.high ?? I64_MAX;
    yield ["above the range", high + 1n, String(high + 1n)];
    if (low > I64_MIN) yield ["below the range", low - 1n, String(low - 1n)];
    for (const odd of ["007", "+5", " 5", "1e3", "1.5", "0x10", "-0", "abc"]) yield [`text ${odd}`, "5", odd];
    yield ["a boolean", true, "true"];
    yield ["a fraction", 1.5, "1.5"];
    yield ["a number past 2^53", 2 ** 60, "1e18"];
  }
  if (param.kind === "float") {
    yield ["infinite", Infinity, "inf"];
    yield ["not a number", NaN, "NaN"];
    for (const odd of [".5", "5.", "+5", "1e400", "0x10"]) yield [`text ${odd}`, "1.5", odd];
  }
  if (param.kind === "bool") yield ["an integer", 1, "2"];
  if (param.nonEmpty) yield ["empty", param.kind === "bytes" ? Buffer.alloc(0) : "", ""];
  if (param.choices !== null) yield ["not a choice", "nope", "nope"];
  if (param.length !== null) {
    const [least, most] = param.length;
    if (least > 0) yield ["too short", "x".repeat(least - 1), "x".repeat(least - 1)];
    if (most !== null) yield ["too long", "x".repeat(most + 1), "x".repeat(most + 1)];
  }
  if (param.hexDigits !== null) {
    yield ["not hex", "g".repeat(param.hexDigits), "g".repeat(param.hexDigits)];
    yield ["too many digits", "0".repeat(param.hexDigits + 1), "0".repeat(param.hexDigits + 1)];
  }
}

/** Key names for the generated function of `script`, all in one slot. */
function keyArguments(script: Script): unknown[] {
  const keys: unknown[] = script.keyNames.map(() => "{t}:k");
  if (variadicKey(script)) keys[keys.length - 1] = ["{t}:k"];
  return keys;
}

function validValues(script: Script): unknown[] {
  return script.args.map((p) => (p.variadic ? Array.from({ length: fewest(p) }, () => valid(p)) : valid(p)));
}

/** Keys and arguments of a call every argument check of the script accepts. */
function rawCall(script: Script): [string[], Buffer[]] {
  const args: Buffer[] = [];
  for (const param of script.args) for (let i = 0; i < fewest(param); i++) args.push(param.encode(valid(param)));
  return [Array.from({ length: script.keys[0] }, (_, i) => `{t}:k${i}`), args];
}

function offsetOf(script: Script, name: string): number {
  let offset = 0;
  for (const param of script.args) {
    if (param.name === name) return offset;
    offset += fewest(param);
  }
  throw new Error(name);
}

async function evalsha(r: Redis, script: Script, keys: string[], args: Buffer[]): Promise<unknown> {
  try {
    return await r.callBuffer("EVALSHA", script.sha1, keys.length, ...keys, ...args);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith("NOSCRIPT")) {
      await r.script("LOAD", script.source);
      return await r.callBuffer("EVALSHA", script.sha1, keys.length, ...keys, ...args);
    }
    throw err;
  }
}

function refused(run: () => unknown): InvalidInput {
  try {
    run();
  } catch (err) {
    if (err instanceof InvalidInput) return err;
    throw err;
  }
  throw new assert.AssertionError({ message: "not refused" });
}

let server: Server;
let r: Redis;
let dead: Redis;

before(async () => {
  server = await Server.start();
  r = server.client();
  dead = await deadClient();
});

after(async () => {
  dead.disconnect();
  await server.stop();
});

describe("a refused value gets the script's code before any I/O, and the script's own", () => {
  for (const script of SCRIPTS) {
    for (const param of script.args) {
      for (const [name, value, raw] of badValues(param)) {
        test(`${script.name}:${param.name}:${name}`, async () => {
          await r.flushdb();
          const values = validValues(script);
          values[script.args.indexOf(param)] = param.variadic ? Array.from({ length: fewest(param) }, () => value) : value;
          // Building the call throws: nothing is sent (the client could not send it anyway).
          const err = refused(() => functionOf(script)(...keyArguments(script), ...values).run(dead));
          assert.equal(err.code, param.code);
          assert.equal(err.script, script.name);
          assert.ok(script.declares(param.code));

          // The script refuses the same value itself, and writes nothing.
          const [keys, args] = rawCall(script);
          try {
            await evalsha(r, script, keys, args);
          } catch {
            // a valid call may still fail, later than the argument checks
          }
          args[offsetOf(script, param.name)] = Buffer.from(raw);
          const before = await dump(r);
          await assert.rejects(evalsha(r, script, keys, args), (answer: Error) => {
            assert.equal(answer.message.split(" ")[0], param.code, answer.message);
            return true;
          });
          assert.deepEqual(await dump(r), before);
        });
      }
    }
  }
});

describe("wrong key and argument counts get BAD_ARGS", () => {
  for (const script of SCRIPTS) {
    test(script.name, async () => {
      await r.flushdb();
      assert.ok(script.declares("BAD_ARGS"));
      const [keys, args] = rawCall(script);
      await r.script("LOAD", script.source);
      const before = await dump(r);
      const most = script.args.reduce((n, p) => n + (p.variadic && p.most !== null ? p.most : 1), 0);
      const cases: [string[], Buffer[]][] = [
        [keys.slice(1), args],
        [keys, [...args, ...Array.from({ length: most - args.length + 1 }, () => Buffer.from("1"))]],
        [[], []],
      ];
      for (const [k, a] of cases) {
        await assert.rejects(r.callBuffer("EVALSHA", script.sha1, k.length, ...k, ...a), /^ReplyError: BAD_ARGS /);
      }
      assert.deepEqual(await dump(r), before);
      // Here, the same counts are refused before any I/O.
      assert.equal(refused(() => script.call(keys.slice(1), args, (reply) => reply).run(dead)).code, "BAD_ARGS");
      const tooMany = [...keys, ...Array.from({ length: 1001 }, (_, i) => `{t}:x${i}`)];
      assert.equal(refused(() => script.call(tooMany, args, (reply) => reply).run(dead)).code, "BAD_ARGS");
    });
  }
});

test("every script ships as generated", () => {
  for (const script of SCRIPTS) {
    assert.equal(createHash("sha1").update(script.source).digest("hex"), script.sha1, script.name);
    assert.ok(script.declares("BAD_ARGS"), script.name);
  }
});
