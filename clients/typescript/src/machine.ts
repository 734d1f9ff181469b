/**
 * What the long-running loops share, as the Rust crate's `runtime::machine` and the Python
 * client's `_machine.py` write it: the operations a loop runs (a `Call`, a native command,
 * or a call built when it runs), which errors pass (a failed connection, a server that
 * changes roles, loads its data or moves slots), the pauses before sending again, and a
 * `Link` that runs one operation on a connection and answers its reply or its error as a
 * `Failed`, opening a new connection from a connect function after an error that passes.
 *
 * @module
 */

import { ScriptError } from "./errors.js";
import { type Call, type Client, isReplyError } from "./runtime.js";

/** One operation a loop runs. */
export interface Op {
  run(client: Client, functions: boolean): Promise<unknown>;
}

/** What a loop is fed when its operation failed: the error, to judge. */
export class Failed {
  constructor(readonly error: Error) {}
}

/** The operation that runs `call`. */
export function call(c: Call<unknown>): Op {
  return { run: (client, functions) => c.run(client, { functions }) };
}

/** The call `build` makes, built when it runs: one the header refuses fails as it runs. */
export function lazy(build: () => Call<unknown>): Op {
  return { run: (client, functions) => build().run(client, { functions }) };
}

/** The operation that sends one native command (`BZPOPMIN`, `CONFIG`): its raw reply; an error reply thrown. */
export function command(name: string, ...args: (string | Buffer | number)[]): Op {
  return { run: (client) => client.callBuffer(name, ...args) };
}

const TRANSIENT_CODES = new Set(["UNBLOCKED", "READONLY", "LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "BUSY"]);

const CONNECTION_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTCONN"]);

/** The code of a server's error reply (`READONLY`, `LEASE_LOST`, …), or null for an error that is no reply. */
export function errorCode(err: Error): string | null {
  if (err instanceof ScriptError) return err.code;
  if (isReplyError(err)) return err.message.split(" ", 1)[0] ?? null;
  return null;
}

/**
 * A failure of the connection rather than an answer of the server's: the command may or
 * may not have run, and a new connection may do better. ioredis says so by the error's
 * name (`MaxRetriesPerRequestError`: it gave up reconnecting for this command), its system
 * code, or its message (a command on a closed connection).
 */
export function isConnectionFailure(err: Error): boolean {
  if (errorCode(err) !== null) return false;
  const code = (err as NodeJS.ErrnoException).code;
  return (
    err.name === "MaxRetriesPerRequestError" ||
    (typeof code === "string" && CONNECTION_CODES.has(code)) ||
    /^(Connection is closed|Stream isn't writeable|connect E[A-Z]+)/.test(err.message)
  );
}

/**
 * Whether a loop sends the call again (after a pause) rather than stop: a failed
 * connection, or the error reply of a server that changes roles, loads its data or moves
 * slots (`UNBLOCKED`, `READONLY`, `LOADING`, `MASTERDOWN`, `TRYAGAIN`, `CLUSTERDOWN`,
 * `BUSY`). Every other error (a script's declared code, `NOPERM`, `WRONGTYPE`, `OOM`, …) is
 * not: the loop throws it.
 */
export function isTransient(err: Error): boolean {
  if (err instanceof ScriptError) return false;
  const code = errorCode(err);
  return code !== null ? TRANSIENT_CODES.has(code) : isConnectionFailure(err);
}

/** The first pause (ms) before a loop sends a call again after an error that passes. */
export const FIRST_RETRY_PAUSE_MS = 10;
/** The longest such pause: they double from `FIRST_RETRY_PAUSE_MS` up to it. */
export const MOST_RETRY_PAUSE_MS = 1000;

/**
 * How a loop meets the errors that pass: it counts them and pauses before it sends the call
 * again, from 10 ms doubling up to 1 s, each pause drawn from half of it to all of it; a
 * call that goes through starts the pauses over.
 */
export class Retries {
  #pause = FIRST_RETRY_PAUSE_MS;
  /** Failed connections met. */
  reconnects = 0;
  /** Other errors that pass met (a demoted, loading or resharding server). */
  serverRetries = 0;

  /** The pause (ms) before sending again after `err`, counted; null for an error that does not pass. */
  after(err: Error): number | null {
    if (!isTransient(err)) return null;
    if (isConnectionFailure(err)) this.reconnects += 1;
    else this.serverRetries += 1;
    const pause = this.#pause / 2 + Math.random() * (this.#pause / 2);
    this.#pause = Math.min(this.#pause * 2, MOST_RETRY_PAUSE_MS);
    return pause;
  }

  /** A call went through: the next error pauses from the first pause again. */
  passed(): void {
    this.#pause = FIRST_RETRY_PAUSE_MS;
  }
}

/**
 * What a loop runs on: a client, which reconnects by itself (ioredis), or a function that
 * answers a new client (one that asks Sentinel, or a list of servers, which is the primary
 * now), called again after an error that passes.
 */
export type Connect = Client | (() => Client | Promise<Client>);

/**
 * A loop's connection: the client it was given, or one from its connect function, made on
 * first use and made again after an error that passes.
 */
export class Link {
  readonly #connect: (() => Client | Promise<Client>) | null;
  #client: Client | null;
  readonly functions: boolean;

  constructor(connect: Connect, functions = false) {
    this.#connect = typeof connect === "function" ? connect : null;
    this.#client = typeof connect === "function" ? null : connect;
    this.functions = functions;
  }

  /** The client, made if need be. */
  async client(): Promise<Client> {
    this.#client ??= await this.#connect!();
    return this.#client;
  }

  /** Runs `op` once: its answer, or `Failed` with its error. */
  async run(op: Op): Promise<unknown> {
    try {
      return await op.run(await this.client(), this.functions);
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      if (this.#connect !== null && isTransient(error)) this.close();
      return new Failed(error);
    }
  }

  /** Closes whatever client it has, a given one too (a thread's own link, ending). */
  async drop(): Promise<void> {
    const client = this.#client;
    this.#client = null;
    client?.disconnect();
  }

  /** Closes a client this link made (a client it was given is the caller's). */
  close(): void {
    const client = this.#client;
    if (client !== null && this.#connect !== null) {
      this.#client = null;
      client.disconnect();
    }
  }
}
