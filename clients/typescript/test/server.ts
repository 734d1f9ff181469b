/**
 * Throwaway redis-server processes on free loopback ports, started by the tests
 * themselves (REDIS_SERVER_BIN, or redis-server from the PATH). Waits poll the server.
 */

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { constants, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

import { type TestContext, after, before, beforeEach } from "node:test";

import { Redis, type RedisOptions } from "ioredis";

export const BINARY = process.env["REDIS_SERVER_BIN"] ?? "redis-server";

/** The processes this test process started and that still run. */
const started = new Set<ChildProcess>();

function killStarted(): void {
  for (const child of started) child.kill("SIGKILL");
}

// However this process ends (an exit, a failed hook, or the runner's SIGTERM when a file
// runs past --test-timeout), the servers and workers it started end with it.
process.once("exit", killStarted);
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    killStarted();
    process.exit(128 + constants.signals[signal]);
  });
}

/** Kills `child` (SIGKILL) when this test process ends, if it still runs then. */
export function killOnExit(child: ChildProcess): ChildProcess {
  started.add(child);
  child.once("exit", () => started.delete(child));
  return child;
}

/** A port nobody listens on, as the kernel hands one out. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Asks `ready` until it answers true; fails naming `what` after `seconds`. */
export async function poll(ready: () => boolean | Promise<boolean>, what: string, seconds = 30): Promise<void> {
  const deadline = Date.now() + seconds * 1000;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`${what}: not after ${seconds} s`);
    await sleep(5);
  }
}

/** A redis-server on a free port of 127.0.0.1, in a folder of its own. */
export class Server {
  readonly port: number;
  readonly dir: string;
  readonly process: ChildProcess;
  readonly #clients: Redis[] = [];

  private constructor(port: number, dir: string, child: ChildProcess) {
    this.port = port;
    this.dir = dir;
    this.process = child;
  }

  static async start(...extra: string[]): Promise<Server> {
    if (spawnSync(BINARY, ["--version"]).error !== undefined) {
      throw new Error(
        `\`${BINARY}\` not found; install it with \`sudo apt-get install redis-server\` (Debian, ` +
          "Ubuntu), or set REDIS_SERVER_BIN to its path",
      );
    }
    const dir = mkdtempSync(join(tmpdir(), "redis-patterns-ts-"));
    let log = "";
    // The free port can be taken by someone else before the server binds it.
    for (let attempt = 0; attempt < 5; attempt++) {
      const port = await freePort();
      const child = spawn(
        BINARY,
        ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
          "--dir", dir, "--logfile", "redis.log", ...extra],
        { cwd: dir, stdio: "ignore" },
      );
      const server = new Server(port, dir, child);
      killOnExit(child);
      try {
        await poll(() => server.answers(), "redis-server", 10);
        return server;
      } catch {
        child.kill("SIGKILL");
        log = server.log();
      }
    }
    throw new Error(`redis-server did not start; its log:\n${log}`);
  }

  private async answers(): Promise<boolean> {
    if (this.process.exitCode !== null) throw new Error("exited");
    const client = new Redis({ port: this.port, host: "127.0.0.1", lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on("error", () => {});
    try {
      await client.connect();
      return (await client.ping()) === "PONG";
    } catch {
      return false;
    } finally {
      client.disconnect();
    }
  }

  /** A client of this server, closed with it. */
  client(options: RedisOptions = {}): Redis {
    const client = new Redis({ port: this.port, host: "127.0.0.1", ...options });
    this.#clients.push(client);
    return client;
  }

  log(): string {
    try {
      return readFileSync(join(this.dir, "redis.log"), "utf8");
    } catch {
      return "";
    }
  }

  async stop(): Promise<void> {
    for (const client of this.#clients) client.disconnect();
    const exited = new Promise((resolve) => this.process.once("exit", resolve));
    this.process.kill("SIGKILL");
    if (this.process.exitCode === null && this.process.signalCode === null) await exited;
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A client of a port nobody listens on: any I/O on it fails. */
export async function deadClient(): Promise<Redis> {
  const client = new Redis({
    port: await freePort(),
    host: "127.0.0.1",
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on("error", () => {});
  return client;
}

/** Every key of the keyspace, serialised (DUMP), sorted by key. */
export async function dump(client: Redis): Promise<[string, string | null][]> {
  const keys = (await client.keys("*")).sort();
  const out: [string, string | null][] = [];
  for (const key of keys) {
    const value = await client.dumpBuffer(key);
    out.push([key, value === null ? null : value.toString("hex")]);
  }
  return out;
}

/** Three masters sharing the 16384 slots, joined without redis-cli. */
export class ClusterServers {
  private constructor(readonly nodes: Server[]) {}

  static async start(): Promise<ClusterServers> {
    const flags = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"];
    const nodes = await Promise.all([0, 1, 2].map(() => Server.start(...flags)));
    const ranges = [[0, 5460], [5461, 10922], [10923, 16383]] as const;
    const admin = nodes.map((node) => node.client());
    await Promise.all(admin.map((c, i) => c.call("CLUSTER", "ADDSLOTSRANGE", ranges[i]![0], ranges[i]![1])));
    for (const node of nodes.slice(1)) await admin[0]!.call("CLUSTER", "MEET", "127.0.0.1", node.port);
    for (const c of admin) {
      await poll(async () => {
        const info = String(await c.call("CLUSTER", "INFO"));
        const slots = (await c.call("CLUSTER", "SLOTS")) as unknown[];
        return info.includes("cluster_state:ok") && info.includes("cluster_known_nodes:3") && slots.length === 3;
      }, "the cluster");
    }
    return new ClusterServers(nodes);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.stop()));
  }
}

/**
 * A server for the tests of one file: started before them, stopped after; `set` gets it
 * and a client of it; with `flush`, every test starts on an empty keyspace.
 */
export function serve(set: (server: Server, client: Redis) => void, options: { flush?: boolean; client?: RedisOptions } = {}): void {
  let started: Server | null = null;
  let client: Redis | null = null;
  before(async () => {
    started = await Server.start();
    client = started.client(options.client ?? {});
    set(started, client);
  });
  after(async () => {
    await started?.stop();
  });
  if (options.flush ?? true) {
    beforeEach(async () => {
      await client?.flushall();
    });
  }
}

/** The server's clock, in ms. */
export async function serverMs(client: Redis): Promise<number> {
  const [s, us] = await client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

/** How many clients of `client`'s server are blocked in `command` (lower case) now. */
export async function blockedIn(client: Redis, command: string): Promise<number> {
  const listed = String(await client.client("LIST")).split("\n");
  return listed.filter((line) => line.includes(` cmd=${command} `) && / flags=[a-zA-Z]*b/.test(line)).length;
}

/** How many clients of `client`'s server last ran `command` (lower case), blocked in it or not. */
export async function clientsIn(client: Redis, command: string): Promise<number> {
  const listed = String(await client.client("LIST")).split("\n");
  return listed.filter((line) => line.includes(` cmd=${command} `)).length;
}

/**
 * A stop for the loops (workers, schedulers) a test starts: aborted when the test ends,
 * passed or failed, so that a failed test leaves none running (its process would not end).
 */
export function stopAfter(t: TestContext): AbortController {
  const stop = new AbortController();
  t.after(() => stop.abort());
  return stop;
}
