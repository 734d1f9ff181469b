//! The worker's loop, written once for its three drivers ([`Worker::run`],
//! [`Worker::run_concurrent`], [`Worker::run_async`]): what to send next, what an answer
//! means, when to start handlers and when to wait. The drivers only do I/O, run the
//! handlers (inline, on threads, as futures) and feed back what ended (see
//! [`machine`](crate::runtime::machine) for the pattern).
//!
//! One turn: hand each ended job on (a failed one is nacked at once, a finished one waits
//! to be acked); with free slots, ack the finished jobs and take as many as are free in
//! one call (`ack_and_take`), start their handlers, or wait for work when none came; with
//! every slot busy, wait for a handler to end. Stopping, it takes nothing, acks what
//! ends, one call each, and ends once no handler runs. A call that fails with an error
//! that passes is sent again after a pause, unless the loop was asked to stop (then a
//! job whose ack or nack never went through is counted lost: its lease runs out).
//! Every job is held for renewal from its take until its ack or nack is settled.

use std::collections::VecDeque;
use std::time::Duration;

use redis::Value;

use super::jobs::Finished;
use super::memory::{policy_read, read_policy};
use super::renew::Renewal;
use super::spans::{HandlerScope, LoopSpans};
use super::worker::{Ending, IN_FLIGHT_WAIT, Worker};
use super::{
    Done, Job, JobError, LEASE_LOST, MAX_TAKE, MemoryPolicy, OnEviction, Retries, Stop, WorkReport,
};
use crate::runtime::error::{Error, Result};
use crate::runtime::op::Op;

/// What the worker's loop wants next.
pub(super) enum WorkStep {
    /// Send this call on the loop's connection and feed its result.
    Run(Op<Answer>),
    /// Wait for work with this call. A driver that can also see a handler end meanwhile
    /// may cut it short: it then calls [`Working::woke`] instead of feeding the answer.
    Wait(Op<Answer>),
    /// Start the handler on each of these jobs (held for renewal already), and hand its
    /// outcome to [`Working::ended`] when it ends.
    Start(Vec<Job>),
    /// Every slot is busy: wait for a handler to end, up to this long.
    AwaitEnd(Duration),
    /// Pause this long before the next step.
    Pause(Duration),
    /// The loop ended.
    Done(Result<WorkReport>),
}

/// What the loop's calls answer.
pub(super) enum Answer {
    Policy(Value),
    Taken(Vec<Job>),
    Ended(Ending),
    Waited,
}

/// The call in flight, sent again as it is after an error that passes.
enum Call {
    Policy,
    Take(Vec<Finished>),
    Nack(Job),
    Ack(Finished),
    Wait,
}

/// The worker loop's state (see the [module docs](self)).
pub(super) struct Working<'w, 'q> {
    worker: &'w Worker<'q>,
    stop: &'w Stop,
    /// Where holds and releases of leases go: the renewals' thread or task.
    renewals: &'w (dyn Fn(Renewal) + Sync),
    running: u64,
    /// Jobs whose handler finished, to ack in the next take.
    finished: Vec<Finished>,
    /// Jobs whose handler failed, to nack.
    failed: VecDeque<(Job, JobError)>,
    /// Jobs to ack one call each: stopping, or after an ack of several lost a lease.
    acking: VecDeque<Finished>,
    to_start: Vec<Job>,
    panicked: bool,
    memory_checked: bool,
    /// The last take answered no job: wait for work next.
    idle: bool,
    in_flight: Option<(Call, Op<Answer>)>,
    pause: Option<Duration>,
    failure: Option<Error>,
    retries: Retries,
    report: WorkReport,
    /// The jobs' OpenTelemetry spans (feature `otel`; nothing without it).
    spans: LoopSpans,
}

impl<'w, 'q> Working<'w, 'q> {
    pub(super) fn new(
        worker: &'w Worker<'q>,
        stop: &'w Stop,
        renewals: &'w (dyn Fn(Renewal) + Sync),
    ) -> Self {
        Working {
            worker,
            stop,
            renewals,
            running: 0,
            finished: Vec::new(),
            failed: VecDeque::new(),
            acking: VecDeque::new(),
            to_start: Vec::new(),
            panicked: false,
            memory_checked: false,
            idle: false,
            in_flight: None,
            pause: None,
            failure: None,
            retries: Retries::default(),
            report: WorkReport::default(),
            spans: LoopSpans::new(worker.queue.name()),
        }
    }

