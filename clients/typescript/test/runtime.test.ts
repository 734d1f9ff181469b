/**
 * The runtime on a real server: the number rule, key templates, declared codes, replies
 * typed from `@return`, and running scripts: NOSCRIPT recovery on a single call, in a
 * pipeline and in a transaction (one round trip, applied once), FCALL loading the library.
 */

import assert from "node:assert/strict";
import { beforeEach, test } from "node:test";

import { Redis } from "ioredis";

import {
  Batch,
  Counter,
  FencedLock,
  FixedLengthQueue,
  InvalidInput,
  RanOutsideTransaction,
  ScriptError,
  counter,
  fixedLengthQueue,
  floatFromText,
  integerFromText,
  transaction,
  pipeline,
} from "../src/index.js";
import { Server, serve } from "./server.js";

let server: Server;
let r: Redis;

/** Round trips a client made: single commands and pipelines' `exec`. */
let sends = 0;

/** `client` counting its round trips in `sends`. */
function counting(client: Redis): Redis {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== "function") return v;
      const f = v as (...a: unknown[]) => unknown;
      if (prop === "callBuffer" || prop === "call") {
        return (...a: unknown[]) => {
          sends += 1;
          return f.apply(target, a);
        };
      }
      if (prop === "pipeline") {
        return (...a: unknown[]) => {
          const pipe = f.apply(target, a) as { exec: (...x: unknown[]) => unknown };
          const exec = pipe.exec.bind(pipe);
          pipe.exec = (...x: unknown[]) => {
            sends += 1;
            return exec(...x);
          };
          return pipe;
        };
      }
      return f.bind(target);
    },
  });
}

async function calls(client: Redis, command: string): Promise<number> {
  const info = await client.info("commandstats");
  const found = new RegExp(`^cmdstat_${command.replace("|", "\\|")}:calls=(\\d+)`, "m").exec(info);
  return found ? Number(found[1]) : 0;
}

serve((s, c) => {
  server = s;
  r = c;
}, { flush: false });

beforeEach(async () => {
  await r.flushall();
  await r.script("FLUSH");
  await r.call("FUNCTION", "FLUSH");
  await r.config("RESETSTAT");
  sends = 0;
});

test("integers follow the scripts' rule", () => {
  assert.equal(integerFromText("-42"), -42n);
  assert.equal(integerFromText("0"), 0n);
  assert.equal(integerFromText(String(2n ** 63n - 1n)), 2n ** 63n - 1n);
  for (const refused of ["007", "+5", " 5", "5 ", "1e3", "0x10", "1.5", "-0", "", "-", "1_000", String(2n ** 63n)]) {
    assert.equal(integerFromText(refused), null, refused);
  }
});

test("floats follow the scripts' rule", () => {
  for (const [text, value] of [["1e+20", 1e20], ["1.0E16", 1e16], ["1e-07", 1e-7], ["-0.5", -0.5], ["0", 0]] as const) {
    assert.equal(floatFromText(text), value);
  }
  for (const refused of ["NaN", "inf", "0x10", " 5", "+5", ".5", "5.", "007", "1e", "1e+", "1e400", "1_0", ""]) {
    assert.equal(floatFromText(refused), null, refused);
  }
  // Every float as JavaScript prints it is read back exactly.
  for (const value of [0.1, 1 / 3, 1e21, 1e-7, -2.5e-300, Number.MAX_VALUE]) {
    assert.equal(floatFromText(String(value)), value);
  }
});

test("keys are named from their templates, hash tags checked", () => {
  assert.equal(new FixedLengthQueue("q").enqueue(10, ["a"]).keys[0], "q");
  assert.throws(() => new Counter(""), (err: InvalidInput) => err.code === "BAD_KEYS" && err.what === "key");
  assert.throws(
    () => fixedLengthQueue.enqueue("q", 10, "ab" as unknown as string[]),
    (err: InvalidInput) => err.code === "BAD_ARGS" && err.what === "items",
  );
  const lock = new FencedLock("{orders}:lock").acquire(1000);
  assert.deepEqual(lock.keys, ["{orders}:lock", "{orders}:lock:fence"]);
  assert.deepEqual(new FencedLock("report").acquire(1000).keys, ["report", "{report}:fence"]);
  assert.throws(() => new FencedLock("a}b"), (err: InvalidInput) => err.code === "BAD_KEYS" && err.what === "name");
});

