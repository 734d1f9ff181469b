/**
 * The work queue's consumer loop, as the Rust crate's `work_queue::Worker` and the Python
 * client's `Worker` run it: one state machine (`Working`: what to send next, what an answer
 * means, when to start handlers and when to wait), run by one async driver (`Worker.run`),
 * with the lease renewals on a thread of their own.
 *
 * One turn: hand each ended job on (a failed one is nacked at once, a finished one waits to
 * be acked); with free slots, ack the finished jobs and take as many as are free in one
 * call (`work_queue/take`), start their handlers, or wait for work when none came; with
 * every slot busy, wait for a handler to end. Stopping, it takes nothing, acks what ends,
 * one call each, and ends once no handler runs. A call that fails with an error that passes
 * is sent again after a pause, unless the loop was asked to stop (then a job whose ack or
 * nack never went through is counted lost: its lease runs out). Every job is held for
 * renewal from its take until its ack or nack is settled.
 *
 * @module
 */

import { randomBytes } from "node:crypto";
import { Worker as Thread } from "node:worker_threads";

import type { Cluster, Redis, RedisOptions } from "ioredis";

import { KEY_SIGNAL, NACK, TAKE, WorkQueue } from "./generated/work_queue.js";
import {
  type Connect,
  Failed,
  Link,
  type Op,
  Retries,
  command,
  errorCode,
  isConnectionFailure,
  isTransient,
  lazy,
} from "./machine.js";
import { LEASE_LOST, type Renewal, type RenewalCounts } from "./renewals.js";
import type { ToThread, ThreadData } from "./renewals-thread.js";
import type { Call, Client, Ms } from "./runtime.js";

/** A row of `work_queue/take`'s reply, as the generated call decodes it. */
type TakenRow = ReturnType<WorkQueue["take"]> extends Call<(infer Row)[]> ? Row : never;

/** The most jobs one `work_queue/take` hands out, and acks: its header's bound. */
export const MAX_TAKE = Number(TAKE.param("limit").high ?? 1n);

/** The most jobs a `Worker` runs at once (it takes them up to `MAX_TAKE` per call), as in the Rust crate. */
export const MAX_CONCURRENCY = 25;

/** The longest delay `work_queue/nack` takes: a longer backoff is cut to it. */
export const MAX_DELAY_MS = Number(NACK.param("delay").high ?? 0n);

/** The longest a worker with jobs still running waits for new work (ms) before it looks for jobs that ended. */
export const IN_FLIGHT_WAIT_MS = 100;

/**
 * A job a worker holds: its id, the lease token it is held under, its delivery count (1 on
 * its first), its lease deadline (ms, server clock), its group and payload, and the W3C
 * trace context its producer kept with it (`traceparent`, then a space and the `tracestate`
 * if any; `null` without one), the same for every delivery.
 */
export interface Job {
  readonly id: string;
  readonly token: string;
  readonly delivery: number;
  readonly deadlineMs: number;
  readonly group: string | null;
  readonly payload: Buffer;
  readonly traceContext: string | null;
}

/**
 * What a handler throws for a job it could not do: the job is nacked (retried after the
 * worker's backoff, or dead after its last delivery). Any other error does the same; these
 * subclasses ask for more.
 */
export class JobError extends Error {
  override name = "JobError";
}

/** The job fails for good: dead at once, whatever its delivery count. */
export class Unrecoverable extends JobError {
  override name = "Unrecoverable";
}

/**
 * The job's group is held back for `hold` (ms) and the job goes back, its delivery not
 * counted (`work_queue/rate_limit_group`); a job without a group is retried instead.
 */
export class RateLimitGroup extends JobError {
  override name = "RateLimitGroup";
  readonly hold: Ms;

  constructor(hold: Ms, message = "") {
    super(message);
    this.hold = hold;
  }
}

/** Random bytes drawn ahead, 16 for each take's token: one draw from the system per 256 takes. */
let pool = Buffer.alloc(0);