    /// What to do next.
    pub(super) fn step(&mut self) -> WorkStep {
        if let Some(err) = self.failure.take() {
            return WorkStep::Done(Err(err));
        }
        if !self.to_start.is_empty() {
            return WorkStep::Start(std::mem::take(&mut self.to_start));
        }
        if let Some(pause) = self.pause.take() {
            return WorkStep::Pause(pause);
        }
        if let Some((call, op)) = &self.in_flight {
            // Sent again after a pause.
            return match call {
                Call::Wait => WorkStep::Wait(op.clone()),
                _ => WorkStep::Run(op.clone()),
            };
        }
        if !self.memory_checked {
            if self.worker.on_eviction == OnEviction::Ignore {
                self.memory_checked = true;
                self.report.memory_policy = MemoryPolicy::NotChecked;
            } else {
                let op = policy_read().map(|value| Ok(Answer::Policy(value)));
                return self.send(Call::Policy, op);
            }
        }
        let mode = self.worker.mode;
        if let Some((job, why)) = self.failed.pop_front() {
            let op = self
                .worker
                .nack(&job, why)
                .map(|ending| Ok(Answer::Ended(ending)));
            return self.send(Call::Nack(job), op);
        }
        if let Some(finished) = self.acking.pop_front() {
            let op = self.worker.queue.ack_done(Done::from(&finished));
            let op = op.via(mode).map(|_| Ok(Answer::Ended(Ending::Acked)));
            return self.send(Call::Ack(finished), op);
        }
        let stopping = self.stop.is_stopped() || self.panicked;
        let free = if stopping {
            0
        } else {
            self.worker.concurrency - self.running
        };
        if free == 0 {
            if !self.finished.is_empty() {
                // Stopping: ack what ended, take nothing.
                self.acking.extend(self.finished.drain(..));
                return self.step();
            }
            if self.running == 0 {
                self.report.reconnects += self.retries.reconnects;
                self.report.server_retries += self.retries.server_retries;
                return WorkStep::Done(Ok(self.report));
            }
            return WorkStep::AwaitEnd(self.worker.poll);
        }
        // Wait for work only with nothing to ack: a handler that ended since the empty
        // take (its job in `finished`) is acked by the next take, not after a whole poll.
        if std::mem::take(&mut self.idle) && self.finished.is_empty() {
            // With handlers running, a job that ends is acked within IN_FLIGHT_WAIT,
            // not at the end of a whole `poll`.
            let wait = if self.running == 0 {
                self.worker.wait()
            } else {
                self.worker.wait_at_most(IN_FLIGHT_WAIT)
            };
            let op = wait.map(|_| Ok(Answer::Waited));
            self.in_flight = Some((Call::Wait, op.clone()));
            return WorkStep::Wait(op);
        }
        let done: Vec<Finished> = self
            .finished
            .drain(..self.finished.len().min(MAX_TAKE as usize))
            .collect();
        let op = self.worker.queue.ack_and_take(&done, free.min(MAX_TAKE));
        let op = op.via(mode).map(|jobs| Ok(Answer::Taken(jobs)));
        self.spans.take_sent();
        self.send(Call::Take(done), op)
    }

    fn send(&mut self, call: Call, op: Op<Answer>) -> WorkStep {
        self.in_flight = Some((call, op.clone()));
        WorkStep::Run(op)
    }

    /// The answer to the last [`WorkStep::Run`] or [`WorkStep::Wait`].
    pub(super) fn feed(&mut self, answer: Result<Answer>) {
        let Some((call, op)) = self.in_flight.take() else {
            return;
        };
        let answer = match answer {
            Ok(answer) => {
                self.retries.passed();
                answer
            }
            Err(err) => return self.failed_call(call, op, err),
        };
        match (call, answer) {
            (Call::Policy, Answer::Policy(value)) => self.judge_memory(read_policy(Ok(value))),
            (Call::Take(done), Answer::Taken(jobs)) => {
                for job in &done {
                    self.release(job);
                    self.spans.settled(job, Ok("ack"));
                }
                self.report.acked += done.len() as u64;
                self.idle = jobs.is_empty();
                self.spans.received(&jobs);
                for job in &jobs {
                    (self.renewals)(Renewal::Hold(job.clone(), self.worker.renew_every()));
                }
                self.running += jobs.len() as u64;
                self.to_start = jobs;
            }
            (Call::Nack(job), Answer::Ended(ending)) => {
                self.release(&job);
                self.spans.settled(&job, Ok(ending.as_str()));
                self.count(Ok(ending));
            }
            (Call::Ack(finished), Answer::Ended(ending)) => {
                self.release(&finished);
                self.spans.settled(&finished, Ok(ending.as_str()));
                self.count(Ok(ending));
            }
            (Call::Wait, _) => {}
            _ => unreachable!("an answer to another call"),
        }
    }

