/**
 * redis-patterns: Redis application patterns, each multi-step operation one Lua script run
 * in one round trip, with a typed function per script and a class per family generated
 * from the scripts' headers (`./generated/`), on ioredis.
 *
 * ```ts
 * import { Redis } from "ioredis";
 * import { FencedLock } from "redis-patterns";
 *
 * const redis = new Redis();
 * const token = await new FencedLock("lock:report").acquire(30_000).run(redis);
 * ```
 *
 * @module
 */

export * from "./generated/index.js";
export {
  BOOL,
  BYTES,
  Call,
  type Bytes,
  type Client,
  type Command,
  DECIMAL,
  type Decode,
  FLOAT,
  Form,
  INT,
  type Int,
  type Ms,
  NIL,
  NOSCRIPT_ATTEMPTS,
  Param,
  STR,
  Script,
  UINT,
  floatFromText,
  functionsLibrary,
  integerFromText,
  listOf,
  loadFunctions,
  loadScript,
  opt,
  tupleOf,
} from "./runtime.js";
export { Batch, Slot, keySlot, pipeline, transaction } from "./batch.js";
export { InvalidInput, RanOutsideTransaction, RedisPatternsError, ScriptError, UnexpectedReply } from "./errors.js";
export {
  Backoff,
  EvictingServer,
  type Handler,
  IN_FLIGHT_WAIT_MS,
  type Job,
  JobError,
  MAX_CONCURRENCY,
  MAX_DELAY_MS,
  MAX_TAKE,
  type MemoryPolicy,
  RateLimitGroup,
  Unrecoverable,
  WorkReport,
  Worker,
  type WorkerOptions,
} from "./worker.js";
export { LEASE_LOST } from "./renewals.js";
export { type Connect, errorCode, isConnectionFailure, isTransient } from "./machine.js";
export { MAX_BLOCK_MS, NotGranted, type Wake, type WaitOptions, hold, isStreamId, wait, wakeOf } from "./wait.js";
export { EVENT_KINDS, type Event, type EventKind, Events, type JobEnd, MAX_EVENTS_READ, MAX_LOG_LINES, waitForJob } from "./events.js";
export { type CronTimes, MAX_CRON_TIMES, MAX_SCHEDULES_PAGE, ScheduleReport, Scheduler, cronTimes } from "./scheduler.js";
export { Held, QuorumLock, driftMs, quorum } from "./redlock.js";
export { primaryOf } from "./primary.js";
