/**
 * The loop that fires a work queue's schedules, as the Rust crate's `Scheduler` and the
 * Python client's do.
 *
 * It reads the due schedules (`work_queue/due`), fires each (`work_queue/fire`: a
 * compare-and-set of the schedule's next run time, so of any number of schedulers one adds
 * each run), reads again at once after a fire, and with nothing due blocks on the
 * schedules' wake stream (`{name}:schedules_wake`, which `work_queue/set_schedule` appends
 * to) until the next run time, at most `maxWait`, on a connection of its own, which a stop
 * closes. After an error that passes it pauses and reads again: a fire is added once
 * however often it is sent.
 *
 * @module
 */

import type { Redis } from "ioredis";

import { InvalidInput, UnexpectedReply } from "./errors.js";
import { DUE, FIRE, KEY_SCHEDULES_WAKE, WorkQueue } from "./generated/work_queue.js";
import { type Connect, Failed, Link, Retries, call, command } from "./machine.js";
import type { Call } from "./runtime.js";

/** The most due schedules one read answers: `work_queue/due`'s bound. */
export const MAX_SCHEDULES_PAGE = Number(DUE.param("limit").high ?? 1n);

/** The most times one fire of a cron schedule takes: `work_queue/fire`'s bound. */
export const MAX_CRON_TIMES = FIRE.param("times").most ?? 1;

/**
 * What computes a cron expression's times for a `Scheduler`: the package reads no cron
 * expression itself (it depends on ioredis alone), so an app that has cron schedules gives
 * one, built on the cron library it likes. Times are Unix ms; `tz` is the schedule's IANA
 * time zone. The Rust crate's scheduler reads the expressions with croner (five fields, or
 * six with seconds first), so give one that reads them alike when both fire one queue.
 */
export interface CronTimes {
  /** The expression's first time strictly after `afterMs`. */
  next(expr: string, tz: string, afterMs: number): number;
  /** The expression's last time strictly before `beforeMs`; null when none is. */
  previous(expr: string, tz: string, beforeMs: number): number | null;
}

/**
 * The times `work_queue/fire` takes for a cron schedule whose run `run` came due by `now`:
 * the latest `n` times after `run` up to `now`, then times after `now`, in order, at most
 * `MAX_CRON_TIMES` in all (the Rust scheduler's `cron_times`).
 */
export function cronTimes(cron: CronTimes, expr: string, tz: string, run: number, now: number, n: number): number[] {
  const back: number[] = [];
  let before = now + 1;
  while (back.length < n) {
    const t = cron.previous(expr, tz, before);
    if (t === null || !(run < t && t <= now)) break;
    back.push(t);
    before = t;
  }
  const times = back.reverse();
  let at = now;
  for (let i = 0; i < Math.min(MAX_CRON_TIMES - times.length, 3); i++) {
    const t = cron.next(expr, tz, at);
    if ((times.length === 0 || t > times[times.length - 1]!) && t > run) times.push(t);
    at = t;
  }
  return times;
}

/** What a `Scheduler` did before it stopped. */
export class ScheduleReport {
  /** Runs whose jobs it added. */
  added = 0;
  /** Missed runs it skipped by their schedule's catch-up policy. */
  skipped = 0;
  /** Fires another scheduler won (or a changed schedule made moot). */
  alreadyFired = 0;
  /** Failed connections it met. */
  reconnects = 0;
  /** Calls sent again after a server error that passes. */
  serverRetries = 0;
}

type DueRow = [string, number, number, number, string, string, number];

/**
 * The loop that fires a work queue's schedules (set with `WorkQueue.setSchedule`): each run
 * is added once, by one of any number of schedulers, so run one in every process that
 * likes. It reads up to `batch` due schedules, fires each and reads again; with nothing
 * due it blocks until the earliest next run time, at most `maxWait` (ms), on the
 * schedules' wake stream, so a schedule set meanwhile wakes it at once. A cron schedule's
 * times are the caller's to compute: give `cron`, or it throws `InvalidInput` (`BAD_TIMES`)
 * at one.
 */
export class Scheduler {
  readonly family: WorkQueue;
  readonly batch: number;
  readonly maxWaitMs: number;
  readonly cron: CronTimes | null;
  readonly functions: boolean;