    /// A wait for work cut short by a handler that ended.
    #[cfg(feature = "aio")]
    pub(super) fn woke(&mut self) {
        self.in_flight = None;
    }

    /// The context `job`'s handler runs in (its `process` span, with the `otel` feature).
    pub(super) fn scope_of(&self, job: &Job) -> HandlerScope {
        self.spans.scope_of(job)
    }

    /// A handler ended: finished with the result to keep, or failed.
    pub(super) fn ended(&mut self, job: Job, outcome: std::result::Result<Vec<u8>, JobError>) {
        self.running -= 1;
        self.spans.ended(&job, outcome.as_ref().err());
        match outcome {
            Ok(result) => self.finished.push(Finished { job, result }),
            Err(why) => self.failed.push_back((job, why)),
        }
    }

    /// A handler panicked: its lease runs out, and the loop stops as if asked to.
    pub(super) fn panicked(&mut self, job: &Job) {
        self.running -= 1;
        self.panicked = true;
        self.spans.panicked(job);
        self.release(job);
    }

    fn failed_call(&mut self, call: Call, op: Op<Answer>, err: Error) {
        let err = match call {
            // A server that refuses CONFIG GET answers an unknown policy.
            Call::Policy => match read_policy(Err(err)) {
                Ok(found) => return self.judge_memory(Ok(found)),
                Err(err) => err,
            },
            _ => err,
        };
        match self.retries.after(&err) {
            Some(pause) if !self.stop.is_stopped() => {
                self.pause = Some(pause);
                self.in_flight = Some((call, op));
            }
            // Asked to stop while the server is away: gives the call up.
            Some(_) => match call {
                Call::Policy => self.judge_memory(Ok((None, MemoryPolicy::Unknown))),
                Call::Take(done) => self.finished.extend(done),
                Call::Nack(job) => self.lose(&job),
                Call::Ack(finished) => self.lose(&finished),
                Call::Wait => {}
            },
            None => match call {
                // One of them was lost: ack them one by one to tell which.
                Call::Take(done) if err.code() == Some(LEASE_LOST) => self.acking.extend(done),
                Call::Nack(job) => {
                    self.release(&job);
                    self.spans.settled(&job, Err(&err));
                    self.count(Err(err));
                }
                Call::Ack(finished) => {
                    self.release(&finished);
                    self.spans.settled(&finished, Err(&err));
                    self.count(Err(err));
                }
                _ => self.failure = Some(err),
            },
        }
    }

    fn judge_memory(&mut self, found: Result<(Option<String>, MemoryPolicy)>) {
        self.memory_checked = true;
        match found.and_then(|(policy, meaning)| self.worker.judge_memory(policy, meaning)) {
            Ok(meaning) => self.report.memory_policy = meaning,
            Err(err) => self.failure = Some(err),
        }
    }

    fn count(&mut self, ending: Result<Ending>) {
        if let Err(err) = self.report.count(ending) {
            self.failure = Some(err);
        }
    }

    /// A job whose ack or nack never went through: its lease runs out.
    fn lose(&mut self, job: &Job) {
        self.release(job);
        self.spans.settled(job, Ok("lost"));
        self.report.lost += 1;
    }