test("a declared code is a ScriptError; other errors stay the server's", async () => {
  await r.hset("c", "n", "many");
  await assert.rejects(new Counter("c").hashReset("n", 1).run(r), (err: ScriptError) => {
    assert.ok(err instanceof ScriptError);
    assert.equal(err.code, "NOT_INTEGER");
    assert.equal(err.script, "counter/hash_reset");
    return true;
  });
  await r.set("s", "x");
  await assert.rejects(new Counter("s").hashReset("n", 1).run(r), (err: Error) => {
    assert.ok(!(err instanceof ScriptError));
    assert.match(err.message, /WRONGTYPE/);
    return true;
  });
});

test("a decimal reply is a bigint, exact beyond 2^53", async () => {
  const big = 2n ** 62n + 1n;
  assert.equal(await counter.hashReset("c", "n", big).run(r), 0n);
  const old = await counter.hashReset("c", "n", -5).run(r);
  assert.equal(typeof old, "bigint");
  assert.equal(old, big);
});

test("replies decode the same with ioredis's stringNumbers", async () => {
  const strings = server.client({ stringNumbers: true });
  assert.deepEqual(await new FixedLengthQueue("q").enqueue(2, ["a", "b", "c"]).run(strings), [2, 0]);
  assert.deepEqual(await new FixedLengthQueue("q").enqueue(2, ["d"]).run(r), [0, 0]);
});

test("a call loads its script after a flush and runs once", async () => {
  const c = counting(r);
  const queue = new FixedLengthQueue("q");
  assert.deepEqual(await queue.enqueue(10, ["a"]).run(c), [1, 0]);
  // EVALSHA (NOSCRIPT), SCRIPT LOAD, EVALSHA.
  assert.equal(sends, 3);
  assert.deepEqual(await r.lrange("q", 0, -1), ["a"]);
  sends = 0;
  assert.deepEqual(await queue.enqueue(10, ["b"]).run(c), [1, 0]);
  assert.equal(sends, 1);
  assert.deepEqual(await r.lrange("q", 0, -1), ["a", "b"]);
});

test("a transaction after a flush is one round trip, applied once", async () => {
  const c = counting(r);
  const batch = new Batch({ transaction: true });
  const pushed = batch.add(new FixedLengthQueue("{q}:a").enqueue(10, ["1"]));
  const again = batch.add(new FixedLengthQueue("{q}:a").enqueue(10, ["2"]));
  const reset = batch.add(new Counter("{q}:c").hashReset("n", 5));
  await batch.run(c);
  assert.equal(sends, 1);
  assert.deepEqual([pushed.result(), again.result(), reset.result()], [[1, 0], [1, 0], 0n]);
  assert.deepEqual(await r.lrange("{q}:a", 0, -1), ["1", "2"]);
  assert.equal(await r.hget("{q}:c", "n"), "5");
  assert.equal(await calls(r, "multi"), 1);
  assert.equal(await calls(r, "exec"), 1);
  assert.equal(await calls(r, "script|load"), 2);
});

test("a pipeline of several scripts loads them in band", async () => {
  const c = counting(r);
  const batch = new Batch();
  const pushed = batch.add(new FixedLengthQueue("q").enqueue(10, ["1"]));
  const reset = batch.add(new Counter("c").hashReset("n", 5));
  await batch.run(c);
  assert.equal(sends, 1);
  assert.deepEqual([pushed.result(), reset.result()], [[1, 0], 0n]);
  assert.deepEqual(await r.lrange("q", 0, -1), ["1"]);
});

