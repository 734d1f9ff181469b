/**
 * A connect function that finds the primary among several servers by `ROLE`, as one that
 * asks Sentinel would: what a loop is given to go on through a failover without Sentinel.
 *
 * @module
 */

import { Redis, type RedisOptions } from "ioredis";

/**
 * A connect function that answers a client of whichever of `servers` is the primary now
 * (its `ROLE` says `master`); it throws a refused connection when none is, which a loop
 * meets by trying again after a pause. The client fails fast (no retries of ioredis's own),
 * so that a loop given this function opens a new one after a failure.
 */
export function primaryOf(servers: readonly RedisOptions[]): () => Promise<Redis> {
  return async () => {
    for (const options of servers) {
      const client = new Redis({ ...options, maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
      client.on("error", () => {}); // a failure is met by the loop that uses it
      try {
        const role = (await client.call("ROLE")) as unknown[];
        if (String(role[0]) === "master") return client;
      } catch {
        // not answering: the next one
      }
      client.disconnect();
    }
    throw Object.assign(new Error("connect ECONNREFUSED: no primary now"), { code: "ECONNREFUSED" });
  };
}