  constructor(
    queue: WorkQueue | string,
    options: { batch?: number; maxWait?: number; cron?: CronTimes; functions?: boolean } = {},
  ) {
    this.family = typeof queue === "string" ? new WorkQueue(queue) : queue;
    this.batch = options.batch ?? MAX_SCHEDULES_PAGE;
    this.family.due(this.batch); // the header's rule for `batch`, checked now
    this.maxWaitMs = Math.max(Math.floor(options.maxWait ?? 1000), 1);
    this.cron = options.cron ?? null;
    this.functions = options.functions ?? false;
  }

  private fireCall(row: DueRow, nowMs: number): Call<[string, number[], number, number, number]> {
    const [name, run, revision, every, expr, tz, catchUp] = row;
    let times: number[] = [];
    if (every === 0) {
      if (this.cron === null) {
        throw new InvalidInput(
          FIRE.name,
          "BAD_TIMES",
          "times",
          `schedule \`${name}\` runs at the times of the cron expression \`${expr}\`, which only a caller ` +
            "can compute: give the Scheduler `cron` (see CronTimes), or fire it from the Rust crate's " +
            "Scheduler (feature `cron`)",
        );
      }
      times = cronTimes(this.cron, expr, tz, run, nowMs, Math.max(catchUp, 1));
    }
    return this.family.fire(name, run, revision, times);
  }

  /**
   * Fires due schedules until `signal` aborts, on `client` (or a function that answers a
   * new client, called again after an error that passes); answers what it did, or throws
   * the first error that does not pass.
   */
  async run(client: Connect, signal: AbortSignal = new AbortController().signal): Promise<ScheduleReport> {
    const link = new Link(client, this.functions);
    const report = new ScheduleReport();
    const retries = new Retries();
    let blocking: Redis | null = null;
    const close = (): void => blocking?.disconnect();
    signal.addEventListener("abort", close, { once: true });
    const wakeKey = KEY_SCHEDULES_WAKE.build({ name: this.family.name });
    /** Runs `op` until it goes through: its answer, or null when stopped meanwhile. */
    const through = async (run: () => Promise<unknown>): Promise<unknown> => {
      for (;;) {
        if (signal.aborted) return null;
        const answer = await run();
        if (!(answer instanceof Failed)) {
          retries.passed();
          return answer;
        }
        const pause = retries.after(answer.error);
        if (pause === null) throw answer.error;
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    };
    try {
      for (;;) {
        const due = (await through(() => link.run(call(this.family.due(this.batch))))) as
          | [number, number | null, DueRow[], string]
          | null;
        if (due === null) break;
        const [nowMs, nextMs, rows, lastWake] = due;
        for (const row of rows) {
          const fired = (await through(() => link.run({ run: (c, f) => this.fireCall(row, nowMs).run(c, { functions: f }) }))) as
            | [string, number[], number, number, number]
            | null;
          if (fired === null) break;
          const [outcome, added, , skipped] = fired;
          if (outcome === "fired") {
            report.added += added.length;
            report.skipped += skipped;
          } else if (outcome === "already_fired") report.alreadyFired += 1;
          else if (outcome !== "not_due" && outcome !== "more_times") {
            throw new UnexpectedReply(`${FIRE.name}: ${JSON.stringify(outcome)} is no outcome of a fire`);
          }
        }
        // After a fire, the next read answers the moved run times.
        if (rows.length > 0) continue;
        const untilNext = nextMs === null ? this.maxWaitMs : Math.max(nextMs - nowMs, 0);
        const block = Math.min(untilNext, this.maxWaitMs);
        if (block <= 0 || signal.aborted) continue;
        if (blocking === null) {
          blocking = ((await link.client()) as Redis).duplicate();
          blocking.on("error", () => {});
        }
        const sleeper = blocking;
        await through(async () => {
          try {
            return await command("XREAD", "COUNT", 1, "BLOCK", Math.max(1, block), "STREAMS", wakeKey, lastWake).run(sleeper, false);
          } catch (err) {
            if (signal.aborted) return null; // the stop closed its connection
            return new Failed(err instanceof Error ? err : new Error(String(err)));
          }
        });
      }
    } finally {
      signal.removeEventListener("abort", close);
      close();
      link.close();
    }
    report.reconnects = retries.reconnects;
    report.serverRetries = retries.serverRetries;
    return report;
  }
}