/** 128 random bits as 32 hex digits, as `work_queue/take` takes its token. */
function drawToken(): string {
  if (pool.length < 16) pool = randomBytes(16 * 256);
  const token = pool.subarray(0, 16).toString("hex");
  pool = pool.subarray(16);
  return token;
}

/** What a nack keeps as the job's last error: a `JobError`'s message, or another error's name and message. */
function reason(err: unknown): string {
  if (err instanceof JobError) return err.message;
  if (err instanceof Error) return err.message ? `${err.name}: ${err.message}` : err.name;
  return String(err);
}

/** The result a handler's return value keeps: undefined or null keeps none. */
function resultOf(output: unknown): Buffer {
  if (output === undefined || output === null) return Buffer.alloc(0);
  if (Buffer.isBuffer(output)) return output;
  if (output instanceof Uint8Array) return Buffer.from(output);
  if (typeof output === "string") return Buffer.from(output, "utf8");
  throw new TypeError(`a handler returns nothing, a Buffer or a string (the job's result), not ${typeof output}`);
}

/**
 * How long a failed job waits before its next delivery: `fixed`, or `exponential` (`base`
 * after the first delivery fails, doubling after each further one, at most `most`), in ms.
 */
export class Backoff {
  private constructor(
    readonly baseMs: number,
    readonly mostMs: number,
    readonly doubling: boolean,
  ) {}

  /** The same delay after every failure. */
  static fixed(delayMs: number): Backoff {
    return new Backoff(delayMs, delayMs, false);
  }

  /** `base` after the first failure, doubling after each further one, at most `most`. */
  static exponential(baseMs: number, mostMs: number): Backoff {
    return new Backoff(baseMs, mostMs, true);
  }

  /** The delay (ms) after delivery number `delivery` (1 for the first) failed. */
  delay(delivery: number): number {
    if (!this.doubling) return this.baseMs;
    return Math.min(this.baseMs * 2 ** Math.min(Math.max(delivery - 1, 0), 62), this.mostMs);
  }

  /**
   * The delay a nack uses: a fixed one as it is, an exponential one at a random point from
   * half of `delay` to all of it, so that jobs that failed together do not all come back at once.
   */
  jittered(delivery: number): number {
    const delay = this.delay(delivery);
    if (!this.doubling) return delay;
    const half = Math.floor(delay / 2);
    return half + Math.floor(Math.random() * (delay - half + 1));
  }
}

/** What a server's `maxmemory-policy` means for a queue, whose keys have no expiry. */
export type MemoryPolicy = "not_checked" | "noeviction" | "volatile" | "allkeys" | "unknown";

function policyOf(policy: string): MemoryPolicy {
  if (policy === "noeviction") return "noeviction";
  if (policy.startsWith("volatile-")) return "volatile";
  if (policy.startsWith("allkeys-")) return "allkeys";
  return "unknown";
}

/** A worker with `onEviction: "refuse"` found a `maxmemory-policy` that may evict the queue's keys. */
export class EvictingServer extends Error {
  override name = "EvictingServer";
  constructor(readonly policy: string) {
    super(
      `the server's maxmemory-policy is ${policy}: it may evict the queue's keys and lose its jobs ` +
        "silently; set it to noeviction",
    );
  }
}

/** What a `Worker` did before it stopped. */
export class WorkReport {
  /** Jobs the handler finished and that were acked. */
  acked = 0;
  /** Jobs the handler failed that will be delivered again. */
  retried = 0;
  /** Jobs failed on their last delivery, or for good (`Unrecoverable`). */
  dead = 0;
  /** Jobs given back with their group held back (`RateLimitGroup`). */
  heldBack = 0;
  /** Jobs whose lease was lost before they ended: their ack or nack changed nothing. */
  lost = 0;
  /** Lease renewals that failed for another reason than a lost lease; each was sent again. */
  renewalsFailed = 0;
  /** Failed connections the loop met and replaced. */
  reconnects = 0;
  /** Calls sent again after a server error that passes (`UNBLOCKED`, `READONLY`, `LOADING`, …). */
  serverRetries = 0;
  /** What the loop found of its server's `maxmemory-policy` when it started. */
  memoryPolicy: MemoryPolicy = "not_checked";
}

