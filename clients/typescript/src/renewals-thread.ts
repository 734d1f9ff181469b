/**
 * The renewals thread of a `Worker`: a `worker_threads` thread with its own event loop and
 * its own connection, so that a handler that keeps the worker's event loop busy (CPU work,
 * a sync call) cannot stop the renewals, and its job is not handed to another worker while
 * it still runs. It renews every job the loop holds, until told to stop.
 *
 * @module
 */

import { parentPort, workerData } from "node:worker_threads";

import { Cluster, Redis, type RedisOptions } from "ioredis";

import { WorkQueue } from "./generated/work_queue.js";
import { Link } from "./machine.js";
import { primaryOf } from "./primary.js";
import { type Renewal, Renewals } from "./renewals.js";

/** What the loop gives the thread. */
export interface ThreadData {
  name: string;
  leaseMs: number;
  functions: boolean;
  /** One server, or several, of which the thread renews on the primary (`ROLE`). */
  connections: RedisOptions[];
  /** A cluster instead, by its primaries now (and `connections[0]`, each node's settings). */
  cluster?: { host: string; port: number }[];
}

/** What the loop tells the thread: the jobs it now holds and those it no longer does, in order; or to stop. */
export type ToThread = { readonly kind: "changes"; readonly changes: readonly Renewal[] } | { readonly kind: "stop" };

async function main(port: NonNullable<typeof parentPort>, data: ThreadData): Promise<void> {
  const renewals = new Renewals(new WorkQueue(data.name), data.leaseMs);
  const link = new Link(
    data.cluster !== undefined
      ? openCluster(data.cluster, data.connections[0] ?? {})
      : data.connections.length === 1
        ? open(data.connections[0]!)
        : primaryOf(data.connections),
    data.functions,
  );
  const inbox: ToThread[] = [];
  let wake: (() => void) | null = null;
  port.on("message", (message: ToThread) => {
    inbox.push(message);
    wake?.();
  });
  try {
    for (;;) {
      for (const told of inbox.splice(0)) {
        if (told.kind === "stop") return;
        for (const change of told.changes) renewals.apply(change);
      }
      const step = renewals.step();
      if ("run" in step) {
        renewals.feed(await link.run(step.run));
        port.postMessage({ kind: "counts", ...renewals.counts() });
        continue;
      }
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (inbox.length > 0) resolve();
        if (step.dueMs !== null) timer = setTimeout(resolve, step.dueMs);
      });
      clearTimeout(timer);
      wake = null;
    }
  } finally {
    port.postMessage({ kind: "counts", ...renewals.counts() });
    await link.drop();
    port.close();
  }
}

function open(options: RedisOptions): Redis {
  const client = new Redis({ ...options, lazyConnect: true });
  client.on("error", () => {}); // a lost connection is met by the renewals' retries
  return client;
}

function openCluster(nodes: { host: string; port: number }[], redisOptions: RedisOptions): Cluster {
  const client = new Cluster(nodes, { redisOptions, lazyConnect: true });
  client.on("error", () => {});
  return client;
}


if (parentPort !== null) void main(parentPort, workerData as ThreadData);
