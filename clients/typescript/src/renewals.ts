/**
 * Lease renewals of a worker's held jobs: which job is renewed next and when, and what a
 * renewal's answer means (a lost lease drops the job, as its ack or nack tells; another
 * failure is counted and sent again at once, then at the next tick). The worker runs them
 * on a thread of their own (`renewals-thread.ts`), with a connection of their own.
 *
 * @module
 */

import { performance } from "node:perf_hooks";

import type { WorkQueue } from "./generated/work_queue.js";
import { Failed, type Op, Retries, call, errorCode } from "./machine.js";

/** The code an ack, a nack or a renewal fails with when the job is no longer held under its token. */
export const LEASE_LOST = "LEASE_LOST";

/** What the loop tells the renewals. */
export type Renewal =
  | { readonly kind: "hold"; readonly id: string; readonly token: string; readonly everyMs: number }
  | { readonly kind: "release"; readonly id: string; readonly token: string };

/** What the renewals counted: failed renewals, failed connections and server retries met. */
export interface RenewalCounts {
  failed: number;
  reconnects: number;
  serverRetries: number;
}

interface Held {
  id: string;
  token: string;
  next: number;
  everyMs: number;
  /** The last renewal failed and was sent again at once. */
  again: boolean;
}

/** The held jobs and when each is renewed next. */
export class Renewals {
  readonly #family: WorkQueue;
  readonly #leaseMs: number;
  #held: Held[] = [];
  /** The job whose renewal is out. A job is its id and token: the jobs one take hands out
   * share a token (`<token>:<delivery>`), so a token alone names several. */
  #inFlight: { id: string; token: string } | null = null;
  #failed = 0;
  readonly #retries = new Retries();

  constructor(family: WorkQueue, leaseMs: number) {
    this.#family = family;
    this.#leaseMs = leaseMs;
  }

  apply(renewal: Renewal): void {
    if (renewal.kind === "hold") {
      const { id, token, everyMs } = renewal;
      this.#held.push({ id, token, next: performance.now() + everyMs, everyMs, again: false });
    } else {
      this.#held = this.#held.filter((h) => h.id !== renewal.id || h.token !== renewal.token);
    }
  }

  /** The renewal to send now, or how long (ms) until the next is due (null: no job held). */
  step(): { run: Op } | { dueMs: number | null } {
    if (this.#held.length === 0) return { dueMs: null };
    const now = performance.now();
    const first = this.#held.reduce((a, b) => (b.next < a.next ? b : a));
    if (first.next > now) return { dueMs: first.next - now };
    this.#inFlight = { id: first.id, token: first.token };
    return { run: call(this.#family.extend(first.id, first.token, { lease: this.#leaseMs })) };
  }

  feed(answer: unknown): void {
    const sent = this.#inFlight;
    this.#inFlight = null;
    const held = this.#held.find((h) => h.id === sent?.id && h.token === sent.token);
    if (held === undefined) return; // released meanwhile: its ack or nack settled it
    if (answer instanceof Failed) {
      if (errorCode(answer.error) === LEASE_LOST) {
        this.#held = this.#held.filter((h) => h !== held);
        return;
      }
      this.#failed += 1;
      this.#retries.after(answer.error);
      held.again = !held.again;
      if (held.again) return;
    } else {
      held.again = false;
    }
    held.next = performance.now() + held.everyMs;
  }

  counts(): RenewalCounts {
    return { failed: this.#failed, reconnects: this.#retries.reconnects, serverRetries: this.#retries.serverRetries };
  }
}