/** What `CONFIG GET maxmemory-policy` answered (RESP2's list of name and value). */
function readPolicy(reply: unknown): [string | null, MemoryPolicy] {
  const texts: string[] = [];
  const collect = (value: unknown): void => {
    if (Buffer.isBuffer(value)) texts.push(value.toString("utf8"));
    else if (typeof value === "string") texts.push(value);
    else if (Array.isArray(value)) value.forEach(collect);
  };
  collect(reply);
  let found: string | null = null;
  texts.forEach((name, i) => {
    const value = texts[i + 1];
    if (name === "maxmemory-policy" && value !== undefined && (found === null || policyOf(value) === "allkeys")) {
      found = value;
    }
  });
  return found !== null ? [found, policyOf(found)] : [null, "unknown"];
}

/** How a handler ended: the result to keep (empty for none), or why it failed. */
type Outcome = { ok: true; result: Buffer } | { ok: false; error: unknown };

interface Finished {
  job: Job;
  result: Buffer;
}

type Sent =
  | { kind: "policy" }
  | { kind: "take"; done: Finished[] }
  | { kind: "nack"; job: Job; heldBack: boolean }
  | { kind: "ack"; finished: Finished }
  | { kind: "waiting" };

/** What the loop does next. */
type WorkStep =
  | { kind: "run"; op: Op }
  | { kind: "wait"; op: Op }
  | { kind: "start"; jobs: Job[] }
  | { kind: "awaitEnd"; ms: number }
  | { kind: "pause"; ms: number }
  | { kind: "done"; report: WorkReport };

/** The worker loop's state (see the module's docs). */
class Working {
  running = 0;
  /** Jobs whose handler finished, to ack in the next take. */
  finished: Finished[] = [];
  /** Jobs whose handler failed, to nack. */
  readonly failed: [Job, unknown][] = [];
  /** Jobs to ack one call each: stopping, or after an ack of several lost a lease. */
  readonly acking: Finished[] = [];
  toStart: Job[] = [];
  memoryChecked = false;
  /** The last take answered no job: wait for work next. */
  idle = false;
  inFlight: [Sent, Op] | null = null;
  pauseMs: number | null = null;
  failure: Error | null = null;
  readonly retries = new Retries();
  readonly report = new WorkReport();

  constructor(
    readonly worker: Worker,
    readonly stopped: () => boolean,
    readonly renewals: (renewal: Renewal) => void,
  ) {}

