/**
 * A work queue's events, followed, and waiting for one job's end, as the Rust crate's
 * `Events` and `WorkQueue::wait_for_job` and the Python client's do.
 *
 * Events are off until the queue's `events_max` is set (`WorkQueue.configure`). The
 * stream's cap is exact, and every read says whether entries after the reader's last id
 * were trimmed before they were read; a waiter then reads the job's state, so it never
 * waits for an end it missed. The blocking reads go on a connection of their own (a
 * duplicate of the client's).
 *
 * @module
 */

import type { Redis } from "ioredis";

import { UnexpectedReply } from "./errors.js";
import { EVENTS, KEY_EVENTS, LOG, WorkQueue } from "./generated/work_queue.js";
import type { Client } from "./runtime.js";
import { MAX_BLOCK_MS, borrowBlocking, giveBack } from "./wait.js";

/** The most events one read answers: `work_queue/events`'s bound. */
export const MAX_EVENTS_READ = Number(EVENTS.param("count").high ?? 1n);

/** What happened to a job, as the queue's scripts write it (see `EventKind`). */
export const EVENT_KINDS = [
  "added",
  "delayed",
  "waiting",
  "active",
  "stalled",
  "completed",
  "failed",
  "dead",
  "retried",
  "progress",
] as const;

/**
 * What happened to a job: `added` (its detail the state it was added in: `waiting`,
 * `delayed` or `parked`), `waiting` (ready to be taken: a delayed job come due, or a flow's
 * parent whose children ended), `active` (taken, its detail the delivery count: `1` the
 * first time), `stalled` (its lease ran out before its worker ended it; it waits to be taken
 * again, its detail `lease ran out`; on its last delivery it is `dead` instead),
 * `completed` (acked), `failed` (a delivery failed and the job is retried; its detail the
 * error), `dead` (failed for good; its detail the last error), `retried` (a dead job put
 * back to waiting), `progress` (its detail the worker's report).
 */
export type EventKind = (typeof EVENT_KINDS)[number];

function isEventKind(kind: string): kind is EventKind {
  return (EVENT_KINDS as readonly string[]).includes(kind);
}

/** One entry of a queue's events: its stream id, what happened, the job's id, and the event's detail ('' for none). */
export interface Event {
  readonly id: string;
  readonly kind: EventKind;
  readonly job: string;
  readonly detail: Buffer;
}

/** The most lines a job's log keeps (`work_queue/log`'s bound on `keep`). */
export const MAX_LOG_LINES = Number(LOG.param("keep").high ?? 1n);

/**
 * How a job ended: `completed` (acked, with its `result` if one is kept, or read from the
 * record the queue's history keeps), `dead` (failed
 * for good, with its last `error`), or `gone` (not in the queue and nothing kept of it:
 * removed, never added, or acked longer ago than the queue keeps results, or with events
 * off without a result).
 */
export type JobEnd =
  | { readonly kind: "completed"; readonly result: Buffer | null }
  | { readonly kind: "dead"; readonly error: Buffer }
  | { readonly kind: "gone" };

type Page = [boolean, string, [string, string, string, Buffer][]];

/**
 * A reader of a queue's events after the stream id `after` (`0-0` for the oldest kept, or
 * the `lastId` of an earlier reader, to go on where it stopped): nothing is read twice, and
 * nothing is missed unless the cap trimmed it first, which `lost` says.
 */
export class Events {
  readonly family: WorkQueue;
  after: string;
  readonly functions: boolean;
  #lost = false;

  constructor(queue: WorkQueue | string, after = "0-0", options: { functions?: boolean } = {}) {
    this.family = typeof queue === "string" ? new WorkQueue(queue) : queue;
    this.after = after;
    this.functions = options.functions ?? false;
  }

  /** The id of the last event handed out (or the one it started after). */
  get lastId(): string {
    return this.after;
  }

  /** Whether events went unread since the last call that answered this (the cap trimmed them first); clears it. */
  lost(): boolean {
    const lost = this.#lost;
    this.#lost = false;
    return lost;
  }

  private handed(page: Page | null): Event[] {
    if (page === null) return [];
    const [lost, , rows] = page;
    this.#lost ||= lost;
    const events = rows.map(([id, kind, job, detail]): Event => {
      if (!isEventKind(kind)) throw new UnexpectedReply(`work_queue/events: ${JSON.stringify(kind)} is an event no script writes`);
      return { id, kind, job, detail };
    });
    const last = events[events.length - 1];
    if (last !== undefined) this.after = last.id;
    return events;
  }

