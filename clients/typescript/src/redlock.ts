/**
 * Redlock: one lock across independent Redis masters, with a best-effort fencing token, as
 * the Rust crate's `redlock::Redlock` and the Python client's `QuorumLock` take it: every
 * step runs on all the servers at once (`Promise.all`).
 *
 * An acquisition draws a fresh token and notes the time on this process's monotonic clock;
 * runs `redlock/acquire` on every server (`SET lock token NX PX ttl`, then the server's
 * fencing counter `{name}:fence`); where a majority granted, raises each granting server's
 * counter to the highest number answered (`redlock/raise`: the lock's fencing token); and
 * holds the lock when a majority granted and raised it while its validity (the lease less
 * the time taken, less a drift allowance of 1 % + 2 ms) is positive. Otherwise it releases
 * it everywhere (a server that did not answer may have set it), waits a random delay and
 * tries again, at most `retries` times.
 *
 * Redlock rests on timing: a server that restarts without its data, a holder that pauses
 * past its validity, a server's clock that jumps, each can let two clients hold the lock.
 * Use it for efficiency; where correctness depends on mutual exclusion, write through a
 * resource that checks the fencing token.
 *
 * @module
 */

import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";

import * as identityLock from "./generated/identity_lock.js";
import { KEY_FENCE, KEY_LOCK, Redlock } from "./generated/redlock.js";
import { Failed, Link, call } from "./machine.js";
import type { Call, Client } from "./runtime.js";
import { NotGranted } from "./wait.js";

/** A majority of `servers`. */
export function quorum(servers: number): number {
  return Math.floor(servers / 2) + 1;
}

/**
 * The allowance for the servers' clocks running faster than this process's: 1 % of the
 * lease, plus 2 ms for the expiry's own granularity (the Redis docs' figure).
 */
export function driftMs(ttlMs: number): number {
  return ttlMs / 100 + 2;
}

/**
 * A Redlock held: the token it is held with on each server, its best-effort fencing token,
 * and until when it is valid (this process's `performance.now()`).
 */
export class Held {
  extensions = 0;
  constructor(
    readonly token: string,
    readonly fence: number,
    public validUntil: number,
  ) {}

  /** How long (ms) the lock stays valid from now; 0 once it may have passed to someone else. */
  validity(): number {
    return Math.max(0, this.validUntil - performance.now());
  }
}

/** Each server's answer to one call, or `Failed` with its error. */
async function onEach(servers: readonly Client[], make: () => Call<unknown>, functions: boolean): Promise<unknown[]> {
  return await Promise.all(servers.map((server) => new Link(server, functions).run(call(make()))));
}

/**
 * Redlock: the lock `name` (its key on each server; the fencing counter is `{name}:fence`)
 * taken on a majority of independent masters, not replicas of one another. Give each
 * server's client a short command timeout and few retries of its own, so that a server
 * that hangs or is down does not eat the lease.
 *
 * ```ts
 * const lock = new QuorumLock("invoice:42");
 * await lock.hold(servers, 10_000, async (held) => {
 *   // work while held.validity() lasts; write with held.fence
 * });
 * ```
 *
 * `retries` attempts follow a failed one, each after a random delay below `retryDelay`
 * (ms); one acquisition may be extended at most `maxExtensions` times.
 */
export class QuorumLock {
  readonly family: Redlock;
  readonly key: string;
  readonly fenceKey: string;
  readonly retries: number;
  readonly retryDelayMs: number;
  readonly maxExtensions: number;
  readonly functions: boolean;

  constructor(name: string, options: { retries?: number; retryDelay?: number; maxExtensions?: number; functions?: boolean } = {}) {
    this.family = new Redlock(name);
    this.key = KEY_LOCK.build({ name });
    this.fenceKey = KEY_FENCE.build({ name });
    this.retries = options.retries ?? 3;
    this.retryDelayMs = options.retryDelay ?? 200;
    this.maxExtensions = options.maxExtensions ?? 10;
    this.functions = options.functions ?? false;
  }

  private check(servers: readonly Client[], ttlMs: number): void {
    if (servers.length === 0) throw new RangeError("a QuorumLock needs at least one server");
    this.family.acquire(randomBytes(16).toString("hex"), ttlMs); // the header's rule for `ttl`
  }