  /** What to do next; throws the error that ended the loop. */
  step(): WorkStep {
    if (this.failure !== null) {
      const failure = this.failure;
      this.failure = null;
      throw failure;
    }
    if (this.toStart.length > 0) {
      const jobs = this.toStart;
      this.toStart = [];
      return { kind: "start", jobs };
    }
    if (this.pauseMs !== null) {
      const ms = this.pauseMs;
      this.pauseMs = null;
      return { kind: "pause", ms };
    }
    if (this.inFlight !== null) {
      // sent again after a pause
      const [sent, op] = this.inFlight;
      return sent.kind === "waiting" ? { kind: "wait", op } : { kind: "run", op };
    }
    const worker = this.worker;
    const family = worker.family;
    if (!this.memoryChecked) {
      if (worker.onEviction === "ignore") {
        this.memoryChecked = true;
        this.report.memoryPolicy = "not_checked";
      } else {
        return this.send({ kind: "policy" }, command("CONFIG", "GET", "maxmemory-policy"));
      }
    }
    const failed = this.failed.shift();
    if (failed !== undefined) {
      const [job, why] = failed;
      const heldBack = why instanceof RateLimitGroup && job.group !== null;
      return this.send({ kind: "nack", job, heldBack }, worker.nack(job, why));
    }
    const acking = this.acking.shift();
    if (acking !== undefined) {
      const job = acking.job;
      return this.send({ kind: "ack", finished: acking }, lazy(() => family.ack(job.id, job.token, acking.result)));
    }
    const stopping = this.stopped();
    const free = stopping ? 0 : worker.concurrency - this.running;
    if (free === 0) {
      if (this.finished.length > 0) {
        // stopping: ack what ended, take nothing
        this.acking.push(...this.finished);
        this.finished = [];
        return this.step();
      }
      if (this.running === 0) {
        this.report.reconnects += this.retries.reconnects;
        this.report.serverRetries += this.retries.serverRetries;
        return { kind: "done", report: this.report };
      }
      return { kind: "awaitEnd", ms: worker.pollMs };
    }
    const wasIdle = this.idle;
    this.idle = false;
    // Wait for work only with nothing to ack: a handler that ended since the empty take
    // is acked by the next take, not after a whole poll.
    if (wasIdle && this.finished.length === 0) {
      // With handlers running, a job that ends is acked within IN_FLIGHT_WAIT_MS.
      const wait = this.running === 0 ? worker.waitOp() : worker.blockOp(Math.min(IN_FLIGHT_WAIT_MS, worker.pollMs));
      this.inFlight = [{ kind: "waiting" }, wait];
      return { kind: "wait", op: wait };
    }
    const done = this.finished.splice(0, MAX_TAKE);
    return this.send({ kind: "take", done }, worker.takeOp(done, Math.min(free, MAX_TAKE)));
  }

  private send(sent: Sent, op: Op): WorkStep {
    this.inFlight = [sent, op];
    return { kind: "run", op };
  }

  /** The answer to the last `run` or `wait` (a `Failed` for an error). */
  feed(answer: unknown): void {
    if (this.inFlight === null) return;
    const [sent, op] = this.inFlight;
    this.inFlight = null;
    if (answer instanceof Failed) {
      this.failedCall(sent, op, answer.error);
      return;
    }
    this.retries.passed();
    switch (sent.kind) {
      case "policy":
        this.judgeMemory(...readPolicy(answer));
        break;
      case "take": {
        for (const finished of sent.done) this.release(finished.job);
        this.report.acked += sent.done.length;
        const rows = answer as TakenRow[];
        const jobs = rows.map(([id, token, delivery, deadlineMs, group, payload, traceContext]) => ({
          id, token, delivery, deadlineMs, group, payload, traceContext,
        }));
        this.idle = jobs.length === 0;
        for (const job of jobs) {
          this.renewals({ kind: "hold", id: job.id, token: job.token, everyMs: this.worker.renewEveryMs });
        }
        this.running += jobs.length;
        this.toStart = jobs;
        break;
      }
      case "nack": {
        this.release(sent.job);
        if (sent.heldBack) this.report.heldBack += 1;
        else if ((answer as [string, number])[0] === "dead") this.report.dead += 1;
        else this.report.retried += 1;
        break;
      }
      case "ack":
        this.release(sent.finished.job);
        this.report.acked += 1;
        break;
      case "waiting":
        break;
    }
  }

  /** A wait for work cut short by a handler that ended. */
  woke(): void {
    this.inFlight = null;
  }

  /** A handler ended: with the result to keep, or failed. */
  ended(job: Job, outcome: Outcome): void {
    this.running -= 1;
    if (outcome.ok) this.finished.push({ job, result: outcome.result });
    else this.failed.push([job, outcome.error]);
  }

