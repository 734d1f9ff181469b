/**
 * Every scenario of the Rust suite, replayed through the generated functions on a real
 * server, by EVALSHA and through the Functions library (FCALL); and the scenarios call
 * every script of the package.
 */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import type { Redis } from "ioredis";

import { replay, recording, scenarioFiles, SCRIPTS, waits } from "./replay.js";
import { Server } from "./server.js";

let server: Server;
let client: Redis;

before(async () => {
  server = await Server.start();
  // Integer replies as their digits: exact beyond 2^53, as the recordings have them.
  client = server.client({ stringNumbers: true });
});

after(async () => {
  await server.stop();
});

describe("scenarios by EVALSHA", () => {
  for (const file of scenarioFiles()) {
    test(file.replace(/\.json$/, ""), async () => {
      await client.flushall();
      await replay(client, file);
    });
  }
});

describe("scenarios through the Functions library (FCALL)", () => {
  // The scenarios that wait for time run once, above.
  for (const file of scenarioFiles().filter((f) => !waits(f))) {
    test(file.replace(/\.json$/, ""), async () => {
      await client.flushall();
      await replay(client, file, true);
    });
  }
});

test("the scenarios call every script", () => {
  const recorded = new Set<string>();
  for (const file of scenarioFiles()) {
    for (const step of recording(file).steps) if ("script" in step) recorded.add(step.script);
  }
  const missing = [...SCRIPTS.keys()].filter((name) => !recorded.has(name)).sort();
  assert.deepEqual(missing, [], `${missing.length} scripts no scenario calls`);
});