  /** The servers that granted, with their numbers (none unless a majority); the first error thrown when fewer than a majority answered. */
  private granted(answers: unknown[]): [number, number][] {
    const failures = answers.filter((a): a is Failed => a instanceof Failed);
    if (failures.length > 0 && answers.length - failures.length < quorum(answers.length)) throw failures[0]!.error;
    const granted = answers.flatMap((n, i): [number, number][] => (typeof n === "number" ? [[i, n]] : []));
    return granted.length >= quorum(answers.length) ? granted : [];
  }

  /**
   * Takes the lock for `ttlMs` on a majority of `servers`, asked at once: what is held, or
   * null when every attempt failed (held elsewhere, or the attempts took longer than the
   * lease). Throws the first server's error when fewer than a majority answered at all,
   * once the servers that granted are freed again.
   */
  async acquire(servers: readonly Client[], ttlMs: number): Promise<Held | null> {
    this.check(servers, ttlMs);
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt > 0 && this.retryDelayMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * this.retryDelayMs)));
      }
      const token = randomBytes(16).toString("hex");
      const start = performance.now();
      const answers = await onEach(servers, () => this.family.acquire(token, ttlMs), this.functions);
      let failure: unknown = null;
      let granted: [number, number][] = [];
      try {
        granted = this.granted(answers);
      } catch (err) {
        failure = err; // too few answered: release, then throw this
      }
      if (granted.length > 0) {
        const fence = Math.max(...granted.map(([, n]) => n));
        const raisedAnswers = await onEach(servers, () => this.family.raise(token, fence), this.functions);
        const granting = new Set(granted.map(([i]) => i));
        const raised = raisedAnswers.filter((a, i) => granting.has(i) && typeof a === "number").length;
        const validUntil = start + Math.max(ttlMs - driftMs(ttlMs), 0);
        if (raised >= quorum(servers.length) && validUntil > performance.now()) return new Held(token, fence, validUntil);
      }
      // The attempt failed. The release's answers do not matter: a server that kept the
      // lock frees it when its lease runs out.
      await onEach(servers, () => identityLock.release(this.key, token), this.functions);
      if (failure !== null) throw failure;
    }
    return null;
  }

  /**
   * Sets the lease to `ttlMs` from now on a majority of `servers`: true when it did (`held`'s
   * validity is then `ttlMs` less the time it took and the drift), false when the lock was
   * lost. More than `maxExtensions` extensions is a `RangeError`.
   */
  async extend(servers: readonly Client[], held: Held, ttlMs: number): Promise<boolean> {
    this.check(servers, ttlMs);
    if (held.extensions >= this.maxExtensions) {
      throw new RangeError(
        `this acquisition was extended ${held.extensions} times, the most this lock allows; release it ` +
          "and acquire again, or raise maxExtensions",
      );
    }
    const start = performance.now();
    const answers = await onEach(servers, () => identityLock.extend(this.key, held.token, ttlMs), this.functions);
    const renewed = answers.filter((a) => a === true).length;
    const validUntil = start + Math.max(ttlMs - driftMs(ttlMs), 0);
    if (renewed < quorum(answers.length) || validUntil <= performance.now()) return false;
    held.validUntil = validUntil;
    held.extensions += 1;
    return true;
  }

  /**
   * Frees the lock on every server: on how many it was still held with `held`'s token. A
   * server that does not answer keeps it until its lease runs out.
   */
  async release(servers: readonly Client[], held: Held): Promise<number> {
    const answers = await onEach(servers, () => identityLock.release(this.key, held.token), this.functions);
    return answers.filter((a) => a === true).length;
  }

  /** `acquire`, then `use`, then `release` whatever `use` did; `NotGranted` when every attempt failed. */
  async hold<T>(servers: readonly Client[], ttlMs: number, use: (held: Held) => Promise<T> | T): Promise<T> {
    const held = await this.acquire(servers, ttlMs);
    if (held === null) throw new NotGranted(`${this.key}: not held by a majority after ${this.retries + 1} attempts`);
    try {
      return await use(held);
    } finally {
      await this.release(servers, held);
    }
  }
}