  private failedCall(sent: Sent, op: Op, err: Error): void {
    if (sent.kind === "policy" && !isConnectionFailure(err)) {
      // A server that refuses CONFIG GET answers an unknown policy.
      this.judgeMemory(null, "unknown");
      return;
    }
    const pause = this.retries.after(err);
    const stopping = this.stopped();
    if (pause !== null && !stopping) {
      this.pauseMs = pause;
      this.inFlight = [sent, op];
    } else if (pause !== null) {
      // asked to stop while the server is away: gives the call up
      if (sent.kind === "policy") this.judgeMemory(null, "unknown");
      else if (sent.kind === "take") this.finished.push(...sent.done);
      else if (sent.kind === "nack") this.lose(sent.job);
      else if (sent.kind === "ack") this.lose(sent.finished.job);
    } else if (sent.kind === "take" && errorCode(err) === LEASE_LOST) {
      this.acking.push(...sent.done); // one of them was lost: ack them one by one to tell which
    } else if (sent.kind === "nack" || sent.kind === "ack") {
      this.release(sent.kind === "nack" ? sent.job : sent.finished.job);
      if (errorCode(err) === LEASE_LOST) this.report.lost += 1;
      else this.failure = err;
    } else if (sent.kind === "waiting" && stopping) {
      // the wait was cut short by the stop
    } else {
      this.failure = err;
    }
  }

  private judgeMemory(policy: string | null, meaning: MemoryPolicy): void {
    this.memoryChecked = true;
    this.report.memoryPolicy = meaning;
    const name = this.worker.family.name;
    if (meaning === "allkeys" && policy !== null) {
      if (this.worker.onEviction === "refuse") this.failure = new EvictingServer(policy);
      else {
        this.worker.log(
          `queue ${name}: the server's maxmemory-policy ${policy} may evict the queue's keys and lose ` +
            "its jobs silently: set it to noeviction",
        );
      }
    } else if (meaning === "unknown") {
      this.worker.log(
        `queue ${name}: could not read the server's maxmemory-policy (CONFIG GET refused): make sure ` +
          "it is noeviction, or the queue's keys may be evicted",
      );
    }
  }

  /** A job whose ack or nack never went through: its lease runs out. */
  private lose(job: Job): void {
    this.release(job);
    this.report.lost += 1;
  }

  private release(job: Job): void {
    this.renewals({ kind: "release", id: job.id, token: job.token });
  }
}

/** What a `Worker` takes besides its queue. */
export interface WorkerOptions {
  /** Each job's lease (ms); the `work_queue/take` header's `@default` when left out. */
  lease?: number;
  /** Deliveries before a failing job is dead; the header's `@default` when left out. */
  maxDeliveries?: number;
  /** How long a failed job waits; exponential from 1 s up to 5 min when left out. */
  backoff?: Backoff;
  /** How many jobs run at once, from 1 to `MAX_CONCURRENCY` (1). */
  concurrency?: number;
  /** The longest wait for a wake-up (ms), each drawn from 80 % to 100 % of it (200). */
  poll?: number;
  /** What the loop does when the server's `maxmemory-policy` may evict the queue's keys. */
  onEviction?: "warn" | "refuse" | "ignore";
  /** Run the scripts through the Functions library (FCALL). */
  functions?: boolean;
  /**
   * The connection of the renewals thread (ioredis options, which must cross to a thread:
   * no functions in them); by default the settings of the client `run` is given (host,
   * port, path, user, password, db, TLS, and Sentinel's, with which ioredis follows a
   * failover). Several: the thread renews on whichever of them is the primary (`ROLE`),
   * asked again after an error that passes, as a `run` given a connect function does.
   */
  renewFrom?: RedisOptions | RedisOptions[];
  /** Where warnings go (`console.warn`). */
  log?: (message: string) => void;
}

/** A handler: the job, and the worker's stop signal; it returns the result to keep (or nothing). */
export type Handler = (job: Job, signal: AbortSignal) => unknown;