test("a pipeline of one script sends its calls alone, then again behind the load", async () => {
  const c = counting(r);
  const queue = new FixedLengthQueue("q");
  const batch = new Batch();
  const slots = [0, 1, 2, 3, 4].map((i) => batch.add(queue.enqueue(10, [String(i)])));
  await batch.run(c);
  assert.equal(sends, 2);
  assert.deepEqual(slots.map((s) => s.result()), Array(5).fill([1, 0]));
  assert.deepEqual(await r.lrange("q", 0, -1), ["0", "1", "2", "3", "4"]);
  // Loaded now: one round trip, with no load in it.
  const loads = await calls(r, "script|load");
  sends = 0;
  const second = new Batch();
  second.add(queue.enqueue(10, ["5"]));
  second.add(queue.enqueue(10, ["5"]));
  await second.run(c);
  assert.equal(sends, 1);
  assert.equal(await calls(r, "script|load"), loads);
  assert.equal(await r.llen("q"), 7);
});

test("a failed call in a transaction is its slot's error alone", async () => {
  await r.hset("c", "n", "many");
  const batch = new Batch({ transaction: true });
  const pushed = batch.add(new FixedLengthQueue("q").enqueue(10, ["1"]));
  const refused = batch.add(new Counter("c").hashReset("n", 1));
  await batch.run(r);
  assert.deepEqual(pushed.result(), [1, 0]);
  assert.throws(() => refused.result(), (err: ScriptError) => err.code === "NOT_INTEGER");
});

test("a batch runs once and its slots wait for it", async () => {
  const batch = new Batch();
  const slot = batch.add(new FixedLengthQueue("q").enqueue(10, ["1"]));
  assert.throws(() => slot.result(), /has not run yet/);
  await batch.run(r);
  await assert.rejects(batch.run(r), /already ran/);
  assert.throws(() => batch.add(new FixedLengthQueue("q").enqueue(10, ["1"])), /already ran/);
  assert.deepEqual(slot.result(), [1, 0]);
  assert.equal(batch.length, 1);
});

test("a fill that throws sends nothing", async () => {
  await assert.rejects(
    transaction(r, (batch) => {
      batch.add(new FixedLengthQueue("q").enqueue(10, ["1"]));
      throw new Error("stop");
    }),
    /stop/,
  );
  assert.equal(await r.exists("q"), 0);
  const slot = await pipeline(r, (batch) => batch.add(new FixedLengthQueue("q").enqueue(10, ["1"])));
  assert.deepEqual(slot.result(), [1, 0]);
});

test("a refused MULTI says the commands ran outside a transaction", async () => {
  await r.call("ACL", "SETUSER", "nomulti", "on", ">pw", "~*", "+@all", "-multi");
  const limited = server.client({ username: "nomulti", password: "pw" });
  const batch = new Batch({ transaction: true });
  batch.add(new FixedLengthQueue("q").enqueue(10, ["1"]));
  await assert.rejects(batch.run(limited), (err: RanOutsideTransaction) => err instanceof RanOutsideTransaction);
});

test("read-only scripts run with EVALSHA_RO", async () => {
  const readOnly = (await import("../src/index.js")).SCRIPTS.find((s) => s.readOnly);
  assert.ok(readOnly !== undefined);
  assert.equal(new (await import("../src/runtime.js")).Call(readOnly, [], [], (x) => x).command()[0], "EVALSHA_RO");
});

test("FCALL loads the library where it is missing, then runs", async () => {
  const c = counting(r);
  assert.deepEqual(await new FixedLengthQueue("q").enqueue(10, ["a"]).run(c, { functions: true }), [1, 0]);
  // FCALL (no such function), FUNCTION LOAD, FCALL.
  assert.equal(sends, 3);
  sends = 0;
  assert.deepEqual(await new FixedLengthQueue("q").enqueue(10, ["b"]).run(c, { functions: true }), [1, 0]);
  assert.equal(sends, 1);
  assert.deepEqual(await r.lrange("q", 0, -1), ["a", "b"]);
});