  /** The next page of events, or null at the deadline; blocks on the stream between reads. */
  private async follow(client: Client, deadline: number, blocking: () => Redis): Promise<Page | null> {
    const key = KEY_EVENTS.build({ name: this.family.name });
    for (;;) {
      const page = await this.family.events(this.after, MAX_EVENTS_READ).run(client, { functions: this.functions });
      const [lost, newest, rows] = page;
      const left = deadline - performance.now();
      if (rows.length > 0 || lost) return page;
      if (left <= 0) return null;
      const ms = Math.max(1, Math.min(MAX_BLOCK_MS, Math.floor(left)));
      await blocking().callBuffer("XREAD", "COUNT", 1, "BLOCK", ms, "STREAMS", key, newest);
    }
  }

  /**
   * The next events (up to `MAX_EVENTS_READ`), waiting up to `timeoutMs` for one; empty on
   * timeout. Blocks on the stream (`XREAD BLOCK`), never polls.
   */
  async next(client: Client, timeoutMs: number): Promise<Event[]> {
    return await withBlocking(client, async (blocking) =>
      this.handed(await this.follow(client, performance.now() + timeoutMs, blocking)),
    );
  }

  /**
   * Follows the events until job `id` completes or dies, or `timeoutMs` passed (null).
   * Where events went unread, it reads the job's state to learn an end it missed.
   */
  async waitFor(client: Client, id: string, timeoutMs: number): Promise<JobEnd | null> {
    return await this.until(client, id, performance.now() + timeoutMs, false);
  }

  /** The loop of `waitFor` and `waitForJob`. */
  async until(client: Client, id: string, deadline: number, fromNow: boolean): Promise<JobEnd | null> {
    const functions = this.functions;
    const family = this.family;
    return await withBlocking(client, async (blocking) => {
      let readRecord = false;
      if (fromNow) {
        this.after = (await family.events("0-0", 0).run(client, { functions }))[1];
        readRecord = true;
      }
      for (;;) {
        if (readRecord) {
          readRecord = false;
          const record = await family.job(id).run(client, { functions });
          if (record === null) {
            // no record: acked or removed; its result tells which
            const result = await family.result(id).run(client, { functions });
            // An empty result marks an ack without one (kept while events are on).
            return result !== null ? { kind: "completed", result: result.length > 0 ? result : null } : { kind: "gone" };
          }
          if (record[0] === "dead") return { kind: "dead", error: record[4] ?? Buffer.alloc(0) };
          // kept in the queue's history (its completed_max), with its result
          if (record[0] === "completed") return { kind: "completed", result: record[11] !== null && record[11].length > 0 ? record[11] : null };
          if (performance.now() >= deadline) return null;
        }
        for (const event of this.handed(await this.follow(client, deadline, blocking))) {
          if (event.job === id && event.kind === "completed") {
            const result = await family.result(id).run(client, { functions });
            return { kind: "completed", result: result !== null && result.length > 0 ? result : null };
          }
          if (event.job === id && event.kind === "dead") return { kind: "dead", error: event.detail };
        }
        if (this.lost()) readRecord = true;
        else if (performance.now() >= deadline) return null;
      }
    });
  }
}

/**
 * Waits until job `id` ends, or `timeoutMs` passed (null): it reads where the events stand,
 * then the job's state (so an end before the call is seen), then follows the events. Needs
 * the queue's events on (`eventsMax`); with them off it learns only an end before the call,
 * and otherwise times out.
 */
export async function waitForJob(
  client: Client,
  queue: WorkQueue | string,
  id: string,
  timeoutMs: number,
  options: { functions?: boolean } = {},
): Promise<JobEnd | null> {
  return await new Events(queue, "0-0", options).until(client, id, performance.now() + timeoutMs, true);
}

/**
 * Runs `use` with a blocking connection taken on first use (one of the client's idle
 * duplicates, or a new one), kept for the client's next wait after; closed after an error.
 */
async function withBlocking<T>(client: Client, use: (blocking: () => Redis) => Promise<T>): Promise<T> {
  let blocking: Redis | null = null;
  const get = (): Redis => (blocking ??= borrowBlocking(client));
  try {
    const result = await use(get);
    if (blocking !== null) giveBack(client, blocking);
    return result;
  } catch (err) {
    (blocking as Redis | null)?.disconnect();
    throw err;
  }
}