/**
 * The consumer loop of a work queue: takes jobs, renews each one's lease every third of
 * the lease while its handler runs, then acks it (the handler returned: nothing, a Buffer
 * or a string, the result to keep) or nacks it with the error's text and the worker's
 * backoff (it threw; `Unrecoverable` fails it for good, `RateLimitGroup` holds its group
 * back). A finished job is acked in the call that takes the next ones, so a busy worker
 * makes one round trip per batch. With nothing to take it blocks on the queue's
 * `{name}:signal` (`BZPOPMIN`, on a connection of its own), which every script that makes
 * a job ready fills: a job added to an idle queue starts at once; a delayed job that comes
 * due is found within `poll`.
 *
 * The renewals run on a `worker_threads` thread with its own connection: a handler that
 * keeps the event loop busy (CPU work, a sync call) would stop timers in this thread, and
 * its job would be handed to another worker while it still runs.
 *
 * A failed connection, and a server that changes roles, loads its data or moves slots,
 * only make the loop send the call again after a pause that doubles from 10 ms up to 1 s
 * (on a new connection, when `run` is given a connect function); the `WorkReport` counts
 * them. `run` returns when its signal aborts (after the jobs in hand, each acked), or
 * throws the first error that cannot pass.
 *
 * ```ts
 * const stop = new AbortController();
 * process.once("SIGTERM", () => stop.abort());
 * const report = await new Worker("thumbnails", { concurrency: 4 }).run(redis, makeThumbnail, stop.signal);
 * ```
 */
export class Worker {
  readonly family: WorkQueue;
  readonly leaseMs: number;
  readonly maxDeliveries: number;
  readonly backoff: Backoff;
  readonly concurrency: number;
  readonly pollMs: number;
  readonly onEviction: "warn" | "refuse" | "ignore";
  readonly functions: boolean;
  readonly signal: string;
  readonly #renewFrom: RedisOptions | RedisOptions[] | undefined;
  readonly log: (message: string) => void;