    fn release(&self, job: &Job) {
        (self.renewals)(Renewal::Release(job.id.clone(), job.token.clone()));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::work_queue::WorkQueue;

    fn job(token: &str) -> Job {
        Job {
            id: token.into(),
            token: token.into(),
            delivery: 1,
            deadline_ms: 0,
            group: None,
            payload: Vec::new(),
            trace_context: None,
        }
    }

    /// The script a step runs, or what else it asks for.
    fn shown(step: WorkStep) -> String {
        match step {
            WorkStep::Run(op) => op.script().map_or("native".into(), |s| s.name.to_owned()),
            WorkStep::Wait(_) => "wait".into(),
            WorkStep::Start(jobs) => format!("start {}", jobs.len()),
            WorkStep::AwaitEnd(_) => "await an end".into(),
            WorkStep::Pause(_) => "pause".into(),
            WorkStep::Done(report) => format!("done {report:?}"),
        }
    }

    #[test]
    fn an_ack_that_lost_a_lease_is_told_apart_and_a_stop_settles_what_runs() {
        let queue = WorkQueue::new("q").unwrap();
        let worker = queue
            .worker()
            .concurrency(2)
            .unwrap()
            .on_eviction(OnEviction::Ignore);
        let stop = Stop::new();
        let told = Mutex::new(Vec::new());
        let renewals = |renewal| {
            told.lock().unwrap().push(match renewal {
                Renewal::Hold(job, _) => format!("hold {}", job.token),
                Renewal::Release(_, token) => format!("release {token}"),
            })
        };
        let mut working = Working::new(&worker, &stop, &renewals);
        assert_eq!(shown(working.step()), "work_queue/take");
        working.feed(Ok(Answer::Taken(vec![job("a"), job("b")])));
        assert_eq!(shown(working.step()), "start 2");
        assert_eq!(shown(working.step()), "await an end");
        working.ended(job("a"), Ok(Vec::new()));
        // The ack of `a` rides on the next take; the server says a lease was lost.
        assert_eq!(shown(working.step()), "work_queue/take");
        working.feed(Err(Error::Script {
            script: "work_queue/take",
            path: "scripts/work_queue/take.lua",
            code: LEASE_LOST.into(),
            message: "lost".into(),
        }));
        assert_eq!(
            shown(working.step()),
            "work_queue/ack",
            "acked alone to tell which"
        );
        working.feed(Ok(Answer::Ended(Ending::Acked)));
        stop.stop();
        working.ended(job("b"), Err(JobError::retry("boom")));
        assert_eq!(shown(working.step()), "work_queue/nack");
        working.feed(Ok(Answer::Ended(Ending::Retried)));
        let WorkStep::Done(Ok(report)) = working.step() else {
            panic!("stopped with nothing running");
        };
        assert_eq!((report.acked, report.retried, report.lost), (1, 1, 0));
        assert_eq!(
            *told.lock().unwrap(),
            ["hold a", "hold b", "release a", "release b"]
        );
    }

    #[test]
    fn a_job_that_ended_after_an_empty_take_is_acked_before_any_wait() {
        let queue = WorkQueue::new("q").unwrap();
        let worker = queue
            .worker()
            .concurrency(3)
            .unwrap()
            .on_eviction(OnEviction::Ignore);
        let stop = Stop::new();
        let renewals = |_| {};
        let mut working = Working::new(&worker, &stop, &renewals);
        assert_eq!(shown(working.step()), "work_queue/take");
        working.feed(Ok(Answer::Taken(vec![job("a")])));
        assert_eq!(shown(working.step()), "start 1");
        assert_eq!(shown(working.step()), "work_queue/take");
        working.feed(Ok(Answer::Taken(Vec::new())));
        // The handler ends before the loop's next step: its ack comes first.
        working.ended(job("a"), Ok(Vec::new()));
        assert_eq!(shown(working.step()), "work_queue/take");
        working.feed(Ok(Answer::Taken(Vec::new())));
        assert_eq!(shown(working.step()), "wait");
    }

    #[test]
    fn an_error_that_passes_sends_the_call_again_after_a_pause_unless_stopped() {
        let queue = WorkQueue::new("q").unwrap();
        let worker = queue.worker().on_eviction(OnEviction::Ignore);
        let stop = Stop::new();
        let renewals = |_| {};
        let mut working = Working::new(&worker, &stop, &renewals);
        let dropped = || {
            let io = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
            Error::Redis(redis::RedisError::from(io))
        };
        assert_eq!(shown(working.step()), "work_queue/take");
        working.feed(Err(dropped()));
        assert_eq!(shown(working.step()), "pause");
        assert_eq!(shown(working.step()), "work_queue/take");
        working.feed(Ok(Answer::Taken(vec![job("a")])));
        assert_eq!(shown(working.step()), "start 1");
        working.ended(job("a"), Ok(Vec::new()));
        stop.stop();
        assert_eq!(shown(working.step()), "work_queue/ack");
        working.feed(Err(dropped()));
        // Stopped while the server is away: the job's lease runs out.
        let WorkStep::Done(Ok(report)) = working.step() else {
            panic!("stopped with nothing running");
        };
        assert_eq!((report.acked, report.lost, report.reconnects), (0, 1, 2));
    }
}