  constructor(queue: WorkQueue | string, options: WorkerOptions = {}) {
    this.family = typeof queue === "string" ? new WorkQueue(queue) : queue;
    this.leaseMs = options.lease ?? Number(TAKE.defaults["lease"]);
    this.maxDeliveries = options.maxDeliveries ?? Number(TAKE.defaults["max_deliveries"]);
    // The header's rules, checked now rather than at the first take.
    this.family.take(1, "0".repeat(32), [], { lease: this.leaseMs, maxDeliveries: this.maxDeliveries });
    const concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > MAX_CONCURRENCY) {
      throw new RangeError(`concurrency must be from 1 to ${MAX_CONCURRENCY}, got ${concurrency}`);
    }
    const onEviction = options.onEviction ?? "warn";
    if (!["warn", "refuse", "ignore"].includes(onEviction)) {
      throw new RangeError(`onEviction must be warn, refuse or ignore, got ${String(onEviction)}`);
    }
    this.backoff = options.backoff ?? Backoff.exponential(1_000, 300_000);
    this.concurrency = concurrency;
    this.pollMs = Math.max(Math.floor(options.poll ?? 200), 1);
    this.onEviction = onEviction;
    this.functions = options.functions ?? false;
    this.signal = KEY_SIGNAL.build({ name: this.family.name });
    this.#renewFrom = options.renewFrom;
    this.log = options.log ?? ((message) => console.warn(message));
  }

  /** How often (ms) each held job's lease is renewed: a third of the lease. */
  get renewEveryMs(): number {
    return Math.max(this.leaseMs / 3, 1);
  }

  takeOp(done: Finished[], limit: number): Op {
    const flat: Buffer[] = [];
    for (const f of done) flat.push(Buffer.from(f.job.id), Buffer.from(f.job.token), f.result);
    const token = drawToken();
    return lazy(() => this.family.take(limit, token, flat, { lease: this.leaseMs, maxDeliveries: this.maxDeliveries }));
  }

  nack(job: Job, why: unknown): Op {
    const family = this.family;
    const text = reason(why);
    if (why instanceof RateLimitGroup && job.group !== null) {
      const hold = why.hold;
      return lazy(() => family.rateLimitGroup(job.id, job.token, hold));
    }
    if (why instanceof Unrecoverable) return lazy(() => family.nack(job.id, job.token, 0, text, { maxDeliveries: 1 }));
    const delay = Math.min(this.backoff.jittered(job.delivery), MAX_DELAY_MS);
    return lazy(() => family.nack(job.id, job.token, delay, text, { maxDeliveries: this.maxDeliveries }));
  }

  /** One wait for a wake-up, with its jitter. */
  waitOp(): Op {
    const fifth = Math.floor(this.pollMs / 5);
    return this.blockOp(this.pollMs - fifth + Math.floor(Math.random() * (fifth + 1)));
  }

  blockOp(ms: number): Op {
    const whole = Math.max(Math.floor(ms), 1); // BZPOPMIN 0 would wait for ever
    return command("BZPOPMIN", this.signal, `${Math.floor(whole / 1000)}.${String(whole % 1000).padStart(3, "0")}`);
  }

  /**
   * Runs the loop until `signal` aborts, on `client` (an ioredis `Redis`, or a function that
   * answers a new one, called again after an error that passes: one that finds the primary
   * goes on at once after a failover). Up to `concurrency` handlers run side by side in this
   * event loop, each job under its own lease; the waits for work block a connection of their
   * own (a duplicate of the client), which a stop closes, so a stop never waits for a
   * blocking command.
   */
  async run(client: Connect, handler: Handler, signal: AbortSignal = new AbortController().signal): Promise<WorkReport> {
    const link = new Link(client, this.functions);
    const main = await link.client();
    // The waits for work block a connection of their own: a duplicate of the loop's
    // client, made again after an error that passes (from the client the loop has then).
    const waits = new Link(async () => {
      const blocking = (await link.client()).duplicate();
      blocking.on("error", () => {}); // met by the loop's retries
      return blocking;
    }, this.functions);
    // The two connections go together: a failure that passes on either (a demoted
    // server's) renews both, so that neither stays on a server the loop has left.
    /** A wait for work on `waits`. */
    const runWait = async (op: Op): Promise<unknown> => {
      const answer = await waits.run(op);
      if (answer instanceof Failed && isTransient(answer.error)) link.close();
      return answer;
    };
    /** A call of the loop's (take, ack, nack, CONFIG GET) on `link`. */
    const runCall = async (op: Op): Promise<unknown> => {
      const answer = await link.run(op);
      if (answer instanceof Failed && isTransient(answer.error)) waits.close();
      return answer;
    };
    const renewFrom = this.#renewFrom ?? connectionOf(main);
    const workerData: ThreadData = {
      name: this.family.name,
      leaseMs: this.leaseMs,
      functions: this.functions,
      connections: Array.isArray(renewFrom) ? renewFrom : [renewFrom],
    };
    if (this.#renewFrom === undefined && isCluster(main)) {
      // A cluster: the thread opens one of its own, from its primaries now.
      // Its primaries as the client knows them now, and the nodes it was started from (a
      // client not connected yet knows no primary).
      const known = main.nodes("master").map((node) => ({ host: node.options.host ?? "127.0.0.1", port: node.options.port ?? 6379 }));
      const startup = (main as unknown as { startupNodes?: unknown[] }).startupNodes ?? [];
      workerData.cluster = [...known, ...startup.filter(isNode)];
    }
    const thread = new Thread(new URL("./renewals-thread.js", import.meta.url), { workerData });
    let counts: RenewalCounts = { failed: 0, reconnects: 0, serverRetries: 0 };
    thread.on("message", (message: { kind: string } & RenewalCounts) => {
      if (message.kind === "counts") counts = message;
    });
    const threadError = new Promise<never>((_, reject) => thread.once("error", reject));
    threadError.catch(() => {});
    // What the loop tells the thread goes in one message per answer it took in (a take's
    // acked jobs and new ones together), sent before any handler of those jobs starts.
    const told: Renewal[] = [];
    const flush = (): void => {
      if (told.length > 0) thread.postMessage({ kind: "changes", changes: told.splice(0) } satisfies ToThread);
    };

    const working = new Working(this, () => signal.aborted, (renewal) => void told.push(renewal));
    const running = new Map<Promise<void>, Job>();
    const ended: [Job, Outcome][] = [];
    let endedOne: (() => void) | null = null;
    const anEnd = (): Promise<void> =>
      ended.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => (endedOne = resolve));
    // A stop ends a pause, and cuts a wait for work short: its connection closes. (One
    // listener per run: workers often share one signal.)
    let onAbort = (): void => {};
    const stopped = new Promise<void>((resolve) => {
      onAbort = (): void => {
        waits.close();
        resolve();
      };
      if (signal.aborted) resolve();
    });
    signal.addEventListener("abort", onAbort, { once: true });
    const start = (job: Job): void => {
      const task = (async (): Promise<Outcome> => {
        try {
          return { ok: true, result: resultOf(await handler(job, signal)) };
        } catch (error) {
          return { ok: false, error };
        }
      })().then((outcome) => {
        running.delete(task);
        ended.push([job, outcome]);
        endedOne?.();
        endedOne = null;
      });
      running.set(task, job);
    };
    const handOver = (): void => {
      for (const [job, outcome] of ended.splice(0)) working.ended(job, outcome);
    };
    const sleep = (ms: number, also: Promise<void>[] = []): Promise<void> => {
      let timer: NodeJS.Timeout | undefined;
      const slept = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
      return Promise.race([slept, ...also]).finally(() => clearTimeout(timer));
    };

    let report: WorkReport;
    try {
      for (;;) {
        handOver();
        const step = working.step();
        if (step.kind === "run") {
          working.feed(await Promise.race([runCall(step.op), threadError]));
          flush();
        } else if (step.kind === "wait") {
          if (running.size === 0 || signal.aborted) {
            working.feed(await runWait(step.op));
            flush();
          } else {
            const wait = runWait(step.op);
            const first = await Promise.race([wait.then((answer) => ({ answer })), anEnd().then(() => null)]);
            if (first !== null) {
              working.feed(first.answer);
              flush();
            }
            else {
              // a handler ended first: its job is acked now, not after the wait
              await wait;
              working.woke();
            }
          }
        } else if (step.kind === "start") {
          for (const job of step.jobs) start(job);
        } else if (step.kind === "awaitEnd") {
          await sleep(step.ms, [anEnd()]);
        } else if (step.kind === "pause") {
          await sleep(step.ms, [stopped]);
        } else {
          report = step.report;
          break;
        }
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
      await Promise.allSettled(running.keys());
      waits.close();
      link.close();
      flush();
      thread.postMessage({ kind: "stop" } satisfies ToThread);
      await new Promise<void>((resolve) => {
        if (thread.threadId === -1) resolve();
        thread.once("exit", () => resolve());
      });
    }
    report.renewalsFailed += counts.failed;
    report.reconnects += counts.reconnects;
    report.serverRetries += counts.serverRetries;
    return report;
  }
}

function isNode(node: unknown): node is { host: string; port: number } {
  const n = node as { host?: unknown; port?: unknown } | null;
  return typeof n === "object" && n !== null && typeof n.host === "string" && typeof n.port === "number";
}

/** Whether `client` is a cluster's (by its shape: the app's ioredis may be another copy than this package's). */
function isCluster(client: Client): client is Cluster {
  return "nodes" in client && typeof client.nodes === "function";
}

/** The settings of `client`'s connection that cross to a thread (no functions); a cluster's, of its nodes. */
function connectionOf(client: Client): RedisOptions {
  const options: Record<string, unknown> = isCluster(client) ? { ...client.options.redisOptions } : { ...client.options };
  const out: Record<string, unknown> = {};
  const keys = [
    "host", "port", "path", "username", "password", "db", "family", "tls", "connectTimeout",
    "sentinels", "name", "role", "sentinelUsername", "sentinelPassword", "sentinelTLS", "enableTLSForSentinelMode",
  ] as const;
  for (const key of keys) {
    const value = options[key];
    if (value !== undefined && typeof value !== "function") out[key] = value;
  }
  return out as RedisOptions;
}
